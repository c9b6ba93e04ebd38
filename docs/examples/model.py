"""A small model with two checkpoint calls: one whose region ckptlint follows, one it cannot."""

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class Block(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.linear = nn.Linear(dim, dim)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(torch.relu(self.linear(x)))


class Model(nn.Module):
    def __init__(self, dim: int, head: nn.Module) -> None:
        super().__init__()
        self.block = Block(dim)
        self.head = head  # any module: which one is known only at run time

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = checkpoint(self.block, x, use_reentrant=False, preserve_rng_state=False)
        return checkpoint(self.head, x)

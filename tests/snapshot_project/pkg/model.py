"""A small model whose blocks are checkpointed: one site per problem ckptlint reports."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.norm = nn.BatchNorm1d(dim)

    def forward(self, x):
        return self.norm(F.dropout(self.proj(x), 0.1))


class Model(nn.Module):
    def __init__(self, dim, depth):
        super().__init__()
        self.blocks = nn.ModuleList(Block(dim) for _ in range(depth))

    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x)
        return x

    def forward_without_rng(self, x):
        return checkpoint(self.blocks[0], x, use_reentrant=False, preserve_rng_state=False)

    def forward_accepted(self, x):
        return checkpoint(torch.tanh, x)  # noqa: CKP001

    def forward_wide(self, x):
        return checkpoint(
            torch.tanh,
            x
        )

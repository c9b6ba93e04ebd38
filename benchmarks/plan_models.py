"""Small real models for the checkpoint planner's evaluation (benchmarks/plan_eval.py).

Random weights from tiny configs, nothing downloaded: GPT-2, Llama, T5 and ViT from
transformers, a UNet from diffusers, and three written here: a ConvNeXt-like network (stages
of depthwise-conv blocks with stochastic depth), a mixture-of-experts transformer (top-2
routing over stacked expert weights) and a ResNet-like network whose stem and first two
blocks use BatchNorm in training mode (the other six GroupNorm).

Each factory returns ``{"model", "inputs", "forward_kwargs", "loss_fn"}`` (the planner CLI's
factory format).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn import functional as F


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def gpt2() -> dict[str, Any]:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=6, n_embd=64, n_head=2, vocab_size=128, n_positions=128, bos_token_id=0, eos_token_id=0)
    ids = torch.randint(0, 128, (4, 96), generator=_gen())
    return {"model": GPT2LMHeadModel(cfg).train(), "inputs": (ids,), "forward_kwargs": {"labels": ids}, "loss_fn": lambda o: o.loss}


def llama() -> dict[str, Any]:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(
        hidden_size=64, intermediate_size=160, num_hidden_layers=6, num_attention_heads=4, num_key_value_heads=2,
        vocab_size=128, max_position_embeddings=128, bos_token_id=0, eos_token_id=0, pad_token_id=0, attention_dropout=0.1,
    )
    ids = torch.randint(0, 128, (4, 96), generator=_gen())
    return {"model": LlamaForCausalLM(cfg).train(), "inputs": (ids,), "forward_kwargs": {"labels": ids}, "loss_fn": lambda o: o.loss}


def t5() -> dict[str, Any]:
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    cfg = T5Config(
        vocab_size=128, d_model=64, d_kv=16, d_ff=160, num_layers=4, num_decoder_layers=4, num_heads=4,
        decoder_start_token_id=0, pad_token_id=0, eos_token_id=1,
    )
    ids = torch.randint(2, 128, (4, 64), generator=_gen())
    labels = torch.randint(2, 128, (4, 48), generator=_gen(1))
    model = T5ForConditionalGeneration(cfg).train()
    return {"model": model, "inputs": (ids,), "forward_kwargs": {"labels": labels}, "loss_fn": lambda o: o.loss}


def vit() -> dict[str, Any]:
    from transformers import ViTConfig, ViTForImageClassification

    torch.manual_seed(0)
    cfg = ViTConfig(
        hidden_size=64, num_hidden_layers=6, num_attention_heads=4, intermediate_size=160, image_size=32, patch_size=4,
        num_labels=10, hidden_dropout_prob=0.1,
    )
    pixels = torch.randn(8, 3, 32, 32, generator=_gen())
    labels = torch.randint(0, 10, (8,), generator=_gen(1))
    model = ViTForImageClassification(cfg).train()
    return {"model": model, "inputs": (pixels,), "forward_kwargs": {"labels": labels}, "loss_fn": lambda o: o.loss}


def unet() -> dict[str, Any]:
    from diffusers import UNet2DModel

    torch.manual_seed(0)
    model = UNet2DModel(
        sample_size=32, in_channels=3, out_channels=3, layers_per_block=1, block_out_channels=(32, 64, 64),
        down_block_types=("DownBlock2D", "AttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "AttnUpBlock2D", "UpBlock2D"), norm_num_groups=8,
    ).train()
    sample = torch.randn(4, 3, 32, 32, generator=_gen())
    return {"model": model, "inputs": (sample, torch.tensor([10])), "forward_kwargs": {}, "loss_fn": lambda o: o.sample.pow(2).mean()}


class ConvNeXtBlock(nn.Module):
    """Depthwise 7x7 conv, LayerNorm over channels, 4x MLP, layer scale, stochastic depth."""

    def __init__(self, dim: int, drop_path: float) -> None:
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim)
        self.pw1, self.pw2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(torch.full((dim,), 1e-2))
        self.drop_path = drop_path

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.pw2(F.gelu(self.pw1(self.norm(y)))) * self.gamma
        y = y.permute(0, 3, 1, 2)
        if self.training and self.drop_path > 0:  # stochastic depth: the default generator, replayed
            keep = torch.rand(x.shape[0], 1, 1, 1, device=x.device) >= self.drop_path
            y = y * keep / (1 - self.drop_path)
        return x + y


class ConvNeXtStage(nn.Module):
    def __init__(self, cin: int, dim: int, depth: int, drop_path: float) -> None:
        super().__init__()
        self.down = nn.Conv2d(cin, dim, 2, stride=2) if cin != dim else nn.Identity()
        self.blocks = nn.ModuleList(ConvNeXtBlock(dim, drop_path) for _ in range(depth))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.down(x)
        for b in self.blocks:
            x = b(x)
        return x


class ConvNeXtLike(nn.Module):
    def __init__(self, dims: tuple[int, ...] = (16, 32, 64), depths: tuple[int, ...] = (2, 2, 4)) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, dims[0], 4, stride=4)
        cins = (dims[0], *dims[:-1])
        self.stages = nn.ModuleList(ConvNeXtStage(c, d, n, 0.1) for c, d, n in zip(cins, dims, depths, strict=True))
        self.head = nn.Linear(dims[-1], 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        for s in self.stages:
            x = s(x)
        return self.head(x.mean((2, 3)))


def convnext() -> dict[str, Any]:
    torch.manual_seed(0)
    x = torch.randn(8, 3, 64, 64, generator=_gen())
    y = torch.randint(0, 10, (8,), generator=_gen(1))
    return {"model": ConvNeXtLike().train(), "inputs": (x,), "forward_kwargs": {}, "loss_fn": lambda o: F.cross_entropy(o, y)}


class MoELayer(nn.Module):
    """Pre-norm attention, then a top-2 mixture of experts whose weights are stacked tensors."""

    def __init__(self, d: int = 64, experts: int = 4, hidden: int = 96) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, 4, dropout=0.1, batch_first=True)
        self.router = nn.Linear(d, experts, bias=False)
        self.w_in = nn.Parameter(torch.randn(experts, d, hidden) * d**-0.5)
        self.w_out = nn.Parameter(torch.randn(experts, hidden, d) * hidden**-0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        h = self.norm2(x)
        gates = self.router(h).softmax(-1)
        top, idx = gates.topk(2, dim=-1)  # (B, T, 2)
        w_in, w_out = self.w_in[idx], self.w_out[idx]  # (B, T, 2, d, hidden), (B, T, 2, hidden, d)
        z = F.gelu(torch.einsum("btd,btkdh->btkh", h, w_in))
        out = torch.einsum("btkh,btkhd->btkd", z, w_out)
        return x + (out * top.unsqueeze(-1)).sum(2)


class MoE(nn.Module):
    def __init__(self, layers: int = 6, d: int = 64, vocab: int = 128) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(MoELayer(d) for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))


def moe() -> dict[str, Any]:
    torch.manual_seed(0)
    ids = torch.randint(0, 128, (4, 32), generator=_gen())
    return {
        "model": MoE().train(), "inputs": (ids,), "forward_kwargs": {},
        "loss_fn": lambda o: F.cross_entropy(o.reshape(-1, o.shape[-1]), ids.reshape(-1)),
    }


class BasicBlock(nn.Module):
    def __init__(self, c: int, batchnorm: bool) -> None:
        super().__init__()
        norm = (lambda: nn.BatchNorm2d(c)) if batchnorm else (lambda: nn.GroupNorm(8, c))
        self.conv1, self.n1 = nn.Conv2d(c, c, 3, padding=1, bias=False), norm()
        self.conv2, self.n2 = nn.Conv2d(c, c, 3, padding=1, bias=False), norm()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(x + self.n2(self.conv2(F.relu(self.n1(self.conv1(x))))))


class ResNetLike(nn.Module):
    """A BatchNorm stem and two BatchNorm blocks (training mode: unsafe to checkpoint), then six
    GroupNorm blocks."""

    def __init__(self, c: int = 32) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU())
        self.blocks = nn.ModuleList([BasicBlock(c, True) for _ in range(2)] + [BasicBlock(c, False) for _ in range(6)])
        self.head = nn.Linear(c, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        for b in self.blocks:
            x = b(x)
        return self.head(x.mean((2, 3)))


def resnet_bn() -> dict[str, Any]:
    torch.manual_seed(0)
    x = torch.randn(8, 3, 32, 32, generator=_gen())
    y = torch.randint(0, 10, (8,), generator=_gen(1))
    return {"model": ResNetLike().train(), "inputs": (x,), "forward_kwargs": {}, "loss_fn": lambda o: F.cross_entropy(o, y)}


MODELS = {
    "gpt2": gpt2, "llama": llama, "t5": t5, "vit": vit, "unet": unet,
    "convnext": convnext, "moe": moe, "resnet-bn": resnet_bn,
}

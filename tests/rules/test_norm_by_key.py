"""A norm layer chosen by a string key that the function rebinds (detectron2's
``get_norm``: ``norm = {"BN": BatchNorm2d, ..., "LN": ...}[norm]``): the key read inside the
assignment is the parameter's value, so a block built with ``norm="LN"`` holds no BatchNorm."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

# The shape of detectron2/layers/batch_norm.py (get_norm, NaiveSyncBatchNorm) and of the ViT
# backbone's residual block (detectron2/modeling/backbone/vit.py), checkpointed per block
# through fairscale's checkpoint_wrapper.
LAYERS = """\
    import torch
    import torch.nn as nn

    TORCH_VERSION = tuple(int(x) for x in torch.__version__.split(".")[:2])


    class NaiveSyncBatchNorm(nn.BatchNorm2d):
        def __init__(self, *args, stats_mode="", **kwargs):
            super().__init__(*args, **kwargs)
            self._stats_mode = stats_mode

        def forward(self, input):
            if not self.training:
                return super().forward(input)
            mean = input.mean(dim=[0, 2, 3])
            self.running_mean += self.momentum * (mean.detach() - self.running_mean)
            return input - mean.reshape(1, -1, 1, 1)


    def get_norm(norm, out_channels):
        if norm is None:
            return None
        if isinstance(norm, str):
            if len(norm) == 0:
                return None
            norm = {
                "BN": nn.BatchNorm2d,
                "SyncBN": NaiveSyncBatchNorm if TORCH_VERSION <= (1, 5) else nn.SyncBatchNorm,
                "naiveSyncBN": NaiveSyncBatchNorm,
                "naiveSyncBN_N": lambda channels: NaiveSyncBatchNorm(channels, stats_mode="N"),
                "LN": lambda channels: nn.GroupNorm(1, channels),
            }[norm]
        return norm(out_channels)
    """

BACKBONE = """\
    import torch.nn as nn
    from fairscale.nn.checkpoint import checkpoint_wrapper

    from pkg.layers import get_norm


    class ResBottleneckBlock(nn.Module):
        def __init__(self, channels, norm="LN"):
            super().__init__()
            self.conv = nn.Conv2d(channels, channels, 3, padding=1)
            self.norm = get_norm(norm, channels)

        def forward(self, x):
            return x + self.norm(self.conv(x))


    class Block(nn.Module):
        def __init__(self, dim, use_residual_block=False):
            super().__init__()
            self.use_residual_block = use_residual_block
            if use_residual_block:
                self.residual = ResBottleneckBlock(dim, norm="LN")

        def forward(self, x):
            if self.use_residual_block:
                x = self.residual(x)
            return x


    class ViT(nn.Module):
        def __init__(self, dim, depth, use_act_checkpoint=False):
            super().__init__()
            self.blocks = nn.ModuleList()
            for i in range(depth):
                block = Block(dim, use_residual_block=i % 2 == 0)
                if use_act_checkpoint:
                    block = checkpoint_wrapper(block)
                self.blocks.append(block)

        def forward(self, x):
            for blk in self.blocks:
                x = blk(x)
            return x
    """


def test_a_layer_norm_key_reaches_no_batchnorm(tmp_path: Path, run_cli) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "pkg" / "layers.py").write_text(textwrap.dedent(LAYERS), encoding="utf-8")
    (tmp_path / "pkg" / "vit.py").write_text(textwrap.dedent(BACKBONE), encoding="utf-8")
    result = run_cli("--output-format", "json", "--isolated", "--exit-zero", "--no-cache", "pkg/vit.py")
    assert json.loads(result.stdout) == []

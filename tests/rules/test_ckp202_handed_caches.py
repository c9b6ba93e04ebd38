"""CKP202 and a cache object handed down into a recomputed region: the shape of diffusers'
KVAE video autoencoder (``autoencoder_kl_kvae_video.py``), whose encoder checkpoints each
block with ``self._gradient_checkpointing_func(self.mid.block_1, h, temb, cache_dict["mid_1"])``;
the block hands ``layer_cache["conv1"]`` to a causal convolution that pads with
``cache["padding"]`` when it is set and then writes ``cache["padding"]`` for the next chunk.
The recomputation reads the padding the forward left there, not the one the forward used:
torch 2.13's non-reentrant checkpoint then computes other weight gradients silently when the
slot keeps its shape, and raises ``CheckpointError`` ("Recomputed values ... have different
metadata") when it does not.
"""

from __future__ import annotations

import textwrap

from ckptlint.testing import located

KVAE = textwrap.dedent(
    """\
    import torch
    import torch.nn.functional as F
    from torch import nn


    class CachedCausalConv3d(nn.Module):
        def __init__(self, chan_in, chan_out, kernel_size=3):
            super().__init__()
            self.time_pad = kernel_size - 1
            self.conv = nn.Conv3d(chan_in, chan_out, kernel_size, padding=(0, 1, 1))

        def forward(self, input, cache):
            if cache["padding"] is None:
                first_frame = input[:, :, :1]
                padding = first_frame.expand(-1, -1, self.time_pad, -1, -1)
            else:
                padding = cache["padding"]
            x = torch.cat([padding, input], dim=2)
            cache["padding"] = torch.clone(x[:, :, -self.time_pad :])
            return self.conv(x)


    class CachedGroupNorm(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.norm_layer = nn.GroupNorm(32, channels)

        def forward(self, x, cache=None):
            out = self.norm_layer(x)
            if cache is not None and cache.get("mean") is None and cache.get("var") is None:
                cache["mean"] = 1
                cache["var"] = 1
            return out


    class CachedResnetBlock3D(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.norm1 = CachedGroupNorm(channels)
            self.conv1 = CachedCausalConv3d(channels, channels)

        def forward(self, x, temb, layer_cache):
            h = self.norm1(x, cache=layer_cache["norm1"])
            h = F.silu(h)
            h = self.conv1(h, cache=layer_cache["conv1"])
            return x + h


    class Encoder(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.mid = nn.Module()
            self.mid.block_1 = CachedResnetBlock3D(channels)
            self.gradient_checkpointing = False

        def forward(self, x, cache_dict):
            temb = None
            if torch.is_grad_enabled() and self.gradient_checkpointing:
                h = self._gradient_checkpointing_func(self.mid.block_1, x, temb, cache_dict["mid_1"])
            else:
                h = self.mid.block_1(x, temb, layer_cache=cache_dict["mid_1"])
            return h
    """
)


def _edit(source: str, *pairs: tuple[str, str]) -> str:
    for old, new in pairs:
        assert old in source, old
        source = source.replace(old, new)
    return source


def _row(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def test_a_cache_slot_the_region_reads_back_is_reported_where_it_is_written() -> None:
    found = located(KVAE, ["CKP202"], messages=True)
    assert [(r, c) for r, c, _ in found] == [(_row(KVAE, 'cache["padding"] = torch.clone('), "CKP202")]
    message = found[0][2]
    assert (
        'it assigns `cache["padding"]` of the object that the checkpoint call passes as `layer_cache` '
        "(handed down as `cache`), which runs again during backward" in message
    )
    assert message.endswith(
        "this code runs only when `self.gradient_checkpointing` is true (it defaults to `False`) and `torch.is_grad_enabled()`"
    )


def test_a_slot_set_once_to_a_constant_is_not_reported() -> None:
    """``cache["mean"] = 1`` under ``cache.get("mean") is None``: the recomputation finds it
    set and writes nothing else."""
    source = _edit(KVAE, ('        cache["padding"] = torch.clone(x[:, :, -self.time_pad :])\n', ""))
    assert located(source, ["CKP202"]) == []


def test_a_slot_written_without_being_read_first_is_not_reported() -> None:
    source = _edit(
        KVAE,
        (
            '        if cache["padding"] is None:\n'
            "            first_frame = input[:, :, :1]\n"
            "            padding = first_frame.expand(-1, -1, self.time_pad, -1, -1)\n"
            "        else:\n"
            '            padding = cache["padding"]\n',
            "        padding = input[:, :, :1].expand(-1, -1, self.time_pad, -1, -1)\n",
        ),
    )
    assert located(source, ["CKP202"]) == []


def test_a_cache_the_region_makes_itself_is_its_own() -> None:
    source = _edit(
        KVAE,
        (
            '        h = self.conv1(h, cache=layer_cache["conv1"])\n',
            '        fresh = {"padding": None}\n        h = self.conv1(h, cache=fresh)\n',
        ),
    )
    assert located(source, ["CKP202"]) == []


def test_a_cache_handed_down_from_module_state_is_reported() -> None:
    source = _edit(
        KVAE,
        (
            "        self.conv1 = CachedCausalConv3d(channels, channels)\n",
            '        self.conv1 = CachedCausalConv3d(channels, channels)\n        self.conv_cache = {"padding": None}\n',
        ),
        ('        h = self.conv1(h, cache=layer_cache["conv1"])\n', "        h = self.conv1(h, cache=self.conv_cache)\n"),
    )
    found = located(source, ["CKP202"], messages=True)
    assert [(r, c) for r, c, _ in found] == [(_row(source, 'cache["padding"] = torch.clone('), "CKP202")]
    assert (
        'assigns `cache["padding"]` of the module\'s `self.conv_cache` (handed down as `cache` by '
        "`CachedResnetBlock3D.forward`)" in found[0][2]
    )


def test_keyword_containers_and_computed_items_are_not_cache_slots() -> None:
    """``**kwargs`` is a dict made for each call; ``x[mask] = 0`` is tensor code."""
    source = _edit(
        KVAE,
        (
            "    def forward(self, x, temb, layer_cache):\n        h = self.norm1(",
            "    def forward(self, x, temb, layer_cache, **kwargs):\n"
            '        kwargs["scale"] = kwargs["scale"] * 2\n'
            "        x[x > kwargs['scale']] = 0\n"
            "        h = self.norm1(",
        ),
        ('        cache["padding"] = torch.clone(x[:, :, -self.time_pad :])\n', ""),
    )
    assert located(source, ["CKP202"]) == []

"""Reversible-network recompute (ckptlint/checkpoint/sites/reversible.py): ``autograd.Function``s
whose ``backward`` rebuilds the inputs from the outputs and re-runs the blocks, as in
Reformer (``block.backward_pass`` re-running ``self.f``/``self.g`` under
``torch.enable_grad()``), RevViT (reached through ``run = RevBackProp.apply``) and RevCol
(blocks unpacked from a tuple and re-run under ``enable_grad``). Their blocks are regions;
CKP104/CKP105 judge their RNG and autocast restore.
"""

from __future__ import annotations

from textwrap import dedent

from ckptlint.testing import located

BLOCKS = """\
import torch
import torch.nn as nn
from torch.autograd import Function


class FF(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.norm = {norm}

    def forward(self, x):
        return self.norm(self.lin(x))


class ReversibleBlock(nn.Module):
    def __init__(self, f, g):
        super().__init__()
        self.f = f
        self.g = g

    def forward(self, x):
        x1, x2 = torch.chunk(x, 2, dim=-1)
        with torch.no_grad():
            y1 = x1 + self.f(x2)
            y2 = x2 + self.g(y1)
        return torch.cat([y1, y2], dim=-1)

    def backward_pass(self, y, dy):
        y1, y2 = torch.chunk(y, 2, dim=-1)
        dy1, dy2 = torch.chunk(dy, 2, dim=-1)
        with torch.enable_grad():
            y1.requires_grad = True
{restore}            gy1 = self.g(y1)
            torch.autograd.backward(gy1, dy2)
        with torch.no_grad():
            x2 = y2 - gy1
            dx1 = dy1 + y1.grad
            y1.grad = None
        with torch.enable_grad():
            x2.requires_grad = True
            fx2 = self.f(x2)
            torch.autograd.backward(fx2, dx1)
        with torch.no_grad():
            x1 = y1 - fx2
            dx2 = dy2 + x2.grad
        return torch.cat([x1, x2.detach()], dim=-1), torch.cat([dx1, dx2], dim=-1)


class RevFunction(Function):
    @staticmethod
    def forward(ctx, x, blocks):
{save}        for block in blocks:
            x = block(x)
        ctx.y = x.detach()
        ctx.blocks = blocks
        return x

    @staticmethod
    def backward(ctx, dy):
        y = ctx.y
        layers = ctx.blocks
        for _, block in enumerate(layers[::-1]):
            y, dy = block.backward_pass(y, dy)
        return dy, None


class RevNet(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.blocks = nn.ModuleList([ReversibleBlock(FF(d), FF(d)) for _ in range(2)])

    def forward(self, x):
        run = RevFunction.apply
        with torch.autocast("cuda"):
            return run(x, self.blocks)
"""

LAYER_NORM = "nn.LayerNorm(d)"
BATCH_NORM = "nn.BatchNorm1d(d)"
SEED = "            torch.manual_seed(self.seed)\n"
SAVE_AUTOCAST = "        ctx.amp = torch.is_autocast_enabled()\n"


def _row(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def _blocks(norm: str = LAYER_NORM, restore: str = SEED, save: str = "") -> str:
    return BLOCKS.format(norm=norm, restore=restore, save=save)


def test_blocks_recomputed_by_backward_pass_are_a_region() -> None:
    source = _blocks(norm=BATCH_NORM)
    found = located(source, ["CKP203"], messages=True)
    assert [(r, c) for r, c, _ in found] == [(_row(source, "return run(x, self.blocks)"), "CKP203")]
    assert "nn.BatchNorm1d (created at <string>.py:10)" in found[0][2]


def test_rerun_without_autocast_restore_is_ckp105() -> None:
    source = _blocks()
    found = located(source, ["CKP104", "CKP105"], messages=True)
    assert [(r, c) for r, c, _ in found] == [(_row(source, "block.backward_pass(y, dy)"), "CKP105")]
    assert "`RevFunction.backward` re-runs the stored blocks (their `backward_pass`) outside the autocast" in found[0][2]


def test_rerun_without_rng_restore_is_ckp104() -> None:
    source = _blocks(restore="")
    assert (_row(source, "block.backward_pass(y, dy)"), "CKP104") in located(source, ["CKP104"])


def test_forward_and_backward_that_restore_rng_and_autocast_are_clean() -> None:
    source = _blocks(save=SAVE_AUTOCAST).replace(
        "        for _, block in enumerate(layers[::-1]):\n            y, dy = block.backward_pass(y, dy)\n",
        "        with torch.autocast('cuda', enabled=ctx.amp):\n"
        "            for _, block in enumerate(layers[::-1]):\n                y, dy = block.backward_pass(y, dy)\n",
    )
    assert located(source, ["CKP1", "CKP2"]) == []


def test_reformer_rng_restore_requested_from_the_block_counts() -> None:
    """Reformer's ``self.g(y1, set_rng=True)``: ``Deterministic`` restores the RNG state it
    recorded in forward."""
    source = _blocks(restore="").replace("gy1 = self.g(y1)", "gy1 = self.g(y1, set_rng=True)")
    assert located(source, ["CKP104"]) == []


def test_tuple_unpacked_blocks_rerun_under_enable_grad() -> None:
    """RevCol's shape: ``l0, l1 = run_functions`` in forward and backward."""
    source = """\
        import torch
        from torch import nn


        class Level(nn.Module):
            def __init__(self):
                super().__init__()
                self.bn = nn.BatchNorm2d(4)

            def forward(self, x):
                return self.bn(x)


        class ReverseFunction(torch.autograd.Function):
            @staticmethod
            def forward(ctx, run_functions, x):
                l0, l1 = run_functions
                ctx.run_functions = run_functions
                with torch.no_grad():
                    c0 = l0(x)
                    c1 = l1(c0)
                ctx.save_for_backward(x, c0, c1)
                return c1

            @staticmethod
            def backward(ctx, g):
                x, c0, c1 = ctx.saved_tensors
                l0, l1 = ctx.run_functions
                with torch.enable_grad():
                    c0 = c0.detach().requires_grad_()
                    out = l1(c0)
                    torch.autograd.backward(out, g)
                return None, None


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.levels = nn.ModuleList([Level(), Level()])

            def forward(self, x):
                return ReverseFunction.apply(self.levels, x)
        """
    rerun, site = _row(dedent(source), "out = l1(c0)"), _row(dedent(source), "ReverseFunction.apply(")
    assert located(source, ["CKP104", "CKP203"]) == [(rerun, "CKP104"), (site, "CKP203")]


def test_a_function_that_stores_blocks_but_never_reruns_them_is_no_recompute() -> None:
    source = """\
        import torch
        from torch import nn


        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, blocks):
                ctx.blocks = blocks
                for block in blocks:
                    x = block(x)
                return x

            @staticmethod
            def backward(ctx, g):
                for block in ctx.blocks:
                    g = block.weight.t() @ g
                return g, None


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.ModuleList([nn.BatchNorm1d(4)])

            def forward(self, x):
                return Scale.apply(x, self.blocks)
        """
    assert located(source) == []

"""Reversible recompute inherited across classes (ckptlint/checkpoint/sites/reversible.py):
the shape of minREV's PaReprop (``fast_rev.py``), whose ``FastRevBackProp(RevBackProp)``
defines only ``backward`` and inherits ``forward`` from ``RevBackProp`` of ``rev.py``, takes
the last block by index (``layer = layers[-1]``) and two neighbouring blocks per step
(``for i, (this_layer, next_layer) in enumerate(zip(layers[1:][::-1], layers[:-1][::-1]))``),
and re-runs each block through ``backward_pass_recover`` of a ``FineReversibleBlock`` whose
base is in ``rev.py`` too; ``backward_pass_grads`` only back-propagates what it is handed.
"""

from __future__ import annotations

import json
from pathlib import Path

from ckptlint.testing import located

REV = """\
import torch
from torch import nn
from torch.autograd import Function


class Sub(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return self.lin(self.norm(x))


class RevBackProp(Function):
    @staticmethod
    def forward(ctx, x, layers):
        x1, x2 = torch.chunk(x, 2, dim=-1)
        for layer in layers:
            x1, x2 = layer(x1, x2)
        ctx.save_for_backward(x1.detach(), x2.detach())
        ctx.layers = layers
        return torch.cat([x1, x2], dim=-1)

    @staticmethod
    def backward(ctx, dx):
        dx1, dx2 = torch.chunk(dx, 2, dim=-1)
        x1, x2 = ctx.saved_tensors
        layers = ctx.layers
        for _, layer in enumerate(layers[::-1]):
            x1, x2, dx1, dx2 = layer.backward_pass(x1, x2, dx1, dx2)
        return torch.cat([dx1, dx2], dim=-1), None


class ReversibleBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.F = Sub(dim)
        self.G = Sub(dim)

    def forward(self, x1, x2):
        y1 = x1 + self.F(x2)
        y2 = x2 + self.G(y1)
        return y1, y2

    def backward_pass(self, y1, y2, dy1, dy2):
        with torch.enable_grad():
            y1.requires_grad = True
            g = self.G(y1)
            g.backward(dy2, retain_graph=True)
        with torch.no_grad():
            x2 = y2 - g
            dy1 = dy1 + y1.grad
        with torch.enable_grad():
            x2.requires_grad = True
            f = self.F(x2)
            f.backward(dy1, retain_graph=True)
        with torch.no_grad():
            x1 = y1 - f
            dy2 = dy2 + x2.grad
        return x1, x2.detach(), dy1, dy2
"""

FAST_BACKWARD = """\
    @staticmethod
    def backward(ctx, dx):
        dx1, dx2 = torch.chunk(dx, 2, dim=-1)
        x1, x2 = ctx.saved_tensors
        layers = ctx.layers
        layer = layers[-1]
        prev = layer.backward_pass_recover(y1=x1, y2=x2)
        for i, (this_layer, next_layer) in enumerate(zip(layers[1:][::-1], layers[:-1][::-1])):
            dx1, dx2 = this_layer.backward_pass_grads(*prev, dx1, dx2)
            prev = next_layer.backward_pass_recover(y1=prev[0], y2=prev[1])
        dx1, dx2 = layers[0].backward_pass_grads(*prev, dx1, dx2)
        return torch.cat([dx1, dx2], dim=-1), None
"""

FINE_BLOCK = """\
class FineReversibleBlock(ReversibleBlock):
    def backward_pass_recover(self, y1, y2):
        with torch.enable_grad():
            y1.requires_grad = True
{seed}            g = self.G(y1)
        with torch.no_grad():
            x2 = y2 - g
        with torch.enable_grad():
            x2.requires_grad = True
            f = self.F(x2)
        with torch.no_grad():
            x1 = y1 - f
        return [x1, x2, y1, g, f]

    def backward_pass_grads(self, x1, x2, y1, g, f, dy1, dy2):
        with torch.enable_grad():
            g.backward(dy2)
        with torch.no_grad():
            dy1 = dy1 + y1.grad
        with torch.enable_grad():
            f.backward(dy1)
        with torch.no_grad():
            dy2 = dy2 + x2.grad
        return dy1, dy2
"""

FAST_REV = (
    """\
import torch
from torch import nn

from rev import RevBackProp, ReversibleBlock


class FastRevNet(nn.Module):
    def __init__(self, dim, depth):
        super().__init__()
        self.layers = nn.ModuleList([FineReversibleBlock(dim) for _ in range(depth)])

    def forward(self, x):
        return FastRevBackProp.apply(torch.cat([x, x], dim=-1), self.layers)


class FastRevBackProp(RevBackProp):
"""
    + FAST_BACKWARD
    + "\n\n"
    + FINE_BLOCK
)


def _row(source: str, text: str, nth: int = 0) -> int:
    return [i for i, line in enumerate(source.splitlines(), 1) if text in line][nth]


def _findings(run_cli, *paths: str) -> list[tuple[str, int, int, str]]:
    result = run_cli(
        "--output-format", "json", "--isolated", "--exit-zero", "--no-cache", "--select", "CKP104,CKP105", *paths
    )
    return sorted(
        (Path(r["filename"]).name, r["location"]["row"], r["location"]["column"], r["code"])
        for r in json.loads(result.stdout)
    )


def test_backward_of_a_subclass_whose_forward_is_in_an_imported_module(tmp_path: Path, run_cli) -> None:
    fast = FAST_REV.format(seed="")
    (tmp_path / "rev.py").write_text(REV, encoding="utf-8")
    (tmp_path / "fast_rev.py").write_text(fast, encoding="utf-8")
    first = _row(fast, "prev = layer.backward_pass_recover(")
    staggered = _row(fast, "prev = next_layer.backward_pass_recover(")
    expected = [
        ("fast_rev.py", first, 16, "CKP104"),
        ("fast_rev.py", first, 16, "CKP105"),
        ("fast_rev.py", staggered, 20, "CKP104"),
        ("fast_rev.py", staggered, 20, "CKP105"),
    ]
    assert _findings(run_cli, "fast_rev.py") == expected  # rev.py is read because fast_rev.py imports it
    rev_rerun = _row(REV, "layer.backward_pass(x1, x2, dx1, dx2)")
    assert _findings(run_cli, ".") == [*expected, ("rev.py", rev_rerun, 32, "CKP104"), ("rev.py", rev_rerun, 32, "CKP105")]
    result = run_cli("--output-format", "json", "--isolated", "--exit-zero", "--no-cache", "--select", "CKP105", "fast_rev.py")
    assert "`FastRevBackProp.backward` re-runs the stored blocks (their `backward_pass_recover`) outside the autocast" in (
        json.loads(result.stdout)[0]["message"]
    )


def test_blocks_that_reseed_before_the_rerun_are_not_ckp104(tmp_path: Path, run_cli) -> None:
    """minREV's ``revmvit.py``: ``backward_pass_recover`` seeds with the seed drawn in forward."""
    fast = FAST_REV.format(seed="            torch.manual_seed(self.seed)\n")
    (tmp_path / "rev.py").write_text(REV, encoding="utf-8")
    (tmp_path / "fast_rev.py").write_text(fast, encoding="utf-8")
    assert [f[3] for f in _findings(run_cli, "fast_rev.py")] == ["CKP105", "CKP105"]


def test_without_the_imported_module_nothing_is_known(tmp_path: Path, run_cli) -> None:
    (tmp_path / "fast_rev.py").write_text(FAST_REV.format(seed=""), encoding="utf-8")
    assert _findings(run_cli, "fast_rev.py") == []


def test_subclass_in_the_same_module() -> None:
    """minREV's ``revswin.py``: ``RevBackPropFast(RevBackProp)`` next to its base."""
    source = (
        REV
        + "\n\nclass RevBackPropFast(RevBackProp):\n"
        + FAST_BACKWARD
        + "\n\n"
        + FINE_BLOCK.format(seed="")
    )
    found = located(source, ["CKP105"])
    assert found == [
        (_row(source, "x1, x2, dx1, dx2 = layer.backward_pass("), "CKP105"),
        (_row(source, "prev = layer.backward_pass_recover("), "CKP105"),
        (_row(source, "prev = next_layer.backward_pass_recover("), "CKP105"),
    ]


def test_a_method_that_only_backpropagates_is_no_rerun() -> None:
    """A backward that calls only ``backward_pass_grads`` (``.backward`` on tensors handed to
    it under ``enable_grad``) re-runs no block."""
    source = (
        REV
        + "\n\nclass GradsOnly(RevBackProp):\n"
        + "    @staticmethod\n    def backward(ctx, dx, *prev):\n"
        + "        for layer in ctx.layers[::-1]:\n            dx = layer.backward_pass_grads(*prev, dx, dx)\n"
        + "        return dx, None\n\n\n"
        + FINE_BLOCK.format(seed="")
    )
    assert located(source, ["CKP105"]) == [(_row(source, "x1, x2, dx1, dx2 = layer.backward_pass("), "CKP105")]

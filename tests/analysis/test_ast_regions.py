"""Regions on CPython's ``ast`` (ckptlint.checkpoint.evaluator.ast_regions), recorded while
they were libcst's: for every checkpoint site, the region and the deep region (status,
entries, frames in order with how each is reached, the nodes each frame walks, layers, layer
calls, unknown, cut and opaque calls), the signature of the site's callable, the decisions of
the ``if`` tests in the frames and the builder's other queries. Inputs: the rule examples, the
test cases, the shared cases as recorded, the programs of the test suite, hand-written
programs and a tree of modules read through the loader (golden answers:
``__snapshots__/test_ast_regions.ambr`` and ``__digests__/regions_*.json``; the readings are
``region_readings.py``'s)."""

from __future__ import annotations

import functools
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from goldens import case_params, check_suite, example_params, read_case, render
from region_readings import region_answers
from test_ast_evaluator_leaves import _SUITE

from ckptlint.checkpoint.evaluator.ast_regions import AstRegionBuilder
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.semantic.ast_analysis import parse_ast
from ckptlint.semantic.project import AstProject, Project, module_name_for
from ckptlint.text.source import SourceFile


@functools.cache
def _answers(text: str, module_name: str = "pkg.mod") -> list[dict[str, object]]:
    """The readings of ``text`` (made once: the counts reuse them)."""
    return region_answers(text, module_name)


def _golden(found: list[dict[str, object]]) -> str:
    """One line per site and reading (a region's per field)."""
    lines = []
    for index, reading in enumerate(found):
        for which in ("region", "deep"):
            lines += [f"{index} {which} {key}: {render([value])}" for key, value in reading[which].items()]  # type: ignore[attr-defined]
        lines += [f"{index} {key}: {render([reading[key]])}" for key in ("signature", "decisions", "queries")]
    return "\n".join(lines)


def _counts(found: list[dict[str, object]]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for reading in found:
        region, deep = reading["region"], reading["deep"]
        counts["sites"] += 1
        counts["resolved"] += bool(region["status"][0])  # type: ignore[index]
        counts["ran out"] += bool(region["status"][3])  # type: ignore[index]
        counts["frames"] += len(region["frames"]) + len(deep["frames"])  # type: ignore[index]
        counts["walked"] += sum(len(w) for w in region["walked"])  # type: ignore[index]
        counts["decisions"] += len(reading["decisions"])  # type: ignore[arg-type]
    return counts


@pytest.mark.parametrize(("label", "text"), example_params())
def test_rule_examples(label: str, text: str, snapshot) -> None:
    assert _golden(_answers(text)) == snapshot


@pytest.mark.parametrize("path", case_params())
def test_cases(path: Path, snapshot) -> None:
    assert _golden(_answers(read_case(path), "pkg.cases." + path.stem)) == snapshot


def test_programs_of_the_test_suite(request: pytest.FixtureRequest) -> None:
    """One test for them all (a few hundred small programs)."""
    assert check_suite(request, "regions_suite", _SUITE, lambda text: _golden(_answers(text))) >= 100


def test_the_inputs_hold_what_is_compared() -> None:
    """The examples and programs are not empty of sites, resolved regions, frames and walks."""
    total: Counter[str] = Counter()
    for text in [p.values[1] for p in example_params()] + _SUITE + [textwrap.dedent(p) for p in PROGRAMS.values()]:
        total.update(_counts(_answers(text)))
    assert total["sites"] >= 500
    assert total["resolved"] >= 200
    assert total["frames"] >= 400
    assert total["walked"] >= 2500
    assert total["decisions"] >= 60


PROGRAMS = {
    "depth, recursion, unknown calls, layers, segments, bound arguments": """
        from torch import nn
        from torch.utils.checkpoint import checkpoint, checkpoint_sequential

        def a(x): return b(x)
        def b(x): return c(x)
        def c(x): return d(x)
        def d(x): return e(x)
        def e(x): return a(x)
        def rec(x, n=3): return rec(x, n - 1) if n else x

        class BN(nn.BatchNorm2d):
            def forward(self, x):
                return super().forward(x)

        class BN2(nn.BatchNorm2d):
            def forward(self, x):
                return x

        class Block(nn.Module):
            def __init__(self, fn=None, use_drop=True):
                super().__init__()
                self.fn = fn
                self.drop = nn.Dropout(0.1) if use_drop else nn.Identity()
                self.bn = BN(4)
                self.bn2 = BN2(4)
                self.seq = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1), nn.BatchNorm1d(4), nn.ReLU())
                self.ext = something_unknown()

            def _inner(self, x, mode="a", *, scale=1):
                if mode == "a":
                    x = self.drop(x)
                elif mode == "b":
                    x = self.bn(x)
                else:
                    x = self.bn2(x)
                x = self.fn(x)
                x = self.ext(x)
                y = x.view(-1)
                return a(x) + rec(x) + (self.seq(x) if scale > 1 else y)

            def forward(self, x, *args, **kw):
                x = checkpoint(self._inner, x, "b", scale=2, use_reentrant=False)
                x = checkpoint(self._inner, *args, use_reentrant=False)
                x = checkpoint(self._inner, x, **kw, use_reentrant=False)
                x = checkpoint_sequential(self.seq, 2, x)
                x = checkpoint_sequential(self.seq, segments=4, input=x)
                x = checkpoint(self.bn, x) + checkpoint(self.bn2, x)
                x = checkpoint(lambda t: self._inner(t, mode="c"), x)
                return x
        """,
    "helpers, helpers of helpers, factories, partials": """
        import functools
        from torch import nn
        from torch.utils.checkpoint import checkpoint

        def ckpt(fn, *args, enabled=True, **kw):
            if enabled:
                return checkpoint(fn, *args, use_reentrant=False, **kw)
            return fn(*args)

        def ckpt2(module, x, on=True):
            return ckpt(module, x, enabled=on)

        def make(layer):
            def run(*inputs):
                return layer(*inputs)
            return run

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.ModuleList([nn.Dropout(0.1), nn.BatchNorm1d(4)])

            def _ck(self, f, x):
                return checkpoint(f, x, use_reentrant=False)

            def forward(self, x):
                for blk in self.blocks:
                    x = ckpt(blk, x)
                    x = ckpt2(blk, x, on=False)
                    x = self._ck(blk, x)
                    x = checkpoint(make(blk), x, use_reentrant=False)
                    x = checkpoint(functools.partial(blk), x, use_reentrant=False)
                return ckpt(lambda t: self.blocks[0](t), x)
        """,
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_programs(name: str, snapshot) -> None:
    found = _answers(textwrap.dedent(PROGRAMS[name]))
    assert _golden(found) == snapshot
    assert _counts(found)["resolved"] >= 5


TREE = {
    "pkg/__init__.py": "from .layers import Block as Block\n",
    "pkg/layers.py": """
        import torch
        from torch import nn
        from torch.utils.checkpoint import checkpoint

        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g

        apply_fn = Fn.apply

        def run_ckpt(fn, *args, on=True):
            if on:
                return checkpoint(fn, *args, use_reentrant=False)
            return fn(*args)

        class Block(nn.Module):
            def __init__(self, dim, drop=0.1):
                super().__init__()
                self.drop = nn.Dropout(drop)
                self.norm = nn.BatchNorm1d(dim)

            def forward(self, x):
                return self.norm(self.drop(x)) + Fn.apply(x) + apply_fn(x)

        def custom(module):
            def forward(*inputs):
                return module(*inputs)
            return forward

        def run_custom(module, *args):
            return checkpoint(custom(module), *args, use_reentrant=False)

        def deep(x):
            return helper_two(x)

        def helper_two(x):
            return nn.functional.dropout(x)
        """,
    "pkg/base.py": """
        from torch import nn
        from .layers import *

        class Base(nn.Module):
            def forward(self, x):
                return self.norm(x) + self.run(x)

            def run(self, x):
                return deep(x)

        class Norm(nn.BatchNorm1d):
            def forward(self, x):
                return super().forward(x) if self.training else x
        """,
    "pkg/model.py": """
        from torch import nn
        from .base import Base, Norm
        from torch.utils.checkpoint import checkpoint
        from .layers import Block, run_ckpt, run_custom, deep, Fn
        from . import layers as L

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.ModuleList([Block(4, drop=0.0) for _ in range(2)])
                self.other = L.Block(4)
                self.derived = Derived()

            def forward(self, x):
                for b in self.blocks:
                    x = checkpoint(b, x, use_reentrant=False)
                    x = run_ckpt(b, x)
                    x = run_ckpt(b, x, on=False)
                    x = run_custom(b, x)
                x = checkpoint(deep, x) + checkpoint(self.other, x) + checkpoint(Fn.apply, x)
                x = checkpoint(self.derived, x) + checkpoint(self.derived.norm, x)
                return checkpoint(lambda t: L.deep(t) + Fn.apply(t), x)

        class Derived(Base):
            def __init__(self):
                super().__init__()
                self.norm = Norm(4)
        """,
}


def test_a_tree_read_through_the_loader(tmp_path: Path, snapshot) -> None:
    """Regions follow classes, functions and helpers imported from another module of the tree
    through ``AstProject`` as they did through libcst's ``Project``."""
    for relative, text in TREE.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    loader = AstProject(Project())
    total: Counter[str] = Counter()
    golden = []

    def shown(file: object) -> str:
        return Path(str(file)).relative_to(tmp_path).as_posix() if Path(str(file)).is_relative_to(tmp_path) else str(file)

    for relative in TREE:
        path = tmp_path / relative
        name, is_package, home = module_name_for(path)
        loader.track(home)
        found = region_answers(path.read_text(encoding="utf-8"), name, is_package, str(path), loader, shown)
        golden.append(f"== {relative}\n{_golden(found)}")
        total.update(_counts(found))
    assert "\n".join(golden) == snapshot
    assert total["sites"] >= 11
    assert total["resolved"] >= 9
    assert total["frames"] >= 20


def test_the_builder_answers_its_other_queries() -> None:
    """``values``, ``receivers``, ``held``, ``method``, ``mro``, ``method_signature`` and a
    region built for a constructed instance, on a module read alone."""
    text = textwrap.dedent(PROGRAMS["depth, recursion, unknown calls, layers, segments, bound arguments"])
    analysis = parse_ast(SourceFile("mod.py", text), "pkg.mod")
    assert analysis is not None
    builder = AstRegionBuilder(None)
    sites = ast_site_index(analysis).sites
    region = builder.region(sites[0], analysis)
    assert builder.region(sites[0], analysis) is region
    assert [frame.via for frame in region.frames][:2] == ["_inner", "_inner -> a"]
    info = region.frames[0].ctx.self_class
    assert info is not None and info.name == "Block"
    assert [one.name for one in builder.mro(info)] == ["Block"]
    method = builder.method(info, "_inner")
    assert method is not None and method[1] is info
    signature = builder.method_signature(builder.values(sites[0].function.value, analysis)[0], "_inner")
    assert signature is not None and signature.keywords == frozenset({"x", "mode", "scale"})
    held = builder.held(builder.values(sites[0].function.value, analysis)[0])
    assert {getattr(v, "qualified", None) for v in held} >= {"torch.nn.Dropout", "torch.nn.BatchNorm1d"}
    assert builder.receivers(sites[0].function.value, "forward", analysis)
    instance = builder.values(sites[0].function.value, analysis)[0]
    assert builder.region(sites[0], analysis, instance) is not region
    assert builder.deep_region(sites[0], analysis).frames


def test_regions_cut_short_by_the_budget(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """With a few steps per query, the builder runs out where libcst's did: the same frames,
    the same calls left unknown, ``ran_out`` set alike."""
    from ckptlint.checkpoint.evaluator import ast_regions

    monkeypatch.setattr(ast_regions, "REGION_BUDGET", 12)
    monkeypatch.setattr(ast_regions, "QUERY_BUDGET", 5)
    texts = [textwrap.dedent(p) for p in PROGRAMS.values()] + [p.values[1] for p in example_params()[:80]]
    check_suite(request, "regions_cut_short", texts, lambda text: _golden(region_answers(text)))
    assert sum(_counts(region_answers(text))["ran out"] for text in texts) >= 5

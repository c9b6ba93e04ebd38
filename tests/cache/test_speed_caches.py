"""Caches added for speed give the same answers as the uncached paths: a
region frame's walk replayed to every rule, and the project's module cache bounds."""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

import pytest

from ckptlint.checkpoint.evaluator.ast_regions import AstRegionBuilder
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.semantic.ast_analysis import parse_ast
from ckptlint.semantic.ast_walk import nodes_of_function as _nodes_of_function
from ckptlint.semantic.project import Project
from ckptlint.text.source import decode_source

SOURCE = """\
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class Block(nn.Module):
    def __init__(self, d, fast=False):
        super().__init__()
        self.fast = fast
        self.ff = nn.Linear(d, d)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        if self.fast:
            return self.ff(x)
        y = self.drop(self.ff(x))
        return torch.relu(y) + torch.rand_like(y)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block(4, fast=False)

    def forward(self, x):
        return checkpoint(self.block, x, use_reentrant=False)
"""


def _analysis():
    analysis = parse_ast(decode_source(SOURCE.encode(), "m.py"), "m")
    assert analysis is not None
    return analysis


def _region():
    analysis = _analysis()
    builder = AstRegionBuilder(None)
    site = ast_site_index(analysis).sites[0]
    return builder, builder.region(site, analysis)


def test_frame_walk_is_replayed_identically() -> None:
    builder, region = _region()
    assert region.frames, "the checkpointed block's forward is a frame"
    for frame in region.frames:
        first = list(frame.nodes())
        again = list(frame.nodes())
        assert [id(n) for n in first] == [id(n) for n in again]
        # the same nodes as an uncached walk with the frame's (memoised) decisions
        uncached = list(_nodes_of_function(frame.function, lambda t, f=frame: builder.decide(t, f.ctx)))
        assert [id(n) for n in first] == [id(n) for n in uncached]
    forward = next(f for f in region.frames if isinstance(f.function, ast.FunctionDef) and f.function.name == "forward")
    returns = [n for n in forward.nodes() if isinstance(n, ast.Return)]
    assert len(returns) == 1  # `if self.fast:` is decided False: its return does not run


def test_interleaved_walks_of_one_frame_agree() -> None:
    analysis = _analysis()
    builder = AstRegionBuilder(None)
    site = ast_site_index(analysis).sites[0]
    region = builder.region(site, analysis)  # its deepest frame's walk has not started yet
    frame = region.frames[-1]
    outer = frame.nodes()
    seen_outer, seen_inner = [], []
    for index, node in enumerate(outer):
        seen_outer.append(node)
        if index == 2:  # a second walk starts while the first is half-way
            seen_inner = list(frame.nodes())
    assert [id(n) for n in seen_outer] == [id(n) for n in seen_inner]


def _files(tmp_path: Path) -> None:
    layers = """\
        from torch import nn
        STEPS = 0
        class Block(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.drop = nn.Dropout(0.1)
            def forward(self, x):
                global STEPS
                STEPS += 1
                return self.drop(x)
    """
    user = """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint
        from .layers import Block
        class Net{n}(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block(4)
            def forward(self, x):
                return checkpoint(self.block, x)
    """
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "layers.py").write_text(textwrap.dedent(layers))
    for n in range(4):
        (tmp_path / "pkg" / f"user{n}.py").write_text(textwrap.dedent(user.format(n=n)))


@pytest.mark.slow
def test_output_same_cold_warm_serial_parallel(tmp_path: Path, run_cli, monkeypatch) -> None:
    _files(tmp_path)
    monkeypatch.chdir(tmp_path)
    args = ("--output-format", "json", "--isolated", "--exit-zero", "--select", "ALL", "pkg")
    cold1 = run_cli(*args, "--no-cache", "--jobs", "1")
    coldn = run_cli(*args, "--no-cache", "--jobs", "2")
    first = run_cli(*args, "--cache-dir", str(tmp_path / "cache"))
    warm = run_cli(*args, "--cache-dir", str(tmp_path / "cache"))
    outputs = [json.loads(r.stdout) for r in (cold1, coldn, first, warm)]
    assert outputs[0], "every user module reports its checkpoint"
    assert {d["filename"].rsplit("/", 1)[-1] for d in outputs[0]} >= {f"user{n}.py" for n in range(4)}
    assert all(o == outputs[0] for o in outputs)


def test_module_cache_bounds_do_not_change_findings(tmp_path: Path, run_cli, monkeypatch) -> None:
    """A cache that evicts after every file (bounds of one module) reports the same as the
    default cache: analyses are re-parsed, never answered from a stale entry."""
    import ckptlint.semantic.project as project_module

    _files(tmp_path)
    monkeypatch.chdir(tmp_path)
    args = ("--output-format", "json", "--isolated", "--exit-zero", "--select", "ALL", "--no-cache", "--jobs", "1", "pkg")
    default = json.loads(run_cli(*args).stdout)
    original = project_module.AstProject.__init__

    def tiny(self, project, **_: object) -> None:
        original(self, project, max_modules=1, max_chars=1)

    monkeypatch.setattr(project_module.AstProject, "__init__", tiny)
    evicting = json.loads(run_cli(*args).stdout)
    assert default and evicting == default


def test_module_cache_default_bounds_hold_a_shared_package() -> None:
    modules = Project().ast_project
    assert modules.max_chars >= 1_000_000 and modules.max_modules >= 128

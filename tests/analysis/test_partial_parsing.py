"""Partial parsing (ckptlint.semantic.index, ckptlint.semantic.project): a region that reaches another module
makes libcst parse only the statements it needs. Output (findings, positions, messages,
fixes) must be exactly that of whole-file parsing, cold or warm, in one process or in a
pool; the counters of ckptlint.perf show the work done."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from test_properties import programs  # the property tests' random programs

from ckptlint import perf
from ckptlint.api import settings_for
from ckptlint.lint import run as lint_run
from ckptlint.lint.results import FixMode
from ckptlint.semantic import index
from ckptlint.semantic.project import Project

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "cases"
SHARED_CASES = ROOT.parent / "shared" / "cases"


@pytest.fixture(autouse=True)
def _partial_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests exercise partial parsing of reached modules too (the ``partial`` parse
    mode); ``CKPTLINT_WHOLE_PARSE=1``, set for the whole-parse side, wins over it."""
    monkeypatch.setenv("CKPTLINT_PARSE", "partial")


LAYERS = """\
    import random
    from torch import nn
    import torch.nn.functional as F
    from .util import *  # noqa: F403

    STEPS = 0
    _SEEN = []
    a = 1; b = 2


    def bump():
        _SEEN.append(1)


    HELP = '''
    class Fake:
        pass
    '''


    class Base(nn.Module):
        def helper(self, x):
            return F.dropout(x, 0.1, self.training)


    class Block(Base):
        def __init__(self, d, use_norm=True):
            super().__init__()
            self.ff = nn.Linear(d, d)
            self.drop = nn.Dropout(0.1)
            self.use_norm = use_norm
            self.norm = nn.BatchNorm1d(d)

        def forward(self, x):
            global STEPS
            STEPS += 1
            if self.use_norm:
                x = self.norm(x)
            _SEEN.append(x)
            return self.helper(self.drop(self.ff(x))) * random.random()


    class Quiet(nn.Module):
        def __init__(self, d, flag=False):
            super().__init__()
            self.flag = flag
            self.norm = nn.BatchNorm1d(d)

        def forward(self, x):
            if self.flag:
                return self.norm(x)
            return x


    def switch(m):
        m.flag = True


    class Unused(nn.Module):
        def forward(self, x):
            return undefined_helper(x)


    def make(d):
        return Block(d)
"""

UTIL = """\
    import torch

    def noisy(x):
        return x + torch.randn_like(x)

    def unused():
        return 1
"""

MODEL = """\
    import torch
    from torch import nn
    from torch.utils.checkpoint import checkpoint

    import pkg.layers as L
    from .layers import Block, Quiet, make
    from . import layers


    class Model(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.block = Block(d)
            self.quiet = Quiet(d)
            self.made = make(d)
            self.other = L.Block(d, use_norm=False)
            self.mod = layers.Quiet(d, flag=True)

        def forward(self, x):
            x = checkpoint(self.block, x)
            x = checkpoint(self.quiet, x, use_reentrant=True)
            x = checkpoint(self.made, x)
            x = checkpoint(self.other, x, use_reentrant=False)
            x = checkpoint(self.mod, x)
            x = checkpoint(layers.noisy, x, use_reentrant=False)
            return x
"""


def _tree(tmp_path: Path, model: str = MODEL) -> list[Path]:
    files = {"pkg/__init__.py": "", "pkg/layers.py": LAYERS, "pkg/util.py": UTIL, "pkg/model.py": model}
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return sorted(tmp_path.rglob("*.py"))


def _output(files: list[Path], jobs: int = 1, fix: FixMode = FixMode.NONE) -> list[tuple]:
    settings = settings_for(["ALL"])
    run = lint_run.lint_files(files, lambda path: settings, jobs=jobs, fix=fix, unsafe_for=lambda s: True)
    out = []
    for d in run.diagnostics:
        edits = tuple((e.start, e.end, e.content) for e in d.fix.edits) if d.fix is not None else None
        out.append((d.code, d.path, d.start, d.end, d.message, edits))
    out += [("problem", p.path, p.message) for p in run.problems]
    out += [("fixed", r.path, r.fixed_text) for r in run.results if r.fixed_text is not None]
    return out


def _both(monkeypatch: pytest.MonkeyPatch, files: list[Path], **kwargs) -> tuple[list, list]:
    index._CACHE.clear()
    monkeypatch.setenv("CKPTLINT_WHOLE_PARSE", "1")
    whole = _output(files, **kwargs)
    monkeypatch.delenv("CKPTLINT_WHOLE_PARSE")
    index._CACHE.clear()
    partial = _output(files, **kwargs)
    return whole, partial


def test_tree_findings_identical_whole_and_partial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _tree(tmp_path)
    before = perf.snapshot()
    whole, partial = _both(monkeypatch, files)
    assert partial == whole
    assert any(row[1].endswith("layers.py") for row in whole if row[0] != "problem")  # findings in the other file
    counts = perf.delta(before)
    assert counts.get("files_parsed_partial", 0) > 0


def test_tree_fixes_identical_whole_and_partial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _tree(tmp_path)
    whole, partial = _both(monkeypatch, files, fix=FixMode.DIFF)
    assert partial == whole
    assert any(row[0] == "fixed" for row in whole)


def test_two_workers_and_warm_index_give_the_same_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _tree(tmp_path)
    monkeypatch.setenv("CKPTLINT_WHOLE_PARSE", "1")
    whole = _output(files)
    monkeypatch.delenv("CKPTLINT_WHOLE_PARSE")
    index._CACHE.clear()
    cold = _output(files)
    before = perf.snapshot()
    warm = _output(files)  # a fresh project, the index cached
    assert perf.delta(before).get("index_hits", 0) > 0
    pooled = _output(files, jobs=2)
    assert cold == warm == pooled == whole


def test_a_region_reaching_more_names_reparses_and_reruns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _tree(tmp_path)
    whole, partial = _both(monkeypatch, [f for f in files if f.name == "model.py"])
    assert partial == whole


def test_partial_parse_keeps_real_positions(tmp_path: Path) -> None:
    files = _tree(tmp_path)
    layers = next(f for f in files if f.name == "layers.py")
    project = Project([tmp_path], partial=True)
    analysis = project.analysis_for_file_names(layers, ["Quiet"])
    assert analysis is not None and analysis.covered is not None
    names = [type(s).__name__ for s in analysis.module.body]
    assert len(names) < 12  # Block, bump, make, Unused... left out
    text = layers.read_text()
    whole = Project([tmp_path], partial=False).analysis_for_file(layers)
    assert whole is not None and whole.covered is None
    ranges = {whole.module.code_for_node(s).strip(): whole.range(s) for s in whole.module.body}
    for statement in analysis.module.body:
        assert analysis.range(statement) == ranges[analysis.module.code_for_node(statement).strip()]
        start, end = analysis.offsets(statement)
        assert text[start:end] == analysis.text_of(statement)
    quiet = next(s for s in analysis.module.body if getattr(getattr(s, "name", None), "value", "") == "Quiet")
    row = text.splitlines().index("class Quiet(nn.Module):") + 1
    assert analysis.range(quiet)[0] == (row, 1)
    # `m.flag = True` in `switch`, not parsed, is known as an attribute write elsewhere
    assert "flag" in analysis.unparsed_attribute_writes


def test_module_variable_pulls_in_every_statement_that_mentions_it() -> None:
    found = index.build_index(textwrap.dedent(LAYERS))
    assert found is not None
    chosen, covered = found.select({"Block"})
    kept = {n for i in chosen for n in found.statements[i].binds}
    assert {"Block", "Base", "STEPS", "_SEEN", "bump", "random", "nn", "F"} <= kept
    assert "Quiet" not in kept and "Unused" not in kept and "make" not in kept
    assert "Block" in covered


def test_odd_line_breaks_are_not_indexed() -> None:
    assert index.build_index("x = 1\x0cy = 2\n") is None
    assert index.build_index("x = 1\ry = 2\n") is None
    assert index.build_index("x = (\n") is None


def _cases() -> list[Path]:
    found = sorted(p for p in CASES.glob("*.py") if not p.name.endswith(".fixed.py"))
    if SHARED_CASES.is_dir():
        found += sorted(p for p in SHARED_CASES.glob("*.py") if not p.name.endswith(".fixed.py"))
    return found


@pytest.mark.parametrize("case", _cases(), ids=lambda p: f"{p.parent.parent.name}-{p.name}")
def test_cases_identical_whole_and_partial(case: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each case as a module of a package beside the layers above (``from .layers import *``
    makes its names reach into them), fixed and not."""
    files = _tree(tmp_path, "from .layers import *  # noqa: F403\n" + case.read_text(encoding="utf-8"))
    target = [f for f in files if f.name == "model.py"]
    whole, partial = _both(monkeypatch, target, fix=FixMode.DIFF)
    assert partial == whole


def test_perf_json_written_by_the_cli(tmp_path: Path, run_cli) -> None:
    files = _tree(tmp_path)
    target = tmp_path / "perf.json"
    result = run_cli("--no-cache", "--isolated", "--exit-zero", "-j1", str(tmp_path / "pkg"), env={"CKPTLINT_PERF_JSON": str(target)})
    assert result.exit_code == 0, result.stderr
    counts = json.loads(target.read_text())
    assert set(perf.KEYS) <= set(counts)
    assert counts["files_linted"] == 1  # only model.py mentions checkpoint
    assert counts["files_parsed_whole"] >= 1 and counts["files_parsed_partial"] >= 1
    assert counts["statements_parsed"] > 0
    assert len(files) == 4


PROPERTY_BUDGET = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)


@pytest.mark.slow
@PROPERTY_BUDGET
@given(program=programs())
def test_property_programs_identical_whole_and_partial(program: str, tmp_path_factory, monkeypatch) -> None:
    """The property tests' random programs, as a module beside the layers above."""
    folder = tmp_path_factory.mktemp("prop")
    files = _tree(folder, "from .layers import *  # noqa: F403\nfrom .layers import Block as block\n" + program)
    target = [f for f in files if f.name == "model.py"]
    try:
        whole, partial = _both(monkeypatch, target, fix=FixMode.DIFF)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert partial == whole


def test_file_budget_cuts_regions_off_to_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the per-file evaluation budget every region is unknown: fewer findings, never
    new ones, and no error."""
    from ckptlint.checkpoint.evaluator import ast_regions, regions
    from ckptlint.rule_codes import REGION_RULES

    files = _tree(tmp_path)
    full = _output(files)
    monkeypatch.setattr(regions, "FILE_BUDGET", 0)
    monkeypatch.setattr(ast_regions, "FILE_BUDGET", 0)
    cut = _output(files)
    assert not any(row[0] == "problem" for row in cut)
    assert set(cut) <= set(full)
    assert any(row[0] in REGION_RULES for row in full)
    assert not any(row[0] in REGION_RULES for row in cut)

"""The counters of :mod:`ckptlint.perf`, written by the command line: the linted file and the
modules its regions reach are parsed with CPython's ``ast`` once each; libcst parses only the
statement around a fix's edit, and only in a run that shows or applies edits."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from ckptlint import perf

MODEL = """\
    import torch
    from torch.utils.checkpoint import checkpoint

    from .layers import Block


    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()

        def forward(self, x):
            return checkpoint(self.block, x)
"""

LAYERS = """\
    import torch


    class Block(torch.nn.Module):
        def forward(self, x):
            return x * 2
"""


def _tree(root: Path) -> Path:
    package = root / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "model.py").write_text(textwrap.dedent(MODEL))
    (package / "layers.py").write_text(textwrap.dedent(LAYERS))
    (package / "notes.py").write_text("x = 1\n")
    return package


def _counts(run_cli, tmp_path: Path, *options: str) -> dict[str, int]:
    package = _tree(tmp_path)
    target = tmp_path / "perf.json"
    result = run_cli("--no-cache", "--isolated", "--exit-zero", "-j1", *options, str(package), env={"CKPTLINT_PERF_JSON": str(target)})
    assert result.exit_code == 0, result.stderr
    counts = json.loads(target.read_text())
    assert set(counts) == set(perf.KEYS)
    return counts


def test_a_plain_run_parses_with_ast_only(tmp_path: Path, run_cli) -> None:
    counts = _counts(run_cli, tmp_path)
    assert counts["files_linted"] == 1  # only model.py mentions checkpoint
    assert counts["ast_parses"] == 2  # model.py, and layers.py, which its region reaches
    chars = sum(len(textwrap.dedent(text)) for text in (MODEL, LAYERS))
    assert counts["ast_chars_parsed"] == chars


def test_a_plain_run_parses_nothing_with_libcst(tmp_path: Path, run_cli) -> None:
    """The finding's fix is known (it counts as fixable), its edits are never built."""
    counts = _counts(run_cli, tmp_path)
    assert counts["cst_parses"] == 0 and counts["cst_chars_parsed"] == 0


@pytest.mark.parametrize("options", [("--output-format", "json"), ("--output-format", "full"), ("--fix",)], ids=["json", "full", "fix"])
def test_a_run_that_shows_or_applies_edits_builds_them(tmp_path: Path, run_cli, options: tuple[str, ...]) -> None:
    counts = _counts(run_cli, tmp_path, "--unsafe-fixes", *options)
    assert counts["cst_parses"] >= 1


def test_a_fix_parses_the_statement_around_it_with_libcst(tmp_path: Path, run_cli) -> None:
    counts = _counts(run_cli, tmp_path, "--diff")
    assert counts["cst_parses"] >= 1
    assert 0 < counts["cst_chars_parsed"] < len(textwrap.dedent(MODEL))


def _rules_sources() -> list[Path]:
    import ckptlint.rules

    return sorted(Path(ckptlint.rules.__file__).parent.glob("*.py"))


def test_no_rule_module_imports_libcst_when_it_is_imported() -> None:
    """libcst is imported by the fix writer alone (``rules/edits.py``), inside the functions
    that build edits; every other module of the rules package never names it."""
    import ast

    for path in _rules_sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if not any(name.split(".")[0] == "libcst" for name in names):
                continue
            assert path.name == "edits.py", f"{path.name} imports libcst"
            assert node not in tree.body, "edits.py imports libcst at module level"


PLAIN_RUN = """
import sys
from ckptlint.cli.app import main
try:
    main(["--no-cache", "--isolated", "--exit-zero", "-j1", sys.argv[1]])
except SystemExit:
    pass
print(sorted(name for name in sys.modules if name.split(".")[0] == "libcst")[:1])
"""


def test_a_plain_run_with_a_finding_imports_no_libcst(tmp_path: Path) -> None:
    import subprocess
    import sys

    model = tmp_path / "model.py"
    model.write_text("from torch.utils.checkpoint import checkpoint\n\ndef f(block, x):\n    return checkpoint(block, x)\n")
    done = subprocess.run([sys.executable, "-c", PLAIN_RUN, str(model)], capture_output=True, text=True, timeout=120, check=True)
    assert "CKP001" in done.stdout
    assert done.stdout.rstrip().endswith("[]")


def test_the_cache_of_a_plain_run_holds_no_edits(tmp_path: Path, run_cli) -> None:
    """A plain run stores its findings without edits: another plain run reuses them, a run
    that prints edits lints again (building them) and stores them for both."""
    package = _tree(tmp_path)
    target = tmp_path / "perf.json"

    def run(*options: str) -> dict[str, int]:
        result = run_cli("--isolated", "--exit-zero", "-j1", *options, str(package), cwd=tmp_path, env={"CKPTLINT_PERF_JSON": str(target)})
        assert result.exit_code == 0, result.stderr
        return json.loads(target.read_text())

    assert [(c["files_linted"], c["cst_parses"]) for c in (run(), run())] == [(1, 0), (0, 0)]
    json_run = run("--output-format", "json", "--unsafe-fixes")
    assert json_run["files_linted"] == 1 and json_run["cst_parses"] >= 1
    assert [(c["files_linted"], c["cst_parses"]) for c in (run("--output-format", "json"), run())] == [(0, 0), (0, 0)]

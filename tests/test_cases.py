"""Annotated case programs, checked with ``check_cases.py`` through ``python -m ckptlint``.

``tests/cases/`` holds copies of every shared case (programs built from public bug reports;
a line that must be reported ends in ``# expect: CODE``, a file without markers must produce
nothing, ``NAME.fixed.py`` is the exact output of ``--fix --unsafe-fixes``) as regression
tests. ``tests/tools/check_cases.py`` is a copy of the shared tool. When the shared folder is
present (``../shared`` next to the project), its current cases are checked too.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "tests" / "cases"
TOOL = ROOT / "tests" / "tools" / "check_cases.py"
SHARED = ROOT.parent / "shared"
CKPTLINT = f"{shlex.quote(sys.executable)} -m ckptlint"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _check(tool: Path, files: list[Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(tool), "--ckptlint", CKPTLINT, *map(str, files)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(),
        timeout=300,
    )


def _cases(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.py") if not p.name.endswith(".fixed.py"))


@pytest.mark.slow
def test_regression_cases_hold() -> None:
    cases = _cases(CASES)
    proc = _check(TOOL, cases)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = proc.stdout.splitlines()[-1]
    assert summary.startswith(f"cases: {len(cases)} files, ")
    assert summary.endswith(" 0 missed, 0 unexpected, 0 fixes differ")


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "cases").is_dir(), reason="the shared cases are not available")
def test_shared_cases_hold() -> None:
    proc = _check(SHARED / "tools" / "check_cases.py", [SHARED / "cases"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1].endswith(" 0 missed, 0 unexpected, 0 fixes differ")

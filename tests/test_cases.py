"""Annotated case programs, checked with the shared ``check_cases.py`` through
``python -m ckptlint``.

``tests/cases/`` holds copies of the shared cases about CKP001 (``case_01``, ``02``, ``04``,
``07`` and the negative controls ``23``, ``24``) as regression tests; they are checked for
CKP001/CKP999 only, so rules not written yet do not fail them. ``tests/tools/check_cases.py``
is a copy of ``/work/shared/tools/check_cases.py``. When the shared folder is present, every
shared case is checked for CKP001 too.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "tests" / "cases"
TOOL = ROOT / "tests" / "tools" / "check_cases.py"
SHARED = Path("/work/shared")
CKPTLINT = f"{shlex.quote(sys.executable)} -m ckptlint"

#: Shared cases whose CKP001 result waits for another rule: the case expects that rule to
#: claim the call (and CKP001 to stay quiet on it).
PENDING = {
    "case_21.py": "CKP301 checkpoint-used-as-save (issue 3) is not written: CKP001 reports the save call",
}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def check_cases(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(TOOL), "--ckptlint", CKPTLINT, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(),
        timeout=300,
    )


def test_regression_cases_hold() -> None:
    proc = check_cases("--codes", "CKP001,CKP999", str(CASES))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == (
        "cases: 6 files, 4 expected findings hit, 0 missed, 0 unexpected, 0 fixes differ"
    )


@pytest.mark.parametrize("fixed", sorted(CASES.glob("*.fixed.py")), ids=lambda p: p.name)
def test_regression_cases_fix_exactly(tmp_path: Path, fixed: Path) -> None:
    # check_cases skips the .fixed.py comparison under --codes; do it here, as it does.
    case = fixed.with_name(fixed.name.replace(".fixed.py", ".py"))
    copy = tmp_path / case.name
    shutil.copyfile(case, copy)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ckptlint",
            "--fix",
            "--unsafe-fixes",
            "--isolated",
            "--no-cache",
            "--exit-zero",
            str(copy),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert copy.read_bytes() == fixed.read_bytes()


def _shared_cases() -> list[Path]:
    folder = SHARED / "cases"
    return sorted(p for p in folder.glob("*.py") if not p.name.endswith(".fixed.py")) if folder.is_dir() else []


@pytest.mark.skipif(not (SHARED / "cases").is_dir(), reason="the shared cases are not available")
def test_shared_cases_for_ckp001() -> None:
    files = [str(p) for p in _shared_cases() if p.name not in PENDING]
    proc = subprocess.run(
        [sys.executable, str(SHARED / "tools" / "check_cases.py"), "--ckptlint", CKPTLINT, "--codes", "CKP001", *files],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert " 0 missed, 0 unexpected, 0 fixes differ" in proc.stdout.splitlines()[-1]


@pytest.mark.skipif(not (SHARED / "cases").is_dir(), reason="the shared cases are not available")
@pytest.mark.parametrize("name", sorted(PENDING))
def test_shared_cases_pending_another_rule(name: str) -> None:
    if not (SHARED / "cases" / name).is_file():
        pytest.skip(f"{name} is gone from the shared cases")
    proc = subprocess.run(
        [
            sys.executable,
            str(SHARED / "tools" / "check_cases.py"),
            "--ckptlint",
            CKPTLINT,
            "--codes",
            "CKP001",
            str(SHARED / "cases" / name),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(),
        timeout=120,
    )
    if proc.returncode != 0:
        pytest.xfail(PENDING[name])
    # once the other rule lands this passes: drop the entry from PENDING
    pytest.fail(f"{name} now holds for CKP001: remove it from PENDING")

"""The project's own checks: ``.ci/run`` runs ruff and mypy after the README's test command and
fails when either fails."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CI = ROOT / ".ci" / "run"


def _readme_test_command() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return next(c for c in re.findall(r"```bash\n(.*?)\n```", readme, re.DOTALL) if "pytest" in c).strip()


def test_ci_runs_ruff_and_mypy_after_the_readme_test_command() -> None:
    lines = [line.strip() for line in CI.read_text(encoding="utf-8").splitlines()]
    tests = lines.index(_readme_test_command())
    install = lines.index('pip install -e ".[lint]"')
    ruff = next(i for i, line in enumerate(lines) if line.startswith("ruff check ."))
    mypy = next(i for i, line in enumerate(lines) if line.startswith("mypy"))
    assert tests < install < ruff < mypy


@pytest.mark.parametrize(("ruff_status", "mypy_status", "expected"), [(0, 0, 0), (1, 0, 1), (0, 1, 1), (1, 1, 1)])
def test_ci_fails_when_ruff_or_mypy_fails(tmp_path: Path, ruff_status: int, mypy_status: int, expected: int) -> None:
    # the lines of .ci/run after the test command, with pip, ruff and mypy replaced by
    # programs that record their call and exit with the given status
    lines = CI.read_text(encoding="utf-8").splitlines()
    checks = lines[lines.index(_readme_test_command()) + 1 :]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    for name, status in (("pip", 0), ("ruff", ruff_status), ("mypy", mypy_status)):
        stub = bin_dir / name
        stub.write_text(f'#!/bin/sh\necho {name} "$@" >> "{calls}"\nexit {status}\n', encoding="utf-8")
        stub.chmod(0o755)
    script = tmp_path / "checks.sh"
    script.write_text("set -euo pipefail\n" + "\n".join(checks) + "\n", encoding="utf-8")
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.run(["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode == expected, proc.stdout + proc.stderr
    assert calls.read_text(encoding="utf-8").splitlines() == ["pip install -e .[lint]", "ruff check .", "mypy"]

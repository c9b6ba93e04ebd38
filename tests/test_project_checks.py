"""The project's own checks: ``.ci/run`` runs ruff and mypy after the README's test command and
fails when either fails; ``.pre-commit-config.yaml`` runs the same pinned tools and refuses a
commit subject over 72 characters (``scripts/commit_subject.py``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
CI = ROOT / ".ci" / "run"
HOOK = ROOT / "scripts" / "commit_subject.py"


def _readme_test_command() -> str:
    """The line of the README's test block that runs pytest (the block's first line, the CPU
    torch wheel, is the set-up a CI machine with that wheel on disk does without)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = next(c for c in re.findall(r"```bash\n(.*?)\n```", readme, re.DOTALL) if "pytest" in c)
    return next(line.strip() for line in block.splitlines() if "pytest" in line)


def _lint_pins() -> dict[str, str]:
    """``{"ruff": "0.17.6", "mypy": ...}`` from the ``lint`` extra of pyproject.toml."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return dict(pin.split("==") for pin in project["optional-dependencies"]["lint"])


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


def test_pre_commit_config_runs_the_pinned_ruff_and_mypy_and_the_subject_hook() -> None:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    repos = {repo["repo"]: repo for repo in config["repos"]}
    ruff = repos["https://github.com/astral-sh/ruff-pre-commit"]
    assert ruff["rev"] == "v" + _lint_pins()["ruff"]
    assert [hook["id"] for hook in ruff["hooks"]] == ["ruff-check"]
    local = {hook["id"]: hook for hook in repos["local"]["hooks"]}
    assert local["mypy"]["entry"] == "mypy" and local["mypy"]["pass_filenames"] is False
    subject = local["commit-subject"]
    assert subject["stages"] == ["commit-msg"]
    assert subject["entry"] == f"python {HOOK.relative_to(ROOT).as_posix()}"


def _hook(tmp_path: Path, message: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "COMMIT_EDITMSG"
    path.write_text(message, encoding="utf-8")
    return subprocess.run([sys.executable, str(HOOK), str(path)], capture_output=True, text=True, timeout=30)


def test_commit_subject_hook_takes_a_short_subject_with_a_long_body(tmp_path: Path) -> None:
    body = "Details of any length go in the body. " * 5
    proc = _hook(tmp_path, f"Fix the cache key of partial parses\n\n{body}\n")
    assert proc.returncode == 0, proc.stderr


def test_commit_subject_hook_takes_exactly_72_characters(tmp_path: Path) -> None:
    assert _hook(tmp_path, "x" * 72 + "\n").returncode == 0


def test_commit_subject_hook_refuses_a_subject_over_72_characters(tmp_path: Path) -> None:
    subject = "Sites: split collect_sites into named steps and type the project as a loader"
    assert len(subject) == 76
    proc = _hook(tmp_path, f"{subject}\n\nbody\n")
    assert proc.returncode == 1
    assert "commit subject is 76 characters; at most 72" in proc.stderr


def test_commit_subject_hook_skips_blank_and_comment_lines_before_the_subject(tmp_path: Path) -> None:
    comment = "# Please enter the commit message for your changes. Lines starting with '#' are ignored."
    assert _hook(tmp_path, f"\n{comment}\nShort subject\n").returncode == 0
    assert _hook(tmp_path, f"\n{comment}\n{'y' * 73}\n").returncode == 1

"""The pre-commit hooks of this repository, run by the real ``pre-commit try-repo`` against a
temporary git repository: ``ckptlint`` fails on a bad file and passes on a clean one;
``ckptlint-fix`` fixes the file and fails because it changed it.

pre-commit builds a virtual environment and pip-installs this project into it (from the
package registry), so this test takes tens of seconds; it is marked ``slow`` but runs in the
normal suite. ``try-repo`` includes the uncommitted changes to tracked files of this checkout.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
IMPORT = "from torch.utils.checkpoint import checkpoint\n"
FIXABLE = IMPORT + "y = checkpoint(block, x, mask=mask)\n"  # a safe fix: function keywords
CLEAN = IMPORT + "y = checkpoint(block, x, use_reentrant=False)\n"


def _is_git_checkout(path: Path) -> bool:
    proc = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=path, capture_output=True, text=True)
    return proc.returncode == 0 and Path(proc.stdout.strip()).resolve() == path.resolve()


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("pre_commit") is None, reason="pre-commit is not installed"),
    pytest.mark.skipif(not _is_git_checkout(ROOT), reason="this checkout is not a git repository"),
]


def try_repo(repo: Path, *files: str, home: Path) -> subprocess.CompletedProcess[str]:
    """Run every hook of this repository (``ckptlint``, then ``ckptlint-fix``) on ``files``.
    Each ``try-repo`` installs the project into a fresh environment (about 12 s), so the
    test makes two calls."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHONPATH", "VIRTUAL_ENV", "PRE_COMMIT"))}
    env["PRE_COMMIT_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "--files", *files],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _hook_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("ckptlint") and line.endswith(("Passed", "Failed"))]


def test_pre_commit_hooks(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "bad.py").write_text(FIXABLE)
    (repo / "clean.py").write_text(CLEAN)
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    home = tmp_path / "pre-commit-home"

    clean = try_repo(repo, "clean.py", home=home)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert [line.split(".")[0] + " " + line.split(".")[-1] for line in _hook_lines(clean.stdout)] == [
        "ckptlint Passed",
        "ckptlint (fix) Passed",
    ]
    assert (repo / "clean.py").read_text() == CLEAN

    bad = try_repo(repo, "bad.py", home=home)
    assert bad.returncode != 0, bad.stdout + bad.stderr
    assert [line.split(".")[0] + " " + line.split(".")[-1] for line in _hook_lines(bad.stdout)] == [
        "ckptlint Failed",
        "ckptlint (fix) Failed",
    ]
    # the check hook names the finding; the fix hook fixes it and fails because it changed the file
    assert "bad.py:2:5: CKP001 [*] `checkpoint()` without `use_reentrant`" in bad.stdout
    assert "Found 1 error (1 fixed, 0 remaining)." in bad.stdout
    assert "- files were modified by this hook" in bad.stdout
    assert (repo / "bad.py").read_text() == IMPORT + "y = checkpoint(block, x, mask=mask, use_reentrant=False)\n"

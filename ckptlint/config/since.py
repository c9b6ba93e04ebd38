"""``--since REV``: the Python files changed since a git revision, for pull requests on large
repositories.

"Changed since REV" means changed between the merge base of ``REV`` and ``HEAD`` (so that
``--since origin/main`` on a branch ignores what landed on main meanwhile; for an ancestor of
``HEAD`` such as ``HEAD~3`` the merge base is ``REV`` itself) and the working tree: committed
since, staged and unstaged changes, plus untracked files that are not ignored. Deleted files
are left out. The git command line is run with :mod:`subprocess` (``git diff --name-only -z``,
``git ls-files --others --exclude-standard -z``).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

__all__ = ["GitError", "changed_python_files"]

PYTHON_SUFFIXES = (".py", ".pyi", ".ipynb")  # notebooks: dropped later when turned off


class GitError(Exception):
    """Not inside a git repository, git missing, or an unknown revision (exit code 2)."""


def _git(args: list[str], cwd: Path) -> str:
    try:
        completed = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="surrogateescape",
            check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"},
        )
    except FileNotFoundError:
        raise GitError("--since needs git, which is not installed (or not on PATH)") from None
    if completed.returncode != 0:
        raise GitError(
            completed.stderr.strip().splitlines()[-1] if completed.stderr.strip() else f"git {args[0]} failed"
        )
    return completed.stdout


def changed_python_files(revision: str, cwd: Path) -> list[Path]:
    """Absolute paths of the ``.py``/``.pyi``/``.ipynb`` files changed since ``revision`` that exist now,
    sorted. Raises :class:`GitError` with a one-line message outside a repository or for a
    revision git does not know."""
    try:
        top = Path(_git(["rev-parse", "--show-toplevel"], cwd).strip())
    except GitError:
        raise GitError(f"--since {revision}: {cwd} is not inside a git repository") from None
    try:
        _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}"], cwd)
    except GitError:
        raise GitError(f"--since {revision}: unknown git revision `{revision}`") from None
    try:
        base = _git(["merge-base", revision, "HEAD"], cwd).strip()
    except GitError as exc:
        raise GitError(f"--since {revision}: no common ancestor with HEAD ({exc})") from None
    names = _git(["diff", "--name-only", "-z", "--no-renames", "--diff-filter=d", base, "--"], top).split("\0")
    names += _git(["ls-files", "--others", "--exclude-standard", "-z"], top).split("\0")
    files = set()
    for name in names:
        if not name.endswith(PYTHON_SUFFIXES):
            continue
        path = top / name
        if path.is_file():
            files.add(Path(os.path.abspath(path)))
    return sorted(files)

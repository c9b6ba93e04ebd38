"""Which files git tracks, so that a ``.gitignore`` pattern never skips one: git itself keeps
tracking a file that a later ``.gitignore`` pattern matches (``git add -f``, or a pattern added
after the file), so the file ships with the project and is linted.

One ``git ls-files -z`` per repository, asked only when a ``.gitignore`` pattern matches a path
below it, with a time limit (:data:`GIT_TIMEOUT`). Without git, outside a repository, when git
fails (a repository owned by another user, a broken index) or takes too long, nothing counts as
tracked: ``.gitignore`` patterns apply as they read.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

__all__ = ["GIT_TIMEOUT", "TrackedFiles"]

#: Seconds ``git ls-files`` may take (a repository of 100,000 files lists in well under one).
GIT_TIMEOUT = 10.0


class TrackedFiles:
    """The files (and the folders holding them) git tracks, per repository root.

    Args:
        timeout: seconds one ``git ls-files`` may take.
    """

    def __init__(self, timeout: float = GIT_TIMEOUT) -> None:
        self.timeout = timeout
        self._by_repository: dict[Path, tuple[frozenset[str], frozenset[str]] | None] = {}
        self.git_calls = 0

    def is_tracked(self, repository: Path, relative: str, is_dir: bool) -> bool:
        """Whether git tracks the file ``relative`` (``/``-separated, relative to the work tree
        ``repository``, which holds ``.git``), or for a folder, a file below it."""
        listed = self._listed(repository)
        if listed is None:
            return False
        files, folders = listed
        return relative.rstrip("/") in (folders if is_dir else files)

    def _listed(self, repository: Path) -> tuple[frozenset[str], frozenset[str]] | None:
        if repository not in self._by_repository:
            self._by_repository[repository] = self._ls_files(repository)
        return self._by_repository[repository]

    def _ls_files(self, repository: Path) -> tuple[frozenset[str], frozenset[str]] | None:
        """(tracked files, folders holding one) from ``git ls-files -z``, or ``None``."""
        self.git_calls += 1
        try:
            completed = subprocess.run(
                ["git", "-C", str(repository), "ls-files", "-z"],
                capture_output=True,
                timeout=self.timeout,
                check=False,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"},
            )
        except (OSError, subprocess.SubprocessError):  # no git, or too slow
            return None
        if completed.returncode != 0:
            return None
        files = {os.fsdecode(name) for name in completed.stdout.split(b"\0") if name}
        folders = set()
        for name in files:
            parts = name.split("/")[:-1]
            for end in range(len(parts), 0, -1):
                folder = "/".join(parts[:end])
                if folder in folders:
                    break
                folders.add(folder)
        return frozenset(files), frozenset(folders)

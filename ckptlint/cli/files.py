"""Which files a run lints: discovery below the paths given, or the files changed ``--since`` a revision."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ckptlint.cli.common import EXIT_ERROR, error

if TYPE_CHECKING:
    from ckptlint.config.discovery import DiscoveryResult
    from ckptlint.config.files import SettingsResolver

__all__ = ["changed_since"]


def changed_since(revision: str, paths: list[Path], resolver: SettingsResolver, cwd: Path) -> DiscoveryResult:
    """``--since``: the changed Python files below ``paths`` (default: everywhere), with
    excludes and .gitignore applied as if each were named with --force-exclude."""
    from ckptlint.config.discovery import DiscoveryResult, discover
    from ckptlint.config.since import GitError, changed_python_files

    repository = cwd
    if paths and os.path.lexists(paths[0]):
        first = Path(os.path.abspath(paths[0]))
        repository = first if first.is_dir() else first.parent
    try:
        changed = changed_python_files(revision, repository)
    except GitError as exc:
        error(str(exc))
        sys.exit(EXIT_ERROR)
    if paths:
        missing = [p for p in paths if not os.path.lexists(p)]
        if missing:
            error(f"{missing[0]}: no such file or directory")
            sys.exit(EXIT_ERROR)
        roots = [Path(os.path.realpath(p)) for p in paths]
        changed = [f for f in changed if any(f == r or r in f.parents for r in roots)]
    if not changed:
        return DiscoveryResult()
    return discover(changed, resolver, force_exclude=True)

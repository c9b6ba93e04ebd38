"""Linting source read from stdin (path ``-``, ``--stdin-filename``)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ckptlint.cli.common import EXIT_ERROR, binary, error

if TYPE_CHECKING:
    from ckptlint.config.files import SettingsResolver
    from ckptlint.config.settings import Settings
    from ckptlint.lint.results import FixMode, RunResult

__all__ = ["lint_stdin", "read_stdin"]


def read_stdin() -> bytes:
    """The bytes of stdin; a closed or unreadable stdin is one ``error:`` line and exit
    status 2 (``SystemExit``)."""
    if sys.stdin is None:  # the process was started with stdin closed
        error("cannot read stdin: it is closed")
        sys.exit(EXIT_ERROR)
    try:
        return binary(sys.stdin).read()
    except (OSError, ValueError) as exc:  # ValueError: a closed file object
        error(f"cannot read stdin: {getattr(exc, 'strerror', None) or exc}")
        sys.exit(EXIT_ERROR)


def lint_stdin(
    path: Path | None,
    resolver: SettingsResolver,
    mode: FixMode,
    unsafe: Callable[[Settings], bool],
    force_exclude: bool | None,
) -> tuple[RunResult, bool]:
    """Lint the bytes of stdin as the file ``path`` (``None``: named ``-``, settings of the
    working directory). Returns ``(run, excluded)``; an excluded path (with force-exclude)
    prints nothing, or the source unchanged under --fix."""
    from ckptlint.config.discovery import (
        _excluded_anywhere,
        _GitIgnores,
        _repository_chain,
    )
    from ckptlint.lint.linter import FileLinter
    from ckptlint.lint.results import FixMode, RunResult

    raw = read_stdin()
    settings = resolver.for_path(path if path is not None else Path.cwd())
    if path is not None and (force_exclude or settings.force_exclude):
        ignored = settings.respect_gitignore and _GitIgnores().ignored(path, False, _repository_chain(path.parent))
        if _excluded_anywhere(path, settings) or ignored:
            if mode is FixMode.APPLY:
                sys.stdout.flush()
                binary(sys.stdout).write(raw)
            return RunResult([]), True
    name = str(path) if path is not None else "-"
    result = FileLinter().lint(name, raw, settings, fix=mode, unsafe=unsafe(settings), gate=True)
    return RunResult([result]), False

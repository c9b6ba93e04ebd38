"""Linting an editor's buffer (no pygls import): what the server publishes for one document.

The command line reports a file it could not check as CKP902 (too large, too deeply nested,
a lint that ran out of time or failed); the server publishes the same diagnostic at the
document's first character, so that an unchecked document never looks clean. A buffer that
holds a lone surrogate (JSON allows ``"\\ud800"``, Unicode text does not) cannot be encoded
as UTF-8 and is reported the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ckptlint.lint.results import FileResult, ProblemKind, io_error
from ckptlint.text.source import SourceFile

if TYPE_CHECKING:
    from ckptlint.config.settings import Settings
    from ckptlint.lint.linter import FileLinter

__all__ = ["lint_buffer"]


def lint_buffer(linter: FileLinter, path: str, text: str, settings: Settings) -> FileResult:
    """Lint ``text``, the buffer of the file ``path`` (absolute), with ``settings``. The
    result's diagnostics hold a CKP902 for every problem that left the buffer unchecked (the
    command line's message), at 1:1 of ``path``. Never raises for any ``text``."""
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        row, column = SourceFile(path, text).position(exc.start)
        character = f"U+{ord(text[exc.start]):04X}"
        message = f"not linted: the text holds a lone surrogate ({character}) at {row}:{column}, which is not Unicode text"
        return FileResult(path, diagnostics=[io_error(path, message)])
    result = linter.lint(path, raw, settings)
    unchecked = [
        io_error(path, p.message)
        for p in result.problems
        if p.path == path and (p.unchecked or p.kind is ProblemKind.INTERNAL)
    ]
    result.diagnostics = [*result.diagnostics, *unchecked]
    return result

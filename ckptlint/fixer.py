"""Applying fixes to source text, and writing fixed files safely.

Fixes are applied in passes (as ruff does): in each pass the fixes whose edits do not
overlap are applied, the result is linted again, and the loop stops when no applicable fix
is left (at most :data:`MAX_PASSES`). Files are written atomically: a temporary file in the
same folder, flushed and fsynced, then renamed over the original, with its permissions,
encoding, byte-order mark and line endings kept.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from ckptlint.diagnostics import Diagnostic, Edit
from ckptlint.source import SourceFile

__all__ = ["MAX_PASSES", "FileChangedError", "apply_edits", "select_fixes", "write_atomically"]

MAX_PASSES = 10


class FileChangedError(Exception):
    """The file on disk is no longer what was read: it is not overwritten."""


def _offsets(source: SourceFile, edit: Edit) -> tuple[int, int]:
    return source.offset(edit.start), source.offset(edit.end)


def _conflicts(a: tuple[int, int], b: tuple[int, int]) -> bool:
    if a[0] == a[1] and b[0] == b[1]:
        return a[0] == b[0]  # two insertions at the same place
    return a[0] < b[1] and b[0] < a[1]


def select_fixes(source: SourceFile, diagnostics: Iterable[Diagnostic]) -> tuple[list[Diagnostic], list[tuple[int, int, str]]]:
    """Pick the diagnostics whose fix edits do not overlap those already picked (in order
    of position) and return them with their edits as ``(start, end, content)`` offsets."""
    picked: list[Diagnostic] = []
    edits: list[tuple[int, int, str]] = []
    ordered = sorted(
        (d for d in diagnostics if d.fix is not None),
        key=lambda d: (min(e.start for e in d.fix.edits), d.code),  # type: ignore[union-attr]
    )
    for diagnostic in ordered:
        spans = [(*_offsets(source, e), e.content) for e in diagnostic.fix.edits]  # type: ignore[union-attr]
        if any(_conflicts((s, e), (s2, e2)) for s, e, _ in spans for s2, e2, _ in edits):
            continue
        picked.append(diagnostic)
        edits.extend(spans)
    return picked, edits


def apply_edits(text: str, edits: Iterable[tuple[int, int, str]]) -> str:
    """Apply non-overlapping ``(start, end, content)`` offset edits to ``text``."""
    out: list[str] = []
    cursor = 0
    for start, end, content in sorted(edits, key=lambda e: (e[0], e[1])):
        if start < cursor:
            raise ValueError("overlapping edits")
        out.append(text[cursor:start])
        out.append(content)
        cursor = end
    out.append(text[cursor:])
    return "".join(out)


def write_atomically(path: Path, data: bytes, expected: bytes | None = None) -> None:
    """Replace the file at ``path`` by ``data`` atomically, keeping its permissions.

    When ``expected`` is given and the file's current bytes differ (it changed since it was
    read), nothing is written and :class:`FileChangedError` is raised. ``OSError`` passes
    through (the original file is untouched).
    """
    if expected is not None and path.read_bytes() != expected:
        raise FileChangedError(f"{path}: changed on disk while ckptlint ran; not written")
    target = Path(os.path.realpath(path))
    mode = os.stat(target).st_mode & 0o7777
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".ckptlint", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise

"""Applying fixes to source text, and writing fixed files safely.

Fixes are applied in passes (as ruff does): in each pass the fixes whose edits do not
overlap are applied, the result is linted again, and the loop stops when no applicable fix
is left (at most :data:`MAX_PASSES`). Files are written atomically: a temporary file in the
same folder, flushed and fsynced, then renamed over the original, with its permissions,
owner and group (where permitted), encoding, byte-order mark and line endings kept; a file
with several hard links is rewritten in place so that the links stay one file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from ckptlint.text.diagnostics import Diagnostic, Edit
from ckptlint.text.source import SourceFile

__all__ = ["MAX_PASSES", "FileChangedError", "FolderWriteError", "apply_edits", "select_fixes", "write_atomically"]

MAX_PASSES = 10


class FileChangedError(Exception):
    """The file on disk is no longer what was read: it is not overwritten."""


class FolderWriteError(OSError):
    """The temporary file of an atomic write cannot be created in the file's folder (a folder
    the user may not write, although the file itself may be written): nothing is written."""


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
    """Replace the file at ``path`` by ``data``, keeping its identity: permissions, and owner
    and group where this process may set them (root may; another user may keep its own
    group).

    A file with one link is replaced atomically: a temporary file in the same folder,
    flushed and fsynced, renamed over it. A file with several hard links is written in place
    (truncated and rewritten, then fsynced), so that every link sees the fixed text; a rename
    would leave the other links with the old text. Either way the caller has parsed and
    compiled ``data`` first.

    Something that is not a regular file (a pipe named on the command line, a device) raises
    :class:`~ckptlint.text.reading.NotRegularFile` and is neither read again nor written.
    When ``expected`` is given and the file's current bytes differ (it changed since it was
    read), nothing is written and :class:`FileChangedError` is raised. A file this process may
    not write itself raises ``PermissionError``, even where the folder would allow a rename;
    a folder where the temporary file cannot be created (one the user may not write) raises
    :class:`FolderWriteError`. ``OSError`` passes through (an atomic write leaves the
    original file untouched).
    """
    from ckptlint.text.reading import NotRegularFile, file_kind

    status = os.stat(path)
    if not stat.S_ISREG(status.st_mode):  # a pipe (`<(git show ...)`), a device: read, never written
        raise NotRegularFile(f"not a regular file ({file_kind(status.st_mode)})")
    if expected is not None and path.read_bytes() != expected:
        raise FileChangedError(f"{path}: changed on disk while ckptlint ran; not written")
    target = Path(os.path.realpath(path))
    status = os.stat(target)
    _check_writable(target)
    if status.st_nlink > 1:
        _write_in_place(target, data)
        return
    import tempfile  # local: only a write needs it (tempfile imports shutil, random...)

    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".ckptlint", dir=target.parent)
    except OSError as exc:
        raise FolderWriteError(exc.errno, exc.strerror, str(target.parent)) from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            _keep_owner(handle.fileno(), status)
            os.fchmod(handle.fileno(), status.st_mode & 0o7777)  # after chown, which clears set-id bits
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _check_writable(target: Path) -> None:
    """Raise ``PermissionError`` (EACCES) unless this process may write the file ``target``
    itself. A rename into place needs only the folder's permission: without this, a read-only
    file (``0444``, or another user's) in a writable folder would be replaced, as ruff 0.17
    (which writes the file itself) refuses with "Permission denied"."""
    import errno

    effective = os.access in os.supports_effective_ids
    if not os.access(target, os.W_OK, effective_ids=effective):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(target))


def _keep_owner(fd: int, status: os.stat_result) -> None:
    """Give the file open as ``fd`` the owner and group of ``status`` where permitted: both
    (root), else the group alone (a group this user belongs to), else neither."""
    if not hasattr(os, "fchown"):  # pragma: no cover - not POSIX
        return
    for uid, gid in ((status.st_uid, status.st_gid), (-1, status.st_gid)):
        try:
            os.fchown(fd, uid, gid)
            return
        except OSError:
            continue


def _write_in_place(target: Path, data: bytes) -> None:
    """Rewrite the file at ``target`` (one of several hard links) in place and fsync it.
    SIGINT and SIGTERM are held back meanwhile (a stop request cannot leave half a file);
    only SIGKILL or a crash can."""
    import signal

    held = {signal.SIGINT, signal.SIGTERM}
    blocked = hasattr(signal, "pthread_sigmask")
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held) if blocked else set()
    try:
        fd = os.open(target, os.O_WRONLY)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.ftruncate(fd, len(data))
            os.fsync(fd)
        finally:
            os.close(fd)
    finally:
        if blocked:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)

"""What is read from a path: a Python file's decoded text, or a Jupyter notebook's code cells;
and how: only regular files, never more than a limit (:func:`read_regular`).

Kept apart from :mod:`ckptlint.text.source` (which knows nothing of notebooks) so that the
notebook module, which builds on ``SourceFile``, is imported only for ``.ipynb`` paths.
"""

from __future__ import annotations

import os
import stat as stat_module
from pathlib import Path

from ckptlint.text.source import SourceFile, decode_source

__all__ = [
    "NotRegularFile",
    "PipeTimeout",
    "check_regular",
    "file_kind",
    "gate_bytes",
    "is_file_here",
    "is_pipe",
    "load_source",
    "read_pipe",
    "read_regular",
]


def load_source(raw: bytes, path: str) -> SourceFile:
    """:func:`decode_source`, or for a Jupyter notebook (``.ipynb``) its code cells as one
    module (:func:`ckptlint.text.notebook.notebook_source`). Raises :class:`SourceDecodeError`."""
    if path.lower().endswith(".ipynb"):
        from ckptlint.text.notebook import notebook_source

        return notebook_source(raw, path)
    return decode_source(raw, path)


def gate_bytes(raw: bytes, path: str) -> bytes:
    """What the byte-level gate reads for ``path``: the bytes themselves, or a notebook's
    code cells (its JSON quotes every line, which the gate's line patterns do not see)."""
    if path.lower().endswith(".ipynb"):
        from ckptlint.text.notebook import code_bytes

        return code_bytes(raw)
    return raw


class NotRegularFile(OSError):
    """A path that is not a regular file (a FIFO, a device, a socket): never read, since
    reading could block forever (a FIFO) or never end (``/dev/zero``)."""


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words (``st_mode`` as :func:`os.stat` gives it)."""
    kinds = (
        (stat_module.S_ISFIFO, "a FIFO"),
        (stat_module.S_ISCHR, "a character device"),
        (stat_module.S_ISBLK, "a block device"),
        (stat_module.S_ISSOCK, "a socket"),
        (stat_module.S_ISDIR, "a directory"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def check_regular(path: Path | str, status: os.stat_result) -> None:
    """Raise :class:`NotRegularFile` unless ``status`` (of ``path``) is a regular file's."""
    if not stat_module.S_ISREG(status.st_mode):
        raise NotRegularFile(f"not a regular file ({file_kind(status.st_mode)}); not read")


def read_regular(path: Path | str, limit: int) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit + 1`` of them (one more
    than allowed shows that the file is over the limit). The file is opened without blocking
    and checked on the open descriptor, so a FIFO or device put in its place after a
    ``stat`` is neither waited on nor read: :class:`NotRegularFile`. Other ``OSError`` pass
    through."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        status = os.fstat(fd)
        check_regular(path, status)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            # Ask for the size the file has (one byte more shows that it grew), not for the
            # limit: ``read(n)`` allocates ``n`` bytes first, and a buffer of the limit (tens
            # of MB) a file raises glibc's mmap threshold, so that the buffers of the next
            # files come from the heap and stay there (measured: 201 MB resident after
            # reading 20,000 files of 41 repositories, 83 MB with exact sizes).
            expected = min(status.st_size, limit) + 1
            data = handle.read(expected)
            if len(data) == expected and expected <= limit:  # it grew since the fstat
                data += handle.read(limit + 1 - expected)
            return data
    finally:
        os.close(fd)


class PipeTimeout(OSError):
    """A pipe whose writer sent neither more data nor its end within the time allowed."""


def is_pipe(status: os.stat_result) -> bool:
    """Whether ``status`` is a pipe's or FIFO's (``<(git show REV:model.py)``, ``/dev/stdin``
    fed by a pipe, a ``mkfifo``)."""
    return stat_module.S_ISFIFO(status.st_mode)


def read_pipe(path: Path | str, limit: int, timeout: float | None = None) -> bytes:
    """What the pipe or FIFO at ``path`` gives until its writer closes it, at most
    ``limit + 1`` bytes (one more than allowed shows that it is over the limit; the rest is
    not read). A pipe named on the command line is read, where a regular file's bounds still
    hold: the size limit, and ``timeout`` seconds (``None``: none) for each wait for data
    (:class:`PipeTimeout`). Opened without blocking, so a FIFO nobody writes to reads as
    empty rather than waiting for a writer forever; something that is not a pipe raises
    :class:`NotRegularFile`. Other ``OSError`` pass through."""
    import select

    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        status = os.fstat(fd)
        if not is_pipe(status):
            check_regular(path, status)
            raise NotRegularFile("not a pipe; not read")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            try:
                chunk = os.read(fd, min(1 << 16, limit + 1 - size))
            except BlockingIOError:  # the writer is still at work
                ready, _, _ = select.select([fd], [], [], timeout)
                if not ready:
                    raise PipeTimeout(f"nothing came from the pipe for {timeout:g} s; not read") from None
                continue
            if not chunk:
                break  # the writer closed it (or there was none)
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def is_file_here(path: Path) -> bool:
    """Whether ``path`` is a regular file (links followed); ``False`` when that cannot be told:
    ``Path.is_file`` raises ``PermissionError`` for a name inside a folder that can be listed
    but not entered (Python 3.10 to 3.13), and an optional file there is simply not seen."""
    try:
        return path.is_file()
    except OSError:
        return False

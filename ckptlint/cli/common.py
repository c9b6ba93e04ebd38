"""What every command shares: exit codes, error lines, writing the report, raw byte streams."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import IO, Any

import click

__all__ = [
    "EXIT_ERROR",
    "EXIT_FINDINGS",
    "EXIT_OK",
    "binary",
    "emit",
    "error",
    "escape_unencodable_output",
    "os_error",
    "stream_failed",
    "write_whole",
]


EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def error(message: str) -> None:
    click.echo(f"error: {message}", err=True)


def escape_unencodable_output() -> None:
    """Make stdout and stderr escape what their encoding cannot hold (``backslashreplace``)
    instead of failing: with ``PYTHONIOENCODING=ascii``, a cp1252 console or a pipe in such
    a locale, a non-ASCII file name or source line would otherwise end the run with
    ``UnicodeEncodeError`` and no report. ruff always writes its report; so does ckptlint.
    A stream whose errors handler is not ``strict`` (stderr's is ``backslashreplace``, in the
    POSIX locale stdout's is ``surrogateescape``) is left as it is."""
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "errors", None) != "strict":
            continue
        try:
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):  # not a TextIOWrapper (a test's capture)
            pass


def emit(text: str, output_file: Path | None, to_stderr: bool = False, fmt: str | None = None) -> None:
    """Write the report ``text`` (of output format ``fmt``) to ``output_file``, or to stdout
    (stderr with ``to_stderr``).

    A file is written whole or not at all: to a temporary file in its folder, renamed over
    it once written (an existing report keeps its permissions; a crash or a full disk leaves
    it as it was). Text that cannot be written as UTF-8 (a lone surrogate) is escaped first
    (:func:`ckptlint.output.base.printable`); a file is UTF-8, a stream keeps its encoding and
    what it cannot hold is escaped as the format allows (JSON ``\\u2192``, XML ``&#8594;``,
    text ``\\u2192``: :func:`ckptlint.output.base.encodable`). A write that fails is one
    ``error:`` line and exit status 2 (``SystemExit``)."""
    from ckptlint.output import escape_style
    from ckptlint.output.base import encodable, printable

    text = printable(text)
    if output_file is not None:
        try:
            write_whole(output_file, text.encode("utf-8"))
        except OSError as exc:
            error(f"{printable(str(output_file))}: cannot write the report: {exc.strerror or exc}")
            sys.exit(EXIT_ERROR)
        return
    stream = sys.stderr if to_stderr else sys.stdout
    text = encodable(text, getattr(stream, "encoding", None) or "utf-8", escape_style(fmt))
    try:
        stream.write(text)
        stream.flush()
    except OSError as exc:  # a full disk, a closed pipe
        stream_failed(stream)
        error(f"cannot write the report to {'stderr' if to_stderr else 'stdout'}: {exc.strerror or exc}")
        sys.exit(EXIT_ERROR)


def write_whole(path: Path, data: bytes) -> None:
    """Replace the file at ``path`` (a link: the file it points to) by ``data`` atomically:
    a temporary file in the same folder, renamed over it. Creates missing folders. Something
    that is not a regular file (``-o /dev/stdout``, a FIFO) is written to, never replaced.
    Raises ``OSError``; the original file is then untouched and the temporary file removed."""
    import os
    import stat
    import tempfile

    try:
        status = os.stat(path)
    except FileNotFoundError:
        status = None
    if status is not None and not stat.S_ISREG(status.st_mode):  # -o /dev/stdout, a FIFO: written to
        with open(path, "wb") as handle:
            handle.write(data)
        return
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = status.st_mode & 0o7777 if status is not None else None
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            else:  # what open() would have given: 0o666 less the umask
                umask = os.umask(0)
                os.umask(umask)
                os.fchmod(handle.fileno(), 0o666 & ~umask)
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def stream_failed(stream: IO[Any]) -> None:
    """After a write to ``stream`` (stdout or stderr) failed: point its descriptor at
    ``/dev/null`` so that the text still buffered does not fail again when the process
    flushes it at exit (which would turn the exit status into 120)."""
    import os

    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return  # not a real descriptor (a test's captured stream)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)


def binary(stream: IO[Any]) -> IO[bytes]:
    """The byte stream under a text stream (``sys.stdin.buffer``), so source bytes pass
    through untouched (encoding, byte-order mark, CRLF)."""
    return getattr(stream, "buffer", stream)


def os_error(exc: OSError) -> str:
    from ckptlint.config.discovery import os_reason

    return os_reason(exc, missing="no such file or directory")

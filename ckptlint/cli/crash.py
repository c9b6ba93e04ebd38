"""The last resort of the command: an exception nothing else handled becomes one ``error:``
line on stderr and exit status 2 (ruff's code for errors), never a traceback and exit 1
(which means "findings remain")."""

from __future__ import annotations

import sys
import traceback

from ckptlint.cli.common import EXIT_ERROR, error, stream_failed

__all__ = ["report_crash"]


def report_crash(exc: Exception, verbose: bool = False) -> int:
    """Report ``exc`` in one ``error:`` line (with ``verbose``, its traceback after it) and
    return the exit status, 2. An ``OSError`` is a failure of the system (stdout on a full
    disk, a closed stream), said as such; anything else is an internal error. Text still
    buffered for a stdout that cannot be written is dropped, so that the exit status stays
    2."""
    from ckptlint.output.base import printable

    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        stream_failed(sys.stdout)
    if isinstance(exc, OSError):
        where = f"{printable(str(exc.filename))}: " if exc.filename else ""
        message = f"{where}{exc.strerror or exc}"
    else:
        message = f"internal error: {type(exc).__name__}: {printable(str(exc))}"
    if not verbose:
        message += " (run with -v for the traceback)" if not isinstance(exc, OSError) else ""
    error(message.replace("\n", " "))
    if verbose:
        sys.stderr.write(printable("".join(traceback.format_exception(exc))))
    return EXIT_ERROR

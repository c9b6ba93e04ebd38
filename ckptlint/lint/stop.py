"""Stopping a run on SIGINT/SIGTERM: the flag the command line sets and the engine polls."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:

    pass


class Interrupted(BaseException):
    """Raised in the main thread by a :class:`StopFlag` in ``hard`` mode (nothing is being
    written) when a stop signal arrives; a ``BaseException`` so that no ``except Exception``
    of a rule or of libcst swallows it."""


class StopFlag:
    """Set by the command line's SIGINT/SIGTERM handlers; the engine and the writer poll it
    between files (no new file is started once it is set).

    Attributes:
        signal: the number of the first stop signal received, ``None`` until then.
        hard: while ``True`` (linting in this process, nothing being written), a stop signal
            raises :class:`Interrupted` at once instead of waiting for the file to finish.
    """

    def __init__(self) -> None:
        self.signal: int | None = None
        self.hard = False

    def request(self, signum: int) -> None:
        """A stop signal arrived (called from a signal handler, in the main thread)."""
        first = self.signal is None
        if first:
            self.signal = signum
        if self.hard or not first:  # a second signal: stop now, whatever is running
            raise Interrupted(signum)

    def __bool__(self) -> bool:
        return self.signal is not None

"""Stopping a run on SIGINT/SIGTERM: the flag the command line sets and the engine polls."""

from __future__ import annotations


class Interrupted(BaseException):
    """Raised in the main thread by a :class:`StopFlag` in ``hard`` mode (nothing is being
    written) when a stop signal arrives; a ``BaseException`` so that no ``except Exception``
    of a rule or of a library it calls swallows it."""


class StopFlag:
    """Set by the command line's SIGINT/SIGTERM handlers; the engine and the writer poll it
    between files (no new file is started once it is set).

    A second signal stops at once, except one that arrives within :data:`SAME_REQUEST`
    seconds of the first: that is the same request delivered twice, as GNU ``timeout`` does
    (it signals the command and then its whole process group, coreutils timeout.c
    ``cleanup``), or ``kill -INT -PGID``; a person pressing Ctrl-C twice is slower.

    Attributes:
        signal: the number of the first stop signal received, ``None`` until then.
        hard: while ``True`` (linting in this process, nothing being written), a stop signal
            raises :class:`Interrupted` at once instead of waiting for the file to finish.
    """

    #: Seconds within which a repeated stop signal counts as the same request.
    SAME_REQUEST = 0.05

    def __init__(self) -> None:
        self.signal: int | None = None
        self.hard = False
        self._first_at = 0.0

    def request(self, signum: int) -> None:
        """A stop signal arrived (called from a signal handler, in the main thread)."""
        import time

        now = time.monotonic()
        first = self.signal is None
        if first:
            self.signal = signum
            self._first_at = now
        elif signum == self.signal and now - self._first_at < self.SAME_REQUEST and not self.hard:
            return  # the same request delivered twice (to the process and to its group)
        if self.hard or not first:  # a second signal: stop now, whatever is running
            raise Interrupted(signum)

    def __bool__(self) -> bool:
        return self.signal is not None

"""SIGINT/SIGTERM while a command runs: the first asks the run to stop after the files in
progress, a second stops it at once; exit status 128 + the signal's number."""

from __future__ import annotations

from types import FrameType, TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ckptlint.lint.stop import StopFlag

__all__ = ["signal_exit", "signal_name", "stop_on_signals"]


def signal_name(signum: int | None) -> str:
    import signal

    try:
        return signal.Signals(signum).name  # type: ignore[arg-type]
    except (ValueError, TypeError):
        return "interrupted"


def signal_exit(signum: int | None) -> int:
    """The exit status of a run stopped by ``signum``: 128 + its number (130 for SIGINT, 143
    for SIGTERM), as shells report a process killed by it."""
    import signal

    return 128 + (signum or signal.SIGINT)


class stop_on_signals:
    """While active (and only in the main thread), SIGINT and SIGTERM call ``stop.request``:
    the first asks the run to stop after the files in progress, a second stops it at once."""

    def __init__(self, stop: StopFlag) -> None:
        self.stop = stop
        self.previous: dict[int, object] = {}

    def __enter__(self) -> stop_on_signals:
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self.previous[signum] = signal.signal(signum, self._handle)
        return self

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.stop.request(signum)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        import signal

        for signum, handler in self.previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]

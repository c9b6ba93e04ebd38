"""Progress of a long run on stderr: ``[120/16000 files, 7 findings]`` on one line that is
rewritten in place, only when stderr is a terminal (never in a pipe, a file or CI logs) and
not with ``-q``; erased before the report is printed."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["ProgressLine", "progress_for"]


class ProgressLine:
    """One line of progress on ``stream``, redrawn at most every ``interval`` seconds.

    Args:
        stream: a terminal (stderr).
        total: the files of the run.
        interval: the least seconds between two redraws (the first is drawn at once).
    """

    def __init__(self, stream: TextIO, total: int, interval: float = 0.1) -> None:
        self.stream = stream
        self.total = total
        self.interval = interval
        self._last = float("-inf")
        self._shown = False

    def __call__(self, done: int, findings: int) -> None:
        """Show ``done`` files of the total and ``findings`` so far (throttled)."""
        now = time.monotonic()
        if now - self._last < self.interval and done < self.total:
            return
        self._last = now
        plural = "" if findings == 1 else "s"
        self._write(f"\r\x1b[K[{done}/{self.total} files, {findings} finding{plural}]")
        self._shown = True

    def clear(self) -> None:
        """Erase the line (before the report)."""
        if self._shown:
            self._write("\r\x1b[K")
            self._shown = False

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a terminal that went away: no progress, no crash
            pass


def progress_for(total: int, quiet: bool, stream: TextIO | None = None) -> ProgressLine | None:
    """A :class:`ProgressLine` for a run of ``total`` files when ``stream`` (default: stderr)
    is a terminal and the run is not ``quiet``; else ``None``."""
    stream = sys.stderr if stream is None else stream
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):
        terminal = False
    if quiet or not terminal or total < 1:
        return None
    return ProgressLine(stream, total)

"""Converting ckptlint's character columns to LSP columns (no pygls import)."""

from __future__ import annotations

__all__ = ["units"]


def units(line: str, column: int, encoding: str = "utf-16") -> int:
    """0-based offset, in code units of ``encoding`` (``utf-8``/``utf-16``/``utf-32``, LSP
    3.17's ``PositionEncodingKind``), of 1-based character ``column`` of ``line`` (clamped
    to the line)."""
    prefix = line[: max(0, column - 1)]
    if encoding == "utf-8":
        return len(prefix.encode("utf-8", "surrogatepass"))
    if encoding == "utf-32":
        return len(prefix)
    return len(prefix.encode("utf-16-le", "surrogatepass")) // 2

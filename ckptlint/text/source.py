"""Decoding source files and converting between offsets and 1-based positions.

A :class:`SourceFile` keeps everything needed to write a fixed file back exactly as it was
read: the encoding (from a byte-order mark or a PEP 263 coding cookie), whether a UTF-8 BOM
was present, and the dominant line ending. Positions are ``(row, column)`` pairs, both
1-based, with columns counted in characters (as ruff does).
"""

from __future__ import annotations

import bisect
import codecs
import io
import re
import tokenize
from dataclasses import dataclass
from functools import cached_property

__all__ = ["Position", "SourceDecodeError", "SourceFile", "decode_source", "location_label", "split_lines"]

Position = tuple[int, int]
"""A 1-based ``(row, column)`` pair; the column counts characters."""


def location_label(path: str, row: int, column: int | None = None, *, cell: int | None = None) -> str:
    """The one way a location reads in text output and messages: ``path:row:column``,
    ``path:row`` without a column, and ``path:cell N:row:column`` in a notebook cell (rows
    relative to the cell, as ruff shows them). ``path`` is shown as given."""
    where = f"{path}:cell {cell}:" if cell is not None else f"{path}:"
    return f"{where}{row}" if column is None else f"{where}{row}:{column}"


_NEWLINE = re.compile(r"\r\n|\r|\n")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines(text: str, keepends: bool = False) -> list[str]:
    """The lines of ``text``, split where Python's tokenizer and the Language Server Protocol
    end a line: at ``\\n``, ``\\r\\n`` and ``\\r`` only (LSP 3.17, "Text Documents").

    ``str.splitlines`` also splits at form feed, ``\\v``, ``\\x1c``-``\\x1e``, ``\\x85``,
    U+2028 and U+2029, which Python source may hold inside a line; every row ckptlint shows
    is counted as here. Like ``splitlines``, an empty text has no line and a final line
    ending starts no new line."""
    lines = _LINE.findall(text)
    return lines if keepends else [line.rstrip("\r\n") for line in lines]


class SourceDecodeError(ValueError):
    """The bytes of a file cannot be decoded as Python source text.

    Raised for a file that is not UTF-8 and declares no encoding, that declares an
    unknown encoding, or that holds NUL bytes (a binary file named ``.py``).
    """


@dataclass(frozen=True)
class SourceFile:
    """The decoded text of one Python file plus what is needed to write it back.

    Attributes:
        path: the path as given by the caller (used in messages), ``/``-separated or not.
        text: the decoded text without the byte-order mark; line endings are untouched.
        encoding: the Python codec name used to decode (``"utf-8"`` unless declared).
        bom: whether the file started with a UTF-8 byte-order mark.
    """

    path: str
    text: str
    encoding: str = "utf-8"
    bom: bool = False

    @cached_property
    def line_starts(self) -> list[int]:
        """Offsets (0-based, in characters) at which each line starts; ``[0, ...]``."""
        starts = [0]
        for match in _NEWLINE.finditer(self.text):
            starts.append(match.end())
        return starts

    @cached_property
    def newline(self) -> str:
        """The most common line ending of the file (``"\\n"`` for a file without one)."""
        counts: dict[str, int] = {}
        for match in _NEWLINE.finditer(self.text):
            counts[match.group()] = counts.get(match.group(), 0) + 1
        if not counts:
            return "\n"
        return max(counts.items(), key=lambda item: (item[1], item[0] == "\n"))[0]

    def offset(self, position: Position) -> int:
        """Convert a 1-based ``(row, column)`` to a 0-based character offset.

        A column past the end of its line is clamped to the line's end (before its newline).
        Raises ``ValueError`` for a row outside the file.
        """
        row, column = position
        starts = self.line_starts
        if row < 1 or row > len(starts):
            raise ValueError(f"row {row} outside 1..{len(starts)}")
        start = starts[row - 1]
        end = starts[row] if row < len(starts) else len(self.text)
        line = self.text[start:end]
        stripped = len(line.rstrip("\r\n"))
        return start + min(column - 1, stripped)

    def position(self, offset: int) -> Position:
        """Convert a 0-based character offset to a 1-based ``(row, column)``."""
        row = bisect.bisect_right(self.line_starts, offset)
        return row, offset - self.line_starts[row - 1] + 1

    def ast_position(self, lineno: int, col_offset: int) -> Position:
        """The 1-based ``(row, column)`` of a position CPython's ``ast`` reports: its
        ``col_offset`` counts UTF-8 bytes of the line, the column counts characters."""
        line = self.line(lineno)
        if line.isascii():
            return lineno, col_offset + 1
        return lineno, len(line.encode("utf-8")[:col_offset].decode("utf-8", "replace")) + 1

    def line(self, row: int) -> str:
        """The text of 1-based line ``row`` without its line ending."""
        starts = self.line_starts
        start = starts[row - 1]
        end = starts[row] if row < len(starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")

    def line_end_offset(self, row: int) -> int:
        """Offset just before the line ending of 1-based line ``row``."""
        return self.line_starts[row - 1] + len(self.line(row))

    def encode(self, text: str) -> bytes:
        """Encode ``text`` the way this file was encoded (same codec, same BOM)."""
        data = text.encode(self.encoding)
        return codecs.BOM_UTF8 + data if self.bom else data


def decode_source(raw: bytes, path: str) -> SourceFile:
    """Decode the bytes of a Python file following PEP 263.

    A UTF-8 BOM is stripped and remembered; otherwise the coding cookie in the first two
    lines decides, and UTF-8 is the default. Raises :class:`SourceDecodeError` with a
    one-line reason when the bytes cannot be Python source.
    """
    if b"\x00" in raw:
        raise SourceDecodeError("contains NUL bytes (a binary file?)")
    bom = raw.startswith(codecs.BOM_UTF8)
    body = raw[len(codecs.BOM_UTF8) :] if bom else raw
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError as exc:
        if str(exc).startswith("invalid or missing encoding declaration"):  # a first line that is not UTF-8
            encoding = "utf-8"  # fails below with the offending byte
        else:
            raise SourceDecodeError(_first_line(str(exc))) from None
    if encoding in ("utf-8-sig", "utf8-sig"):
        encoding = "utf-8"
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as exc:
        if encoding == "utf-8":
            reason = (
                f"is not valid UTF-8 (byte 0x{body[exc.start]:02x} at offset {exc.start}) "
                "and declares no encoding"
            )
        else:
            reason = f"cannot be decoded as {encoding} (offset {exc.start})"
        raise SourceDecodeError(reason) from None
    except LookupError:
        raise SourceDecodeError(f"declares an unknown encoding {encoding!r}") from None
    return SourceFile(path=path, text=text, encoding=codecs.lookup(encoding).name, bom=bom)


def _first_line(message: str) -> str:
    return message.strip().splitlines()[0] if message.strip() else "cannot be decoded"

"""``# noqa`` suppression comments (ruff's syntax).

- ``# noqa: CKP001, CKP002`` on the reported line suppresses those codes there;
- ``# noqa`` alone suppresses every code on that line;
- ``# ckptlint: noqa`` on a line of its own suppresses the whole file, and
  ``# ckptlint: noqa: CKP001`` the listed codes in the whole file.

Comments are found with :mod:`tokenize`, so ``"# noqa"`` inside a string does not count.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

from ckptlint.diagnostics import Diagnostic
from ckptlint.source import SourceFile

__all__ = ["NoqaDirective", "NoqaIndex", "parse_noqa"]

_LINE_NOQA = re.compile(
    r"#\s*noqa(?::\s?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE
)
_FILE_NOQA = re.compile(
    r"^#\s*ckptlint\s*:\s*noqa(?::\s?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?\s*$",
    re.IGNORECASE,
)
_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)


@dataclass
class NoqaDirective:
    """One ``# noqa`` comment.

    Attributes:
        row: 1-based line.
        start_col, end_col: 1-based columns of the directive (``# noqa...``) in that line,
            end exclusive.
        codes: the listed codes in upper case, ``None`` for a blanket ``# noqa``.
        used: the codes it suppressed in this run (for CKP901).
    """

    row: int
    start_col: int
    end_col: int
    codes: tuple[str, ...] | None
    used: set[str] = field(default_factory=set)


@dataclass
class NoqaIndex:
    """All noqa comments of one file."""

    by_row: dict[int, NoqaDirective]
    file_codes: frozenset[str] | None = None  # codes exempted for the whole file
    file_blanket: bool = False

    def suppresses(self, diagnostic: Diagnostic) -> bool:
        """Whether ``diagnostic`` is suppressed; marks the directive as used."""
        code = diagnostic.code
        if self.file_blanket or (self.file_codes is not None and code in self.file_codes):
            return True
        directive = self.by_row.get(diagnostic.noqa_row or diagnostic.start[0])
        if directive is None:
            return False
        if directive.codes is None or code in directive.codes:
            directive.used.add(code)
            return True
        return False


def parse_noqa(source: SourceFile) -> NoqaIndex:
    """Find the noqa comments of ``source``."""
    index = NoqaIndex({})
    lines = source.text.splitlines()
    for row, col, text in _comments(source.text):
        own_line = row <= len(lines) and lines[row - 1][:col].strip() == ""
        file_match = _FILE_NOQA.match(text.strip()) if own_line else None
        if file_match is not None:
            codes = file_match.group("codes")
            if codes is None:
                index.file_blanket = True
            else:
                found = frozenset(c.upper() for c in _CODE.findall(codes))
                index.file_codes = (index.file_codes or frozenset()) | found
            continue
        match = _LINE_NOQA.search(text)
        if match is None:
            continue
        codes = match.group("codes")
        parsed = tuple(c.upper() for c in _CODE.findall(codes)) if codes else None
        index.by_row[row] = NoqaDirective(
            row=row,
            start_col=col + match.start() + 1,
            end_col=col + match.end() + 1,
            codes=parsed,
        )
    return index


def _comments(text: str) -> list[tuple[int, int, str]]:
    """``(row, 0-based column, text)`` of every comment; falls back to a line scan when the
    file cannot be tokenized."""
    found: list[tuple[int, int, str]] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                found.append((token.start[0], token.start[1], token.string))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        found = []
        for row, line in enumerate(text.splitlines(), 1):
            position = line.find("#")
            if position >= 0:
                found.append((row, position, line[position:]))
    return found

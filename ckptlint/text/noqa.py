"""``# noqa`` suppression comments (ruff's syntax).

- ``# noqa: CKP001, CKP002`` on the reported line suppresses those codes there;
- ``# noqa`` alone suppresses every code on that line;
- ``# ckptlint: noqa`` on a line of its own suppresses the whole file, and
  ``# ckptlint: noqa: CKP001`` the listed codes in the whole file.
- ``# noqa:`` followed by no code (``# noqa:``, ``# noqa: see above``) is not a directive: it
  suppresses nothing and is reported as invalid (:attr:`NoqaIndex.invalid`), as ruff warns and
  ignores it, instead of acting as a blanket ``# noqa``.
- A finding whose line ends inside a multi-line string or continues with a backslash is
  suppressed by the ``# noqa`` where that string or continuation ends (ruff's noqa line
  mapping): a comment cannot go on the first line.

Comments are found with :mod:`tokenize`, so ``"# noqa"`` inside a string does not count.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Collection
from dataclasses import dataclass, field

from ckptlint.rule_codes import UNUSED_NOQA
from ckptlint.text.diagnostics import Applicability, Diagnostic, Edit, Fix
from ckptlint.text.source import SourceFile, split_lines

__all__ = ["INVALID_MESSAGE", "NoqaDirective", "NoqaIndex", "may_have_invalid", "noqa_line_map", "parse_noqa"]

_LINE_NOQA = re.compile(
    r"#\s*noqa(?P<colon>\s*:\s*(?P<codes>[A-Z]+[0-9]+(?:(?:\s*,\s*|\s+)[A-Z]+[0-9]+)*)?)?", re.IGNORECASE
)
_FILE_NOQA = re.compile(
    r"^#\s*ckptlint\s*:\s*noqa(?P<colon>\s*:\s*(?P<codes>[A-Z]+[0-9]+(?:(?:\s*,\s*|\s+)[A-Z]+[0-9]+)*)?)?",
    re.IGNORECASE,
)
#: A ``noqa:`` with no code after the colon (cheap test before tokenizing a whole file).
_INVALID_HINT = re.compile(r"noqa\s*:(?!\s*[A-Z]+[0-9])", re.IGNORECASE)
INVALID_MESSAGE = (
    "invalid `# noqa` directive: expected a comma-separated list of codes (e.g. `# noqa: CKP001, CKP002`); ignored"
)
_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)
#: Every directive, line or file, spells ``noqa``: a text without it has none to find.
_ANY_NOQA = re.compile("noqa", re.IGNORECASE)


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
    invalid: list[int] = field(default_factory=list)  # rows of noqa directives with a colon and no codes (ignored)
    line_map: dict[int, int] = field(default_factory=dict)  # row -> the row its noqa goes on

    def row_for(self, row: int) -> int:
        """The row whose ``# noqa`` applies to a finding on ``row``: the row itself, or where
        the multi-line string or backslash continuation that ``row`` ends in ends."""
        return self.line_map.get(row, row)

    def suppresses(self, diagnostic: Diagnostic) -> bool:
        """Whether ``diagnostic`` is suppressed; marks the directive as used."""
        code = diagnostic.code
        if self.file_blanket or (self.file_codes is not None and code in self.file_codes):
            return True
        directive = self.by_row.get(self.row_for(diagnostic.noqa_row or diagnostic.start[0]))
        if directive is None:
            return False
        if directive.codes is None or code in directive.codes:
            directive.used.add(code)
            return True
        return False


def may_have_invalid(text: str) -> bool:
    """Whether ``text`` may hold a ``# noqa:`` without codes (a fast test; :func:`parse_noqa`
    decides)."""
    return _INVALID_HINT.search(text) is not None


def parse_noqa(source: SourceFile, *, line_map: bool = True) -> NoqaIndex:
    """Find the noqa comments of ``source``.

    ``line_map=False``: the index is only asked what it suppresses, so a text that never
    spells ``noqa`` (it has no directive) is not tokenized and gets no line map; placing new
    directives (``--add-noqa``) needs the map of every file."""
    if not line_map and _ANY_NOQA.search(source.text) is None:
        return NoqaIndex({})
    comments, rows_moved = _scan(source.text)
    index = NoqaIndex({}, line_map=rows_moved)
    lines = split_lines(source.text)
    for row, col, text in comments:
        own_line = row <= len(lines) and lines[row - 1][:col].strip() == ""
        file_match = _FILE_NOQA.match(text.strip()) if own_line else None
        if file_match is not None:
            codes = file_match.group("codes")
            if file_match.group("colon") is not None and codes is None:
                index.invalid.append(row)
            elif codes is None:
                index.file_blanket = True
            else:
                found = frozenset(c.upper() for c in _CODE.findall(codes))
                index.file_codes = (index.file_codes or frozenset()) | found
            continue
        matches = list(_LINE_NOQA.finditer(text))
        if not matches:
            continue
        # a noqa directive with a colon and no codes is a warning and suppresses nothing (ruff);
        # a valid directive later in the same comment (what --add-noqa appends) counts
        valid = [m for m in matches if m.group("colon") is None or m.group("codes") is not None]
        if len(valid) < len(matches):
            index.invalid.append(row)
        if not valid:
            continue
        match = valid[0]
        codes = match.group("codes")
        parsed = tuple(c.upper() for c in _CODE.findall(codes)) if codes else None
        index.by_row[row] = NoqaDirective(
            row=row,
            start_col=col + match.start() + 1,
            end_col=col + match.end() + 1,
            codes=parsed,
        )
    return index


def noqa_line_map(text: str) -> dict[int, int]:
    """Rows whose ``# noqa`` goes on a later row: each row that ends inside a multi-line
    string (or f-string) maps to the row where the string ends, and each row that continues
    with a backslash to the row where the continuation ends (ruff's noqa line mapping)."""
    return _scan(text)[1]


def _comments(text: str) -> list[tuple[int, int, str]]:
    """``(row, 0-based column, text)`` of every comment."""
    return _scan(text)[0]


def _scan(text: str) -> tuple[list[tuple[int, int, str]], dict[int, int]]:
    """The comments of ``text`` (see :func:`_comments`) and its noqa line map (see
    :func:`noqa_line_map`), from one pass of :mod:`tokenize`; falls back to a line scan (and
    no string spans) when the file cannot be tokenized."""
    found: list[tuple[int, int, str]] = []
    spans: dict[int, int] = {}  # row inside a multi-line string -> the row where it ends
    fstring_start = getattr(tokenize, "FSTRING_START", None)  # Python 3.12+
    fstring_end = getattr(tokenize, "FSTRING_END", None)
    open_fstrings: list[int] = []
    try:
        # newline="": lines end at \n, \r\n and \r, as split_lines counts them
        for token in tokenize.generate_tokens(io.StringIO(text, newline="").readline):
            if token.type == tokenize.COMMENT:
                found.append((token.start[0], token.start[1], token.string))
            elif token.type == tokenize.STRING and token.end[0] > token.start[0]:
                spans.update((row, token.end[0]) for row in range(token.start[0], token.end[0]))
            elif fstring_start is not None and token.type == fstring_start:
                open_fstrings.append(token.start[0])
            elif fstring_end is not None and token.type == fstring_end and open_fstrings:
                start = open_fstrings.pop()
                spans.update((row, token.end[0]) for row in range(start, token.end[0]))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        found, spans = [], {}
        for row, line in enumerate(split_lines(text), 1):
            position = line.find("#")
            if position >= 0:
                found.append((row, position, line[position:]))
    lines = split_lines(text)
    comment_ends = {row for row, _, comment in found if comment.rstrip().endswith("\\")}  # `# a \` continues nothing
    line_map: dict[int, int] = {}
    for row in range(len(lines), 0, -1):
        if row in spans:
            end = spans[row]
        elif lines[row - 1].rstrip().endswith("\\") and row < len(lines) and row not in comment_ends:
            end = row + 1
        else:
            continue
        line_map[row] = line_map.get(end, end)
    return found, line_map


#: The title of CKP901's fix.
UNUSED_NOQA_FIX_MESSAGE = "Remove unused `noqa` directive"


def unused_noqa_diagnostics(source: SourceFile, index: NoqaIndex, judged: Collection[str]) -> list[Diagnostic]:
    """One CKP901 diagnostic for each directive of ``index`` (the noqa comments of
    ``source``, after filtering marked what they suppressed) that lists codes of ``judged``
    (enabled rules that ran) which it did not use.

    The fix removes the unused codes; when nothing else is left it removes the directive (and
    the space before it), keeping any other comment text on the line, so the line still
    parses. Blanket ``# noqa`` and file-level ``# ckptlint: noqa`` are not judged.
    """
    found: list[Diagnostic] = []
    for row in sorted(index.by_row):
        directive = index.by_row[row]
        if directive.codes is None:
            continue
        unused = [code for code in dict.fromkeys(directive.codes) if code in judged and code not in directive.used]
        if not unused:
            continue
        listed = ", ".join(f"`{code}`" for code in unused)
        found.append(
            Diagnostic(
                code=UNUSED_NOQA,
                message=f"Unused `noqa` directive (unused: {listed})",
                path=source.path,
                start=(row, directive.start_col),
                end=(row, directive.end_col),
                fix=Fix(Applicability.SAFE, UNUSED_NOQA_FIX_MESSAGE, (_unused_codes_edit(source, directive, unused),)),
                noqa_row=row,
            )
        )
    return found


def _unused_codes_edit(source: SourceFile, directive: NoqaDirective, unused: list[str]) -> Edit:
    row = directive.row
    line = source.line(row)
    kept = [code for code in directive.codes or () if code not in unused]
    start, end = directive.start_col, directive.end_col
    if kept:
        return Edit((row, start), (row, end), "# noqa: " + ", ".join(kept))
    rest = line[end - 1 :]
    if not rest.strip() or rest.lstrip().startswith("#"):
        # Nothing after the directive, or another comment: drop the directive and the
        # space before it (``x = 1  # noqa: CKP001 # type: ignore`` -> ``x = 1  # type: ignore``).
        before = line[: start - 1]
        spaces = len(before) - len(before.rstrip())
        if rest.strip():
            return Edit((row, start), (row, end + len(rest) - len(rest.lstrip())), "")
        return Edit((row, start - spaces), (row, len(line) + 1), "")
    # Free text follows (``# noqa: CKP001 reason``): keep it as a comment.
    return Edit((row, start), (row, end + len(rest) - len(rest.lstrip())), "# ")

"""``--add-noqa``: add ``# noqa: CODE`` to every line that has a finding, for adopting ckptlint
on an existing code base (ruff's ``--add-noqa``).

An existing ``# noqa: CODES`` directive on the line gets the new codes merged in (the codes of
other tools stay); a line without one gets ``  # noqa: CODES`` at its end (after any comment).
Running it again adds nothing: the findings are then suppressed. A finding on a line where a
comment cannot go (the line ends inside a multi-line string or with a backslash continuation)
gets its directive where that string or continuation ends, the line whose ``# noqa`` applies
(ruff's noqa line mapping), and the result is parsed before it is written.
"""

from __future__ import annotations

import io
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass, field

from ckptlint.text.diagnostics import Diagnostic
from ckptlint.text.noqa import parse_noqa
from ckptlint.text.source import SourceFile, split_lines

__all__ = ["NoqaEdit", "add_noqa", "parses"]


@dataclass
class NoqaEdit:
    """The result for one file: the new text, how many directives were added or extended,
    and the rows where no comment can go."""

    text: str
    added: int = 0
    skipped_rows: list[int] = field(default_factory=list)


def _rows_without_room(text: str) -> set[int]:
    """Rows whose end lies inside a multi-line string (or f-string) or that continue with a
    backslash: a comment cannot be appended there."""
    rows: set[int] = set()
    fstring_start = getattr(tokenize, "FSTRING_START", None)  # Python 3.12+
    fstring_end = getattr(tokenize, "FSTRING_END", None)
    open_fstrings: list[int] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text, newline="").readline):
            if token.type == tokenize.STRING and token.end[0] > token.start[0]:
                rows.update(range(token.start[0], token.end[0]))
            elif fstring_start is not None and token.type == fstring_start:
                open_fstrings.append(token.start[0])
            elif fstring_end is not None and token.type == fstring_end and open_fstrings:
                rows.update(range(open_fstrings.pop(), token.end[0]))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    for row, line in enumerate(_lines(text), 1):
        if line.rstrip("\r\n").rstrip().endswith("\\"):
            rows.add(row)
    return rows


def _lines(text: str) -> list[str]:
    """The lines of ``text`` with their endings (``\\r\\n``, ``\\r`` or ``\\n`` only, as
    :class:`~ckptlint.text.source.SourceFile` counts them)."""
    return split_lines(text, keepends=True)


def add_noqa(source: SourceFile, diagnostics: Iterable[Diagnostic]) -> NoqaEdit:
    """Add the codes of ``diagnostics`` (those in ``source``) as ``# noqa`` directives on
    their noqa rows. Returns the new text (line endings kept) and counts."""
    index = parse_noqa(source)
    wanted: dict[int, list[str]] = {}
    for d in diagnostics:
        if d.path != source.path:
            continue
        # A row that ends inside a multi-line string or continues with a backslash has no
        # room for a comment: the directive goes where the string or continuation ends.
        codes = wanted.setdefault(index.row_for(d.noqa_row or d.start[0]), [])
        if d.code not in codes:
            codes.append(d.code)
    if not wanted:
        return NoqaEdit(source.text)
    no_room = _rows_without_room(source.text)
    lines = _lines(source.text)
    result = NoqaEdit(source.text)
    for row in sorted(wanted):
        if row > len(lines):
            continue
        line = lines[row - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body) :]
        directive = index.by_row.get(row)
        if directive is not None:
            if directive.codes is None:
                continue  # a blanket noqa already suppresses everything
            missing = [c for c in sorted(wanted[row]) if c not in directive.codes]
            if not missing:
                continue
            merged = "# noqa: " + ", ".join([*directive.codes, *missing])
            body = body[: directive.start_col - 1] + merged + body[directive.end_col - 1 :]
        elif row in no_room:
            result.skipped_rows.append(row)
            continue
        else:
            body = body.rstrip() + "  # noqa: " + ", ".join(sorted(wanted[row]))
        lines[row - 1] = body + ending
        result.added += 1
    result.text = "".join(lines)
    return result


def parses(text: str) -> bool:
    """Whether ``text`` parses with libcst (checked before a file is written)."""
    import libcst as cst

    try:
        cst.parse_module(text)
    except Exception:  # noqa: BLE001 - any parser failure means "does not parse"
        return False
    return True

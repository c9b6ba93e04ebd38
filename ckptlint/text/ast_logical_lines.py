"""Where the logical lines of a Python text start, as CPython's ``ast`` counts columns: the
tokenizer's first token after each ``NEWLINE``, ``INDENT`` or ``DEDENT``, as
``{row: UTF-8 byte column}`` (``ast``'s ``lineno``/``col_offset``). A statement that starts
elsewhere follows a ``;`` or its header's colon on the same logical line (backslash
continuations included), which physical rows cannot tell. Read once per text (a few texts
kept); the layers above read it through :mod:`ckptlint.semantic.ast_lines`.
"""

from __future__ import annotations

import io
import tokenize
from functools import lru_cache

_SKIPPED = (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING, tokenize.ENDMARKER)


@lru_cache(maxsize=8)
def logical_line_starts(text: str) -> dict[int, int] | None:
    """Row -> UTF-8 byte column of the first token of each logical line of ``text``; ``None``
    when the tokenizer refuses the text. The answer is shared: do not change it."""
    starts: dict[int, int] = {}
    at_start = True
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.NEWLINE:
                at_start = True
            elif token.type in _SKIPPED:
                continue
            elif at_start:
                row, column = token.start
                starts[row] = len(token.line[:column].encode("utf-8"))
                at_start = False
    except (tokenize.TokenError, SyntaxError, ValueError):
        return None
    return starts


@lru_cache(maxsize=8)
def ast_rows(text: str) -> list[str] | None:
    """The physical rows of ``text`` as ``ast`` numbers them (row ``n`` is item ``n - 1``),
    each without its line break (``\\n`` or ``\\r\\n``); ``None`` when ``text`` holds a lone
    ``\\r``, which ``ast`` counts as a line break and the tokenizer reader here does not.
    Read once per text (a few texts kept); the answer is shared: do not change it."""
    if "\r" in text:
        if text.count("\r") != text.count("\r\n"):
            return None
        text = text.replace("\r\n", "\n")
    return text.split("\n")


#: What may stand before a statement on its row when it starts a logical line.
INDENTATION = " \t\f"


def is_indentation(text: str) -> bool:
    """Whether ``text`` is empty or only blanks that may indent a line (space, tab, form feed)."""
    return not text.strip(INDENTATION)


def opens_row(rows: list[str], row: int, column: int) -> bool:
    """Whether a statement at ``row`` (1-based) and ``column`` (``ast``'s UTF-8 byte column)
    of ``rows`` (:func:`ast_rows`) surely starts a logical line: only indentation before it
    and no backslash ending the row above. The tokenizer says so too, and a physical-row
    reading agrees (nothing else starts on that row before it). Blanks are ASCII, so the
    first ``column`` characters are those bytes when they are blanks."""
    return is_indentation(rows[row - 1][:column]) and (row == 1 or not rows[row - 2].endswith("\\"))

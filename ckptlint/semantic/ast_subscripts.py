"""The elements between a subscript's brackets, split by the commas at their top level:
``x[0,]`` is one element ``0``, ``x[1:,]`` one slice, ``x[(a), b]`` two and ``x[(a, b)]`` one
(a tuple). ``ast`` gives one ``slice`` expression, an ``ast.Tuple`` in the
first three cases, and keeps no parentheses (a tuple's position holds its own, not those of
its first element), so the count is read from the text: the parentheses between the tuple's
start and its first element's against those closed before the first comma
(:class:`TextCommas`). Where the row cannot tell (a comment, a line break, a lone element),
or where positions alone would answer otherwise, the tokenizer decides: the closing ``]`` of
every bracket that holds a top-level comma, read once per text (a few texts kept) and kept
in the model's memo. A model built without its text (or a text the tokenizer refuses) falls
back to positions (see :func:`subscript_elements_in`).
"""

from __future__ import annotations

import ast
import io
import tokenize
from functools import lru_cache

from ckptlint.semantic.ast_model import AstModel
from ckptlint.text.ast_logical_lines import ast_rows, is_indentation

_OPENING = {"(": ")", "[": "]", "{": "}"}


class TextCommas:
    """Whether the brackets of a subscript of ``text`` hold a top-level comma, read from its
    row where it can tell (:meth:`read_from_row`), else from :func:`comma_brackets`."""

    def __init__(self, text: str, parents: dict[ast.AST, ast.AST]) -> None:
        self.text = text
        self.rows = ast_rows(text)
        self.parents = parents
        self._encoded: dict[int, bytes] = {}

    def _row(self, row: int) -> str | bytes:
        """Row ``row`` (1-based) indexable by ``ast``'s UTF-8 byte columns."""
        line = self.rows[row - 1]  # type: ignore[index]
        if line.isascii():
            return line
        found = self._encoded.get(row)
        if found is None:
            found = self._encoded[row] = line.encode("utf-8")
        return found

    def read_from_row(self, index: ast.Tuple) -> bool | None:
        """Whether the brackets around the tuple ``index`` (a subscript's slice, with elements)
        hold a top-level comma, from the text of its first element's row; ``None`` when that
        cannot tell. Parentheses before the first element are the tuple's own only where more
        of them open there than close between the element and the first comma. Not told inside
        an f-string (``parents``: the model's), which the tokenizer may read as one string."""
        first = index.elts[0]
        if self.rows is None or index.lineno != first.lineno or first.end_lineno != first.lineno:
            return None
        node: ast.AST | None = index
        while not isinstance(node, ast.stmt):
            node = self.parents.get(node)  # type: ignore[arg-type]
            if node is None or type(node) is ast.JoinedStr:
                return None
        line = self._row(first.lineno)
        before = _text(line[index.col_offset : first.col_offset])
        head, comma, _ = _text(line[first.end_col_offset :]).partition(",")
        if not comma or not is_indentation(before.replace("(", "")) or not is_indentation(head.replace(")", "")):
            return None
        opened, closed = before.count("("), head.count(")")
        if opened > closed:
            return False  # ``x[(a, b)]``: the commas are the tuple's, inside its parentheses
        if opened < closed:
            return None
        return True if len(index.elts) > 1 else None

    def tokenized(self) -> frozenset[tuple[int, int]] | None:
        """:func:`comma_brackets` of the text."""
        return comma_brackets(self.text)


def _text(part: str | bytes) -> str:
    """A slice of a row as text (bytes of a row with non-ASCII characters decoded)."""
    return part if isinstance(part, str) else part.decode("utf-8", "replace")


#: What tells whether a ``]`` holds a top-level comma: the text (:class:`TextCommas`), the
#: ``(row, byte column)`` after each such ``]``, or ``None``: unknown, judged from positions.
Commas = TextCommas | frozenset[tuple[int, int]] | None


@lru_cache(maxsize=8)
def comma_brackets(text: str) -> frozenset[tuple[int, int]] | None:
    """``(row, UTF-8 byte column)`` just after each ``]`` of ``text`` whose brackets hold a
    comma at their own top level (``x[0,]``, ``[a, b]``; not ``x[(a, b)]``); ``None`` when the
    tokenizer refuses the text. The answer is shared: do not change it."""
    found: set[tuple[int, int]] = set()
    stack: list[list[object]] = []  # [opening bracket, comma seen]
    lines: list[str] = []  # the physical lines read, as ``ast`` counts rows

    def readline() -> str:
        lines.append(reader.readline())
        return lines[-1]

    reader = io.StringIO(text)
    try:
        for token in tokenize.generate_tokens(readline):
            if token.type != tokenize.OP:
                continue
            if token.string in _OPENING:
                stack.append([token.string, False])
            elif token.string == ",":
                if stack:
                    stack[-1][1] = True
            elif token.string in (")", "]", "}") and stack:
                opening, comma = stack.pop()
                if opening == "[" and comma:
                    row, column = token.end
                    found.add((row, len(lines[row - 1][:column].encode("utf-8"))))
    except (tokenize.TokenError, SyntaxError, ValueError):
        return None
    return frozenset(found)


def module_commas(model: AstModel) -> Commas:
    """The model's :class:`TextCommas`, made once per model (``None`` without text)."""
    if "comma_brackets" not in model.memo:
        model.memo["comma_brackets"] = TextCommas(model.text, model.parents) if model.text is not None else None
    return model.memo["comma_brackets"]  # type: ignore[return-value]


def subscript_elements(model: AstModel, expr: ast.Subscript) -> list[ast.expr]:
    """The elements of ``expr``'s brackets, in order, as ``ast`` nodes: an index's expression
    (a ``*`` dropped: ``x[*a]`` gives ``a``) or an ``ast.Slice``. One
    element unless the brackets hold a top-level comma (``x[0,]`` -> ``[0]``, ``x[1:,]`` ->
    ``[Slice]``, ``x[(a), b]`` -> ``[a, b]``, ``x[(a, b)]`` -> ``[Tuple]``)."""
    return subscript_elements_in(module_commas(model), expr)


def subscript_elements_in(commas: Commas, expr: ast.Subscript) -> list[ast.expr]:
    """:func:`subscript_elements` with the module's :data:`Commas` given (``None``: judged
    from positions, which misread ``x[(a), (b)]`` and ``x[(a),]`` as one tuple). A
    :class:`TextCommas` answers from the row where that agrees with positions (so a text the
    tokenizer refuses is read from positions), else from the tokenizer."""
    index = expr.slice
    if type(index) is not ast.Tuple or not index.elts:
        return [index]
    first, last = index.elts[0], index.elts[-1]
    starts_with_first = (index.lineno, index.col_offset) == (first.lineno, first.col_offset)
    guessed = starts_with_first or (index.end_lineno, index.end_col_offset) == (last.end_lineno, last.end_col_offset)
    if isinstance(commas, TextCommas):
        several = commas.read_from_row(index)
        if several is None or several != guessed:
            commas = commas.tokenized()
    if commas is None:
        several = guessed
    elif not isinstance(commas, TextCommas):
        several = (expr.end_lineno, expr.end_col_offset) in commas
    if not several:  # `x[*a]`: one starred element, no comma, no parentheses
        several = len(index.elts) == 1 and type(first) is ast.Starred and starts_with_first
    if not several:
        return [index]
    return [e.value if type(e) is ast.Starred else e for e in index.elts]


def one_index(model: AstModel, expr: ast.Subscript) -> ast.expr | None:
    """The one index of ``expr`` (one element, not a slice),
    ``None`` for several elements or a slice."""
    elements = subscript_elements(model, expr)
    return elements[0] if len(elements) == 1 and type(elements[0]) is not ast.Slice else None

"""libcst's subscript elements on CPython's ``ast``: what libcst sees between the brackets.

libcst splits ``x[...]`` into ``SubscriptElement``s by the commas at the top level of the
brackets: ``x[0,]`` is one element ``0``, ``x[1:,]`` one slice, ``x[(a), b]`` two and
``x[(a, b)]`` one (a tuple). ``ast`` gives one ``slice`` expression, an ``ast.Tuple`` in the
first three cases, and keeps no parentheses, so the count is read from the tokenizer: the
closing ``]`` of every bracket that holds a top-level comma, read once per text (a few texts
kept) and kept in the model's memo. A model built without its text (or a text the tokenizer
refuses) falls back to positions (see :func:`subscript_elements_in`).
"""

from __future__ import annotations

import ast
import io
import tokenize
from functools import lru_cache

from ckptlint.semantic.ast_model import AstModel

_OPENING = {"(": ")", "[": "]", "{": "}"}

#: The ``(row, byte column)`` after each ``]`` holding a top-level comma; ``None``: unknown.
Commas = frozenset[tuple[int, int]] | None


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
    """The model's :func:`comma_brackets`, read once per model (``None`` without text)."""
    if "comma_brackets" not in model.memo:
        model.memo["comma_brackets"] = comma_brackets(model.text) if model.text is not None else None
    return model.memo["comma_brackets"]  # type: ignore[return-value]


def subscript_elements(model: AstModel, expr: ast.Subscript) -> list[ast.expr]:
    """libcst's elements of ``expr``'s brackets, in order, as ``ast`` nodes: the value of each
    ``Index`` (a ``*`` dropped, as libcst's ``Index.value`` does) or an ``ast.Slice``. One
    element unless the brackets hold a top-level comma (``x[0,]`` -> ``[0]``, ``x[1:,]`` ->
    ``[Slice]``, ``x[(a), b]`` -> ``[a, b]``, ``x[(a, b)]`` -> ``[Tuple]``)."""
    return subscript_elements_in(module_commas(model), expr)


def subscript_elements_in(commas: Commas, expr: ast.Subscript) -> list[ast.expr]:
    """:func:`subscript_elements` with the module's :func:`comma_brackets` given (``None``:
    judged from positions, which misread ``x[(a), (b)]`` and ``x[(a),]`` as one tuple)."""
    index = expr.slice
    if type(index) is not ast.Tuple or not index.elts:
        return [index]
    first, last = index.elts[0], index.elts[-1]
    starts_with_first = (index.lineno, index.col_offset) == (first.lineno, first.col_offset)
    if commas is not None:
        several = (expr.end_lineno, expr.end_col_offset) in commas
    else:
        several = starts_with_first or (index.end_lineno, index.end_col_offset) == (last.end_lineno, last.end_col_offset)
    if not several:  # `x[*a]`: one starred element, no comma, no parentheses
        several = len(index.elts) == 1 and type(first) is ast.Starred and starts_with_first
    if not several:
        return [index]
    return [e.value if type(e) is ast.Starred else e for e in index.elts]


def one_index(model: AstModel, expr: ast.Subscript) -> ast.expr | None:
    """The one ``Index`` value of ``expr`` (libcst's ``len(slice) == 1`` and an ``Index``),
    ``None`` for several elements or a slice."""
    elements = subscript_elements(model, expr)
    return elements[0] if len(elements) == 1 and type(elements[0]) is not ast.Slice else None

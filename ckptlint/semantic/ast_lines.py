"""Statement lines: which simple statements share a *logical* line (``a = 1; b = 2``), and
which bodies follow their colon on the header's logical line (``class C: x = 1``). The
analyses count and group statements by these lines.

``ast`` keeps no ``;``, colon or backslash, so physical rows mislead: ``a(); \\`` then ``b()``
is one logical line, and so are ``def f(m`` / ``): return m`` and ``def f(m): \\`` /
``return m``. The answer is read once per module from the tokenizer
(:func:`ckptlint.text.ast_logical_lines.logical_line_starts`) and kept in the model's memo.
A model built without its text (or a text the tokenizer refuses) falls back to physical
rows: the first statement that starts on a row starts a logical line.
"""

from __future__ import annotations

import ast

from ckptlint.semantic.ast_model import AstModel
from ckptlint.text.ast_logical_lines import ast_rows, is_indentation, logical_line_starts, opens_row

_TRY_STAR: tuple[type, ...] = (ast.TryStar,) if hasattr(ast, "TryStar") else ()  # type: ignore[attr-defined,unused-ignore]
_COMPOUND = (
    ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, *_TRY_STAR,
    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Match,
)  # fmt: skip


def _row_starts(module: ast.Module) -> dict[int, int]:
    """The physical-row fallback: row -> column of the first statement starting on it."""
    starts: dict[int, int] = {}
    pending: list[ast.stmt] = list(module.body)
    while pending:  # statements hold statements only in these lists
        node = pending.pop()
        known = starts.get(node.lineno)
        if known is None or node.col_offset < known:
            starts[node.lineno] = node.col_offset
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if block:
                pending.extend(block)
        for part in getattr(node, "handlers", None) or getattr(node, "cases", None) or ():
            pending.extend(part.body)
    return starts


def _memo_row_starts(model: AstModel) -> dict[int, int]:
    """:func:`_row_starts` of the model's module, read once per model."""
    found = model.memo.get("row_starts")
    if found is None:
        found = model.memo["row_starts"] = _row_starts(model.module)
    return found  # type: ignore[return-value]


def _rows(model: AstModel) -> list[str] | None:
    """The model's :func:`~ckptlint.text.ast_logical_lines.ast_rows` (``None`` without text)."""
    if "ast_rows" not in model.memo:
        model.memo["ast_rows"] = ast_rows(model.text) if model.text is not None else None
    return model.memo["ast_rows"]  # type: ignore[return-value]


def _from_row(model: AstModel, statement: ast.stmt) -> bool | None:
    """Whether a simple ``statement`` starts a logical line, judged from its row alone;
    ``None`` when the row cannot tell. The tokenizer and the physical-row fallback both
    agree with an answer given: only indentation before the statement (the ``ast`` column
    is in UTF-8 bytes, but blanks are ASCII, so the first characters are those bytes) and no
    backslash ending the row above; or a statement starting before it on the row."""
    rows = _rows(model)
    if rows is None:
        return None
    row, column = statement.lineno, statement.col_offset
    if is_indentation(rows[row - 1][:column]):
        return True if opens_row(rows, row, column) else None
    if _memo_row_starts(model).get(row, column) < column:
        return False
    return None


def _starts(model: AstModel) -> dict[int, int]:
    """Row -> byte column where a logical line starts, read once per model."""
    found = model.memo.get("logical_line_starts")
    if found is None:
        found = (logical_line_starts(model.text) if model.text is not None else None) or _row_starts(model.module)
        model.memo["logical_line_starts"] = found
    return found  # type: ignore[return-value]


def starts_logical_line(model: AstModel, statement: ast.stmt) -> bool:
    """Whether ``statement`` begins a logical line: not after a ``;`` nor after its header's
    colon (a compound statement always does)."""
    if isinstance(statement, _COMPOUND):
        return True
    judged = _from_row(model, statement)
    if judged is not None:
        return judged
    return _starts(model).get(statement.lineno) == statement.col_offset


def body_on_header(model: AstModel, body: list[ast.stmt]) -> bool:
    """Whether ``body`` (a block of a compound statement) follows its colon on the header's
    logical line (``class C: x = 1``); ``False`` for an
    empty body."""
    return bool(body) and not starts_logical_line(model, body[0])


def statement_lines(model: AstModel, body: list[ast.stmt]) -> list[list[ast.stmt]]:
    """``body`` grouped as statement lines, in order: simple statements joined by
    ``;`` (backslash continuations included) make one group, a compound statement is one."""
    lines: list[list[ast.stmt]] = []
    for statement in body:
        if lines and not starts_logical_line(model, statement):
            lines[-1].append(statement)
        else:
            lines.append([statement])
    return lines

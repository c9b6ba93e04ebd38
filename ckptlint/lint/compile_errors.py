"""Code that CPython's parser accepts but its compiler rejects, reported as CKP999.

``def f(a, a): ...``, ``nonlocal x`` at module level, ``return`` or ``yield`` outside a
function, ``break`` outside a loop: the parser builds a tree of such code, and
CPython raises ``SyntaxError`` only when it compiles the tree (its symbol table and code
generator), so the module cannot be imported. ruff reports these as syntax errors too.

Only a file the gate lets through to analysis is compiled, once its tree is built (the
linter's :meth:`~ckptlint.lint.linter.FileLinter.check`); the other rules run on it as usual.
The linter hands over the ``ast`` tree it parsed, and that tree is compiled rather than the
text: CPython's compiler raises the same errors at the same positions either way (its
symbol table and code generator read the tree; ``compile`` converts a tree without changing
it), without parsing the text again. The result of one text is remembered, so the fix loop's own compile checks
(:func:`compile_error`) cost nothing more. A notebook is compiled as IPython runs its cells:
top-level ``await`` is allowed.

Position: CPython gives these errors at ``col_offset + 1`` of the offending node, a UTF-8 byte
offset (``PyErr_RangedSyntaxLocationObject`` in Python/errors.c takes it as is; seen on 3.11),
which is turned into a 1-based character column of the line; an offset that falls inside a
character is taken as a character column already.
"""

from __future__ import annotations

import ast
import warnings
from collections import OrderedDict

from ckptlint.rule_codes import SYNTAX_ERROR
from ckptlint.text.diagnostics import Diagnostic
from ckptlint.text.source import SourceFile

__all__ = ["compile_error", "compile_error_diagnostic", "syntax_error_at"]

#: A name no file has: CPython reads the line of the error from the named file otherwise.
_FILENAME = "<ckptlint>"


#: ``(message, line, offset)`` of a ``SyntaxError``; ``None``: none (or none known).
_Failure = tuple[str, int, int] | None

#: The last few texts' :func:`_compile_failure`, by ``(text, top_level_await)``.
_FAILURES: OrderedDict[tuple[str, bool], _Failure] = OrderedDict()
_KEPT = 8


def _compile_failure(text: str, top_level_await: bool, tree: ast.Module | None = None) -> _Failure:
    """``(message, line, offset)`` of the ``SyntaxError`` CPython's compiler raises for
    ``text`` (``offset`` as CPython gives it, 0 when it gives none), or ``None`` when it
    compiles or when it cannot tell (``RecursionError``, ``MemoryError``...). ``tree``: the
    ``ast`` tree of ``text``, compiled in its place when given (not changed). The answers of
    the last few texts are kept."""
    key = (text, top_level_await)
    if key in _FAILURES:
        _FAILURES.move_to_end(key)
        return _FAILURES[key]
    found = _FAILURES[key] = _compile(text if tree is None else tree, top_level_await)
    if len(_FAILURES) > _KEPT:
        _FAILURES.popitem(last=False)
    return found


def _compile(code: str | ast.Module, top_level_await: bool) -> _Failure:
    """:func:`_compile_failure` of ``code``, a text or its tree, compiled now."""
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if top_level_await else 0
    try:
        with warnings.catch_warnings():  # SyntaxWarnings are the linted code's business
            warnings.simplefilter("ignore")
            compile(code, _FILENAME, "exec", flags=flags, dont_inherit=True)
    except SyntaxError as exc:
        return (exc.msg or "invalid syntax", exc.lineno or 0, exc.offset or 0)
    except Exception:  # noqa: BLE001 - RecursionError, MemoryError, ValueError: cannot tell
        return None
    return None


def compile_error(text: str) -> str | None:
    """Why CPython's compiler rejects ``text`` (``"<message>, line N"``), or ``None``. Catches
    what a parser alone lets through, such as a repeated keyword argument."""
    failure = _compile_failure(text, False)
    if failure is None:
        return None
    message, line, _ = failure
    return f"{message}, line {line}" if line else message


def compile_error_diagnostic(
    source: SourceFile, *, top_level_await: bool = False, tree: ast.Module | None = None
) -> Diagnostic | None:
    """CKP999 at the position where CPython's compiler rejects ``source`` (a text its parser
    accepted), or ``None`` when it compiles; ``tree``: ``source``'s ``ast`` tree, compiled in
    place of the text when given (see the module's docstring)."""
    failure = _compile_failure(source.text, top_level_await, tree)
    if failure is None:
        return None
    message, line, offset = failure
    row = min(max(1, line), len(source.line_starts))
    text = source.line(row)
    column = min(_character_column(text, offset), len(text) + 1)
    return syntax_error_at(source, message, row, column)


def syntax_error_at(source: SourceFile, message: str, row: int, column: int) -> Diagnostic:
    """The CKP999 diagnostic of ``source`` at 1-based ``row`` and character ``column``:
    ``Syntax error: <message>``, a point (start = end), suppressed by a noqa on ``row``."""
    return Diagnostic(
        code=SYNTAX_ERROR,
        message=f"Syntax error: {message}",
        path=source.path,
        start=(row, column),
        end=(row, column),
        noqa_row=row,
    )


def _character_column(line: str, offset: int) -> int:
    """The 1-based character column of CPython's 1-based UTF-8 byte ``offset`` in ``line``;
    an offset that falls inside a character is taken as a character column already."""
    if offset <= 1:
        return 1
    try:
        return len(line.encode("utf-8")[: offset - 1].decode("utf-8")) + 1
    except UnicodeDecodeError:
        return offset

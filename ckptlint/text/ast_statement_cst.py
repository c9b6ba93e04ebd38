"""The libcst tree of the smallest statement around a CPython ``ast`` node: what a fix's edit
is built from (the analysis runs on ``ast``; libcst parses only to build fixes).

:func:`statement_cst` finds, in a module's ``ast`` tree, the smallest unit of text that holds a
node and that libcst parses alone, and parses that text only, so a fix in a huge file does not
parse the file whole:

- a simple statement: the statement with the others joined to it by ``;`` on its lines
  (``a = 1; f(x)``), from its first character (a statement of a one-line body, ``if x: f(x)``,
  included) to the end of the last one; continuation lines (brackets, backslashes) and the
  comments inside them come along, their indentation does not matter there;
- a node in a compound statement's header (``if``/``elif``/``while`` tests, ``for`` targets
  and iterables, ``with`` items, decorators, ``def`` parameters, defaults, annotations and
  return annotation, class bases and keywords, an ``except`` clause's type): the header alone,
  from its line's start to its ``:``, parsed with a placeholder body (``if x:`` then ``pass``),
  an ``elif`` after a placeholder ``if``, an ``except`` after a placeholder ``try``, and an
  indented header under a placeholder ``if 1:`` (its indentation is kept, so tabs and the
  lines of its decorators stay as written);
- otherwise (a ``match`` statement's subject and patterns, or text libcst refuses alone) the
  whole enclosing compound statement, then the whole module.

The parsed text is ``prefix + source.text[start:end] + suffix``: every node of libcst's tree
inside the middle part has its offsets mapped back to the file (0-based character offsets,
1-based character positions, as :class:`~ckptlint.text.source.SourceFile` counts them;
``ast`` columns are UTF-8 bytes and are converted with :meth:`SourceFile.ast_position`).
:meth:`StatementCst.node_for` answers the libcst node that corresponds to an ``ast`` node (the
same range: libcst's ranges, like ``ast``'s, leave out an expression's own parentheses).

Used by :mod:`ckptlint.rules.edits`, which builds the edits of fixes.
"""

from __future__ import annotations

import ast
import bisect
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial

import libcst as cst

from ckptlint.text.ast_logical_lines import ast_rows, logical_line_starts, opens_row
from ckptlint.text.positions import node_offsets
from ckptlint.text.source import Position, SourceFile

__all__ = ["StatementCst", "UnitKind", "ast_offsets", "statement_cst"]

#: Which unit was parsed: ``"statement"`` (simple statements of one logical line),
#: ``"header"`` (a compound statement's header), ``"compound"`` (a whole compound statement),
#: ``"module"`` (the whole file).
UnitKind = str

_BODIES = ("body", "orelse", "finalbody")
_Maker = Callable[[], "StatementCst | None"]
#: Compound statements whose header is parsed alone; all compound statements.
_HEADERS = (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_COMPOUND = (*_HEADERS, ast.Try, ast.Match, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))


@dataclass(eq=False)
class StatementCst:
    """libcst's tree of one unit of a file (see the module docstring), with the offsets of its
    nodes in the file.

    Attributes:
        source: the file.
        module: libcst's tree of the parsed text (``prefix + source.text[start:end] + suffix``).
        start, end: the part of the file parsed, as 0-based character offsets.
        prefix: the placeholder text before it (``""`` for most units).
        kind: which unit it is (:data:`UnitKind`).
    """

    source: SourceFile
    module: cst.Module
    start: int
    end: int
    prefix: str
    kind: UnitKind
    _offsets: dict[cst.CSTNode, tuple[int, int]] = field(default_factory=dict, repr=False)
    _parents: dict[cst.CSTNode, cst.CSTNode] = field(default_factory=dict, repr=False)
    _by_range: dict[tuple[int, int], list[cst.CSTNode]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        shift = self.start - len(self.prefix)
        for node, (start, end) in node_offsets(self.module).items():
            start, end = start + shift, end + shift
            if self.start <= start and end <= self.end:
                self._offsets[node] = (start, end)
                self._by_range.setdefault((start, end), []).append(node)
        stack: list[cst.CSTNode] = [self.module]
        while stack:
            parent = stack.pop()
            for child in parent.children:
                self._parents[child] = parent
                stack.append(child)

    @property
    def model(self) -> StatementCst:
        """Itself: what :mod:`ckptlint.rules.edits` asks of a model (:meth:`ancestors`)."""
        return self

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        """The parents of ``node`` in the parsed unit, nearest first (placeholders included)."""
        parent = self._parents.get(node)
        while parent is not None:
            yield parent
            parent = self._parents.get(parent)

    def offsets(self, node: cst.CSTNode) -> tuple[int, int]:
        """0-based character offsets ``[start, end)`` of ``node`` in the file. Raises
        ``KeyError`` for a node outside the part of the file parsed."""
        return self._offsets[node]

    def range(self, node: cst.CSTNode) -> tuple[Position, Position]:
        """The 1-based ``(start, end)`` positions of ``node`` in the file; ``end`` exclusive."""
        start, end = self.offsets(node)
        return self.source.position(start), self.source.position(end)

    def nodes_at(self, start: int, end: int) -> list[cst.CSTNode]:
        """The nodes whose offsets are ``[start, end)``, innermost first."""
        return list(self._by_range.get((start, end), ()))

    def node_for(self, node: ast.AST) -> cst.CSTNode | None:
        """The libcst node that corresponds to ``node``: for an expression, the outermost
        libcst expression of the same range (``True`` is a ``Name`` there; a generator that is
        a call's only argument, whose ``ast`` range holds the call's parentheses, is the
        ``GeneratorExp`` inside them); for an ``ast.keyword`` or a starred argument, the call
        argument (``Arg``) or starred element of the same range. ``None`` when none is."""
        start, end = ast_offsets(self.source, node)
        found = self.nodes_at(start, end)
        if isinstance(node, ast.keyword):
            return next((n for n in found if isinstance(n, cst.Arg)), None)
        if isinstance(node, ast.Starred):
            wanted: tuple[type[cst.CSTNode], ...] = (cst.Arg, cst.StarredElement, cst.StarredDictElement)
            return next((n for n in reversed(found) if isinstance(n, wanted)), None)
        expression = next((n for n in reversed(found) if isinstance(n, cst.BaseExpression)), None)
        if expression is not None or self.source.text[start : start + 1] != "(":
            return expression
        parenthesized = self._parenthesized(start, end)
        if parenthesized is not None or not isinstance(node, ast.GeneratorExp):
            return parenthesized
        return self._only_argument(start, end)

    def _only_argument(self, start: int, end: int) -> cst.GeneratorExp | None:
        """The generator without parentheses of its own that is the only argument of a call
        whose parentheses are ``[start, end)`` (``ast``'s range of it holds them)."""
        for node, (left, right) in self._offsets.items():
            if isinstance(node, cst.GeneratorExp) and not node.lpar and start < left and right < end:
                arg = self._parents.get(node)
                call = self._parents.get(arg) if arg is not None else None
                if isinstance(call, cst.Call) and len(call.args) == 1 and self._offsets.get(call, (0, 0))[1] == end:
                    return node
        return None

    def _parenthesized(self, start: int, end: int) -> cst.BaseExpression | None:
        """The expression with a ``(`` at ``start`` and a ``)`` ending at ``end`` (``ast``'s
        range of a parenthesized tuple holds its parentheses, libcst's does not)."""
        for node, (left, _) in self._offsets.items():
            if left == start and isinstance(node, cst.LeftParen):
                parent = self._parents.get(node)
                if isinstance(parent, cst.BaseExpression) and any(self._offsets.get(r, (0, 0))[1] == end for r in parent.rpar):
                    return parent
        return None


def ast_offsets(source: SourceFile, node: ast.AST) -> tuple[int, int]:
    """0-based character offsets ``[start, end)`` of an ``ast`` node with a position."""
    start = source.offset(source.ast_position(node.lineno, node.col_offset))  # type: ignore[attr-defined]
    end = source.offset(source.ast_position(node.end_lineno, node.end_col_offset))  # type: ignore[attr-defined]
    return start, end


def statement_cst(source: SourceFile, tree: ast.Module, node: ast.AST) -> StatementCst | None:
    """libcst's tree of the smallest unit of ``source`` that holds ``node`` (an ``ast`` node
    with a position, of ``tree``, the ``ast`` tree of ``source``) and in which libcst finds the
    node that corresponds to it (:meth:`StatementCst.node_for`): the simple statement, the
    compound statement's header, the whole compound statements around it from the innermost
    out, the whole module. ``None`` when libcst refuses even the whole module or has no node
    for it there."""
    for make in _units(source, tree, node):
        unit = make()
        if unit is not None and unit.node_for(node) is not None:
            return unit
    return None


# ---------------------------------------------------------------- finding the unit


def _key(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset  # type: ignore[attr-defined]


def _end_key(node: ast.AST) -> tuple[int, int]:
    return node.end_lineno, node.end_col_offset  # type: ignore[attr-defined]


def _first_key(statement: ast.stmt) -> tuple[int, int]:
    """Where a statement starts, its decorators included."""
    decorators = getattr(statement, "decorator_list", None)
    return min(_key(statement), *(_key(d) for d in decorators)) if decorators else _key(statement)


def _holder(statements: list[ast.stmt], start: tuple[int, int], end: tuple[int, int]) -> int | None:
    """The index of the statement of ``statements`` (one body, in source order) that holds
    ``[start, end)``, or ``None``."""
    index = bisect.bisect_left(statements, end, key=_end_key)
    if index < len(statements) and _first_key(statements[index]) <= start:
        return index
    return None


def _child_bodies(statement: ast.stmt) -> Iterator[list[ast.stmt]]:
    """Each body of a compound statement: its own, each ``except`` handler's, each ``case``'s."""
    for name in _BODIES:
        body = getattr(statement, name, None)
        if body:
            yield body
    for handler in getattr(statement, "handlers", ()):
        yield handler.body
    for case in getattr(statement, "cases", ()):
        yield case.body


def _chain(tree: ast.Module, node: ast.AST) -> list[tuple[list[ast.stmt], int]]:
    """The statements that hold ``node``, outermost first, as ``(body, index)``. The last is
    the innermost: ``node`` is in one of its bodies or in its header."""
    start, end = _key(node), _end_key(node)
    chain: list[tuple[list[ast.stmt], int]] = []
    bodies = [tree.body]
    while bodies:
        for body in bodies:
            index = _holder(body, start, end)
            if index is not None:
                chain.append((body, index))
                bodies = list(_child_bodies(body[index]))
                break
        else:
            break
    return chain


def _units(source: SourceFile, tree: ast.Module, node: ast.AST) -> Iterator[_Maker]:
    """Makers of the units to try for ``node``, smallest first."""
    chain = _chain(tree, node)
    if chain:
        body, index = chain[-1]
        statement = body[index]
        if not isinstance(statement, _COMPOUND):
            yield partial(_simple, source, body, index)
        else:
            handler = _handler_holding(statement, node)
            if handler is not None:
                yield partial(_header, source, handler, "try")
            elif isinstance(statement, _HEADERS) and not _in_a_body(statement, node):
                before = "if" if len(chain) > 1 and _written_elif(source, statement) else ""
                yield partial(_header, source, statement, before)
        for outer, at in reversed(chain):
            if isinstance(outer[at], _COMPOUND):
                yield partial(_compound, source, outer[at])
    yield partial(_parse, source, 0, len(source.text), "", "", "module")


def _in_a_body(statement: ast.stmt, node: ast.AST) -> bool:
    start, end = _key(node), _end_key(node)
    return any(_holder(body, start, end) is not None for body in _child_bodies(statement))


def _handler_holding(statement: ast.stmt, node: ast.AST) -> ast.ExceptHandler | None:
    """The ``except`` handler of ``statement`` whose header holds ``node``."""
    start, end = _key(node), _end_key(node)
    for handler in getattr(statement, "handlers", ()):
        if _key(handler) <= start and end <= _end_key(handler) and _holder(handler.body, start, end) is None:
            return handler
    return None


def _written_elif(source: SourceFile, statement: ast.stmt) -> bool:
    """Whether ``statement`` (an ``if`` in another's ``orelse``) is written ``elif``."""
    return source.text.startswith("elif", _offset(source, _key(statement)))


def _offset(source: SourceFile, key: tuple[int, int]) -> int:
    return source.offset(source.ast_position(*key))


def _simple(source: SourceFile, body: list[ast.stmt], index: int) -> StatementCst | None:
    """The simple statements joined by ``;`` to ``body[index]`` (on one logical line, backslash
    continuations included; on one physical row where the tokenizer refuses the text)."""
    rows = ast_rows(source.text)

    def joined(before: ast.stmt, statement: ast.stmt) -> bool:
        if statement.lineno == before.end_lineno:
            return True  # as the tokenizer says: ``before`` ends on its row, before it
        if rows is not None and opens_row(rows, statement.lineno, statement.col_offset):
            return False
        starts = logical_line_starts(source.text)  # a backslash above, or a lone ``\r``
        if starts is None:
            return statement.lineno == before.end_lineno
        return starts.get(statement.lineno) != statement.col_offset

    first = last = index
    while first > 0 and joined(body[first - 1], body[first]):
        first -= 1
    while last + 1 < len(body) and joined(body[last], body[last + 1]):
        last += 1
    start, end = _offset(source, _key(body[first])), _offset(source, _end_key(body[last]))
    return _parse(source, start, end, "", "", "statement")


def _indentation(source: SourceFile, statement: ast.AST) -> tuple[int, str] | None:
    """The start of the line ``statement`` (its first decorator) starts, and the text before
    it there, when that text is blank (else ``None``)."""
    key = _first_key(statement) if isinstance(statement, ast.stmt) else _key(statement)
    row = key[0]
    line_start = source.line_starts[row - 1]
    start = _offset(source, key)
    if getattr(statement, "decorator_list", None) and key != _key(statement):
        at = source.text.rfind("@", line_start, start)
        start = at if at >= 0 else start
    indent = source.text[line_start:start]
    return (line_start, indent) if indent.strip() == "" else None


def _header(source: SourceFile, statement: ast.AST, before: str) -> StatementCst | None:
    """The header of ``statement`` alone (``before``: the placeholder compound statement
    written before it, ``"if"`` for an ``elif``, ``"try"`` for an ``except``)."""
    found = _indentation(source, statement)
    if found is None:
        return None
    line_start, indent = found
    colon = _header_colon(source, statement, line_start)
    if colon is None:
        return None
    newline = source.newline
    body = f"{indent}    pass{newline}"
    prefix = "if 1:" + newline if indent else ""
    if before:
        prefix += f"{indent}{before}{' 1' if before == 'if' else ''}:{newline}{body}"
    return _parse(source, line_start, colon + 1, prefix, newline + body, "header")


def _header_colon(source: SourceFile, statement: ast.AST, line_start: int) -> int | None:
    """The offset of the ``:`` that ends ``statement``'s header, tokenizing from
    ``line_start`` (the start of its first line): the first ``:`` outside brackets after every
    node of the header (and after its keyword: decorators end lines before it). ``None``
    when the tokenizer fails or the logical line ends first."""
    after = _offset(source, _key(statement))
    for name, value in ast.iter_fields(statement):
        if name in (*_BODIES, "handlers", "cases"):
            continue
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, ast.AST):
                for inner in ast.walk(child):
                    if getattr(inner, "end_lineno", None) is not None:
                        after = max(after, _offset(source, _end_key(inner)))
    starts = source.line_starts
    first_row = bisect.bisect_right(starts, line_start)
    lines = _lines_from(source, first_row)
    depth = 0
    try:
        for token in tokenize.generate_tokens(lambda: next(lines, "")):
            offset = starts[first_row + token.start[0] - 2] + token.start[1]
            if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER) and offset >= after:
                return None
            if token.type != tokenize.OP:
                continue
            if token.string in "([{":
                depth += 1
            elif token.string in ")]}":
                depth -= 1
            elif token.string == ":" and depth == 0 and offset >= after:
                return offset
    except (tokenize.TokenError, SyntaxError, IndexError):
        return None
    return None


def _lines_from(source: SourceFile, row: int) -> Iterator[str]:
    """The lines of ``source`` from 1-based ``row`` on, with their line endings."""
    starts = source.line_starts
    for index in range(row - 1, len(starts)):
        end = starts[index + 1] if index + 1 < len(starts) else len(source.text)
        yield source.text[starts[index] : end]


def _compound(source: SourceFile, statement: ast.stmt) -> StatementCst | None:
    """The whole compound ``statement`` (under a placeholder ``if 1:`` when indented)."""
    found = _indentation(source, statement)
    if found is None:
        return None
    line_start, indent = found
    prefix = "if 1:" + source.newline if indent else ""
    return _parse(source, line_start, _offset(source, _end_key(statement)), prefix, source.newline, "compound")


def _parse(source: SourceFile, start: int, end: int, prefix: str, suffix: str, kind: UnitKind) -> StatementCst | None:
    """libcst's tree of ``prefix + source.text[start:end] + suffix``; ``None`` when libcst
    refuses it."""
    from ckptlint import perf

    text = prefix + source.text[start:end] + suffix
    perf.add("cst_parses")
    perf.add("cst_chars_parsed", len(text))
    try:
        module = cst.parse_module(text)
    except Exception:  # noqa: BLE001 - libcst.ParserSyntaxError, RecursionError and friends
        return None
    return StatementCst(source, module, start, end, prefix, kind)


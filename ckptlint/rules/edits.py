"""Building minimal text edits for fixes, keeping the layout of the code they touch, for
nodes found on CPython's ``ast``: :class:`~ckptlint.text.diagnostics.Edit` records in 1-based
positions of the analysed file, built from libcst's tree of the smallest statement around the
node only (:func:`~ckptlint.text.ast_statement_cst.statement_cst`), never the whole module's.

Each function finds the libcst node that corresponds to the ``ast`` node it is given (the
same range; :meth:`StatementCst.node_for`) and hands it to the text logic below (the
``_cst_*`` functions, on libcst nodes, with the statement's tree standing for the analysis:
:class:`NodePositions`): edits never rewrite more than the argument or dictionary entry they
add or remove, so comments and formatting around them survive; text inserted inside an
f-string quoted with ``"`` has its ``"`` strings written with ``'`` (before Python 3.12 an
f-string's expressions cannot hold its own quote, and a fix must parse on every version
ckptlint supports). The statements parsed are kept in the analysis's ``derived`` memo (a fix
that edits one call twice parses it once).

``ast`` has no node for a keyword's name or an attribute's name: :func:`replace_node` given an
``ast.keyword`` replaces its name (as :class:`~ckptlint.checkpoint.sites.site.Misspelling`'s
``node`` stands for it on ``ast``), and :func:`replace_attribute_name` replaces the name after
an attribute's dot.

libcst is imported inside the functions only: the rules import this module, and a run that
builds no edits (:meth:`ckptlint.rules.base.RuleContext.fix_from`) never loads libcst.
Raises :class:`NoCstNode` when libcst has no node for the ``ast`` node (libcst refuses the
code around it): the fix has no edits and is dropped.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

from ckptlint.text.diagnostics import Edit
from ckptlint.text.source import Position, SourceFile

if TYPE_CHECKING:
    import libcst as cst

    from ckptlint.semantic.ast_analysis import AstAnalysis
    from ckptlint.text.ast_statement_cst import StatementCst

__all__ = [
    "NoCstNode",
    "add_dict_entry",
    "add_keyword_argument",
    "remove_argument",
    "replace_attribute_name",
    "replace_node",
    "statement_of",
]

_MEMO = "edits.statements"


class NoCstNode(LookupError):
    """libcst has no node for an ``ast`` node (it refuses the code around it)."""


def statement_of(analysis: AstAnalysis, node: ast.AST) -> tuple[StatementCst, cst.CSTNode]:
    """libcst's tree of the smallest statement around ``node`` (kept in ``analysis.derived``)
    and the libcst node in it that corresponds to ``node``. Raises :class:`NoCstNode`."""
    from ckptlint.text.ast_statement_cst import ast_offsets, statement_cst

    memo = analysis.derived.setdefault(_MEMO, {})
    assert isinstance(memo, dict)
    start, end = ast_offsets(analysis.source, node)
    for unit in memo.values():
        if unit.start <= start and end <= unit.end:
            found = unit.node_for(node)
            if found is not None:
                return unit, found
    unit = statement_cst(analysis.source, analysis.tree, node)
    if unit is None:
        raise NoCstNode(f"no libcst node for the {type(node).__name__} at {analysis.start(node)}")
    memo[(unit.start, unit.end, unit.prefix)] = unit
    found = unit.node_for(node)
    assert found is not None  # statement_cst answers a unit that has it
    return unit, found


def replace_node(analysis: AstAnalysis, node: ast.AST, content: str) -> Edit:
    """Replace the text of ``node`` by ``content`` (:func:`_cst_replace_node`);
    for an ``ast.keyword``, the keyword's name."""
    import libcst as cst

    unit, found = statement_of(analysis, node)
    if isinstance(node, ast.keyword):
        assert isinstance(found, cst.Arg)
        if found.keyword is None:
            raise NoCstNode(f"a `**` argument has no name, at {analysis.start(node)}")
        return _cst_replace_node(unit, found.keyword, content)
    return _cst_replace_node(unit, found, content)


def replace_attribute_name(analysis: AstAnalysis, node: ast.Attribute, content: str) -> Edit:
    """Replace the name after the dot of attribute ``node`` (``enable`` of ``model.enable``)
    by ``content``."""
    import libcst as cst

    unit, found = statement_of(analysis, node)
    if not isinstance(found, cst.Attribute):
        raise NoCstNode(f"no libcst attribute at {analysis.start(node)}")
    return _cst_replace_node(unit, found.attr, content)


def add_keyword_argument(analysis: AstAnalysis, call: ast.Call, keyword: str) -> tuple[Edit, ...]:
    """Add ``keyword`` (``"use_reentrant=False"``) as the last argument of ``call``
    (:func:`_cst_add_keyword_argument`: the layout is kept)."""
    import libcst as cst

    unit, found = statement_of(analysis, call)
    if not isinstance(found, cst.Call):
        raise NoCstNode(f"no libcst call at {analysis.start(call)}")
    return _cst_add_keyword_argument(unit, found, keyword)


def remove_argument(analysis: AstAnalysis, call: ast.Call, arg: ast.expr | ast.keyword) -> tuple[Edit, ...]:
    """Remove argument ``arg`` (a positional expression, ``ast.Starred`` for ``*args``, or an
    ``ast.keyword``) from ``call`` with the comma that separates it
    (:func:`_cst_remove_argument`)."""
    import libcst as cst

    unit, found = statement_of(analysis, call)
    if not isinstance(found, cst.Call):
        raise NoCstNode(f"no libcst call at {analysis.start(call)}")
    target = unit.node_for(arg)
    for candidate in found.args:
        if candidate is target or candidate.value is target:
            return _cst_remove_argument(unit, found, candidate)
    raise NoCstNode(f"no libcst argument at {analysis.start(arg)}")


def add_dict_entry(analysis: AstAnalysis, node: ast.Dict, entry: str) -> tuple[Edit, ...]:
    """Add ``entry`` (``'"use_reentrant": False'``) as the last item of dict literal ``node``
    (:func:`_cst_add_dict_entry`)."""
    import libcst as cst

    unit, found = statement_of(analysis, node)
    if not isinstance(found, cst.Dict):
        raise NoCstNode(f"no libcst dict at {analysis.start(node)}")
    return _cst_add_dict_entry(unit, found, entry)


class _Ancestry(Protocol):
    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]: ...


class NodePositions(Protocol):
    """What the edits need of an analysis: the file, each node's offsets and 1-based range
    in it, and each node's ancestors (``model.ancestors``, nearest first)."""

    @property
    def source(self) -> SourceFile: ...

    @property
    def model(self) -> _Ancestry: ...

    def offsets(self, node: cst.CSTNode) -> tuple[int, int]: ...

    def range(self, node: cst.CSTNode) -> tuple[Position, Position]: ...


def _cst_replace_node(analysis: NodePositions, node: cst.CSTNode, content: str) -> Edit:
    """Replace the text of ``node`` by ``content``."""
    start, end = analysis.range(node)
    return Edit(start, end, _quoted_for(analysis, node, content))


def _cst_add_keyword_argument(analysis: NodePositions, call: cst.Call, keyword: str) -> tuple[Edit, ...]:
    """Add ``keyword`` (e.g. ``"use_reentrant=False"``) as the last argument of ``call``.

    Layout kept: a call whose arguments sit on one line gets ``, keyword`` after its last
    argument; a call with one argument per line (closing parenthesis on its own line) gets
    a new line at the indentation of the last argument, with the trailing-comma style kept;
    a call without arguments gets ``keyword`` between its parentheses.
    """
    import libcst as cst

    source = analysis.source
    keyword = _quoted_for(analysis, call, keyword)
    if not call.args:
        func_end = analysis.offsets(call.func)[1]
        call_end_offset = analysis.offsets(call)[1]
        paren = source.text.index("(", func_end, call_end_offset)
        position = source.position(paren + 1)
        return (Edit(position, position, keyword),)
    last = call.args[-1]
    if len(call.args) == 1 and isinstance(last.value, cst.GeneratorExp) and not last.value.lpar:
        # f(x for x in y) shares the call's parentheses: a second argument needs its own
        start, end = analysis.range(last.value)
        return (Edit(start, start, "("), Edit(end, end, f"), {keyword}"))
    last_start, last_end = analysis.range(last)
    call_end = analysis.range(call)[1]
    trailing_comma = isinstance(last.comma, cst.Comma)
    closing_row = call_end[0]
    previous_row = analysis.range(call.args[-2])[1][0] if len(call.args) > 1 else _open_paren_row(analysis, call)
    one_per_line = closing_row > last_end[0] and last_start[0] > previous_row
    if not one_per_line:
        return (Edit(last_end, last_end, f", {keyword}"),)
    indent = _indent_of(source.line(last_start[0]), last_start[1])
    newline = source.newline
    line_end = source.position(source.line_end_offset(last_end[0]))
    if trailing_comma:
        comma_row = source.position(source.text.index(",", source.offset(last_end)))[0]
        line_end = source.position(source.line_end_offset(comma_row))
        return (Edit(line_end, line_end, f"{newline}{indent}{keyword},"),)
    edits = [Edit(last_end, last_end, ",")]
    edits.append(Edit(line_end, line_end, f"{newline}{indent}{keyword}"))
    return tuple(edits)


def _cst_remove_argument(analysis: NodePositions, call: cst.Call, arg: cst.Arg) -> tuple[Edit, ...]:
    """Remove ``arg`` from ``call`` together with the comma that separates it."""
    import libcst as cst

    args = list(call.args)
    index = next(i for i, a in enumerate(args) if a is arg)
    start, end = analysis.range(arg)
    if index + 1 < len(args):
        next_start = analysis.range(args[index + 1])[0]
        return (Edit(start, next_start, ""),)
    if index > 0:
        previous_end = analysis.range(args[index - 1])[1]
        return (Edit(previous_end, end, ""),)
    if isinstance(arg.comma, cst.Comma):
        source = analysis.source
        end = source.position(source.text.index(",", source.offset(end)) + 1)
    return (Edit(start, end, ""),)


def _cst_add_dict_entry(analysis: NodePositions, node: cst.Dict, entry: str) -> tuple[Edit, ...]:
    """Add ``entry`` (e.g. ``'"use_reentrant": False'``) as the last item of dict literal
    ``node``, after its last element (or between the braces of ``{}``)."""
    entry = _quoted_for(analysis, node, entry)
    if not node.elements:
        start, end = analysis.range(node)
        return (Edit(start, end, "{" + entry + "}"),)
    last = node.elements[-1]
    last_end = analysis.range(last)[1]
    return (Edit(last_end, last_end, f", {entry}"),)


def _quoted_for(analysis: NodePositions, node: cst.CSTNode, text: str) -> str:
    """``text`` to insert at ``node``: inside an f-string quoted with ``"``, its ``"`` strings
    take ``'`` (text holding both quote characters is left as it is)."""
    import libcst as cst

    if '"' not in text or "'" in text:
        return text
    for ancestor in analysis.model.ancestors(node):
        if isinstance(ancestor, cst.FormattedString) and '"' in ancestor.start:
            return text.replace('"', "'")
    return text


def _open_paren_row(analysis: NodePositions, call: cst.Call) -> int:
    return analysis.range(call.func)[1][0]


def _indent_of(line: str, column: int) -> str:
    prefix = line[: column - 1]
    return prefix if prefix.strip() == "" else " " * (len(prefix) - len(prefix.lstrip()) + 4)

"""Building minimal text edits for fixes, keeping the layout of the code they touch.

Every function returns :class:`~ckptlint.text.diagnostics.Edit` records in 1-based positions of
the analysed file. They never rewrite more than the argument or dictionary entry they add
or remove, so comments and formatting around them survive. Text inserted inside an f-string
quoted with ``"`` has its ``"`` strings written with ``'`` (:func:`_quoted_for`): before Python
3.12 an f-string's expressions cannot hold its own quote, and a fix must parse on every
version ckptlint supports.

The ``analysis`` they take is anything that gives libcst nodes their positions in the file
(:class:`NodePositions`): a module's :class:`~ckptlint.semantic.analysis.ModuleAnalysis`, or
the libcst tree of the one statement around a node found on ``ast``
(:class:`ckptlint.text.ast_statement_cst.StatementCst`, used by ``rules/ast_edits.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

import libcst as cst

from ckptlint.text.diagnostics import Edit
from ckptlint.text.source import Position, SourceFile

__all__ = ["NodePositions", "add_dict_entry", "add_keyword_argument", "remove_argument", "replace_node"]


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


def replace_node(analysis: NodePositions, node: cst.CSTNode, content: str) -> Edit:
    """Replace the text of ``node`` by ``content``."""
    start, end = analysis.range(node)
    return Edit(start, end, _quoted_for(analysis, node, content))


def add_keyword_argument(analysis: NodePositions, call: cst.Call, keyword: str) -> tuple[Edit, ...]:
    """Add ``keyword`` (e.g. ``"use_reentrant=False"``) as the last argument of ``call``.

    Layout kept: a call whose arguments sit on one line gets ``, keyword`` after its last
    argument; a call with one argument per line (closing parenthesis on its own line) gets
    a new line at the indentation of the last argument, with the trailing-comma style kept;
    a call without arguments gets ``keyword`` between its parentheses.
    """
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


def remove_argument(analysis: NodePositions, call: cst.Call, arg: cst.Arg) -> tuple[Edit, ...]:
    """Remove ``arg`` from ``call`` together with the comma that separates it."""
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


def add_dict_entry(analysis: NodePositions, node: cst.Dict, entry: str) -> tuple[Edit, ...]:
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

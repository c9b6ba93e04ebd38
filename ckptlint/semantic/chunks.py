"""Chunks of a module that libcst parses alone (see :mod:`ckptlint.semantic.reparse`): where a
text can be cut, a chunk's parse, and a top-level class parsed in pieces of its members.

A class is most of a model file (the one that holds the checkpoint is often a third of it),
so a class chunk is parsed in *pieces*, runs of its members, each after the class's header
lines (decorators to the colon): the first piece from the chunk's start (the lines before
the class, the header, the first members), the others as ``header + members``. The members
libcst builds are those of the whole class, because a piece starts only where the class body
starts a member with nothing open or shared, by the rules of a top-level cut at the body's
indentation: the member before ends on the line before (no backslash), the lines between are
empty or comments at the body's indentation, and the next member starts at that indentation.
The class is the first piece's, with every piece's members and the last one's block footer.
An edit inside one member parses that member's piece again, after the header.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from ckptlint.semantic.nesting import nesting_levels
from ckptlint.semantic.parse import parse_module_unvalidated

__all__ = ["Chunk", "Piece", "Refused", "compile_text", "cut", "member_edit", "parse_chunk"]

Statement = cst.SimpleStatementLine | cst.BaseCompoundStatement

_BLOCK_HOLDERS = (cst.BaseCompoundStatement, cst.Else, cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally, cst.MatchCase)
#: A line between a class's header and its first member: blank, or a comment at any indentation.
_GAP = re.compile(r"[ \t]*(?:#.*)?")
_INDENT = re.compile(r"[ \t]*")


class Refused(Exception):
    """The text cannot be put together from chunks here: parse it otherwise."""


@dataclass(frozen=True)
class Piece:
    """A run of a top-level class's members, parsed after the class's header lines (the first
    piece: from its chunk's start): its text, the class libcst built (its body holds the run),
    its module's header and footer, and the nesting levels and longest ``and``/``or`` chain of
    that class."""

    text: str
    node: cst.ClassDef
    block: cst.IndentedBlock  # node.body
    header: Sequence[cst.EmptyLine]
    footer: Sequence[cst.EmptyLine]
    trailing_newline: bool
    levels: int
    chain: int


@dataclass(frozen=True)
class Chunk:
    """One chunk, parsed alone: its text, its module's header, statements and footer, the
    default indentation it implies (``None`` without an indented block), and the nesting
    levels and longest ``and``/``or`` chain of its deepest statement; a class parsed in
    pieces has them, and its header lines (``context``)."""

    text: str
    header: Sequence[cst.EmptyLine]
    body: Sequence[Statement]
    footer: Sequence[cst.EmptyLine]
    indent: str | None
    trailing_newline: bool
    levels: int
    chain: int
    pieces: tuple[Piece, ...] = ()
    context: str = ""


def compile_text(text: str) -> ast.Module:
    """CPython's tree of ``text`` (:class:`Refused` when it refuses it)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings are the linted code's business
            tree = compile(text, "<chunk>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except Exception:  # noqa: BLE001 - SyntaxError, RecursionError, MemoryError, ValueError
        raise Refused from None
    assert isinstance(tree, ast.Module)
    return tree


def first_row(statement: ast.stmt) -> int:
    """The first row of ``statement``, its decorators included."""
    decorators = getattr(statement, "decorator_list", None) or ()
    return min([statement.lineno, *(d.lineno for d in decorators)])


def _line_starts(lines: list[str]) -> list[int]:
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    return starts


def cut(
    text: str, statements: list[ast.stmt], *, indent: str = "", offset: int = 0, after_cut: bool, before_cut: bool
) -> list[tuple[str, list[ast.stmt], int]]:
    """``text`` cut where a chunk (``indent`` ``""``) or a class's piece (``indent``: its body's)
    can start: ``(text, statements, rows before it)`` of each part. The statements' rows are
    ``offset`` more than ``text``'s (they were compiled after that many other lines).
    ``after_cut``: ``text`` starts where a cut was (its first statement must start as after
    a cut); ``before_cut``: a cut follows it (it must end where its last statement ends)."""
    if not statements:
        raise Refused  # only comments: their place in the whole module depends on what is around
    lines = text.split("\n")  # lines[i]: row i + 1 without its "\n"; a last "" when text ends with one
    starts = _line_starts(lines)
    comment = indent + "#"

    def clean_gap(first: int, last: int) -> bool:  # rows first..last (of text) between statements
        return all(not lines[row - 1] or lines[row - 1].startswith(comment) for row in range(first, last + 1))

    def starts_a_cut(row: int) -> bool:
        line = lines[row - 1]
        return len(line) > len(indent) and line.startswith(indent) and line[len(indent)] not in " \t#"

    head = first_row(statements[0]) - offset
    if after_cut and not (clean_gap(1, head - 1) and starts_a_cut(head)):
        raise Refused
    end = (statements[-1].end_lineno or 0) - offset
    if before_cut and (end != len(lines) - 1 or lines[-1] != "" or lines[end - 1].endswith("\\")):
        raise Refused  # lines after the last statement: the next statement's (or a block's)
    parts: list[tuple[str, list[ast.stmt], int]] = []
    begin, begin_row = 0, 0
    group: list[ast.stmt] = [statements[0]]
    for before, statement in zip(statements, statements[1:], strict=False):
        row, previous_end = first_row(statement) - offset, (before.end_lineno or 0) - offset
        if (
            row > previous_end
            and not lines[previous_end - 1].endswith("\\")
            and clean_gap(previous_end + 1, row - 1)
            and starts_a_cut(row)
        ):
            parts.append((text[begin : starts[previous_end]], group, offset + begin_row))
            begin, begin_row, group = starts[previous_end], previous_end, []
        group.append(statement)
    parts.append((text[begin:], group, offset + begin_row))
    return parts


def _parse(text: str) -> cst.Module:
    try:
        return parse_module_unvalidated(text)
    except Exception:  # noqa: BLE001 - libcst.ParserSyntaxError and friends: the whole parse's error
        raise Refused from None


def parse_chunk(text: str, statements: list[ast.stmt], offset: int) -> Chunk:
    """The chunk of ``text``, whose statements are ``statements`` (rows ``offset`` more than
    ``text``'s); a single class in pieces when its members can be cut."""
    if len(statements) == 1 and isinstance(statements[0], ast.ClassDef):
        try:
            return _class_chunk(text, statements[0], offset)
        except Refused:
            pass  # parsed whole below
    module = _parse(text)
    if not module.body:
        raise Refused
    parts = [nesting_levels(s) for s in statements]
    indent = module.default_indent if any(_has_block(s) for s in module.body) else None
    return Chunk(
        text,
        module.header,
        module.body,
        module.footer,
        indent,
        module.has_trailing_newline,
        max(p[0] for p in parts),
        max(p[1] for p in parts),
    )


def _has_block(node: cst.CSTNode) -> bool:
    """Whether ``node`` (a statement) holds an indented block (libcst's default indentation
    is the first one's)."""
    for child in node.children:
        if isinstance(child, cst.IndentedBlock):
            return True
        if isinstance(child, _BLOCK_HOLDERS) and _has_block(child):
            return True
    return False


# ------------------------------------------------------------------------- class pieces
def _class_chunk(text: str, node: ast.ClassDef, offset: int) -> Chunk:
    members = node.body
    if len(members) < 2:
        raise Refused
    lines = text.split("\n")
    starts = _line_starts(lines)
    first = first_row(members[0]) - offset
    header_end = first - 1  # the row of the header's colon: the last one before the body that is not a gap
    while header_end > node.lineno - offset and _GAP.fullmatch(lines[header_end - 1]):
        header_end -= 1
    if header_end < node.lineno - offset:
        raise Refused
    context = text[starts[first_row(node) - offset - 1] : starts[header_end]]
    indent = _INDENT.match(lines[first - 1]).group()  # type: ignore[union-attr]
    if not indent:
        raise Refused
    parts = cut(text, members, indent=indent, offset=offset, after_cut=False, before_cut=False)
    if len(parts) < 2:
        raise Refused
    pieces = [_parse_piece("" if i == 0 else context, part, node, group, indent) for i, (part, group, _) in enumerate(parts)]
    return _class_of(pieces, context, indent)


def _parse_piece(context: str, text: str, node: ast.ClassDef, members: list[ast.stmt], indent: str) -> Piece:
    module = _parse(context + text)
    if len(module.body) != 1 or (context and module.header) or module.default_indent != indent:
        raise Refused
    parsed = module.body[0]
    if not isinstance(parsed, cst.ClassDef) or not isinstance(block := parsed.body, cst.IndentedBlock):
        raise Refused
    parts = [nesting_levels(c) for c in ast.iter_child_nodes(node) if not isinstance(c, ast.stmt)]
    parts += [nesting_levels(m) for m in members]
    levels = 1 + max(p[0] for p in parts)
    chain = max(p[1] for p in parts)
    return Piece(text, parsed, block, module.header, module.footer, module.has_trailing_newline, levels, chain)


def _class_of(pieces: list[Piece], context: str, indent: str) -> Chunk:
    """The chunk of the class the pieces make."""
    if any(p.footer or p.block.footer or not p.trailing_newline for p in pieces[:-1]):
        raise Refused  # lines after a member that is not the last (never cut so)
    first, last = pieces[0], pieces[-1]
    members = [m for p in pieces for m in p.block.body]
    block = first.block.with_changes(body=members, footer=last.block.footer)
    return Chunk(
        "".join(p.text for p in pieces),
        first.header,
        (first.node.with_changes(body=block),),
        last.footer,
        indent,
        last.trailing_newline,
        max(p.levels for p in pieces),
        max(p.chain for p in pieces),
        tuple(pieces),
        context,
    )


def member_edit(chunk: Chunk, text: str) -> tuple[Chunk, int] | None:
    """The chunk of ``text``, ``chunk``'s class with an edit after its first piece: the
    pieces before and after the edit kept, those between parsed; and how many were parsed.
    ``None`` when ``text`` is not that (the header or the first members changed, code
    outside the class, a stretch that does not start and end where cuts can be)."""
    pieces, indent = chunk.pieces, chunk.indent or ""
    head = at = 0
    while head < len(pieces) - 1 and text.startswith(pieces[head].text, at):
        at += len(pieces[head].text)
        head += 1
    if head == 0:
        return None  # the header may have changed: the class is parsed again
    tail, back = len(pieces), len(text)
    while tail > head and back - len(pieces[tail - 1].text) >= at and text.endswith(pieces[tail - 1].text, 0, back):
        tail -= 1
        back -= len(pieces[tail].text)
    middle = text[at:back]
    try:
        if not middle:
            return _class_of([*pieces[:head], *pieces[tail:]], chunk.context, indent), 0
        tree = compile_text(chunk.context + middle)
        if len(tree.body) != 1 or not isinstance(tree.body[0], ast.ClassDef):
            return None  # code after the class, or not a class body
        node = tree.body[0]
        parts = cut(middle, node.body, indent=indent, offset=chunk.context.count("\n"), after_cut=True, before_cut=tail < len(pieces))
        parsed = [_parse_piece(chunk.context, part, node, group, indent) for part, group, _ in parts]
        return _class_of([*pieces[:head], *parsed, *pieces[tail:]], chunk.context, indent), len(parsed)
    except Refused:
        return None

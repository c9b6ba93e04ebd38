"""Parsing the successive texts of an edited file: libcst parses again only the top-level
statements an edit touched (the language server's relint of an open document).

A file is cut into *chunks*, runs of whole lines that each hold one or more top-level
statements (the first chunk also the lines before its first statement, the last one the lines
after its last), and libcst parses each chunk alone. The module put together from the chunks'
statements is the module libcst builds of the whole text, node for node, because a chunk
starts only where a whole parse starts a top-level statement with nothing left open and
nothing to share:

- the statement before the cut ends on the line before it (CPython's ``ast`` says where a
  statement ends), and that line does not end with a backslash;
- the lines between that statement and the next one are empty or comments at column 0
  (libcst gives the lines between two top-level statements to the second one, except those
  indented, which go to the footer of the block before: no cut there), and the next statement
  starts at column 0.

Parsed alone, a chunk's lines before its first statement are its module's ``header``; in the
whole module they are the first statement's ``leading_lines`` (except in the first chunk),
and are moved there. libcst's ``default_indent`` is the indentation of the first indented
block of the text; a chunk with an indented block must agree with the first one's (a file
indented with tabs here and spaces there is parsed whole). Files with line breaks other than
``\\n``, a byte-order mark, or deeper than :data:`~ckptlint.semantic.nesting.DEEP` levels
are parsed whole (:func:`~ckptlint.semantic.parse.parse_source`), as is a text that
CPython or libcst refuses: its error is the whole parse's. The nesting depth is put together
from the statements' (:func:`~ckptlint.semantic.nesting.nesting_levels`).

After an edit, the chunks before and after the edited text are those of the previous parse
(compared by text, at the same offset from the start and from the end); what lies between
them is compiled with ``ast`` and parsed chunk by chunk. When that part does not start or end
where a cut can be (an edit that opens a string or a bracket, indents a line after a block),
the whole text is cut again, chunks of the same text taken from the previous parse. The tests
compare the modules with libcst's whole parse (``deep_equals``) on real files and random
edits of them.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from ckptlint.semantic.analysis import ModuleAnalysis
from ckptlint.semantic.nesting import DEEP, nesting_levels
from ckptlint.semantic.parse import parse_module_unvalidated, parse_source
from ckptlint.text.source import SourceFile

__all__ = ["Reparser"]

#: Texts with these are parsed whole: line breaks other than ``\n`` (libcst, CPython and
#: :mod:`ckptlint.text.source` count lines differently there) and a byte-order mark.
_NOT_CUT = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\ufeff]")
#: A line between two top-level statements that a cut may pass: empty, or a comment at column 0.
_CLEAN_LINE = re.compile(r"(?:#[^\n]*)?\n")
_BLOCK_HOLDERS = (cst.BaseCompoundStatement, cst.Else, cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally, cst.MatchCase)


@dataclass(frozen=True)
class Chunk:
    """One chunk, parsed alone: its text, its module's header, statements and footer, the
    default indentation it implies (``None`` without an indented block), and the nesting
    levels and longest ``and``/``or`` chain of its deepest statement."""

    text: str
    header: Sequence[cst.EmptyLine]
    body: Sequence[cst.SimpleStatementLine | cst.BaseCompoundStatement]
    footer: Sequence[cst.EmptyLine]
    indent: str | None
    trailing_newline: bool
    levels: int
    chain: int


@dataclass
class _Parsed:
    text: str
    chunks: list[Chunk]


class _Refused(Exception):
    """The text cannot be put together from chunks: parse it whole."""


class Reparser:
    """Parses files again and again (the open documents of an editor), reusing the
    statements of the previous parse of the same path that an edit left alone.

    Args:
        max_files: previous parses kept (least recently used dropped).
    """

    def __init__(self, max_files: int = 64) -> None:
        self.max_files = max_files
        self._last: OrderedDict[str, _Parsed] = OrderedDict()
        #: chunks parsed by libcst in the last :meth:`parse` (``None``: parsed whole); for tests
        self.last_parsed: int | None = None

    def forget(self, path: str) -> None:
        """Drop what is kept of ``path`` (its document closed)."""
        self._last.pop(path, None)

    def parse(self, source: SourceFile, module_name: str = "", is_package: bool = False) -> ModuleAnalysis:
        """The analysis of ``source``, as :func:`~ckptlint.semantic.parse.parse_source` gives
        it (same tree, same depth; raises what it raises)."""
        from ckptlint import perf

        text = source.text
        self.last_parsed = None
        chunks: list[Chunk] | None = None
        if len(text) >= DEEP and not _NOT_CUT.search(text):
            previous = self._last.get(source.path)
            try:
                chunks, parsed = _around_edit(previous, text) if previous is not None else (None, 0)
                if chunks is None:
                    chunks, parsed = _cut_all(text, previous)
                module, depth = _assemble(chunks)
            except _Refused:
                chunks = None
        if chunks is None:
            self._last.pop(source.path, None)
            return parse_source(source, module_name, is_package)
        self._last[source.path] = _Parsed(text, chunks)
        self._last.move_to_end(source.path)
        while len(self._last) > self.max_files:
            self._last.popitem(last=False)
        self.last_parsed = parsed
        analysis = ModuleAnalysis(source, module, module_name, is_package)
        analysis.depth = depth
        perf.add("files_parsed_whole")
        perf.add("statements_parsed", len(module.body))
        perf.add("chars_parsed", len(text))
        return analysis


# ---------------------------------------------------------------------------- cutting
def _compile(text: str) -> ast.Module:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings are the linted code's business
            tree = compile(text, "<chunk>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except Exception:  # noqa: BLE001 - SyntaxError, RecursionError, MemoryError, ValueError
        raise _Refused from None
    assert isinstance(tree, ast.Module)
    return tree


def _first_row(statement: ast.stmt) -> int:
    decorators = getattr(statement, "decorator_list", None) or ()
    return min([statement.lineno, *(d.lineno for d in decorators)])


def _pieces(text: str, statements: list[ast.stmt], *, after_cut: bool, before_cut: bool) -> list[tuple[str, list[ast.stmt]]]:
    """``text`` cut where a chunk can start, with the statements of each piece.
    ``after_cut``: ``text`` starts where a cut was (its first statement must start as a cut's
    does); ``before_cut``: a cut follows it (it must end where its last statement ends)."""
    if not statements:
        raise _Refused  # only comments: their place in the whole module depends on what is around
    lines = text.split("\n")  # lines[i]: row i + 1 without its "\n"; a last "" when text ends with one
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)

    def clean_gap(first: int, last: int) -> bool:  # rows first..last (1-based) between statements
        return all(_CLEAN_LINE.fullmatch(lines[row - 1] + "\n") for row in range(first, last + 1))

    def starts_a_cut(row: int) -> bool:
        line = lines[row - 1]
        return bool(line) and line[0] not in " \t#"

    head = _first_row(statements[0])
    if after_cut and not (clean_gap(1, head - 1) and starts_a_cut(head)):
        raise _Refused
    end = statements[-1].end_lineno or 0
    if before_cut and (end != len(lines) - 1 or lines[-1] != "" or lines[end - 1].endswith("\\")):
        raise _Refused  # lines after the last statement: the next statement's (or a block's)
    pieces: list[tuple[str, list[ast.stmt]]] = []
    begin = 0
    group: list[ast.stmt] = [statements[0]]
    for before, statement in zip(statements, statements[1:], strict=False):
        row, previous_end = _first_row(statement), before.end_lineno or 0
        if (
            row > previous_end
            and not lines[previous_end - 1].endswith("\\")
            and clean_gap(previous_end + 1, row - 1)
            and starts_a_cut(row)
        ):
            cut = starts[previous_end]
            pieces.append((text[begin:cut], group))
            begin, group = cut, []
        group.append(statement)
    pieces.append((text[begin:], group))
    return pieces


def _parse_chunk(text: str, statements: list[ast.stmt]) -> Chunk:
    try:
        module = parse_module_unvalidated(text)
    except Exception:  # noqa: BLE001 - libcst.ParserSyntaxError and friends: the whole parse's error
        raise _Refused from None
    if not module.body:
        raise _Refused
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


def _cut_all(text: str, previous: _Parsed | None) -> tuple[list[Chunk], int]:
    """Every chunk of ``text`` (those of the same text in ``previous`` reused), and how many
    were parsed."""
    known = {c.text: c for c in previous.chunks} if previous is not None else {}
    chunks: list[Chunk] = []
    parsed = 0
    for piece, statements in _pieces(text, _compile(text).body, after_cut=False, before_cut=False):
        chunk = known.get(piece)
        if chunk is None:
            chunk = _parse_chunk(piece, statements)
            parsed += 1
        chunks.append(chunk)
    return chunks, parsed


def _around_edit(previous: _Parsed, text: str) -> tuple[list[Chunk] | None, int]:
    """The chunks of ``text`` when it is ``previous.text`` with one stretch changed: the
    previous chunks before and after it, and the stretch's own, parsed; ``(None, 0)`` when
    the stretch does not start and end where cuts can be."""
    chunks = previous.chunks
    if text == previous.text:
        return list(chunks), 0
    # chunks[:head] are at the start of text, chunks[tail:] at its end; the last chunk (with
    # the module's footer) stays last and the first (with its header) first
    head = at = 0
    while head < len(chunks) - 1 and text.startswith(chunks[head].text, at):
        at += len(chunks[head].text)
        head += 1
    tail, back = len(chunks), len(text)
    while tail > max(head, 1) and back - len(chunks[tail - 1].text) >= at and text.endswith(chunks[tail - 1].text, 0, back):
        tail -= 1
        back -= len(chunks[tail].text)
    middle = text[at:back]
    if not middle:
        return [*chunks[:head], *chunks[tail:]], 0
    try:
        pieces = _pieces(middle, _compile(middle).body, after_cut=head > 0, before_cut=tail < len(chunks))
    except _Refused:
        return None, 0
    parsed = [_parse_chunk(piece, statements) for piece, statements in pieces]
    return [*chunks[:head], *parsed, *chunks[tail:]], len(parsed)


# -------------------------------------------------------------------------- assembling
def _assemble(chunks: list[Chunk]) -> tuple[cst.Module, int]:
    """The module the chunks make, and its nesting depth (what
    :func:`~ckptlint.semantic.nesting.nesting_depth` gives of CPython's tree of the text)."""
    indents = {c.indent for c in chunks if c.indent is not None}
    if len(indents) > 1:
        raise _Refused  # a block indented otherwise than the first: libcst's indents differ
    levels = 1 + max(c.levels for c in chunks)
    chain = max(c.chain for c in chunks)
    if levels + chain > DEEP:
        raise _Refused  # deep code: the whole parse's checks and recursion limits
    if any(c.footer or not c.trailing_newline for c in chunks[:-1]):
        raise _Refused  # lines after a statement that is not the last (never cut so)
    body: list[cst.SimpleStatementLine | cst.BaseCompoundStatement] = []
    for i, chunk in enumerate(chunks):
        if i and chunk.header:
            first = chunk.body[0]
            body.append(first.with_changes(leading_lines=[*chunk.header, *first.leading_lines]))
            body.extend(chunk.body[1:])
        else:
            body.extend(chunk.body)
    module = cst.Module(
        body=body,
        header=chunks[0].header,
        footer=chunks[-1].footer,
        default_indent=indents.pop() if indents else "    ",
        default_newline="\n",
        has_trailing_newline=chunks[-1].trailing_newline,
    )
    return module, levels + chain


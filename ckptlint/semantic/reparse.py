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
the whole text is cut again, chunks of the same text taken from the previous parse. A
top-level class is parsed in pieces of its members, and an edit inside one member parses that
piece again (:mod:`ckptlint.semantic.chunks`). The tests compare the modules with libcst's
whole parse (``deep_equals``) on real files and random edits of them.

Whether CPython's compiler takes the text (CKP999 otherwise) is known from the chunks as well,
each compiled alone once (:meth:`Reparser.compiles`): an edit compiles the part it changed,
not the file.
"""

from __future__ import annotations

import ast
import re
import symtable
import warnings
from collections import OrderedDict
from dataclasses import dataclass

import libcst as cst

from ckptlint.semantic.analysis import ModuleAnalysis
from ckptlint.semantic.chunks import Chunk, Refused, Statement, compile_text, cut, member_edit, parse_chunk
from ckptlint.semantic.nesting import DEEP
from ckptlint.semantic.parse import parse_source
from ckptlint.text.source import SourceFile

__all__ = ["Reparser"]

#: Texts with these are parsed whole: line breaks other than ``\n`` (libcst, CPython and
#: :mod:`ckptlint.text.source` count lines differently there) and a byte-order mark.
_NOT_CUT = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\ufeff]")
#: A text that may declare a name global or nonlocal (then its symbol tables are read).
_MAY_DECLARE = re.compile(r"\b(?:global|nonlocal)\b")
#: ``from __future__`` features whose import a chunk's compile repeats (``annotations`` changes
#: what the compiler checks in annotations; the others are no-ops in Python 3.11).
_FUTURES = frozenset(
    {"annotations", "nested_scopes", "generators", "division", "absolute_import", "with_statement", "print_function"}
    | {"unicode_literals", "generator_stop"}
)


@dataclass
class _Parsed:
    text: str
    chunks: list[Chunk]


class Reparser:
    """Parses files again and again (the open documents of an editor), reusing the
    statements of the previous parse of the same path that an edit left alone.

    Args:
        max_files: previous parses kept (least recently used dropped).
    """

    def __init__(self, max_files: int = 64) -> None:
        self.max_files = max_files
        self._last: OrderedDict[str, _Parsed] = OrderedDict()
        #: chunks or pieces libcst parsed in the last :meth:`parse` (``None``: the text was
        #: parsed whole); for tests
        self.last_parsed: int | None = None
        #: compiled texts (chunks, class pieces after their header) -> whether CPython compiles them
        self._compiles: dict[str, bool] = {}

    def compiles(self, path: str, text: str) -> bool:
        """Whether CPython's compiler takes ``text``, the text of ``path`` this reparser parsed
        last, known from its chunks (each compiled alone once, a class's pieces after its
        header): ``True`` when every one compiles and none declares a name ``global`` or
        ``nonlocal`` at module or class level (a declaration reaches other chunks); ``False``
        when it does not know (compile the text then). The ``from __future__`` imports of the
        first chunk are repeated before the others; one anywhere else: not known."""
        parsed = self._last.get(path)
        if parsed is None or parsed.text != text:
            return False
        prefix = ""
        if "__future__" in text:
            if any("__future__" in c.text for c in parsed.chunks[1:]):
                return False
            names = _future_names(parsed.chunks[0].text)
            if names is None:
                return False
            prefix = f"from __future__ import {', '.join(names)}\n" if names else ""
        if len(self._compiles) > 4096:
            self._compiles.clear()
        for i, chunk in enumerate(parsed.chunks):
            units = [p.text if j == 0 else chunk.context + p.text for j, p in enumerate(chunk.pieces)] or [chunk.text]
            for j, unit in enumerate(units):
                unit = unit if i == j == 0 else prefix + unit
                known = self._compiles.get(unit)
                if known is None:
                    known = self._compiles[unit] = _compiles_alone(unit)
                if not known:
                    return False
        return True

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
            except Refused:
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


def _cut_all(text: str, previous: _Parsed | None) -> tuple[list[Chunk], int]:
    """Every chunk of ``text`` (those of the same text in ``previous`` reused), and how many
    were parsed."""
    known = {c.text: c for c in previous.chunks} if previous is not None else {}
    chunks: list[Chunk] = []
    parsed = 0
    for part, statements, offset in cut(text, compile_text(text).body, after_cut=False, before_cut=False):
        chunk = known.get(part)
        if chunk is None:
            chunk = parse_chunk(part, statements, offset)
            parsed += max(1, len(chunk.pieces))
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
    if tail == head + 1 and chunks[head].pieces:  # an edit inside one class
        found = member_edit(chunks[head], middle)
        if found is not None:
            return [*chunks[:head], found[0], *chunks[tail:]], found[1]
    try:
        parts = cut(middle, compile_text(middle).body, after_cut=head > 0, before_cut=tail < len(chunks))
    except Refused:
        return None, 0
    parsed = [parse_chunk(part, statements, offset) for part, statements, offset in parts]
    return [*chunks[:head], *parsed, *chunks[tail:]], sum(max(1, len(c.pieces)) for c in parsed)


def _assemble(chunks: list[Chunk]) -> tuple[cst.Module, int]:
    """The module the chunks make, and its nesting depth (what
    :func:`~ckptlint.semantic.nesting.nesting_depth` gives of CPython's tree of the text)."""
    indents = {c.indent for c in chunks if c.indent is not None}
    if len(indents) > 1:
        raise Refused  # a block indented otherwise than the first: libcst's indents differ
    levels = 1 + max(c.levels for c in chunks)
    chain = max(c.chain for c in chunks)
    if levels + chain > DEEP:
        raise Refused  # deep code: the whole parse's checks and recursion limits
    if any(c.footer or not c.trailing_newline for c in chunks[:-1]):
        raise Refused  # lines after a statement that is not the last (never cut so)
    body: list[Statement] = []
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


def _future_names(text: str) -> list[str] | None:
    """The features the ``from __future__`` imports of ``text`` name (a first chunk), or
    ``None`` for one not in :data:`_FUTURES`."""
    names: list[str] = []
    for statement in compile_text(text).body:
        if isinstance(statement, ast.ImportFrom) and statement.module == "__future__":
            names += [alias.name for alias in statement.names]
    return names if set(names) <= _FUTURES else None


def _compiles_alone(text: str) -> bool:
    """Whether CPython compiles ``text`` and it declares no name ``global`` or ``nonlocal`` at
    module level or in a class at module level."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings are the linted code's business
            compile(text, "<ckptlint>", "exec", dont_inherit=True)
            if not _MAY_DECLARE.search(text):
                return True
            module = symtable.symtable(text, "<ckptlint>", "exec")
    except Exception:  # noqa: BLE001 - SyntaxError, RecursionError, MemoryError, ValueError
        return False
    tables = [module, *(t for t in module.get_children() if t.get_type() == "class")]
    return not any(s.is_declared_global() or s.is_nonlocal() for t in tables for s in t.get_symbols())

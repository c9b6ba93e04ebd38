"""Parsing one module: CPython's ``ast`` checks syntax and depth first (reusing the index of
the same text), then libcst parses once."""

from __future__ import annotations

import ast
import warnings
from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.semantic.analysis import ModuleAnalysis
from ckptlint.semantic.nesting import (
    DEEP,
    MAX_NESTING,
    TooDeeplyNested,
    deep_recursion,
    nesting_depth,
    too_deep_message,
)
from ckptlint.text.source import SourceFile, split_lines

if TYPE_CHECKING:
    from ckptlint.semantic.index import ModuleIndex

__all__ = ["parse_selection", "parse_source"]


def parse_source(source: SourceFile, module_name: str = "", is_package: bool = False) -> ModuleAnalysis:
    """Parse ``source`` with libcst, after CPython's own parser has vetted its nesting.

    CPython's parser (C, ~10x faster than libcst) runs first: code nested deeper than
    :data:`MAX_NESTING` levels raises :class:`TooDeeplyNested` before libcst sees it (libcst
    would crash the process or take minutes), and brackets nested deeper than CPython's
    tokenizer allows (200) raise ``libcst.ParserSyntaxError`` with CPython's message and
    position. Other syntax errors are left to libcst (code that only a newer Python
    accepts must still parse). Raises ``libcst.ParserSyntaxError`` on a syntax error;
    ``RecursionError``/``MemoryError`` may still pass through for pathological input.
    """
    from ckptlint import perf

    depth = _vet(source)
    analysis = ModuleAnalysis(source, parse_module_unvalidated(source.text), module_name, is_package)
    analysis.depth = depth
    perf.add("files_parsed_whole")
    perf.add("statements_parsed", len(analysis.module.body))
    perf.add("chars_parsed", len(source.text))
    return analysis

def parse_selection(
    source: SourceFile,
    index: ModuleIndex,
    chosen: frozenset[int],
    covered: frozenset[str],
    module_name: str = "",
    is_package: bool = False,
) -> ModuleAnalysis | None:
    """Parse with libcst only the top-level statements ``chosen`` (indices into
    ``index.statements``, the index of ``source.text``), the others blanked character for
    character so that every offset is the real file's (:meth:`ModuleIndex.padded`).

    ``covered``: the names the selection answers for (:meth:`ModuleIndex.select`). Returns
    ``None`` when libcst refuses the selection (CPython, which built the index, accepts some
    code libcst does not): the caller decides as for a whole parse.
    """
    from ckptlint import perf

    text, count = index.padded(source.text, chosen)
    try:
        module = parse_module_unvalidated(text)
    except Exception:  # noqa: BLE001 - libcst.ParserSyntaxError and friends
        return None
    perf.add("files_parsed_partial")
    perf.add("statements_parsed", count)
    analysis = ModuleAnalysis(source, module, module_name, is_package)
    analysis.depth = index.depth
    analysis.covered = covered
    analysis.chosen = chosen
    analysis.parsed_text = text
    analysis.parsed_chars = sum(_span_chars(source, index.statements[i].start, index.statements[i].end) for i in chosen)
    perf.add("chars_parsed", analysis.parsed_chars)
    analysis.unparsed_attribute_writes = index.attribute_writes_outside(chosen)
    return analysis


def _span_chars(source: SourceFile, start: int, end: int) -> int:
    """Characters of lines ``start``..``end`` (1-based, inclusive) of ``source``."""
    starts = source.line_starts
    stop = starts[end] if end < len(starts) else len(source.text)
    return max(0, stop - starts[min(start, len(starts)) - 1])

def _vet(source: SourceFile) -> int:
    """The nesting depth of ``source`` (see :func:`nesting_depth`; ``0`` when it is too short to nest
    or CPython rejects it for another reason, which libcst then reports). Raises
    :class:`TooDeeplyNested` above :data:`MAX_NESTING` and ``ParserSyntaxError`` for brackets
    nested deeper than CPython's tokenizer allows."""
    text = source.text
    if len(text) < DEEP:
        return 0  # cannot nest deeper than it is long
    from ckptlint.semantic.index import cached_index

    known = cached_index(text)
    if known is not None:  # CPython parsed it when it was indexed: its depth is known
        if known.depth > MAX_NESTING:
            raise TooDeeplyNested(too_deep_message())
        return known.depth
    try:
        # CPython 3.11 builds the ``ast`` objects with a recursion limit of three times
        # Python's (3,000 levels by default): allow the depth libcst can take.
        with warnings.catch_warnings(), deep_recursion(MAX_NESTING + DEEP + 1):
            warnings.simplefilter("ignore")  # SyntaxWarnings are the linted code's business
            tree = compile(text, source.path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        if exc.msg == "too many nested parentheses":  # CPython's tokenizer limit (200 levels)
            raise _as_libcst_error(source, exc) from None
        return 0
    except (RecursionError, MemoryError):  # CPython's parser gives up on the nesting
        raise TooDeeplyNested(too_deep_message()) from None
    depth = nesting_depth(tree)
    if depth > MAX_NESTING:
        raise TooDeeplyNested(too_deep_message())
    return depth

def _as_libcst_error(source: SourceFile, exc: SyntaxError) -> cst.ParserSyntaxError:
    lines = split_lines(source.text, keepends=True) or [""]
    row = min(max(1, exc.lineno or 1), len(source.line_starts))
    column = min(max(1, exc.offset or 1), len(source.line(row)) + 1)
    return cst.ParserSyntaxError(exc.msg or "invalid syntax", lines=lines, raw_line=row, raw_column=column - 1)

def _no_validation(self: cst.CSTNode) -> None:
    pass

def parse_module_unvalidated(text: str) -> cst.Module:
    """``libcst.parse_module(text)`` without re-validating every node the parser builds.

    libcst validates each node in ``CSTNode.__post_init__`` (libcst 1.x: it only calls
    ``_validate``); for nodes made by its own parser the checks cannot fail, and they cost
    about a fifth of parsing (libcst's source says as much: "It might make more sense to
    move validation work into the visitor, which would allow us to avoid validating the
    tree when parsing a file"). Validation is switched off only for the duration of the
    call (ckptlint parses in one thread per process); nodes built afterwards, and nodes of
    a libcst whose node classes define their own ``__post_init__``, are validated as usual.
    """
    base = cst.CSTNode
    saved = base.__dict__.get("__post_init__")
    if saved is None or any("__post_init__" in vars(cls) for cls in _node_classes_with_own_post_init()):
        return cst.parse_module(text)  # a libcst that does more there: keep it
    base.__post_init__ = _no_validation  # type: ignore[method-assign]
    try:
        return cst.parse_module(text)
    finally:
        base.__post_init__ = saved  # type: ignore[method-assign]

def _node_classes_with_own_post_init() -> list[type]:
    """Node classes below ``CSTNode`` that define their own ``__post_init__`` (none in
    libcst 1.x); computed once."""
    global _OWN_POST_INIT
    if _OWN_POST_INIT is None:
        found: list[type] = []
        stack = list(cst.CSTNode.__subclasses__())
        while stack:
            cls = stack.pop()
            if "__post_init__" in vars(cls):
                found.append(cls)
            stack += cls.__subclasses__()
        _OWN_POST_INIT = found
    return _OWN_POST_INIT

_OWN_POST_INIT: list[type] | None = None

"""One parsed module with everything rules need: source, tree, semantic model, sites and
(lazily) node positions."""

from __future__ import annotations

import ast
import warnings
from functools import cached_property
from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.checkpoint.site import SiteIndex
from ckptlint.checkpoint.sites import collect_sites
from ckptlint.semantic.model import SemanticModel
from ckptlint.text.positions import node_offsets, statement_offsets
from ckptlint.text.source import Position, SourceFile

if TYPE_CHECKING:
    from ckptlint.semantic.project import Project

__all__ = ["MAX_NESTING", "ModuleAnalysis", "TooDeeplyNested", "deep_recursion", "parse_source"]

MAX_NESTING = 3000
"""The deepest syntax tree ckptlint parses with libcst (levels of Python's own AST, an
``and``/``or`` chain counting one level per operand). libcst's native parser (libcst 1.9.0,
the default 8 MiB stack) crashes the interpreter with a stack overflow somewhere above this,
the point depending on the construct and moving by a few levels from run to run: an ``and``
chain parses up to ~7,050 operands (7,046 parsed, 7,054 crashed), an ``elif`` chain up to
~8,240 branches (8,238 parsed, 8,239 crashed), nested lambdas up to ~3,500 (3,468 parsed,
3,562 crashed; CPython 3.11 refuses 2,990 itself). ``tests/test_nesting.py`` checks the
``and`` boundary in a child process. Its parse time also grows quadratically with depth (a
3,000-term sum: ~7 s, a 3,000-deep subscript chain: ~50 s on a loaded 2-core machine, where
``--file-timeout`` takes over). Every construct tried parses at 3,000 levels; CPython 3.11's
own parser refuses some before (such a file is refused too). Real code stays below ~60
levels."""

#: Python recursion allowed while rules walk a deep tree (libcst's visitors recurse a few
#: frames per level); raised only for files deeper than :data:`_DEEP`, and restored after.
_FRAMES_PER_LEVEL = 8
_DEEP = 100


class TooDeeplyNested(ValueError):
    """The source nests deeper than :data:`MAX_NESTING` levels: it is not parsed with libcst."""


class ModuleAnalysis:
    """The analysis of one module.

    Attributes:
        source: the decoded file.
        module: its libcst tree (parsed once).
        module_name: dotted module name (``"pkg.model"``), ``""`` when unknown.
        model: scopes, bindings and calls (built on first use).
        sites: the checkpoint sites (built on first use).
    """

    def __init__(self, source: SourceFile, module: cst.Module, module_name: str = "", is_package: bool = False):
        self.depth = 0  # nesting levels (see parse_source); 0 when not measured
        self.source = source
        self.module = module
        self.module_name = module_name
        self.is_package = is_package
        #: The linted tree (set by the rule context or the project that loaded this module):
        #: sites follow names imported from other modules of the tree through it.
        self.project: Project | None = None
        #: A partial parse (see :mod:`ckptlint.semantic.index`): the names (and ``".attr"``
        #: pseudo-names) whose statements it holds; ``None`` for a whole parse.
        self.covered: frozenset[str] | None = None
        self.chosen: frozenset[int] = frozenset()  # the indices of those statements
        #: The text libcst parsed (``source.text`` with the other statements blanked, same
        #: offsets); attribute names the statements not parsed may assign.
        self.parsed_text: str = source.text
        self.unparsed_attribute_writes: frozenset[str] = frozenset()
        #: Characters parsed (bounds the project's cache of analyses).
        self.parsed_chars: int = len(source.text)

    @cached_property
    def model(self) -> SemanticModel:
        return SemanticModel.build(self.module, self.module_name, self.is_package)

    @cached_property
    def sites(self) -> SiteIndex:
        return collect_sites(self.model, self.project, self.source.path)

    @cached_property
    def _known_offsets(self) -> dict[cst.CSTNode, tuple[int, int]]:
        return {}

    def offsets(self, node: cst.CSTNode) -> tuple[int, int]:
        """0-based character offsets ``[start, end)`` of ``node`` in the source text.
        Raises ``KeyError`` for a node that is not part of this module's tree.

        Computed for the smallest enclosing statement whose code is unique in the file
        (:func:`~ckptlint.text.positions.statement_offsets`), the whole module only when none is.
        """
        known = self._known_offsets
        found = known.get(node)
        if found is None:
            known.update(self._offsets_around(node))
            found = known.get(node)
            if found is None:
                known.update(node_offsets(self.module))
                found = known[node]
        return found

    def _offsets_around(self, node: cst.CSTNode) -> dict[cst.CSTNode, tuple[int, int]]:
        parents = self.model.parents
        chain = [node]
        while chain[-1] in parents:
            chain.append(parents[chain[-1]])
        if chain[-1] is not self.module:
            return {}  # the node is not below a statement the model walked
        default = self.module.default_indent
        for index, ancestor in enumerate(chain):
            if not isinstance(ancestor, cst.BaseStatement):
                continue
            indents = [
                default if block.indent is None else block.indent
                for block in reversed(chain[index + 1 :])
                if isinstance(block, cst.IndentedBlock)
            ]
            found = statement_offsets(self.module, ancestor, indents, self.parsed_text)
            if found is not None:
                return found
        return {}

    def range(self, node: cst.CSTNode) -> tuple[Position, Position]:
        """The 1-based ``(start, end)`` positions of ``node``; ``end`` is exclusive."""
        start, end = self.offsets(node)
        return self.source.position(start), self.source.position(end)

    def text_of(self, node: cst.CSTNode) -> str:
        """The source text of ``node`` exactly as written."""
        start, end = self.offsets(node)
        return self.source.text[start:end]


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
    return analysis


class deep_recursion:  # noqa: N801 - a context manager
    """Raise Python's recursion limit while a tree ``depth`` levels deep is walked (libcst's
    visitors and the rules recurse a few frames a level: a 3,000-level tree needs ~24,000
    frames, Python's default is 1,000); a no-op for ordinary files (depth <= 100)."""

    def __init__(self, depth: int) -> None:
        self.needed = _FRAMES_PER_LEVEL * depth + 1000 if depth > _DEEP else 0
        self.saved = 0

    def __enter__(self) -> deep_recursion:
        import sys

        self.saved = sys.getrecursionlimit()
        if self.needed > self.saved:
            sys.setrecursionlimit(self.needed)
        return self

    def __exit__(self, *exc_info: object) -> None:
        import sys

        sys.setrecursionlimit(self.saved)


def _vet(source: SourceFile) -> int:
    """The nesting depth of ``source`` (see :func:`_depth`; ``0`` when it is too short to nest
    or CPython rejects it for another reason, which libcst then reports). Raises
    :class:`TooDeeplyNested` above :data:`MAX_NESTING` and ``ParserSyntaxError`` for brackets
    nested deeper than CPython's tokenizer allows."""
    text = source.text
    if len(text) < _DEEP:
        return 0  # cannot nest deeper than it is long
    from ckptlint.semantic.index import cached_index

    known = cached_index(text)
    if known is not None:  # CPython parsed it when it was indexed: its depth is known
        if known.depth > MAX_NESTING:
            raise TooDeeplyNested(_too_deep())
        return known.depth
    try:
        # CPython 3.11 builds the ``ast`` objects with a recursion limit of three times
        # Python's (3,000 levels by default): allow the depth libcst can take.
        with warnings.catch_warnings(), deep_recursion(MAX_NESTING + _DEEP + 1):
            warnings.simplefilter("ignore")  # SyntaxWarnings are the linted code's business
            tree = compile(text, source.path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        if exc.msg == "too many nested parentheses":  # CPython's tokenizer limit (200 levels)
            raise _as_libcst_error(source, exc) from None
        return 0
    except (RecursionError, MemoryError):  # CPython's parser gives up on the nesting
        raise TooDeeplyNested(_too_deep()) from None
    depth = _depth(tree)
    if depth > MAX_NESTING:
        raise TooDeeplyNested(_too_deep())
    return depth


def _too_deep() -> str:
    return f"too deeply nested for libcst to parse (more than {MAX_NESTING} levels); file skipped"


def _depth(tree: ast.AST) -> int:
    """An upper bound of the depth of libcst's tree relative to ``tree``'s: levels of the
    AST plus the longest ``and``/``or`` chain (one node in ``ast``, nested in libcst)."""
    level: list[ast.AST] = [tree]
    depth = chain = 0
    while level:
        depth += 1
        below: list[ast.AST] = []
        for node in level:
            for name in node._fields:
                value = getattr(node, name, None)
                if isinstance(value, list):
                    below.extend(child for child in value if isinstance(child, ast.AST))
                elif isinstance(value, ast.AST):
                    below.append(value)
            if type(node) is ast.BoolOp and len(node.values) > chain:  # type: ignore[attr-defined]
                chain = len(node.values)  # type: ignore[attr-defined]
        level = below
    return depth + chain


def _as_libcst_error(source: SourceFile, exc: SyntaxError) -> cst.ParserSyntaxError:
    lines = source.text.splitlines(keepends=True) or [""]
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

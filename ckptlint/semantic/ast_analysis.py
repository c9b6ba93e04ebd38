"""One module read on CPython's ``ast`` (:class:`AstAnalysis`, what the rules and analyses of a
linted file read), and what a loader of the other modules of the linted tree answers
(:class:`AstModuleLoader`; :class:`~ckptlint.semantic.project.AstProject` is the one the
linter uses).

:class:`AstAnalysis` holds a module's decoded text, its ``ast`` tree, its
:class:`~ckptlint.semantic.ast_model.AstModel` (built on first use) and a memo of facts other
layers compute from it (``derived``), and converts ``ast`` positions (1-based lines, 0-based
UTF-8 byte columns) to the 1-based character positions and 0-based character offsets every
output uses.

:class:`~ckptlint.semantic.project.AstProject` loads the other modules a site or a region reaches for one
:class:`~ckptlint.semantic.project.Project`: it finds their files with the project's lookup
(``file_for_module``, so the same import roots and the same absent candidates are recorded),
reads an editor's unsaved buffer before the file (``unsaved_text``), records every file it reads
as a cache dependency of the linted file (``record_read``) and keeps the analyses it parsed, by
path and text, bounded by characters of source (see ``max_chars``). Between two linted files,
:meth:`~ckptlint.semantic.project.AstProject.track` starts the project's recording, leaves the
modules of another project and drops the least recently used analyses beyond the bounds.
"""

from __future__ import annotations

import ast
import warnings
from functools import cached_property
from pathlib import Path
from typing import Protocol

from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.nesting import DEEP, MAX_NESTING, deep_recursion
from ckptlint.text.source import Position, SourceFile

__all__ = ["AstAnalysis", "AstModuleLoader", "parse_ast"]


class AstModuleLoader(Protocol):
    """What an ``ast`` analysis needs of the linted tree to follow names into other modules
    (:class:`AstProject` is one)."""

    def ast_analysis_for_module(self, module: str) -> AstAnalysis | None: ...

    def ast_analysis_for_file(self, path: Path) -> AstAnalysis | None: ...

    def file_for_module(self, module: str) -> Path | None: ...

    def add_root(self, root: Path) -> None: ...

    def record_read(self, path: Path) -> None: ...

    def unsaved_text(self, path: Path) -> str | None: ...


class AstAnalysis:
    """The ``ast`` reading of one module.

    Attributes:
        source: the decoded file.
        tree: its ``ast.Module`` (parsed once, ``type_comments`` off).
        module_name: dotted module name (``"pkg.model"``), ``""`` when unknown.
        is_package: whether the file is a package's ``__init__.py``.
        project: the loader of the other modules of the linted tree, ``None`` for a module
            read alone.
        derived: facts other layers compute from this module, kept with it.
    """

    def __init__(self, source: SourceFile, tree: ast.Module, module_name: str = "", is_package: bool = False) -> None:
        self.source = source
        self.tree = tree
        self.module_name = module_name
        self.is_package = is_package
        self.project: AstModuleLoader | None = None
        self.derived: dict[str, object] = {}

    @cached_property
    def model(self) -> AstModel:
        return AstModel.build(self.tree, self.module_name, self.is_package, self.source.text)

    @property
    def chars(self) -> int:
        """Characters of source text (the loader's cache is bounded by their sum)."""
        return len(self.source.text)

    def release(self) -> None:
        """Drop the model and the derived facts, breaking their reference cycles: for an
        analysis no one will use again."""
        self.derived.clear()
        model = self.__dict__.pop("model", None)
        if model is not None:
            model.release()

    def forget_derived(self) -> None:
        """Drop the facts computed from this module that may depend on other modules
        (:attr:`derived` and the model's ``memo``: sites, helper and class summaries), keeping
        the tree and the model, which depend on its text alone: a module those facts may
        have read changed (the language server, between two lints)."""
        self.derived.clear()
        model = self.__dict__.get("model")
        if model is not None:
            model.memo.clear()

    def start(self, node: ast.AST) -> Position:
        """The 1-based ``(row, column)`` where ``node`` starts (a node with a position:
        ``ast.expr``, ``ast.stmt``, ``ast.arg``, ``ast.keyword``, ``ast.alias``, ...)."""
        return self.source.ast_position(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> Position:
        """The 1-based ``(row, column)`` just past ``node``'s last character."""
        return self.source.ast_position(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def range(self, node: ast.AST) -> tuple[Position, Position]:
        """The 1-based ``(start, end)`` positions of ``node``; ``end`` is exclusive."""
        return self.start(node), self.end(node)

    def offsets(self, node: ast.AST) -> tuple[int, int]:
        """0-based character offsets ``[start, end)`` of ``node`` in the source text."""
        return self.source.offset(self.start(node)), self.source.offset(self.end(node))

    def text_of(self, node: ast.AST) -> str:
        """The source text of ``node`` exactly as written (what ``ast.get_source_segment``
        gives, without splitting the text into lines again for each node)."""
        start, end = self.offsets(node)
        return self.source.text[start:end]


def parse_tree(source: SourceFile) -> ast.Module:
    """CPython's ``ast`` tree of ``source``, the one parse of every module ckptlint reads
    (counted in :mod:`ckptlint.perf`): the code's own ``SyntaxWarning``s (an invalid escape
    sequence) are not printed, and Python's recursion limit allows the
    :data:`~ckptlint.semantic.nesting.MAX_NESTING` levels the linter reads.

    Raises:
        SyntaxError: CPython's parser refuses the text.
        ValueError: the text holds a null byte.
        RecursionError, MemoryError: the nesting is beyond the parser.
    """
    from ckptlint import perf

    perf.add("ast_parses")
    perf.add("ast_chars_parsed", len(source.text))
    with warnings.catch_warnings(), deep_recursion(MAX_NESTING + DEEP + 1):
        warnings.simplefilter("ignore")  # SyntaxWarnings are the read code's business
        return ast.parse(source.text, source.path)


def parse_ast(source: SourceFile, module_name: str = "", is_package: bool = False) -> AstAnalysis | None:
    """The ``ast`` analysis of ``source`` (:func:`parse_tree`); ``None`` when CPython's parser
    refuses it (``SyntaxError``, or ``RecursionError``/``MemoryError``/``ValueError`` on
    pathological input such as a null byte or nesting beyond its limits)."""
    try:
        tree = parse_tree(source)
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return None
    return AstAnalysis(source, tree, module_name, is_package)

"""One parsed module and what is derived from it: source, tree, semantic model, node positions
(lazily), and a memo of facts other layers compute from it (the checkpoint sites)."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property
from pathlib import Path
from typing import Protocol

import libcst as cst

from ckptlint.semantic.model import SemanticModel
from ckptlint.text.positions import node_offsets, statement_offsets
from ckptlint.text.source import Position, SourceFile

__all__ = ["ModuleAnalysis", "ModuleLoader"]


class ModuleLoader(Protocol):
    """What a module analysis needs of the linted tree to follow imports into other files
    (:class:`ckptlint.semantic.project.Project` is one): the checkpoint sites find other
    modules' APIs and helpers through it."""

    def analysis_for_module(self, module: str) -> ModuleAnalysis | None: ...

    def analysis_for_names(self, module: str, names: Iterable[str]) -> ModuleAnalysis | None: ...

    def file_for_module(self, module: str) -> Path | None: ...

    def add_root(self, root: Path) -> None: ...

    def record_read(self, path: Path) -> None: ...

    def unsaved_text(self, path: Path) -> str | None: ...


class ModuleAnalysis:
    """The analysis of one module.

    Attributes:
        source: the decoded file.
        module: its libcst tree (parsed once).
        module_name: dotted module name (``"pkg.model"``), ``""`` when unknown.
        model: scopes, bindings and calls (built on first use).
        sites: the checkpoint sites (built on first use).
    """

    def __init__(self, source: SourceFile, module: cst.Module, module_name: str = "", is_package: bool = False) -> None:
        self.depth = 0  # nesting levels (see parse_source); 0 when not measured
        self.source = source
        self.module = module
        self.module_name = module_name
        self.is_package = is_package
        #: The linted tree (set by the rule context or the project that loaded this module):
        #: sites follow names imported from other modules of the tree through it.
        self.project: ModuleLoader | None = None
        #: Facts other layers compute from this module, kept with it (the checkpoint sites:
        #: :func:`ckptlint.checkpoint.sites.sites.site_index`).
        self.derived: dict[str, object] = {}
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

    def release(self) -> None:
        """Drop the model and the derived facts, breaking their reference cycles (see
        :meth:`SemanticModel.release`): for an analysis no one will use again (one the
        project dropped from its cache)."""
        self.derived.clear()
        model = self.__dict__.pop("model", None)
        if model is not None:
            model.release()
        self.__dict__.pop("_known_offsets", None)

    def forget_derived(self) -> None:
        """Drop the facts computed from this module that may depend on other modules (the
        checkpoint sites, helper and class summaries: :attr:`derived` and the model's
        ``memo``), keeping the tree and the model, which depend on its text alone: a module
        those facts may have read changed (the language server, between two lints)."""
        self.derived.clear()
        model = self.__dict__.get("model")
        if model is not None:
            model.memo.clear()

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

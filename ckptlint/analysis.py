"""One parsed module with everything rules need: source, tree, semantic model, sites and
(lazily) node positions."""

from __future__ import annotations

from functools import cached_property

import libcst as cst

from ckptlint.model.semantic import SemanticModel
from ckptlint.model.sites import SiteIndex, collect_sites
from ckptlint.positions import node_offsets
from ckptlint.source import Position, SourceFile

__all__ = ["ModuleAnalysis", "parse_source"]


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
        self.source = source
        self.module = module
        self.module_name = module_name
        self.is_package = is_package

    @cached_property
    def model(self) -> SemanticModel:
        return SemanticModel.build(self.module, self.module_name, self.is_package)

    @cached_property
    def sites(self) -> SiteIndex:
        return collect_sites(self.model)

    @cached_property
    def _offsets(self) -> dict[cst.CSTNode, tuple[int, int]]:
        return node_offsets(self.module)

    def offsets(self, node: cst.CSTNode) -> tuple[int, int]:
        """0-based character offsets ``[start, end)`` of ``node`` in the source text.
        Raises ``KeyError`` for a node that is not part of this module's tree."""
        return self._offsets[node]

    def range(self, node: cst.CSTNode) -> tuple[Position, Position]:
        """The 1-based ``(start, end)`` positions of ``node``; ``end`` is exclusive."""
        start, end = self._offsets[node]
        return self.source.position(start), self.source.position(end)

    def text_of(self, node: cst.CSTNode) -> str:
        """The source text of ``node`` exactly as written."""
        start, end = self.offsets(node)
        return self.source.text[start:end]


def parse_source(source: SourceFile, module_name: str = "", is_package: bool = False) -> ModuleAnalysis:
    """Parse ``source`` with libcst. Raises ``libcst.ParserSyntaxError`` on a syntax error
    (and ``RecursionError``/``MemoryError`` for pathological input)."""
    module = cst.parse_module(source.text)
    return ModuleAnalysis(source, module, module_name, is_package)

"""Where an imported name is defined, on CPython's ``ast``: the modules of the linted tree that
the evaluator loads through an :class:`~ckptlint.semantic.ast_analysis.AstModuleLoader` (the
modules as :class:`~ckptlint.semantic.ast_analysis.AstAnalysis`).

The loader parses a module whole: the names a module is asked for are not needed to load it;
:meth:`ImportResolver.imported_beside` answers which names an importer takes from a module.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ckptlint.semantic.bindings import BindingKind

if TYPE_CHECKING:
    from ckptlint.semantic.ast_analysis import AstAnalysis, AstModuleLoader

__all__ = ["ImportResolver"]


class ImportResolver:
    """Loads the modules of the linted tree that imported names come from.

    Without a loader (a file linted alone) nothing is loaded. Inside :meth:`classes_only`,
    an imported name loads its module only when it is spelled in CapWords."""

    def __init__(self, loader: AstModuleLoader | None) -> None:
        self._loader = loader
        self._classes_only = False
        self._beside: dict[tuple[int, str], frozenset[str]] = {}

    @contextmanager
    def classes_only(self, enabled: bool = True) -> Iterator[None]:
        """Within the block, with ``enabled``, load modules only for imported CapWords names."""
        self._classes_only = enabled
        try:
            yield
        finally:
            self._classes_only = False

    def may_load(self, qualified: str) -> bool:
        """Whether the imported name ``qualified`` may be looked up in the tree: there is a
        loader, and the name passes :meth:`classes_only`."""
        if self._loader is None:
            return False
        return not (self._classes_only and not qualified.rsplit(".", 1)[-1][:1].isupper())

    def is_module(self, qualified: str) -> bool:
        """Whether ``qualified`` names a module of the tree that parses."""
        return self._loader is not None and self._loader.ast_analysis_for_module(qualified) is not None

    def module(self, module: str, names: Iterable[str]) -> AstAnalysis | None:
        """The module ``module`` of the tree (parsed whole: ``names`` are not needed);
        ``None`` when it is not in the tree (or there is no loader)."""
        if self._loader is None:
            return None
        return self._loader.ast_analysis_for_module(module)

    def defining_module(self, qualified: str, importer: AstAnalysis | None) -> tuple[AstAnalysis, list[str]] | None:
        """For ``qualified`` = ``pkg.blocks.Block``: the longest prefix that is a module of the
        tree and the names below it (``["Block"]``); ``None`` when no prefix is."""
        if self._loader is None:
            return None
        parts = qualified.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            analysis = self._loader.ast_analysis_for_module(".".join(parts[:cut]))
            if analysis is not None:
                return analysis, parts[cut:]
        return None

    def star_sources(self, analysis: AstAnalysis, name: str) -> Iterator[AstAnalysis]:
        """The other modules of the tree that ``analysis`` star-imports (``from .layers import
        *``), last first (the last one that binds a name wins, as in Python), loaded one by one
        as the iteration asks; ``name`` is not needed to load them."""
        if self._loader is None:
            return
        for module in reversed(analysis.model.star_imports):
            other = self._loader.ast_analysis_for_module(module)
            if other is None or other.source.path == analysis.source.path:
                continue
            yield other

    def imported_beside(self, importer: AstAnalysis | None, module: str) -> frozenset[str]:
        """The names ``importer`` imports from ``module`` (``from .norm import A, B``)."""
        if importer is None:
            return frozenset()
        key = (id(importer), module)
        found = self._beside.get(key)
        if found is None:
            start = module + "."
            found = frozenset(
                b.target[len(start) :].split(".", 1)[0]
                for bindings in importer.model.module_scope.bindings.values()
                for b in bindings
                if b.kind is BindingKind.IMPORT and b.target and b.target.startswith(start)
            )
            self._beside[key] = found
        return found

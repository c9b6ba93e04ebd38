"""Where an imported name is defined: the modules of the linted tree that the evaluator loads
(through :class:`~ckptlint.semantic.project.Project`) for a name a region reaches."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ckptlint.semantic.bindings import BindingKind

if TYPE_CHECKING:
    from ckptlint.semantic.analysis import ModuleAnalysis
    from ckptlint.semantic.project import Project

__all__ = ["ImportResolver"]


class ImportResolver:
    """Loads the modules of the linted tree that imported names come from, asking the project
    for the names wanted (so that a module parsed partially is parsed for what is needed).

    Without a project (a file linted alone) nothing is loaded. Inside :meth:`classes_only`,
    an imported name loads its module only when it is spelled in CapWords (a class, by
    convention)."""

    def __init__(self, project: Project | None) -> None:
        self._project = project
        self._classes_only = False
        self._beside: dict[tuple[int, str], frozenset[str]] = {}

    @contextmanager
    def classes_only(self, enabled: bool = True) -> Iterator[None]:
        """Within the block, with ``enabled``, load modules only for imported CapWords names,
        never for functions or modules (so a question costs at most the files of those
        classes)."""
        self._classes_only = enabled
        try:
            yield
        finally:
            self._classes_only = False

    def may_load(self, qualified: str) -> bool:
        """Whether the imported name ``qualified`` (``pkg.blocks.Block``) may be looked up in
        the tree: there is a project, and the name passes :meth:`classes_only`."""
        if self._project is None:
            return False
        return not (self._classes_only and not qualified.rsplit(".", 1)[-1][:1].isupper())

    def is_module(self, qualified: str) -> bool:
        """Whether ``qualified`` names a module of the tree that parses."""
        return self._project is not None and self._project.module_parses(qualified)

    def module(self, module: str, names: Iterable[str]) -> ModuleAnalysis | None:
        """The module ``module`` of the tree, parsed at least for ``names``; ``None`` when it
        is not in the tree (or there is no project)."""
        if self._project is None:
            return None
        return self._project.analysis_for_names(module, names)

    def defining_module(self, qualified: str, importer: ModuleAnalysis | None) -> tuple[ModuleAnalysis, list[str]] | None:
        """For ``from pkg.blocks import Block`` (``qualified`` = ``pkg.blocks.Block``, imported
        in ``importer``): the longest prefix that is a module of the tree and the names
        below it (``["Block"]``; more for ``pkg.blocks.Block.Inner``); ``None`` when no
        prefix is. The module is parsed for the first name and the other names ``importer``
        imports from it (:meth:`imported_beside`)."""
        if self._project is None:
            return None
        parts = qualified.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            rest = parts[cut:]
            prefix = ".".join(parts[:cut])
            analysis = self._project.analysis_for_names(prefix, [rest[0], *self.imported_beside(importer, prefix)])
            if analysis is not None:
                return analysis, rest
        return None

    def star_sources(self, analysis: ModuleAnalysis, name: str) -> Iterator[ModuleAnalysis]:
        """The other modules of the tree that ``analysis`` star-imports (``from .layers import
        *``), last first (the last one that binds a name wins, as in Python), each parsed for
        ``name``; loaded one by one as the iteration asks."""
        if self._project is None:
            return
        for module in reversed(analysis.model.star_imports):
            other = self._project.analysis_for_names(module, (name,))
            if other is None or other.source.path == analysis.source.path:
                continue
            yield other

    def imported_beside(self, importer: ModuleAnalysis | None, module: str) -> frozenset[str]:
        """The names ``importer`` imports from ``module`` (``from .norm import A, B``): asked
        for together, so that a module parsed partially for ``A`` is not parsed again for
        ``B`` (see :meth:`Project.analysis_for_names`)."""
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

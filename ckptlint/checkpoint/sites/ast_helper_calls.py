"""Calls of helpers across the modules of the linted tree, on CPython's ``ast``: the resolver
(:class:`AstHelperResolver`) that says which helper a call calls for an analysis whose
``project`` is set, and the helpers of other modules it reads.

Which helper a call calls:

- ``run(block, x)``: a module-level function of this module, or one imported from a module of
  the linted tree (``from .utils import run``, ``utils.run(...)`` after ``from . import
  utils``), followed through re-exports (``from .gradient import run`` or ``*`` in a
  package's ``__init__``), up to three hops;
- ``self.ckpt(block, x)`` / ``cls.ckpt(...)``: a method of the class around the call or of one
  of its base classes, of this module or imported from a module of the tree (four bases up).

Another module is read only when its bytes say it may define (or re-export) the name
(``helper_calls._may_define_helper``, a cheap byte test); the file is recorded as read
(``record_read``) before the test, so the linted file's cache dependencies hold every file
the test looked at. Each module's helpers are found once and kept in its
:attr:`AstAnalysis.derived`; a module whose helpers are being found when an import cycle
reaches it again has none for that question.

The checkpoint calls a helper makes are the module's direct sites
(:func:`~ckptlint.checkpoint.sites.ast_sites.direct_sites`) and the calls of helpers found
level by level; the ``apply`` calls of the module's home-made implementations, read with the
tree (``ast_homemade.home_made(model, loader)``: a base class of another module), and of
their helpers are no candidates. Calls that only a reach with the tree recognises (a
re-exported API, ``Impl.apply`` or a home-made helper imported from another module, a
``TrainingArguments`` subclass) are candidate helper calls here (normally found to call no
helper, but the module they name is recorded as read); the whole stage, with those, is
:func:`~ckptlint.checkpoint.sites.ast_site_index.ast_site_index`.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable
from pathlib import Path

from ckptlint.checkpoint.sites.ast_helper_sites import (
    AstHelperSummary,
    HelperSites,
    _class_named,
    _enclosing_class,
    _helper_sites,
    helper_sites,
)
from ckptlint.checkpoint.sites.ast_homemade import home_made
from ckptlint.checkpoint.sites.ast_sites import direct_sites
from ckptlint.checkpoint.sites.helper_calls import _may_define_helper
from ckptlint.semantic.ast_analysis import AstAnalysis, AstModuleLoader
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.ast_walk import FUNCTIONS
from ckptlint.semantic.bindings import BindingKind

__all__ = ["AstHelperResolver", "module_helper_sites", "module_helpers"]

_MAX_HOPS = 3  # helper_calls._MAX_HOPS
_MAX_BASES = 4  # helper_calls._MAX_BASES
_KEY = "helper_sites"
_IN_PROGRESS: set[int] = set()


def module_helper_sites(analysis: AstAnalysis) -> HelperSites:
    """The helpers of ``analysis``'s module and the ``HELPER_CALL`` sites of their calls,
    following helpers into other modules through ``analysis.project`` (the module alone,
    :func:`~ckptlint.checkpoint.sites.ast_helper_sites.helper_sites`, when it is ``None``).
    Found once and kept in ``analysis.derived``."""
    found = analysis.derived.get(_KEY)
    if not isinstance(found, HelperSites):
        if analysis.project is None:
            found = helper_sites(analysis.model)
        else:
            own: dict[str, AstHelperSummary] = {}
            resolver = AstHelperResolver(analysis, own)
            home = home_made(analysis.model, analysis.project)
            found = _helper_sites(analysis.model, direct_sites(analysis.model), own, resolver.resolve, home)
        analysis.derived[_KEY] = found
    return found


def module_helpers(analysis: AstAnalysis) -> dict[str, AstHelperSummary]:
    """The helpers of ``analysis``'s module by qualified name in the module (see
    :func:`module_helper_sites`); empty while that module's own helpers are being found
    (imports between modules can be cyclic)."""
    if id(analysis) in _IN_PROGRESS:
        return {}
    _IN_PROGRESS.add(id(analysis))
    try:
        return module_helper_sites(analysis).helpers
    finally:
        _IN_PROGRESS.discard(id(analysis))


class AstHelperResolver:
    """Answers "which helper does this call call" for one module of the tree (see the module
    docstring); ``own``: the helpers of the module found so far (filled in level by level);
    ``helpers_of``: the helpers of another module of the tree (:func:`module_helpers` unless
    given: ``ast_site_index`` gives its own, found with every site of the module)."""

    def __init__(
        self,
        analysis: AstAnalysis,
        own: dict[str, AstHelperSummary],
        helpers_of: Callable[[AstAnalysis], dict[str, AstHelperSummary]] | None = None,
    ) -> None:
        self.model = analysis.model
        self.project: AstModuleLoader | None = analysis.project
        self.own = own
        self.helpers_of = helpers_of or module_helpers
        path = analysis.source.path
        self.path = Path(os.path.abspath(path)) if path else None

    def resolve(self, call: ast.Call, own: dict[str, AstHelperSummary]) -> AstHelperSummary | None:
        """:meth:`helper_of` (``own`` is the dict given at construction)."""
        return self.helper_of(call)

    def helper_of(self, call: ast.Call) -> AstHelperSummary | None:
        """The helper ``call`` calls, or ``None``."""
        if not call.args and not call.keywords:
            return None  # a helper takes the callable as an argument
        func = call.func
        if isinstance(func, ast.Name):
            return self._name(func)
        if isinstance(func, ast.Attribute):
            receiver = func.value
            if isinstance(receiver, ast.Name) and receiver.id in ("self", "cls"):
                return self._self_method(func)
            for qualified in sorted(self.model.qualified_names(func)):
                found = self._external(qualified)
                if found is not None and not found.method:
                    return found
        return None

    # ------------------------------------------------------------------ functions
    def _name(self, func: ast.Name) -> AstHelperSummary | None:
        for binding in self.model.bindings_of(func):
            if binding.kind is BindingKind.FUNCTION and binding.scope is self.model.module_scope:
                found = self.own.get(binding.name)
                return found if found is not None and not found.method else None
            if binding.kind is BindingKind.IMPORT and binding.target:
                found = self._external(binding.target)
                return found if found is not None and not found.method else None
        return None

    def _external(self, qualified: str, hops: int = 0) -> AstHelperSummary | None:
        """The helper ``qualified`` names in another module of the tree, followed through
        re-exports."""
        if self.project is None or qualified.startswith(("torch.", "builtins.")) or "." not in qualified:
            return None
        module, name = qualified.rsplit(".", 1)
        if module == self.model.module_name:
            return self.own.get(name)
        analysis = self._module(module, name)
        if analysis is None:
            return None
        found = self.helpers_of(analysis).get(name)
        if found is not None or hops >= _MAX_HOPS:
            return found
        for binding in analysis.model.module_scope.bindings.get(name, ()):
            if binding.kind is BindingKind.IMPORT and binding.target and binding.target != qualified:
                return self._external(binding.target, hops + 1)
        if name in analysis.model.module_scope.bindings:
            return None
        for star in _star_modules(analysis.model):  # from .gradient import *
            found = self._external(f"{star}.{name}", hops + 1)
            if found is not None:
                return found
        return None

    def _module(self, module: str, defined: str) -> AstAnalysis | None:
        """The analysis of ``module`` of the tree, when its bytes may define a helper named
        ``defined`` (the read is recorded first, so the linted file depends on it
        whatever the test answers)."""
        if self.project is None:
            return None
        self.namespace_root(module + ".x")
        path = self.project.file_for_module(module)
        if path is None:
            return None
        self.project.record_read(Path(os.path.abspath(path)))
        if not _may_define_helper(Path(path), defined, self.project.unsaved_text(Path(path))):
            return None
        return self.project.ast_analysis_for_file(Path(path))

    def namespace_root(self, qualified: str) -> None:
        """Where the top package of ``qualified`` has no
        ``__init__.py`` (a namespace package) and this file lies in it, the folder above it
        is an import root too."""
        if self.path is None or self.project is None:
            return
        top = qualified.split(".", 1)[0]
        if self.project.file_for_module(top) is not None:
            return
        if "." not in qualified:
            return
        for folder in self.path.parents:
            if folder.name == top and (folder / qualified.split(".")[1]).exists():
                self.project.add_root(folder.parent)
                return

    # ------------------------------------------------------------------ methods
    def _self_method(self, func: ast.Attribute) -> AstHelperSummary | None:
        owner = _enclosing_class(self.model, func)
        if owner is None:
            return None
        scope = self.model.scope_of_definition.get(owner)
        if scope is None:
            return None
        return self._method_in(self.model, scope.qualname, owner, func.attr, self.own, 0)

    def _method_in(
        self,
        model: AstModel,
        class_qualname: str,
        node: ast.ClassDef,
        method: str,
        helpers: dict[str, AstHelperSummary],
        depth: int,
    ) -> AstHelperSummary | None:
        found = helpers.get(f"{class_qualname}.{method}")
        if found is not None:
            return found if found.method else None
        if any(isinstance(s, FUNCTIONS) and s.name == method for s in node.body) or depth >= _MAX_BASES:
            return None  # defined here without checkpointing its parameter: not a helper
        for base in node.bases:
            value = base.value if isinstance(base, ast.Starred) else base
            for qualified in sorted(model.qualified_names(value)):
                module, _, name = qualified.rpartition(".")
                if module == model.module_name or not module:
                    local = _class_named(model, name)
                    if local is not None:
                        result = self._method_in(model, name, local, method, helpers, depth + 1)
                        if result is not None:
                            return result
                    continue
                analysis = self._module(module, method)
                if analysis is None:
                    continue
                other = _class_named(analysis.model, name)
                if other is None:
                    continue
                result = self._method_in(analysis.model, name, other, method, self.helpers_of(analysis), depth + 1)
                if result is not None:
                    return result
        return None


def _star_modules(model: AstModel) -> list[str]:
    """The modules ``from MODULE import *`` statements at the top of ``model``'s module read
    (not those inside an ``if`` or ``try``: ``helper_calls._star_modules``)."""
    found: list[str] = []
    for statement in model.module.body:
        if isinstance(statement, ast.ImportFrom) and any(alias.name == "*" for alias in statement.names):
            module = model.absolute_module(statement)
            if module:
                found.append(module)
    return found

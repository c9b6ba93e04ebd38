"""Which helper (see :mod:`ckptlint.checkpoint.sites.helper_sites`) a call calls.

- ``run(block, x)``: a function of this module, or one imported from a module of the linted
  tree (``from .utils import run``, ``utils.run(...)`` after ``from . import utils``);
- ``self.ckpt(block, x)``: a method of the class around the call or of one of its base
  classes (of this module, or imported from a module of the tree).

A module of the tree is read only when its text mentions a checkpoint API (a cheap byte
test; the read is recorded as a dependency of the linted file), then parsed once and its
helpers summarised once (kept with its analysis).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.checkpoint.sites.site import HelperSummary
from ckptlint.facts.apis import gate_names
from ckptlint.semantic.bindings import BindingKind, ScopeKind
from ckptlint.semantic.model import SemanticModel

if TYPE_CHECKING:
    from collections.abc import Callable

    from ckptlint.semantic.analysis import ModuleAnalysis, ModuleLoader

__all__ = ["HelperResolver"]

_WORDS = tuple(w.encode() for w in sorted(gate_names()[0] | {"checkpoint", "ckpt", "recompute"}))
#: (path, size, mtime) -> the names the file defines with a ``def`` whose text mentions a
#: checkpoint API, and the names it imports (re-exports; ``*`` for a star import).
_MENTIONS: dict[tuple[str, int, int], frozenset[str]] = {}
#: path -> (the text of its editor buffer, the names as for ``_MENTIONS``), for its last text
_BUFFER_MENTIONS: dict[str, tuple[str, frozenset[str]]] = {}
_DEF = re.compile(rb"^([ \t]*)(?:async[ \t]+)?def[ \t]+(\w+)[ \t]*\(", re.MULTILINE)
_FROM_IMPORT = re.compile(rb"^[ \t]*from[ \t]+[\w.]+[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.MULTILINE)
_WORD = re.compile(rb"\w+")
_MAX_HOPS = 3
_MAX_REMEMBERED = 50_000
_MAX_BUFFERS = 64
_MAX_BASES = 4


def _checkpointing_defs(raw: bytes) -> list[bytes]:
    """The names of the ``def``s of ``raw`` whose text (to the next line indented no deeper)
    mentions a checkpoint API: only those can be helpers (a module that loads "checkpoints"
    of weights is not read for its other functions). A line that starts with a closing
    bracket (``):`` of a signature written one parameter a line) does not end the text."""
    if not any(word in raw for word in _WORDS):
        return []
    found: list[bytes] = []
    for match in _DEF.finditer(raw):
        indent = len(match.group(1))
        end = re.compile(rb"\n[ \t]{0,%d}(?=[^\s#)\]}])" % indent).search(raw, match.end())
        body = raw[match.end() : end.start() if end else len(raw)]
        if any(word in body for word in _WORDS):
            found.append(match.group(2))
    return found


def _may_define_helper(path: Path, name: str, unsaved: str | None = None) -> bool:
    """Whether the file at ``path`` defines a function or method ``name`` whose text mentions
    a checkpoint API, or imports ``name`` (or ``*``), from its bytes (kept per file version);
    ``unsaved``: its text in an editor's buffer, read instead of the file."""
    found = _buffer_helper_names(str(path), unsaved) if unsaved is not None else _file_helper_names(path)
    return name in found or "*" in found


def _buffer_helper_names(path: str, text: str) -> frozenset[str]:
    """:func:`_helper_names` of an editor's buffer, kept for its last text (a lint asks once
    per call site that may call a helper of the module: a 280 kB module, 50 call sites, took
    0.39 s a lint when each asked anew)."""
    kept = _BUFFER_MENTIONS.get(path)
    if kept is not None and (kept[0] is text or kept[0] == text):
        return kept[1]
    if len(_BUFFER_MENTIONS) >= _MAX_BUFFERS and path not in _BUFFER_MENTIONS:
        _BUFFER_MENTIONS.clear()  # buffers of documents closed since: their texts are not kept
    found = _helper_names(text.encode("utf-8", "surrogatepass"))
    _BUFFER_MENTIONS[path] = (text, found)
    return found


def _file_helper_names(path: Path) -> frozenset[str]:
    """:func:`_helper_names` of the file at ``path``, kept per file version."""
    try:
        stat = path.stat()
    except OSError:
        return frozenset()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    found = _MENTIONS.get(key)
    if found is None:
        try:
            raw = path.read_bytes() if path.is_file() else b""
        except OSError:
            raw = b""
        if len(_MENTIONS) > _MAX_REMEMBERED:
            _MENTIONS.clear()  # a long-running server: old file versions
        found = _MENTIONS[key] = _helper_names(raw)
    return found


def _helper_names(raw: bytes) -> frozenset[str]:
    """The names ``raw`` defines with a ``def`` mentioning a checkpoint API, and those it
    imports with ``from ... import`` (re-exports: ``from .gradient import helper`` / ``*``)."""
    defined = _checkpointing_defs(raw)
    for names in _FROM_IMPORT.findall(raw):
        defined += _WORD.findall(names) + ([b"*"] if b"*" in names else [])
    return frozenset(d.decode("ascii", "replace") for d in defined)


class HelperResolver:
    """Answers "which helper does this call call" for one module."""

    def __init__(
        self,
        model: SemanticModel,
        project: ModuleLoader | None,
        own: dict[str, HelperSummary],
        helpers_of: Callable[[ModuleAnalysis], dict[str, HelperSummary]],
        namespace_root: Callable[[str], None] | None = None,
    ) -> None:
        """``own``: the helpers of this module found so far (filled in by the caller, level
        by level); ``helpers_of(analysis)``: the helpers of another module."""
        self.model = model
        self.project = project
        self.own = own
        self.helpers_of = helpers_of
        self.namespace_root = namespace_root

    def helper_of(self, call: cst.Call) -> HelperSummary | None:
        func = call.func
        if not call.args:
            return None  # a helper takes the callable as an argument
        if isinstance(func, cst.Name):
            return self._name(func)
        if isinstance(func, cst.Attribute):
            receiver = func.value
            if isinstance(receiver, cst.Name) and receiver.value in ("self", "cls"):
                return self._self_method(func)
            for qualified in sorted(self.model.qualified_names(func)):
                found = self._external(qualified)
                if found is not None and not found.method:
                    return found
        return None

    # ------------------------------------------------------------------ functions
    def _name(self, func: cst.Name) -> HelperSummary | None:
        for binding in self.model.bindings_of(func):
            if binding.kind is BindingKind.FUNCTION and binding.scope is self.model.module_scope:
                found = self.own.get(binding.name)
                return found if found is not None and not found.method else None
            if binding.kind is BindingKind.IMPORT and binding.target:
                found = self._external(binding.target)
                return found if found is not None and not found.method else None
        return None

    def _external(self, qualified: str, hops: int = 0) -> HelperSummary | None:
        """The helper ``qualified`` names in another module of the tree, followed through
        re-exports (``from .gradient import helper`` in a package's ``__init__``)."""
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

    def _module(self, module: str, defined: str, needed: str | None = None) -> ModuleAnalysis | None:
        """The analysis of ``module`` of the tree, when its text may define a helper named
        ``defined`` (a cheap byte test first; the read is a dependency of the linted file);
        parsed for the name ``needed`` (default ``defined``) and what it needs, where the
        project parses reached modules partially."""
        if self.project is None:
            return None
        if self.namespace_root is not None:
            self.namespace_root(module + ".x")
        path = self.project.file_for_module(module)
        if path is None:
            return None
        self.project.record_read(Path(os.path.abspath(path)))
        if not _may_define_helper(Path(path), defined, self.project.unsaved_text(Path(path))):
            return None
        return self.project.analysis_for_names(module, [needed or defined])

    # ------------------------------------------------------------------ methods
    def _self_method(self, func: cst.Attribute) -> HelperSummary | None:
        owner = _enclosing_class(self.model, func)
        if owner is None:
            return None
        scope = self.model.scope_of_definition.get(owner)
        if scope is None:
            return None
        return self._method_in(self.model, scope.qualname, owner, func.attr.value, self.own, 0)

    def _method_in(
        self,
        model: SemanticModel,
        class_qualname: str,
        node: cst.ClassDef,
        method: str,
        helpers: dict[str, HelperSummary],
        depth: int,
    ) -> HelperSummary | None:
        found = helpers.get(f"{class_qualname}.{method}")
        if found is not None:
            return found if found.method else None
        if _defines(node, method) or depth >= _MAX_BASES:
            return None  # defined here without checkpointing its parameter: not a helper
        for base in node.bases:
            for qualified in sorted(model.qualified_names(base.value)):
                module, _, name = qualified.rpartition(".")
                if module == model.module_name or not module:
                    local = _class_named(model, name)
                    if local is not None:
                        result = self._method_in(model, name, local, method, helpers, depth + 1)
                        if result is not None:
                            return result
                    continue
                analysis = self._module(module, method, name)
                if analysis is None:
                    continue
                other = _class_named(analysis.model, name)
                if other is None:
                    continue
                result = self._method_in(analysis.model, name, other, method, self.helpers_of(analysis), depth + 1)
                if result is not None:
                    return result
        return None


def _star_modules(model: SemanticModel) -> list[str]:
    """The modules ``from MODULE import *`` at the top of ``model``'s module reads."""
    found: list[str] = []
    for statement in model.module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.ImportFrom) and isinstance(small.names, cst.ImportStar):
                    module = model.absolute_module(small)
                    if module:
                        found.append(module)
    return found


def _defines(node: cst.ClassDef, method: str) -> bool:
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    return any(isinstance(s, cst.FunctionDef) and s.name.value == method for s in body)


def _class_named(model: SemanticModel, name: str) -> cst.ClassDef | None:
    for binding in model.module_scope.bindings.get(name, ()):
        if binding.kind is BindingKind.CLASS and isinstance(binding.node, cst.ClassDef):
            return binding.node
    return None


def _enclosing_class(model: SemanticModel, node: cst.CSTNode) -> cst.ClassDef | None:
    """The module-level class whose method (or a function nested in it) holds ``node``."""
    function = model.enclosing(node, cst.FunctionDef)
    while function is not None:
        scope = model.scope_of(function)
        if scope.kind is ScopeKind.CLASS and isinstance(scope.node, cst.ClassDef):
            return scope.node
        function = model.enclosing(function, cst.FunctionDef)
    return None

"""Recognising checkpoint APIs by following the linted tree, on CPython's ``ast``: what
:func:`~ckptlint.checkpoint.sites.ast_sites.direct_sites` does not recognise by itself, and
the region expression of a policy site:

- ``TrainingArguments`` subclasses of the linted tree (the subclass relation, followed
  through base classes of this module and, through the loader, of other modules of the tree
  whose class names read like arguments: ``...Arguments``, ``...Args``, ``...Config``);
- names imported from other modules of the tree that are a re-export or an alias of an API
  (``from .utils import checkpoint`` where ``utils`` imports torch's, ``ckpt = cp.checkpoint``
  there), followed up to four hops, through ``from .utils import *`` and from a namespace
  package's folder (:meth:`AstReach.namespace_root`);
- :func:`policy_region_expression`: the classes a ``check_fn`` / ``ModuleWrapPolicy({...})`` /
  class set selects, as an ``ast.List`` of calls of the source's class expressions (each call
  placed where its class expression is written), the site's ``function``.

Home-made implementations and helpers (:mod:`ckptlint.checkpoint.sites.ast_homemade`, read
with the tree) are recognised only by a reach made with ``home=True`` (what
:func:`~ckptlint.checkpoint.sites.ast_site_index.ast_site_index` asks for):
``Impl.apply(f, x)`` and calls of the module's home-made helpers
(:meth:`AstReach.home_apply`, the names checked first in :meth:`AstReach.api_of_call`), and an
``Impl.apply`` or a home-made helper imported from another module of the tree (``_external``'s
home-made rows). Without it (``direct_sites``), such a call of the module is left to the
helper stage and not followed at all, and a home-made one of another module is followed and
left unrecognised. The reentrancy of a policy's
``checkpoint_wrapper_fn`` is read in :mod:`ckptlint.checkpoint.sites.ast_site_builders`.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

from ckptlint.checkpoint.sites.ast_homemade import home_made, implementation_of_apply
from ckptlint.checkpoint.sites.ast_options import AstOption, argument_value, ordered_arguments
from ckptlint.checkpoint.sites.options import OptionState
from ckptlint.facts.apis import (
    API_BY_QUALIFIED_NAME,
    PARTIAL_QUALIFIED_NAMES,
    TRAINING_ARGUMENTS_BASES,
    CheckpointApi,
    api_for,
)
from ckptlint.semantic.ast_analysis import AstModuleLoader
from ckptlint.semantic.ast_lines import body_on_header
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.ast_walk import FUNCTIONS
from ckptlint.semantic.bindings import BindingKind

__all__ = ["AstReach", "policy_region_expression", "training_arguments_of"]

#: Last parts of qualified names worth following into other modules (``reach._FOLLOWED``).
_FOLLOWED = re.compile(r"(?i)checkpoint|ckpt|recompute|^apply$")
_MAX_HOPS = 4
#: Classes of other modules read for a ``TrainingArguments`` base (``reach._ARGUMENTS_LIKE``).
_ARGUMENTS_LIKE = re.compile(r"(?:Arguments|Args|Config)$")


class AstReach:
    """Answers "which API does this call use" for the calls of one module that only the linted
    tree explains (see the module docstring).

    Args:
        model: the module's model.
        project: the loader of the other modules of the tree; ``None`` for a module read alone
            (then only ``TrainingArguments`` subclasses of the module itself are found).
        path: the module's file, for :meth:`namespace_root`.
        home: whether home-made implementations and helpers are recognised (of the module,
            read with the tree, and of other modules of the tree).
    """

    def __init__(self, model: AstModel, project: AstModuleLoader | None, path: str | None = None, home: bool = False) -> None:
        self.model = model
        self.project = project
        self.path = Path(os.path.abspath(path)) if path else None
        self.home = home
        self._home = home_made(model, project) if home else None  # read first: the order files are recorded as read in
        self._stars: list[str] | None = None

    def home_apply(self, call: ast.Call) -> CheckpointApi | None:
        """With ``home``: the API of the module's home-made implementation whose ``apply``
        ``call`` calls (``Impl.apply(f, x)``, checked after method APIs and API instances, before
        ``self.attr``); else ``None``."""
        if self._home is None:
            return None
        implementation = implementation_of_apply(call, self.model, self._home)
        return implementation.api if implementation is not None else None

    def api_of_call(self, call: ast.Call, names: frozenset[str]) -> CheckpointApi | None:
        """The API of ``call`` (whose callee has the qualified names ``names``) that a
        ``TrainingArguments`` base or another module of the tree gives it, checked after the
        method checks and :meth:`home_apply`; with ``home``, a home-made helper of the module (or
        ``Impl.apply`` bound to a name) first;
        ``None`` when there is none, or (without ``home``) when the call is a home-made
        ``apply`` or helper of the module (never followed further)."""
        if self._home is None:
            if self._home_made(call, names):
                return None
        else:
            for name in sorted(names):
                helper = self._home.helpers.get(name)
                if helper is not None:
                    return helper.api
                if name.endswith(".apply"):  # run = Impl.apply; run(f, x)
                    implementation = self._home.implementations.get(name[: -len(".apply")])
                    if implementation is not None:
                        return implementation.api
        api = training_arguments_of(names, self.model, self.project, 0)
        if api is not None or self.project is None:
            return api
        for name in sorted(names):
            if _FOLLOWED.search(name.rsplit(".", 1)[-1]):
                self.namespace_root(name)
                api = _external(name, self.project, 0, self.home)
                if api is not None:
                    return api
        func = call.func
        if isinstance(func, ast.Name) and not self.model.bindings_of(func) and _FOLLOWED.search(func.id):
            for module in self._star_modules():  # from .utils import *
                api = _external(f"{module}.{func.id}", self.project, 0, self.home)
                if api is not None:
                    return api
        return None

    def _home_made(self, call: ast.Call, names: frozenset[str]) -> bool:
        """Whether ``call`` is a home-made ``apply`` or helper of the module (read alone)."""
        found = home_made(self.model)
        if not found.implementations:
            return False
        if implementation_of_apply(call, self.model, found) is not None:
            return True
        for name in names:
            if name in found.helpers:
                return True
            if name.endswith(".apply") and name[: -len(".apply")] in found.implementations:
                return True
        return False

    def namespace_root(self, qualified: str) -> None:
        """``from ldm.modules.util import checkpoint`` where ``ldm`` has no ``__init__.py`` (a
        namespace package): the folder above the ``ldm`` folder this file lies in is an import
        root too."""
        if self.path is None or self.project is None:
            return
        top = qualified.split(".", 1)[0]
        if self.project.file_for_module(top) is not None:
            return
        if "." not in qualified:
            return
        second = qualified.split(".")[1]
        for folder in self.path.parents:
            if folder.name == top and (folder / second).exists():
                self.project.add_root(folder.parent)
                return

    def _star_modules(self) -> list[str]:
        """The modules of the module's top-level ``from M import *`` statements, in order."""
        if self._stars is None:
            self._stars = []
            for statement in self.model.module.body:
                if isinstance(statement, ast.ImportFrom) and statement.names and statement.names[0].name == "*":
                    module = self.model.absolute_module(statement)
                    if module:
                        self._stars.append(module)
        return self._stars


# -------------------------------------------------------------------- TrainingArguments
def training_arguments_of(
    names: frozenset[str], model: AstModel, project: AstModuleLoader | None, hops: int
) -> CheckpointApi | None:
    """The ``TrainingArguments`` row a class named ``names`` derives from, following base
    classes in ``model``'s module and, through ``project``, in other modules of the tree
    (``reach._training_arguments_of``); ``None`` when it derives from none that is known."""
    if hops > _MAX_HOPS:
        return None
    for name in sorted(names):
        api = API_BY_QUALIFIED_NAME.get(name)
        if api is not None and name in TRAINING_ARGUMENTS_BASES:
            return api
    for name in sorted(names):
        node, owner = _class_definition(name, model, project)
        if node is None or owner is None:
            continue
        for base in node.bases:
            value = base.value if isinstance(base, ast.Starred) else base
            found = training_arguments_of(owner.qualified_names(value), owner, project, hops + 1)
            if found is not None:
                return found
    return None


def _class_definition(
    qualified: str, model: AstModel, project: AstModuleLoader | None
) -> tuple[ast.ClassDef | None, AstModel | None]:
    """The ``class`` statement ``qualified`` names, with its module's model: in ``model``'s
    module, or (an arguments-like name) in the module of the tree that defines or re-exports it."""
    module, _, name = qualified.rpartition(".")
    if module == model.module_name or (not module and not model.module_name):
        for binding in model.module_scope.bindings.get(name, ()):
            if binding.kind is BindingKind.CLASS and isinstance(binding.node, ast.ClassDef):
                return binding.node, model
        return None, None
    if project is None or not module or qualified.startswith(("torch.", "transformers.", "builtins.")):
        return None, None
    if not _ARGUMENTS_LIKE.search(name):
        return None, None
    analysis = project.ast_analysis_for_module(module)
    if analysis is None:
        return None, None
    other = analysis.model
    for binding in other.module_scope.bindings.get(name, ()):
        if binding.kind is BindingKind.CLASS and isinstance(binding.node, ast.ClassDef):
            return binding.node, other
        if binding.kind is BindingKind.IMPORT and binding.target and binding.target != qualified:
            return _class_definition(binding.target, other, project)
    return None, None


# -------------------------------------------------------------------- other modules
def _external(qualified: str, project: AstModuleLoader, hops: int, home: bool = False) -> CheckpointApi | None:
    """The API ``qualified`` (a name in another module of the tree) denotes: with ``home``, a
    home-made implementation's ``apply`` or a home-made helper there (read with the tree); an
    import or an alias of an API there, followed through further modules (``reach._external``;
    without ``home``, a home-made row found there is left unrecognised)."""
    if hops > _MAX_HOPS or qualified.startswith(("torch.", "builtins.")):
        return None
    parts = qualified.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:cut])
        if project.file_for_module(module) is None:
            continue
        analysis = project.ast_analysis_for_module(module)
        if analysis is None:
            return None
        model = analysis.model
        rest = parts[cut:]
        applies = rest[-1] == "apply" and len(rest) == 2
        found = home_made(model, project) if home else None
        own = model.module_name or module  # a namespace package's module names itself shorter
        if found is not None and applies:
            implementation = found.implementations.get(f"{own}.{rest[0]}")
            if implementation is not None:
                return implementation.api
        if len(rest) != 1 and not applies:
            return None
        helper = found.helpers.get(f"{own}.{rest[0]}") if found is not None else None
        if helper is not None:
            return helper.api
        for binding in model.module_scope.bindings.get(rest[0], ()):
            targets: set[str] = set()
            if binding.kind is BindingKind.IMPORT and binding.target:
                targets.add(binding.target)
            elif binding.kind is BindingKind.ASSIGNMENT and isinstance(binding.value, (ast.Name, ast.Attribute)):
                targets |= model.qualified_names(binding.value)
            for target in sorted(targets):
                followed = target + ".apply" if applies else target
                api = api_for({followed})
                if api is not None:
                    return api
                api = _external(followed, project, hops + 1, home)
                if api is not None:
                    return api
        return None
    return None


# -------------------------------------------------------------------- policies
def policy_region_expression(api: CheckpointApi, options: dict[str, AstOption], model: AstModel) -> ast.List | None:
    """An ``ast.List`` of calls of each class the policy selects (``[Block(), Other()]``), each
    call's callee the class expression of the source (so names resolve where they were
    written) and placed where it is; ``None`` when the selection is unknown (or, with neither
    ``check_fn`` nor a policy, every submodule: not resolved)."""
    passed = [
        keyword
        for keyword in api.policy_keywords
        if keyword in options
        and options[keyword].is_passed
        and not (options[keyword].state is OptionState.LITERAL and options[keyword].value is None)
    ]
    if "auto_wrap_policy" in passed:  # it takes precedence over check_fn (torch 2.13)
        passed = ["auto_wrap_policy"]
    if not passed:
        return None
    node = options[passed[0]].node
    if not isinstance(node, ast.expr):
        return None
    classes = _selected_classes(node, model, 0)
    if not classes:
        return None
    calls: list[ast.expr] = [ast.copy_location(ast.Call(func=expr, args=[], keywords=[]), expr) for expr in classes]
    found = ast.List(elts=calls, ctx=ast.Load())
    found.lineno, found.col_offset = calls[0].lineno, calls[0].col_offset
    found.end_lineno, found.end_col_offset = calls[-1].end_lineno, calls[-1].end_col_offset
    return found


def _selected_classes(expr: ast.expr, model: AstModel, depth: int) -> list[ast.expr] | None:
    """Class expressions a ``check_fn``, a policy or a class collection selects; ``None``
    when unknown."""
    if depth > 6:
        return None
    if isinstance(expr, (ast.Set, ast.List, ast.Tuple)):
        out: list[ast.expr] = []
        for element in expr.elts:
            if isinstance(element, ast.Starred):
                return None
            found = _selected_classes(element, model, depth + 1)
            if found is None:
                return None
            out += found
        return out
    if isinstance(expr, ast.Attribute):
        return [expr]
    if isinstance(expr, ast.Name):
        return _named_classes(expr, model, depth)
    if isinstance(expr, ast.Lambda):
        params = [*expr.args.posonlyargs, *expr.args.args]
        return _predicate_classes(expr.body, params[0].arg if params else None, model, depth)
    if isinstance(expr, ast.Call):
        names = model.qualified_names(expr.func)
        arguments = ordered_arguments(expr)
        if any(n.endswith("ModuleWrapPolicy") for n in names) and arguments:
            return _selected_classes(argument_value(arguments[0]), model, depth + 1)
        if names & PARTIAL_QUALIFIED_NAMES and arguments:
            for arg in arguments[1:]:
                if isinstance(arg, ast.keyword) and arg.arg in ("lambda_fn", "transformer_layer_cls"):
                    return _selected_classes(arg.value, model, depth + 1)
            return None
        if any(n.endswith(("builtins.set", "builtins.tuple", "builtins.list", "builtins.frozenset")) for n in names):
            if len(arguments) == 1:
                return _selected_classes(argument_value(arguments[0]), model, depth + 1)
    return None


def _named_classes(expr: ast.Name, model: AstModel, depth: int) -> list[ast.expr] | None:
    bindings = model.bindings_of(expr)
    if not bindings:
        return None
    out: list[ast.expr] = []
    for binding in bindings:
        if binding.kind in (BindingKind.CLASS, BindingKind.IMPORT):
            out.append(expr)
        elif binding.kind is BindingKind.FUNCTION and isinstance(binding.node, FUNCTIONS):
            found = _check_function(binding.node, model, depth)
            if found is None:
                return None
            out += found
        elif binding.kind is BindingKind.ASSIGNMENT and binding.value is not None:
            found = _selected_classes(binding.value, model, depth + 1)
            if found is None:
                return None
            out += found
        else:
            return None
    return out


def _check_function(function: ast.FunctionDef | ast.AsyncFunctionDef, model: AstModel, depth: int) -> list[ast.expr] | None:
    """The classes a ``def`` predicate selects: its one ``return`` of the top of its body (a
    body on the ``def``'s own line has none)."""
    params = [*function.args.posonlyargs, *function.args.args]
    if not params or body_on_header(model, function.body):
        return None
    returns = [s.value for s in function.body if isinstance(s, ast.Return) and s.value is not None]
    if len(returns) != 1:
        return None
    return _predicate_classes(returns[0], params[0].arg, model, depth)


def _predicate_classes(expr: ast.expr, param: str | None, model: AstModel, depth: int) -> list[ast.expr] | None:
    """Classes ``isinstance(m, X)``, ``type(m) in {...}``, ``m.__class__ is X`` select
    (``a or b``: both; ``a and b``: the first known, a subset)."""
    if param is None:
        return None
    if isinstance(expr, ast.BoolOp):  # ``a or b or c`` is read as ``(a or b) or c``
        found = _predicate_classes(expr.values[0], param, model, depth)
        for value in expr.values[1:]:
            right = _predicate_classes(value, param, model, depth)
            if isinstance(expr.op, ast.Or):
                found = None if found is None or right is None else found + right
            elif found is None:
                found = right
        return found
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "isinstance":
        arguments = ordered_arguments(expr)
        if len(arguments) == 2 and _is_param(argument_value(arguments[0]), param):
            return _selected_classes(argument_value(arguments[1]), model, depth + 1)
        return None
    if isinstance(expr, ast.Compare) and len(expr.ops) == 1:
        if _is_type_of(expr.left, param) and isinstance(expr.ops[0], (ast.In, ast.Is, ast.Eq)):
            return _selected_classes(expr.comparators[0], model, depth + 1)
    return None


def _is_param(expr: ast.expr, param: str) -> bool:
    return isinstance(expr, ast.Name) and expr.id == param


def _is_type_of(expr: ast.expr, param: str) -> bool:
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "type":
        arguments = ordered_arguments(expr)
        return len(arguments) == 1 and _is_param(argument_value(arguments[0]), param)
    return isinstance(expr, ast.Attribute) and expr.attr == "__class__" and _is_param(expr.value, param)

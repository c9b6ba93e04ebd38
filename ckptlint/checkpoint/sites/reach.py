"""Recognising checkpoint APIs that a qualified-name lookup alone does not find.

:func:`ckptlint.checkpoint.sites.sites.collect_sites` asks :class:`Recogniser` about every call the API
table (:mod:`ckptlint.facts.apis`) does not name directly:

- method names that are an API whatever the receiver (``self._gradient_checkpointing_func``,
  DeepSpeed's ``self.activation_checkpoint_func``), and methods of instances of an API class
  (``self.ckpt.checkpoint(f, x)`` after ``self.ckpt = CheckpointWithoutOutput()``);
- ``self.attr(...)`` where the class stores an API in ``self.attr`` (``self._ckpt = checkpoint``);
- home-made implementations (:mod:`ckptlint.checkpoint.sites.homemade`): ``Impl.apply(f, ...)`` and
  helpers that call it;
- ``TrainingArguments`` subclasses of the linted tree (the subclass relation, followed
  through base classes of this module and of other modules of the tree);
- names imported from other modules of the linted tree that are a re-export or alias of an
  API (``from .utils import checkpoint`` where ``utils`` imports torch's, ``ckpt =
  cp.checkpoint`` there), or a home-made implementation or helper defined there.

It also reads the policies of ``apply_activation_checkpointing`` and friends: the classes
a ``check_fn`` / ``ModuleWrapPolicy({...})`` / class set selects become the site's
"function" (an expression that constructs each class, so the region evaluator resolves it
to each class's ``forward`` like any module instance).
"""

from __future__ import annotations

import os
import re
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.checkpoint.sites.homemade import home_made, implementation_of_apply
from ckptlint.checkpoint.sites.options import OptionState, OptionValue, literal_string
from ckptlint.checkpoint.sites.site import Reentrancy
from ckptlint.facts.apis import (
    API_BY_QUALIFIED_NAME,
    INSTANCE_METHOD_APIS,
    METHOD_APIS,
    PARTIAL_QUALIFIED_NAMES,
    TRAINING_ARGUMENTS_BASES,
    ApiKind,
    CheckpointApi,
    api_for,
)
from ckptlint.semantic.assignments import BINDING_NODES, assignments, attribute_name, candidate_values
from ckptlint.semantic.bindings import BindingKind
from ckptlint.semantic.model import SemanticModel
from ckptlint.semantic.walk import returns_of

if TYPE_CHECKING:
    from ckptlint.semantic.analysis import ModuleLoader

__all__ = ["Recogniser", "policy_region_expression", "wrapper_fn_reentrancy"]

#: Last parts of qualified names worth following into other modules of the tree.
_FOLLOWED = re.compile(r"(?i)checkpoint|ckpt|recompute|^apply$")
_MAX_HOPS = 4
_INSTANCE_METHODS = frozenset(method for method, _ in INSTANCE_METHOD_APIS.values())
#: Classes of other modules are followed (parsed) to find a ``TrainingArguments`` base only
#: when their name reads like one (parsing every imported class's module costs too much).
_ARGUMENTS_LIKE = re.compile(r"(?:Arguments|Args|Config)$")


class Recogniser:
    """Answers "which API does this call use" for one module (see the module docstring)."""

    def __init__(self, model: SemanticModel, project: ModuleLoader | None, path: str | None = None) -> None:
        self.model = model
        self.project = project
        self.path = Path(os.path.abspath(path)) if path else None
        self._home = home_made(model, project)
        self._stars: list[str] | None = None

    def api_of_call(self, call: cst.Call, names: frozenset[str]) -> CheckpointApi | None:
        func = call.func
        if isinstance(func, cst.Attribute):
            api = METHOD_APIS.get(func.attr.value)
            if api is not None:
                return api
            api = self._instance_method(func)
            if api is not None:
                return api
            implementation = implementation_of_apply(call, self.model, self._home)
            if implementation is not None:
                return implementation.api
            api = self._self_attribute(func)
            if api is not None:
                return api
        for name in sorted(names):
            helper = self._home.helpers.get(name)
            if helper is not None:
                return helper.api
            if name.endswith(".apply"):  # run = Impl.apply; run(f, x)
                implementation = self._home.implementations.get(name[: -len(".apply")])
                if implementation is not None:
                    return implementation.api
        api = self._training_arguments(names, self.model, 0)
        if api is not None:
            return api
        if self.project is not None:
            for name in sorted(names):
                if _FOLLOWED.search(name.rsplit(".", 1)[-1]):
                    self.namespace_root(name)
                    api = _external(name, self.project, 0)
                    if api is not None:
                        return api
            if isinstance(func, cst.Name) and not self.model.bindings_of(func) and _FOLLOWED.search(func.value):
                for module in self._star_modules():  # from .utils import *
                    api = _external(f"{module}.{func.value}", self.project, 0)
                    if api is not None:
                        return api
        return None

    # ---------------------------------------------------------------- instances
    def _instance_method(self, func: cst.Attribute) -> CheckpointApi | None:
        method = func.attr.value
        if method not in _INSTANCE_METHODS:
            return None
        for constructor in self._constructors(func.value):
            for name in self.model.qualified_names(constructor.func):
                entry = INSTANCE_METHOD_APIS.get(name)
                if entry is not None and entry[0] == method:
                    return entry[1]
        return None

    def _constructors(self, receiver: cst.BaseExpression) -> list[cst.Call]:
        """Calls whose result ``receiver`` may be: itself, a local variable's value, or a
        ``self.attr`` assigned in the enclosing class."""
        model = self.model
        if isinstance(receiver, cst.Call):
            return [receiver]
        if isinstance(receiver, cst.Name):
            return [
                b.value
                for b in model.bindings_of(receiver)
                if b.kind is BindingKind.ASSIGNMENT and isinstance(b.value, cst.Call)
            ]
        if isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name):
            owner = _enclosing_class(model, receiver)
            if owner is None:
                return []
            return [value for value in _self_assignments(model, owner, receiver.attr.value) if isinstance(value, cst.Call)]
        return []

    def _self_values(self, func: cst.Attribute) -> list[cst.BaseExpression]:
        if not (isinstance(func.value, cst.Name) and func.value.value == "self"):
            return []
        if not _FOLLOWED.search(func.attr.value):
            return []  # only attributes named like a checkpoint function (``self._ckpt_fn``)
        owner = _enclosing_class(self.model, func)
        if owner is None:
            return []
        return _self_assignments(self.model, owner, func.attr.value)

    def _self_attribute(self, func: cst.Attribute) -> CheckpointApi | None:
        """``self.attr(...)`` where the class assigns an API itself to ``self.attr``."""
        for value in self._self_values(func):
            if isinstance(value, (cst.Name, cst.Attribute)):
                api = api_for(self.model.qualified_names(value))
                if api is not None and api.kind in (ApiKind.FUNCTION, ApiKind.LIBRARY_FUNCTION):
                    return api
        return None

    def self_partial(self, func: cst.Attribute) -> cst.Call | None:
        """The ``functools.partial(API, ...)`` call the class stores in ``self.attr``, itself or
        returned by a helper (``self.ckpt = make_ckpt()``), for a call ``self.attr(...)`` (its
        site gives the options)."""
        for value in self._self_values(func):
            found = _returned_partial(self.model, value)
            if found is not None:
                return found
        return None

    def namespace_root(self, qualified: str) -> None:
        """``from ldm.modules.util import checkpoint`` where ``ldm`` has no ``__init__.py``
        (a namespace package): the folder above the ``ldm`` folder this file lies in is an
        import root too."""
        if self.path is None or self.project is None:
            return
        top = qualified.split(".", 1)[0]
        if self.project.file_for_module(top) is not None:
            return
        for folder in self.path.parents:
            if folder.name == top and (folder / qualified.split(".")[1]).exists() if "." in qualified else False:
                self.project.add_root(folder.parent)
                return

    # ---------------------------------------------------------------- star imports
    def _star_modules(self) -> list[str]:
        if self._stars is None:
            self._stars = []
            for statement in self.model.module.body:
                if isinstance(statement, cst.SimpleStatementLine):
                    for small in statement.body:
                        if isinstance(small, cst.ImportFrom) and isinstance(small.names, cst.ImportStar):
                            module = self.model.absolute_module(small)
                            if module:
                                self._stars.append(module)
        return self._stars

    # ---------------------------------------------------------------- TrainingArguments
    def _training_arguments(self, names: frozenset[str], model: SemanticModel, hops: int) -> CheckpointApi | None:
        return _training_arguments_of(names, model, self.project, hops)


def _training_arguments_of(
    names: frozenset[str], model: SemanticModel, project: ModuleLoader | None, hops: int
) -> CheckpointApi | None:
    """The ``TrainingArguments`` row a class named ``names`` derives from, following base
    classes in ``model``'s module and, through ``project``, in other modules of the tree."""
    if hops > _MAX_HOPS:
        return None
    for name in sorted(names):
        api = API_BY_QUALIFIED_NAME.get(name)
        if api is not None and name in TRAINING_ARGUMENTS_BASES:
            return api
    for name in sorted(names):
        node, owner_model = _class_definition(name, model, project)
        if node is None or owner_model is None:
            continue
        for base in node.bases:
            found = _training_arguments_of(owner_model.qualified_names(base.value), owner_model, project, hops + 1)
            if found is not None:
                return found
    return None


def _class_definition(
    qualified: str, model: SemanticModel, project: ModuleLoader | None
) -> tuple[cst.ClassDef | None, SemanticModel | None]:
    module, _, name = qualified.rpartition(".")
    if module == model.module_name or (not module and not model.module_name):
        for binding in model.module_scope.bindings.get(name, ()):
            if binding.kind is BindingKind.CLASS and isinstance(binding.node, cst.ClassDef):
                return binding.node, model
        return None, None
    if project is None or not module or qualified.startswith(("torch.", "transformers.", "builtins.")):
        return None, None
    if not _ARGUMENTS_LIKE.search(name):
        return None, None
    analysis = project.analysis_for_module(module)
    if analysis is None:
        return None, None
    for binding in analysis.model.module_scope.bindings.get(name, ()):
        if binding.kind is BindingKind.CLASS and isinstance(binding.node, cst.ClassDef):
            return binding.node, analysis.model
        if binding.kind is BindingKind.IMPORT and binding.target and binding.target != qualified:
            return _class_definition(binding.target, analysis.model, project)
    return None, None


# -------------------------------------------------------------------- other modules
def _external(qualified: str, project: ModuleLoader, hops: int) -> CheckpointApi | None:
    """The API that ``qualified`` (a name in another module of the linted tree) denotes:
    an import or alias of an API there, or a home-made implementation's ``apply`` / helper."""
    if hops > _MAX_HOPS or qualified.startswith(("torch.", "builtins.")):
        return None
    parts = qualified.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:cut])
        if project.file_for_module(module) is None:
            continue
        analysis = project.analysis_for_module(module)
        if analysis is None:
            return None
        model = analysis.model
        rest = parts[cut:]
        found = home_made(model, project)
        own = model.module_name or module  # a namespace package's module names itself shorter
        if rest[-1] == "apply" and len(rest) == 2:
            implementation = found.implementations.get(f"{own}.{rest[0]}")
            if implementation is not None:
                return implementation.api
        if len(rest) != 1 and not (len(rest) == 2 and rest[-1] == "apply"):
            return None
        name = rest[0]
        helper = found.helpers.get(f"{own}.{name}")
        if helper is not None:
            return helper.api
        for binding in model.module_scope.bindings.get(name, ()):
            targets: set[str] = set()
            if binding.kind is BindingKind.IMPORT and binding.target:
                targets.add(binding.target)
            elif binding.kind is BindingKind.ASSIGNMENT and isinstance(binding.value, (cst.Name, cst.Attribute)):
                targets |= model.qualified_names(binding.value)
            for target in sorted(targets):
                suffix = ".apply" if rest[-1] == "apply" and len(rest) == 2 else ""
                api = api_for({target + suffix}) if suffix else api_for({target})
                if api is not None:
                    return api
                api = _external(target + suffix, project, hops + 1)
                if api is not None:
                    return api
        return None
    return None


# -------------------------------------------------------------------- classes
def _enclosing_class(model: SemanticModel, node: cst.CSTNode) -> cst.ClassDef | None:
    function = model.enclosing(node, cst.FunctionDef)
    while function is not None:
        parent = model.enclosing(function, cst.ClassDef, cst.FunctionDef)
        if isinstance(parent, cst.ClassDef):
            return parent
        function = parent
    return None


def _self_assignments(model: SemanticModel, owner: cst.ClassDef, attr: str) -> list[cst.BaseExpression]:
    """Values assigned to ``self.attr`` in the methods of ``owner``, in any binding form
    (:func:`ckptlint.semantic.assignments.assignments`; one walk per class, kept in the
    model's memo)."""
    memo: dict[int, tuple[cst.ClassDef, dict[str, list[cst.BaseExpression]]]] = model.memo.setdefault("self_assignments", {})  # type: ignore[assignment]
    cached = memo.get(id(owner))
    if cached is None or cached[0] is not owner:
        from ckptlint.semantic.walk import children

        found: dict[str, list[cst.BaseExpression]] = {}
        key = partial(literal_string, model=model)
        stack: list[cst.CSTNode] = [owner.body]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.ClassDef):
                continue
            if type(node) in BINDING_NODES:
                for assigned in assignments(node, key):
                    name = attribute_name(assigned, "self")
                    if name is not None:
                        found.setdefault(name, []).extend(candidate_values(assigned, model.qualified_names) or ())
            if isinstance(node, cst.Expr):
                stack.append(node.value)  # `setattr(self, "name", value)`
                continue
            if isinstance(node, (cst.BaseExpression, cst.BaseSmallStatement)):
                continue  # assignments are statements: no need to look inside expressions
            stack.extend(children(node))
        cached = (owner, found)
        memo[id(owner)] = cached
    return cached[1].get(attr, [])


def _returned_partial(model: SemanticModel, value: cst.BaseExpression, hops: int = 0) -> cst.Call | None:
    """The ``functools.partial(API, ...)`` call ``value`` is, or that the function it calls
    returns (``self.ckpt = make_ckpt()``, ``self._make_ckpt()``; followed through a local
    name and up to two helpers deep); ``None`` when there is none."""
    if hops > 2:
        return None
    if isinstance(value, cst.Name) and value in model.scopes:
        for binding in model.bindings_of(value):
            if binding.kind is BindingKind.ASSIGNMENT and binding.value is not None:
                found = _returned_partial(model, binding.value, hops + 1)
                if found is not None:
                    return found
        return None
    if not isinstance(value, cst.Call) or value.func not in model.scopes:
        return None
    if value.args and model.qualified_names(value.func) & PARTIAL_QUALIFIED_NAMES:
        return value
    functions: list[cst.FunctionDef] = []
    if isinstance(value.func, cst.Name):
        functions = [b.node for b in model.bindings_of(value.func) if isinstance(b.node, cst.FunctionDef)]
    elif isinstance(value.func, cst.Attribute) and isinstance(value.func.value, cst.Name) and value.func.value.value == "self":
        owner = _enclosing_class(model, value)
        body = owner.body.body if owner is not None and isinstance(owner.body, cst.IndentedBlock) else ()
        functions = [s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == value.func.attr.value]
    for function in functions:
        for ret in returns_of(function):
            found = _returned_partial(model, ret.value, hops + 1) if ret.value is not None else None
            if found is not None:
                return found
    return None


# -------------------------------------------------------------------- policies
def policy_region_expression(
    api: CheckpointApi, options: dict[str, OptionValue], model: SemanticModel
) -> cst.BaseExpression | None:
    """An expression that constructs each class the policy selects (``[Block(), Other()]``,
    built from the class expressions of the source, so names resolve where they were
    written), or ``None`` when the selection is unknown (or, with neither ``check_fn`` nor a
    policy, every submodule: not resolved)."""
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
    if not isinstance(node, cst.BaseExpression):
        return None
    classes = _selected_classes(node, model, 0)
    if not classes:
        return None
    return cst.List([cst.Element(cst.Call(func=expr)) for expr in classes])


def _selected_classes(expr: cst.BaseExpression, model: SemanticModel, depth: int) -> list[cst.BaseExpression] | None:
    """Class expressions a ``check_fn``, a policy or a class collection selects; ``None``
    when unknown."""
    if depth > 6:
        return None
    if isinstance(expr, (cst.Set, cst.List, cst.Tuple)):
        out: list[cst.BaseExpression] = []
        for element in expr.elements:
            if isinstance(element, cst.StarredElement):
                return None
            found = _selected_classes(element.value, model, depth + 1)
            if found is None:
                return None
            out += found
        return out
    if isinstance(expr, cst.Attribute):
        return [expr]
    if isinstance(expr, cst.Name):
        bindings = model.bindings_of(expr)
        if not bindings:
            return None
        out = []
        for binding in bindings:
            if binding.kind in (BindingKind.CLASS, BindingKind.IMPORT):
                out.append(expr)
            elif binding.kind is BindingKind.FUNCTION and isinstance(binding.node, cst.FunctionDef):
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
    if isinstance(expr, cst.Lambda):
        return _predicate_classes(expr.body, _lambda_param(expr), model, depth)
    if isinstance(expr, cst.Call):
        names = model.qualified_names(expr.func)
        if any(n.endswith("ModuleWrapPolicy") for n in names) and expr.args:
            return _selected_classes(expr.args[0].value, model, depth + 1)
        if names & PARTIAL_QUALIFIED_NAMES and expr.args:
            for arg in expr.args[1:]:
                if arg.keyword is not None and arg.keyword.value in ("lambda_fn", "transformer_layer_cls"):
                    return _selected_classes(arg.value, model, depth + 1)
            return None
        if any(n.endswith(("builtins.set", "builtins.tuple", "builtins.list", "builtins.frozenset")) for n in names):
            if len(expr.args) == 1:
                return _selected_classes(expr.args[0].value, model, depth + 1)
    return None


def _lambda_param(expr: cst.Lambda) -> str | None:
    params = list(expr.params.posonly_params) + list(expr.params.params)
    return params[0].name.value if params else None


def _check_function(function: cst.FunctionDef, model: SemanticModel, depth: int) -> list[cst.BaseExpression] | None:
    params = list(function.params.posonly_params) + list(function.params.params)
    if not params:
        return None
    body = function.body.body if isinstance(function.body, cst.IndentedBlock) else ()
    returns = [
        small.value
        for statement in body
        if isinstance(statement, cst.SimpleStatementLine)
        for small in statement.body
        if isinstance(small, cst.Return) and small.value is not None
    ]
    if len(returns) != 1:
        return None
    return _predicate_classes(returns[0], params[0].name.value, model, depth)


def _predicate_classes(
    expr: cst.BaseExpression, param: str | None, model: SemanticModel, depth: int
) -> list[cst.BaseExpression] | None:
    """Classes ``isinstance(m, X)``, ``type(m) in {...}``, ``m.__class__ is X`` select."""
    if param is None:
        return None
    if isinstance(expr, cst.BooleanOperation):
        left = _predicate_classes(expr.left, param, model, depth)
        right = _predicate_classes(expr.right, param, model, depth)
        if isinstance(expr.operator, cst.Or):
            return None if left is None or right is None else left + right
        return left if left is not None else right  # ``and``: a subset of these classes
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "isinstance":
        if len(expr.args) == 2 and _is_param(expr.args[0].value, param):
            return _selected_classes(expr.args[1].value, model, depth + 1)
        return None
    if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1:
        target = expr.comparisons[0]
        if _is_type_of(expr.left, param) and isinstance(target.operator, (cst.In, cst.Is, cst.Equal)):
            return _selected_classes(target.comparator, model, depth + 1)
    return None


def _is_param(expr: cst.BaseExpression, param: str) -> bool:
    return isinstance(expr, cst.Name) and expr.value == param


def _is_type_of(expr: cst.BaseExpression, param: str) -> bool:
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "type":
        return len(expr.args) == 1 and _is_param(expr.args[0].value, param)
    return isinstance(expr, cst.Attribute) and expr.attr.value == "__class__" and _is_param(expr.value, param)


def wrapper_fn_reentrancy(wrapper_fn: OptionValue, model: SemanticModel) -> Reentrancy:
    """The variant ``apply_activation_checkpointing``'s ``checkpoint_wrapper_fn`` runs:
    torch's ``checkpoint_wrapper`` defaults to ``CheckpointImpl.NO_REENTRANT``; a
    ``partial(checkpoint_wrapper, checkpoint_impl=...)`` says which."""

    if wrapper_fn.is_absent:
        return Reentrancy.DEFAULT_NON_REENTRANT
    node = wrapper_fn.node
    if isinstance(node, cst.Name):  # a variable bound once to the wrapper (or a partial of it)
        values = [b.value for b in model.bindings_of(node) if b.kind is BindingKind.ASSIGNMENT and b.value is not None]
        if len(values) == 1:
            node = values[0]
    if isinstance(node, cst.Call) and model.qualified_names(node.func) & PARTIAL_QUALIFIED_NAMES and node.args:
        inner = api_for(model.qualified_names(node.args[0].value))
        if inner is not None and inner.kind is ApiKind.WRAPPER:
            for arg in node.args[1:]:
                if arg.keyword is not None and arg.keyword.value == "checkpoint_impl":
                    impl = model.qualified_names(arg.value)
                    if any(n.endswith("CheckpointImpl.NO_REENTRANT") for n in impl):
                        return Reentrancy.NON_REENTRANT
                    if any(n.endswith("CheckpointImpl.REENTRANT") for n in impl):
                        return Reentrancy.REENTRANT
                    return Reentrancy.UNKNOWN
            return Reentrancy.DEFAULT_NON_REENTRANT
    if isinstance(node, (cst.Name, cst.Attribute)):
        inner = api_for(model.qualified_names(node))
        if inner is not None and inner.kind is ApiKind.WRAPPER:
            return Reentrancy.DEFAULT_NON_REENTRANT
    return Reentrancy.UNKNOWN

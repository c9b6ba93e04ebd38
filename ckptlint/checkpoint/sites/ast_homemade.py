"""Home-made recompute functions on CPython's ``ast``: the ``torch.autograd.Function``
subclasses of one module that store a callable in ``forward`` and run it again in
``backward`` (and reversible networks' Functions), and the helpers that call their ``apply``,
as the records of :mod:`ckptlint.checkpoint.sites.homemade` (see its docstring for the
pattern). For the module alone (``home_made(model)``) a class whose ``autograd.Function``
base is in another module is not followed there; with a loader of the linted tree (an
:class:`~ckptlint.semantic.ast_analysis.AstModuleLoader`, ``home_made(model, loader)``) it
is, up to three classes, reading the base's methods and the re-running methods of its module.
"""

from __future__ import annotations

import ast
import dataclasses
from functools import partial
from typing import TYPE_CHECKING

from ckptlint.checkpoint.sites.ast_options import AstArg, literal_value, ordered_arguments
from ckptlint.checkpoint.sites.ast_reversible import AstFunction, reversible_shape
from ckptlint.checkpoint.sites.homemade import Helper, HomeMade, Implementation
from ckptlint.facts.apis import AUTOGRAD_FUNCTION_BASES, HOME_MADE
from ckptlint.facts.home_made import known_implementation, names_rng
from ckptlint.semantic.ast_assignments import AstAssigned, assignments, attribute_name, candidate_values
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.ast_walk import FUNCTIONS, class_methods, last_name, own_nodes, positional_parameters
from ckptlint.semantic.bindings import BindingKind

if TYPE_CHECKING:
    from ckptlint.semantic.ast_analysis import AstModuleLoader

__all__ = ["AstHelper", "AstHomeMade", "AstImplementation", "home_made", "implementation_of_apply"]

AstImplementation = Implementation[ast.ClassDef, ast.Call]
AstHelper = Helper[AstFunction, ast.ClassDef, ast.Call]
AstHomeMade = HomeMade[AstFunction, ast.ClassDef, ast.Call]

#: Classes followed up from a subclass to its ``autograd.Function`` base.
_MAX_BASE_HOPS = 3
#: The nodes :func:`ckptlint.semantic.ast_assignments.assignments` reads.
_BINDING_NODES = frozenset(
    {ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For, ast.AsyncFor, ast.comprehension, ast.withitem, ast.Call}
)


def home_made(model: AstModel, loader: AstModuleLoader | None = None) -> AstHomeMade:
    """Home-made implementations and helpers defined in the module of ``model`` (found once,
    kept in the model's memo). With ``loader`` (the linted tree), a class whose
    ``autograd.Function`` base is in a module this one imports is read with that base's
    methods (``homemade.home_made`` with a loader; the base's module is recorded as read)."""
    key = "home_made" if loader is None else "home_made/tree"
    found = model.memo.get(key)
    if found is None:
        found = model.memo[key] = _find(model, loader)
    return found  # type: ignore[return-value]


def _base_value(base: ast.expr) -> ast.expr:
    return base.value if type(base) is ast.Starred else base  # a ``*bases`` base without its star


def _function_base(node: ast.ClassDef, model: AstModel) -> bool:
    return any(model.qualified_names(_base_value(base)) & AUTOGRAD_FUNCTION_BASES for base in node.bases)


def _find(model: AstModel, loader: AstModuleLoader | None) -> AstHomeMade:
    out: AstHomeMade = HomeMade()
    for node, scope in model.scope_of_definition.items():
        if type(node) is not ast.ClassDef:
            continue
        implementation: AstImplementation | None
        if _function_base(node, model):
            implementation = _implementation(node, scope.qualname, model) or _reversible(node, scope.qualname, model)
        else:
            bases = _function_bases(node, model, loader, 0)
            implementation = _reversible(node, scope.qualname, model, bases) if bases else None
        if implementation is not None:
            out.implementations[_qualified(model, scope.qualname)] = implementation
    if out.implementations:
        for node, scope in model.scope_of_definition.items():
            if isinstance(node, FUNCTIONS):
                helper = _helper(node, model, out)
                if helper is not None:
                    out.helpers[_qualified(model, scope.qualname)] = helper
    return out


def _qualified(model: AstModel, qualname: str) -> str:
    return f"{model.module_name}.{qualname}" if model.module_name else qualname


def _parameter_named(value: ast.expr, parameters: list[str], model: AstModel) -> str | None:
    """The parameter among ``parameters`` that ``value`` names, itself or through a local
    name bound to it (``if (fn := run_function): ctx.fn = fn``)."""
    if type(value) is not ast.Name:
        return None
    if value.id in parameters:
        return value.id
    for binding in model.bindings_of(value):
        if binding.kind is not BindingKind.PARAMETER and type(binding.value) is ast.Name:
            if binding.value.id in parameters:
                return binding.value.id
    return None


def _literal_string(expr: ast.expr, model: AstModel) -> str | None:
    value = literal_value(expr, model)
    return value if isinstance(value, str) else None


def _assignments(function: AstFunction, model: AstModel) -> list[AstAssigned]:
    """Every target ``function``'s own code binds."""
    key = partial(_literal_string, model=model)  # setattr(ctx, NAME, fn)
    return [a for node in own_nodes(function) if type(node) in _BINDING_NODES for a in assignments(node, key)]


def _is_owner_attribute(func: ast.expr, owner: str) -> bool:
    return type(func) is ast.Attribute and type(func.value) is ast.Name and func.value.id == owner


def _implementation(node: ast.ClassDef, qualname: str, model: AstModel) -> AstImplementation | None:
    methods = class_methods(node)
    forward, backward = methods.get("forward"), methods.get("backward")
    if forward is None or backward is None:
        return None
    params = positional_parameters(forward)
    if len(params) < 2:
        return None
    ctx_name, rest = params[0], params[1:]
    stored: dict[str, int] = {}
    for assigned in _assignments(forward, model):  # ctx.run_function = run_function, in any form
        attr = attribute_name(assigned, ctx_name)
        for value in (candidate_values(assigned, model.qualified_names) or ()) if attr is not None else ():
            parameter = _parameter_named(value, rest, model)
            if parameter is not None:
                stored[attr] = rest.index(parameter)  # type: ignore[index]
    # Only a callable forward runs itself is re-run by backward.
    parameter_of = {attr: rest[index] for attr, index in stored.items()}
    forward_calls = [n for n in own_nodes(forward) if type(n) is ast.Call]
    run_in_forward = set()
    for call in forward_calls:
        func = call.func
        for attr, parameter in parameter_of.items():
            if type(func) is ast.Name and func.id == parameter:
                run_in_forward.add(attr)
            elif _is_owner_attribute(func, ctx_name) and func.attr == attr:  # type: ignore[attr-defined]
                run_in_forward.add(attr)
    stored = {attr: index for attr, index in stored.items() if attr in run_in_forward}
    if not stored:
        return None
    backward_params = positional_parameters(backward)
    if not backward_params:
        return None
    bctx = backward_params[0]
    aliases: dict[str, str] = {}
    for assigned in _assignments(backward, model):  # run = ctx.run_function, in any form
        if type(assigned.target) is not ast.Name:
            continue
        for value in candidate_values(assigned, model.qualified_names) or ():
            if _is_owner_attribute(value, bctx) and value.attr in stored:  # type: ignore[attr-defined]
                aliases[assigned.target.id] = value.attr  # type: ignore[attr-defined]
    reruns: list[ast.Call] = []
    attribute = None
    backward_calls = [n for n in own_nodes(backward) if type(n) is ast.Call]
    for call in backward_calls:
        func = call.func.value if type(call.func) is ast.NamedExpr else call.func  # `(run := ctx.fn)(*x)`
        if _is_owner_attribute(func, bctx):
            if func.attr in stored:  # type: ignore[attr-defined]
                reruns.append(call)
                attribute = func.attr  # type: ignore[attr-defined]
        elif type(func) is ast.Name and func.id in aliases:
            reruns.append(call)
            attribute = aliases[func.id]
    if not reruns or attribute is None:
        return None
    restores_rng = any(names_rng(last_name(call)) for call in backward_calls)
    custom_bwd = any("custom_bwd" in last_name(d) for d in backward.decorator_list)
    reads_autocast = any("autocast" in last_name(c).lower() for c in forward_calls)
    enters_autocast = any("autocast" in last_name(c).lower() for c in backward_calls)
    restores_autocast = custom_bwd or (reads_autocast and enters_autocast)
    qualified = _qualified(model, qualname)
    implementation: AstImplementation = Implementation(node, qualified, stored[attribute], reruns, restores_rng, restores_autocast)
    rng_restored: tuple[str, ...] = ("cpu", "cuda") if restores_rng else ()
    source = f"{qualified} (home-made autograd.Function of the linted tree)"
    known = known_implementation(qualified)
    if known is not None:  # facts its code does not show (Megatron-DeepSpeed's tracker restore)
        rng_restored, source = known.rng_restored, f"{source}; {known.source}"
    implementation.api = dataclasses.replace(
        HOME_MADE,
        name=f"{node.name}.apply",
        qualified_names=(f"{qualified}.apply",),
        rng_restored=rng_restored,
        restores_autocast=restores_autocast,
        source=source,
    )
    return implementation


def _function_bases(
    node: ast.ClassDef, model: AstModel, loader: AstModuleLoader | None, hops: int
) -> list[tuple[ast.ClassDef, AstModel]]:
    """The classes from ``node`` up to a direct subclass of ``autograd.Function`` (nearest
    first, with their modules): of this module, or, with ``loader``, of a module of the tree
    this one imports them from; empty when no base leads there."""
    if hops >= _MAX_BASE_HOPS:
        return []
    for base in node.bases:
        for qualified in sorted(model.qualified_names(_base_value(base))):
            found = _class_named(qualified, model, loader)
            if found is None:
                continue
            base_node, base_model = found
            if _function_base(base_node, base_model):
                return [(base_node, base_model)]
            above = _function_bases(base_node, base_model, loader, hops + 1)
            if above:
                return [(base_node, base_model), *above]
    return []


def _class_named(qualified: str, model: AstModel, loader: AstModuleLoader | None) -> tuple[ast.ClassDef, AstModel] | None:
    module, _, name = qualified.rpartition(".")
    if module != model.module_name:
        if loader is None or not module or module.split(".")[0] in ("torch", "builtins"):
            return None
        path = loader.file_for_module(module)
        if path is None:
            return None
        analysis = loader.ast_analysis_for_file(path)
        if analysis is None:
            return None
        model = analysis.model
    for binding in model.module_scope.bindings.get(name, ()):
        if binding.kind is BindingKind.CLASS and type(binding.node) is ast.ClassDef:
            return binding.node, model
    return None


def _reversible(
    node: ast.ClassDef, qualname: str, model: AstModel, bases: list[tuple[ast.ClassDef, AstModel]] | None = None
) -> AstImplementation | None:
    """A reversible-network recompute as an implementation whose sites recompute the blocks
    passed to ``apply``."""
    shape = reversible_shape(node, model, bases or ())
    if shape is None:
        return None
    qualified = _qualified(model, qualname)
    implementation: AstImplementation = Implementation(
        node, qualified, shape.function_index, list(shape.reruns), shape.restores_rng, shape.restores_autocast
    )
    implementation.api = dataclasses.replace(
        HOME_MADE,
        name=f"{node.name}.apply",
        qualified_names=(f"{qualified}.apply",),
        positional=tuple(f"input{i}" for i in range(shape.function_index)) + ("function",),
        rng_restored=("cpu", "cuda") if shape.restores_rng else (),
        restores_autocast=shape.restores_autocast,
        rerun_method=shape.method,
        source=f"{qualified} (reversible recompute of the linted tree: backward rebuilds the inputs and re-runs the blocks)",
    )
    return implementation


def implementation_of_apply(call: ast.Call, model: AstModel, found: AstHomeMade) -> AstImplementation | None:
    """The implementation whose ``apply`` ``call`` calls, among ``found`` (same module)."""
    func = call.func
    if not (type(func) is ast.Attribute and func.attr == "apply"):
        return None
    for name in model.qualified_names(func.value):
        implementation = found.implementations.get(name)
        if implementation is not None:
            return implementation
    return None


def _positional(call: ast.Call) -> list[AstArg]:
    """The arguments without a keyword: positional ones, ``*args`` and ``**kwargs``, in
    source order."""
    return [a for a in ordered_arguments(call) if type(a) is not ast.keyword or a.arg is None]


def _helper(function: AstFunction, model: AstModel, found: AstHomeMade) -> AstHelper | None:
    params = positional_parameters(function) + [p.arg for p in function.args.kwonlyargs]
    if not params:
        return None
    for inner in own_nodes(function):
        if type(inner) is not ast.Call:
            continue
        implementation = implementation_of_apply(inner, model, found)
        if implementation is None:
            continue
        positional = _positional(inner)
        if len(positional) <= implementation.function_index:
            continue
        arg = positional[implementation.function_index]
        if type(arg) is not ast.Name or arg.id not in params:  # ``*x`` and ``**x`` are no name
            continue
        bindings = model.bindings_of(arg)
        if not any(b.kind is BindingKind.PARAMETER and b.scope.node is function for b in bindings):
            continue
        scope = model.scope_of_definition.get(function)
        qualified = _qualified(model, scope.qualname if scope else function.name)
        api = dataclasses.replace(
            implementation.api,
            name=function.name,
            qualified_names=(qualified,),
            source=f"{qualified} -> {implementation.qualified}.apply (home-made, linted tree)",
        )
        return Helper(function, qualified, arg.id, params.index(arg.id), implementation, api)
    return None

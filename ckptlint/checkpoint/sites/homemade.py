"""Home-made recompute functions: ``torch.autograd.Function`` subclasses of the linted tree
that store a callable in ``forward`` and run it again in ``backward``, and the helpers that
call their ``apply``.

The pattern (torch.utils.checkpoint's own ``CheckpointFunction`` before 1.11, copied into
diffusion code bases as ``checkpoint(func, inputs, params, flag)``, DeepSpeed, Megatron)::

    class CheckpointFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, run_function, *args):
            ctx.run_function = run_function        # the stored callable, run here
            with torch.no_grad():
                return run_function(*args)
        @staticmethod
        def backward(ctx, *grads):
            with torch.enable_grad():
                out = ctx.run_function(*inputs)    # the re-run (CKP104/CKP105 report here)

An :class:`Implementation` records what the implementation restores around the re-run (read
from its code, by the names it calls: an RNG save/restore, ``fork_rng``, an RNG tracker's
``get_states``/``set_states``/``fork``; autocast state read in ``forward`` and re-entered in
``backward``, or ``custom_bwd``). Calls of ``apply`` and of helpers that pass one of their
parameters as the stored callable are checkpoint sites (see :mod:`ckptlint.checkpoint.sites.sites`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Generic

import libcst as cst

from ckptlint.checkpoint.sites.options import literal_string
from ckptlint.checkpoint.sites.reversible import reversible_shape
from ckptlint.facts.apis import AUTOGRAD_FUNCTION_BASES, HOME_MADE, CheckpointApi
from ckptlint.facts.home_made import known_implementation, names_rng
from ckptlint.semantic.assignments import BINDING_NODES, assignments, attribute_name, candidate_values
from ckptlint.semantic.bindings import Assigned, BindingKind
from ckptlint.semantic.model import SemanticModel
from ckptlint.semantic.syntax import class_methods, last_name, own_nodes, positional_parameters

if TYPE_CHECKING:
    from typing_extensions import TypeVar

    from ckptlint.semantic.analysis import ModuleLoader

    # The records' class, function and call nodes: libcst's unless parametrised (those found
    # on CPython's ``ast`` are ``Implementation[ast.ClassDef, ast.Call]`` and so on, see
    # :mod:`ckptlint.checkpoint.sites.ast_homemade`).
    K = TypeVar("K", default=cst.ClassDef)
    F = TypeVar("F", default=cst.FunctionDef)
    C = TypeVar("C", default=cst.Call)
else:
    from typing import TypeVar

    K = TypeVar("K")
    F = TypeVar("F")
    C = TypeVar("C")

__all__ = ["Helper", "HomeMade", "Implementation", "home_made"]

#: Classes followed up from a subclass to its ``autograd.Function`` base.
_MAX_BASE_HOPS = 3

# Callee names (last part, lower case) that save or restore an RNG state.


@dataclass(eq=False)
class Implementation(Generic[K, C]):
    """One home-made recompute ``autograd.Function``.

    Attributes:
        node: the class; qualified: its qualified name (``pkg.nn.CheckpointFunction``).
        function_index: index, among ``apply``'s arguments, of the stored callable.
        reruns: the calls in ``backward`` that run the stored callable again.
        restores_rng: an RNG state is saved and restored around the re-run.
        restores_autocast: the autocast state of ``forward`` is re-applied (``custom_bwd``,
            or read in ``forward`` and re-entered in ``backward``).
        api: the table row of its sites (``HOME_MADE`` with these facts).
    """

    node: K
    qualified: str
    function_index: int
    reruns: list[C]
    restores_rng: bool
    restores_autocast: bool
    api: CheckpointApi = field(default=HOME_MADE)

    @property
    def rerun_label(self) -> str:
        """What ``backward`` runs again, for messages."""
        method = self.api.rerun_method
        return f"the stored blocks (their `{method}`)" if method else "the stored callable"


@dataclass(eq=False)
class Helper(Generic[F, K, C]):
    """A function that passes its parameter ``parameter`` (position ``index``) to an
    implementation's ``apply`` as the stored callable."""

    node: F
    qualified: str
    parameter: str
    index: int
    implementation: Implementation[K, C]
    api: CheckpointApi = field(default=HOME_MADE)


@dataclass
class HomeMade(Generic[F, K, C]):
    """The implementations and helpers of one module, by qualified name."""

    implementations: dict[str, Implementation[K, C]] = field(default_factory=dict)
    helpers: dict[str, Helper[F, K, C]] = field(default_factory=dict)


def home_made(model: SemanticModel, loader: ModuleLoader | None = None) -> HomeMade:
    """Home-made implementations and helpers defined in the module of ``model`` (found once,
    kept in the model's memo). With ``loader`` (the linted tree), a class whose
    ``autograd.Function`` base is in a module this one imports is read with that base's
    methods."""
    key = "home_made" if loader is None else "home_made/tree"
    found = model.memo.get(key)
    if found is None:
        found = model.memo[key] = _find(model, loader)
    return found  # type: ignore[return-value]


def _find(model: SemanticModel, loader: ModuleLoader | None) -> HomeMade:
    out = HomeMade()
    for node, scope in model.scope_of_definition.items():
        if not isinstance(node, cst.ClassDef):
            continue
        if any(model.qualified_names(base.value) & AUTOGRAD_FUNCTION_BASES for base in node.bases):
            implementation = _implementation(node, scope.qualname, model) or _reversible(node, scope.qualname, model)
        else:
            bases = _function_bases(node, model, loader, 0)
            implementation = _reversible(node, scope.qualname, model, bases) if bases else None
        if implementation is not None:
            out.implementations[_qualified(model, scope.qualname)] = implementation
    if out.implementations:
        for node, scope in model.scope_of_definition.items():
            if isinstance(node, cst.FunctionDef):
                helper = _helper(node, model, out)
                if helper is not None:
                    out.helpers[_qualified(model, scope.qualname)] = helper
    return out


def _qualified(model: SemanticModel, qualname: str) -> str:
    return f"{model.module_name}.{qualname}" if model.module_name else qualname


def _parameter_named(value: cst.BaseExpression, parameters: list[str], model: SemanticModel) -> str | None:
    """The parameter among ``parameters`` that ``value`` names, itself or through a local
    name bound to it (``if (fn := run_function): ctx.fn = fn``)."""
    if not isinstance(value, cst.Name):
        return None
    if value.value in parameters:
        return value.value
    if value not in model.scopes:
        return None
    for binding in model.bindings_of(value):
        if binding.kind is not BindingKind.PARAMETER and isinstance(binding.value, cst.Name):
            if binding.value.value in parameters:
                return binding.value.value
    return None


def _assignments(function: cst.FunctionDef, model: SemanticModel) -> list[Assigned]:
    """Every target ``function``'s own code binds (:func:`ckptlint.semantic.assignments.assignments`)."""
    key = partial(literal_string, model=model)  # setattr(ctx, NAME, fn)
    return [a for node in own_nodes(function) if type(node) in BINDING_NODES for a in assignments(node, key)]


def _implementation(node: cst.ClassDef, qualname: str, model: SemanticModel) -> Implementation | None:
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
        for value in candidate_values(assigned, model.qualified_names) or () if attr is not None else ():
            parameter = _parameter_named(value, rest, model)
            if parameter is not None:
                stored[attr] = rest.index(parameter)  # type: ignore[index]
    # Only a callable forward runs itself is re-run by backward (not, say, a backward_op
    # that forward stores for backward's own use: diffusers' ring attention).
    parameter_of = {attr: rest[index] for attr, index in stored.items()}
    forward_calls = [n for n in own_nodes(forward) if isinstance(n, cst.Call)]
    run_in_forward = set()
    for call in forward_calls:
        func = call.func
        for attr, parameter in parameter_of.items():
            if isinstance(func, cst.Name) and func.value == parameter:
                run_in_forward.add(attr)
            elif (
                isinstance(func, cst.Attribute)
                and isinstance(func.value, cst.Name)
                and func.value.value == ctx_name
                and func.attr.value == attr
            ):
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
        if not isinstance(assigned.target, cst.Name):
            continue
        for value in candidate_values(assigned, model.qualified_names) or ():
            if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == bctx:
                if value.attr.value in stored:
                    aliases[assigned.target.value] = value.attr.value
    reruns: list[cst.Call] = []
    attribute = None
    backward_calls = [n for n in own_nodes(backward) if isinstance(n, cst.Call)]
    for call in backward_calls:
        func = call.func.value if isinstance(call.func, cst.NamedExpr) else call.func  # `(run := ctx.fn)(*x)`
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == bctx:
            if func.attr.value in stored:
                reruns.append(call)
                attribute = func.attr.value
        elif isinstance(func, cst.Name) and func.value in aliases:
            reruns.append(call)
            attribute = aliases[func.value]
    if not reruns or attribute is None:
        return None
    restores_rng = any(names_rng(last_name(call)) for call in backward_calls)
    custom_bwd = any("custom_bwd" in last_name(d.decorator) for d in backward.decorators)
    reads_autocast = any("autocast" in last_name(c).lower() for c in forward_calls)
    enters_autocast = any("autocast" in last_name(c).lower() for c in backward_calls)
    restores_autocast = custom_bwd or (reads_autocast and enters_autocast)
    qualified = _qualified(model, qualname)
    implementation = Implementation(node, qualified, stored[attribute], reruns, restores_rng, restores_autocast)
    rng_restored: tuple[str, ...] = ("cpu", "cuda") if restores_rng else ()
    source = f"{qualified} (home-made autograd.Function of the linted tree)"
    known = known_implementation(qualified)
    if known is not None:  # facts its code does not show (Megatron-DeepSpeed's tracker restore)
        rng_restored, source = known.rng_restored, f"{source}; {known.source}"
    implementation.api = dataclasses.replace(
        HOME_MADE,
        name=f"{node.name.value}.apply",
        qualified_names=(f"{qualified}.apply",),
        rng_restored=rng_restored,
        restores_autocast=restores_autocast,
        source=source,
    )
    return implementation


def _function_bases(
    node: cst.ClassDef, model: SemanticModel, loader: ModuleLoader | None, hops: int
) -> list[tuple[cst.ClassDef, cst.Module]]:
    """The classes from ``node`` up to a direct subclass of ``autograd.Function`` (nearest
    first, with their modules): bases of this module or of a module of the tree that this one
    imports them from (``from rev import RevBackProp``); empty when no base leads there."""
    if hops >= _MAX_BASE_HOPS:
        return []
    for base in node.bases:
        for qualified in sorted(model.qualified_names(base.value)):
            found = _class_named(qualified, model, loader)
            if found is None:
                continue
            base_node, base_model = found
            if any(base_model.qualified_names(b.value) & AUTOGRAD_FUNCTION_BASES for b in base_node.bases):
                return [(base_node, base_model.module)]
            above = _function_bases(base_node, base_model, loader, hops + 1)
            if above:
                return [(base_node, base_model.module), *above]
    return []


def _class_named(
    qualified: str, model: SemanticModel, loader: ModuleLoader | None
) -> tuple[cst.ClassDef, SemanticModel] | None:
    module, _, name = qualified.rpartition(".")
    if module != model.module_name:
        if loader is None or not module or module.split(".")[0] in ("torch", "builtins"):
            return None
        if loader.file_for_module(module) is None:
            return None
        analysis = loader.analysis_for_names(module, [name])
        if analysis is None:
            return None
        model = analysis.model
    for binding in model.module_scope.bindings.get(name, ()):
        if binding.kind is BindingKind.CLASS and isinstance(binding.node, cst.ClassDef):
            return binding.node, model
    return None


def _reversible(
    node: cst.ClassDef, qualname: str, model: SemanticModel, bases: list[tuple[cst.ClassDef, cst.Module]] | None = None
) -> Implementation | None:
    """A reversible-network recompute (:mod:`ckptlint.checkpoint.sites.reversible`) as an
    implementation whose sites recompute the blocks passed to ``apply``."""
    shape = reversible_shape(node, model.module, bases or ())
    if shape is None:
        return None
    qualified = _qualified(model, qualname)
    implementation = Implementation(
        node, qualified, shape.function_index, list(shape.reruns), shape.restores_rng, shape.restores_autocast
    )
    implementation.api = dataclasses.replace(
        HOME_MADE,
        name=f"{node.name.value}.apply",
        qualified_names=(f"{qualified}.apply",),
        positional=tuple(f"input{i}" for i in range(shape.function_index)) + ("function",),
        rng_restored=("cpu", "cuda") if shape.restores_rng else (),
        restores_autocast=shape.restores_autocast,
        rerun_method=shape.method,
        source=f"{qualified} (reversible recompute of the linted tree: backward rebuilds the inputs and re-runs the blocks)",
    )
    return implementation


def implementation_of_apply(call: cst.Call, model: SemanticModel, found: HomeMade) -> Implementation | None:
    """The implementation whose ``apply`` ``call`` calls, among ``found`` (same module)."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "apply"):
        return None
    for name in model.qualified_names(func.value):
        implementation = found.implementations.get(name)
        if implementation is not None:
            return implementation
    return None


def _helper(function: cst.FunctionDef, model: SemanticModel, found: HomeMade) -> Helper | None:
    params = positional_parameters(function) + [p.name.value for p in function.params.kwonly_params]
    if not params:
        return None
    for inner in own_nodes(function):
        if not isinstance(inner, cst.Call):
            continue
        implementation = implementation_of_apply(inner, model, found)
        if implementation is None:
            continue
        positional = [a for a in inner.args if a.keyword is None]
        if len(positional) <= implementation.function_index:
            continue
        arg = positional[implementation.function_index]
        if arg.star or not isinstance(arg.value, cst.Name) or arg.value.value not in params:
            continue
        bindings = model.bindings_of(arg.value)
        if not any(b.kind is BindingKind.PARAMETER and b.scope.node is function for b in bindings):
            continue
        scope = model.scope_of_definition.get(function)
        qualified = _qualified(model, scope.qualname if scope else function.name.value)
        api = dataclasses.replace(
            implementation.api,
            name=function.name.value,
            qualified_names=(qualified,),
            source=f"{qualified} -> {implementation.qualified}.apply (home-made, linted tree)",
        )
        return Helper(function, qualified, arg.value.value, params.index(arg.value.value), implementation, api)
    return None

"""Helpers that take the checkpointed callable as an argument, and their callers as sites.

A function or method of the linted tree whose parameter ``P`` is passed to a checkpoint API
as the callable (``def ckpt(self, func, *args, **kwargs): return checkpoint(func, *args,
use_reentrant=False, **kwargs)``, ``def run(module, *args): return checkpoint(module,
*args)``, a ``(model, use_checkpointing, use_offload, *args, **kwargs)`` function that picks
one of several checkpoint calls by its flags, ``checkpoint(create_custom_forward(model),
...)``) is summarised once per module (:func:`helper_summaries`: "function F passes its
parameter P to checkpoint API X with options O", a :class:`HelperSummary`). Each call of it
(:func:`build_helper_site`) is a site whose callable is the argument bound to ``P`` and
whose options are those the helper fixes, or, where the helper passes a parameter of its own
or forwards its ``**kwargs``, those the caller gives (``CheckpointSite.caller_options``).
A flag the caller passes as a literal rules out the checkpoint calls it does not take.

A helper that calls a helper is summarised too (its call is a ``HELPER_CALL`` site of its
own module), up to :data:`MAX_LEVELS` levels, so recursion between helpers ends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.checkpoint.sites.options import (
    ABSENT,
    NOT_LITERAL,
    UNKNOWN,
    CallArguments,
    OptionState,
    OptionValue,
    literal_value,
    value_of,
)
from ckptlint.checkpoint.sites.site import CheckpointSite, HelperCall, HelperSummary, Reentrancy, SiteForm
from ckptlint.checkpoint.sites.site_builders import library_reentrancy, reentrancy_from
from ckptlint.facts.apis import ApiKind
from ckptlint.semantic.bindings import BindingKind, ScopeKind
from ckptlint.semantic.model import SemanticModel
from ckptlint.semantic.syntax import last_name

if TYPE_CHECKING:
    from ckptlint.semantic.analysis import ModuleAnalysis

__all__ = [
    "HELPED_KINDS",
    "MAX_LEVELS",
    "build_helper_site",
    "inputs_bound",
    "literal_flags",
    "parameter_arguments",
    "passed_parameters",
    "summarise_helpers",
]

#: Helper levels followed: a helper (1), a helper calling it (2), one calling that (3).
MAX_LEVELS = 3

#: The API kinds whose callable a helper may pass on: torch's function form and other
#: libraries' functions (Megatron's ``checkpoint(forward_func, distribute, *args)``).
HELPED_KINDS = frozenset({ApiKind.FUNCTION, ApiKind.LIBRARY_FUNCTION})

_DECORATORS_OF_PLAIN_FUNCTIONS = frozenset({"staticmethod"})


# ---------------------------------------------------------------------------- summaries
def summarise_helpers(
    sites: list[CheckpointSite], analysis: ModuleAnalysis, level: int = 1
) -> dict[str, HelperSummary]:
    """The helpers among the functions around ``sites`` (sites of ``analysis``'s module),
    by qualified name in the module (``run``, ``Net.ckpt``)."""
    model = analysis.model
    grouped: dict[cst.FunctionDef, list[tuple[CheckpointSite, str]]] = {}
    for site in sites:
        if site.function is None or site.form in (SiteForm.PARTIAL, SiteForm.BOUND_CALL):
            continue
        if site.api.kind not in HELPED_KINDS:
            continue
        function = model.enclosing(site.call, cst.FunctionDef, cst.Lambda, cst.ClassDef)
        if not isinstance(function, cst.FunctionDef):
            continue
        parameter = _parameter_in(site.function, function, model)
        if parameter is not None:
            grouped.setdefault(function, []).append((site, parameter))
    found: dict[str, HelperSummary] = {}
    for function, entries in grouped.items():
        summary = _summary(function, entries, analysis, level)
        if summary is not None:
            found[summary.qualname] = summary
    return found


def _summary(
    function: cst.FunctionDef, entries: list[tuple[CheckpointSite, str]], analysis: ModuleAnalysis, level: int
) -> HelperSummary | None:
    model = analysis.model
    scope = model.scope_of_definition.get(function)
    outer = model.scope_of(function)
    if scope is None or outer.kind not in (ScopeKind.MODULE, ScopeKind.CLASS):
        return None  # a nested def: its callers are in the same function, and rare
    if outer.kind is ScopeKind.CLASS and (outer.parent is None or outer.parent.kind is not ScopeKind.MODULE):
        return None
    decorators = {last_name(d.decorator) for d in function.decorators}
    method = outer.kind is ScopeKind.CLASS and not decorators & _DECORATORS_OF_PLAIN_FUNCTIONS
    params = [p.name.value for p in list(function.params.posonly_params) + list(function.params.params)]
    if method:
        if not params:
            return None
        params = params[1:]
    parameter = entries[0][1]
    if any(entry[1] != parameter for entry in entries):
        entries = [entry for entry in entries if entry[1] == parameter]
    star = function.params.star_arg
    var_positional = star.name.value if isinstance(star, cst.Param) else None
    var_keyword = function.params.star_kwarg.name.value if function.params.star_kwarg is not None else None
    keyword_only = tuple(p.name.value for p in function.params.kwonly_params)
    defaults = {
        p.name.value: p.default
        for p in list(function.params.posonly_params) + list(function.params.params) + list(function.params.kwonly_params)
        if p.default is not None
    }
    named = set(params) | set(keyword_only)
    calls = tuple(
        HelperCall(
            site=site,
            guards=_guards(site.call, function, named, model),
            plans=_plans(site, function, named, var_keyword, model),
            inputs=_input_plan(site, function, named, var_positional, model),
        )
        for site, _ in entries
    )
    forwarded = {id(arg.value) for site, _ in entries for arg in site.arguments.double_starred}
    elsewhere = var_keyword is not None and any(
        name.value == var_keyword and id(name) not in forwarded and _is_parameter(name, function, model)
        for name in _names(function.body)
    )
    return HelperSummary(
        node=function,
        qualname=scope.qualname,
        module=model.module_name,
        analysis=analysis,
        parameter=parameter,
        method=method,
        params=tuple(params),
        keyword_only=keyword_only,
        defaults=defaults,
        var_positional=var_positional,
        var_keyword=var_keyword,
        calls=calls,
        level=level,
        keywords_elsewhere=elsewhere,
    )


def _is_parameter(name: cst.Name, function: cst.FunctionDef, model: SemanticModel) -> bool:
    return any(b.kind is BindingKind.PARAMETER and b.scope.node is function for b in model.bindings_of(name))


def _names(expr: cst.CSTNode) -> list[cst.Name]:
    """The ``Name`` nodes read in ``expr`` (not attribute names or keywords)."""
    out: list[cst.Name] = []
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            out.append(node)
            continue
        if isinstance(node, cst.Attribute):
            stack.append(node.value)
            continue
        if isinstance(node, cst.Arg):
            stack.append(node.value)
            continue
        stack.extend(node.children)
    return out


def _parameter_in(expr: cst.BaseExpression, function: cst.FunctionDef, model: SemanticModel) -> str | None:
    """The parameter of ``function`` (not ``self``/``cls``) that the callable expression
    ``expr`` is or is built from: ``func``, ``block.forward``, a factory or ``partial`` of it
    (``create_custom_forward(model)``, ``partial(fn, **kw)``: the call's first argument), a
    lambda that calls it (``lambda *a: module(*a)``); ``None`` otherwise (a parameter that is
    only an argument bound to another callable, ``partial(self.mlp, mask=mask)``, is not it)."""
    params = list(function.params.posonly_params) + list(function.params.params) + list(function.params.kwonly_params)
    first = params[0].name.value if params else None
    method_receiver = first if model.scope_of(function).kind is ScopeKind.CLASS else None
    node: cst.BaseExpression = expr
    for _ in range(8):
        if isinstance(node, cst.Attribute):
            node = node.value
        elif isinstance(node, cst.Lambda):
            if not isinstance(node.body, cst.Call):
                return None
            node = node.body.func
        elif isinstance(node, cst.Call):
            positional = [a for a in node.args if a.keyword is None and not a.star]
            if not positional:
                return None
            node = positional[0].value
        else:
            break
    if not isinstance(node, cst.Name) or node.value == method_receiver:
        return None
    return node.value if _is_parameter(node, function, model) else None


def _guards(call: cst.Call, function: cst.FunctionDef, named: set[str], model: SemanticModel) -> tuple[tuple[str, bool], ...]:
    """``(parameter, truth)`` of the ``if`` tests around ``call`` that are a parameter of the
    helper or its negation (``elif`` chains included)."""
    guards: list[tuple[str, bool]] = []
    child: cst.CSTNode = call
    for ancestor in model.ancestors(call):
        if ancestor is function:
            break
        if isinstance(ancestor, cst.IfExp):  # checkpoint(layer, *args) if flag else layer(*args)
            test = _flag(ancestor.test, named)
            if test is not None and child is ancestor.body:
                guards.append(test)
            elif test is not None and child is ancestor.orelse and not isinstance(ancestor.test, cst.BooleanOperation):
                guards.append((test[0], not test[1]))
        if isinstance(ancestor, cst.If):
            test = _flag(ancestor.test, named)
            if test is not None:
                name, truth = test
                conjunction = isinstance(ancestor.test, cst.BooleanOperation)
                if child is ancestor.body:
                    guards.append((name, truth))
                elif child is ancestor.orelse and not conjunction:
                    guards.append((name, not truth))
        child = ancestor
    return tuple(guards)


def _flag(test: cst.BaseExpression, named: set[str]) -> tuple[str, bool] | None:
    if isinstance(test, cst.Name) and test.value in named:
        return test.value, True
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        # `if use_gc and has_deepspeed:` runs only when use_gc is true
        left = _flag(test.left, named)
        return left if left is not None and left[1] else None
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _flag(test.expression, named)
        return (inner[0], not inner[1]) if inner is not None else None
    return None


def _forwards(site: CheckpointSite, var_keyword: str | None, function: cst.FunctionDef, model: SemanticModel) -> bool:
    """Whether the call passes the helper's ``**`` parameter on, and no other ``**``."""
    splats = site.arguments.double_starred
    if var_keyword is None or not splats:
        return False
    return all(
        isinstance(arg.value, cst.Name) and arg.value.value == var_keyword and _is_parameter(arg.value, function, model)
        for arg in splats
    )


def _plans(
    site: CheckpointSite, function: cst.FunctionDef, named: set[str], var_keyword: str | None, model: SemanticModel
) -> dict[str, tuple[str, ...]]:
    forwards = _forwards(site, var_keyword, function, model)
    plans: dict[str, tuple[str, ...]] = {}
    scope = model.scope_of_definition.get(function)
    for name, value in site.options.items():
        node = value.node
        if (
            value.state in (OptionState.EXPRESSION, OptionState.LITERAL)
            and isinstance(node, cst.Name)
            and node.value in named
            and _is_parameter(node, function, model)
        ):
            rebound = scope is not None and any(
                b.kind is not BindingKind.PARAMETER for b in scope.bindings.get(node.value, ())
            )
            # timm: `if use_reentrant is None: use_reentrant = use_reentrant_ckpt()` decides it
            plans[name] = ("fixed",) if rebound else ("parameter", node.value)
        elif forwards and (value.is_unknown or value.is_absent):
            plans[name] = ("keywords",)
        else:
            plans[name] = ("fixed",)
    return plans


def _input_plan(
    site: CheckpointSite, function: cst.FunctionDef, named: set[str], var_positional: str | None, model: SemanticModel
) -> tuple[tuple[str, ...], ...] | None:
    plan: list[tuple[str, ...]] = []
    for arg in site.inputs:
        value = arg.value
        if not isinstance(value, cst.Name) or not _is_parameter(value, function, model):
            return None
        if arg.star == "*" and value.value == var_positional:
            plan.append(("rest",))
        elif arg.star == "" and value.value in named:
            plan.append(("parameter", value.value))
        else:
            return None
    return tuple(plan)


# ---------------------------------------------------------------------------- callers
class _Bound:
    """The arguments of one call of a helper, bound to its parameters."""

    def __init__(self, summary: HelperSummary, call: cst.Call) -> None:
        self.by_name: dict[str, cst.Arg] = {}
        self.rest: list[cst.Arg] = []  # positional arguments that go to *args
        self.extra_keywords: list[cst.Arg] = []  # keywords that go to **kwargs
        self.open = False  # a * or ** argument: what it binds is not known
        params = list(summary.params)
        index = 0
        for arg in call.args:
            if arg.star == "*":
                self.open = True  # nothing after it binds by position
                continue
            if arg.star == "**":
                self.open = True
                continue
            if arg.keyword is not None:
                name = arg.keyword.value
                if name in params or name in summary.keyword_only:
                    self.by_name[name] = arg
                else:
                    self.extra_keywords.append(arg)
                continue
            if self.open:
                continue
            if index < len(params):
                self.by_name[params[index]] = arg
            else:
                self.rest.append(arg)
            index += 1

    def literal(self, name: str, summary: HelperSummary, model: SemanticModel) -> object:
        arg = self.by_name.get(name)
        if arg is not None:
            return literal_value(arg.value, model)
        if self.open:
            return NOT_LITERAL
        default = summary.defaults.get(name)
        return literal_value(default, summary.analysis.model) if default is not None else NOT_LITERAL


def build_helper_site(summary: HelperSummary, call: cst.Call, model: SemanticModel) -> CheckpointSite | None:
    """The site of ``call`` (a call of the helper ``summary`` in ``model``'s module), or
    ``None`` when the literal flags it passes rule out every checkpoint call of the helper."""
    bound = _Bound(summary, call)
    alive = tuple(c for c in summary.calls if not _ruled_out(c, bound, summary, model))
    if not alive:
        return None
    function_arg = bound.by_name.get(summary.parameter)
    arguments = CallArguments.of(call)
    options: dict[str, OptionValue] = {}
    decided: set[str] = set()
    names = {name for c in alive for name in c.plans}
    for name in sorted(names):
        values = []
        for alternative in alive:
            value, by_caller = _option(alternative, name, bound, arguments, summary, model)
            values.append(value)
            if by_caller:
                decided.add(name)
        first = values[0]
        same = all(v.state is first.state and v.value == first.value and type(v.value) is type(first.value) for v in values)
        options[name] = first if same else UNKNOWN
    api = alive[0].site.api
    use_reentrant = options.get("use_reentrant", ABSENT)
    if "use_reentrant" in decided:
        if api.kind is ApiKind.FUNCTION:
            reentrancy = reentrancy_from(use_reentrant, api.reentrant_when_omitted)
        else:
            reentrancy = library_reentrancy(api, use_reentrant)
    else:
        variants = {c.site.reentrancy for c in alive}
        reentrancy = variants.pop() if len(variants) == 1 else Reentrancy.UNKNOWN
    forwards = any(plan == ("keywords",) for c in alive for plan in c.plans.values())
    keywords = tuple(
        arg for arg in bound.extra_keywords if forwards and arg.keyword is not None and arg.keyword.value not in api.options
    )
    hidden = bound.open and (forwards or any(c.site.hidden_arguments for c in alive))
    return CheckpointSite(
        api=api,
        form=SiteForm.HELPER_CALL,
        call=call,
        arguments=arguments,
        function=function_arg.value if function_arg is not None else None,
        inputs=_inputs(alive, bound),
        function_keywords=keywords,
        options=options,
        reentrancy=reentrancy,
        hidden_arguments=hidden or any(c.site.hidden_arguments and not forwards for c in alive),
        scope=model.scope_of(call),
        helper=summary,
        alternatives=alive,
        caller_options=frozenset(decided),
    )


def _ruled_out(alternative: HelperCall, bound: _Bound, summary: HelperSummary, model: SemanticModel) -> bool:
    for name, truth in alternative.guards:
        value = bound.literal(name, summary, model)
        if value is not NOT_LITERAL and bool(value) != truth:
            return True
    return False


def _option(
    alternative: HelperCall,
    name: str,
    bound: _Bound,
    arguments: CallArguments,
    summary: HelperSummary,
    model: SemanticModel,
) -> tuple[OptionValue, bool]:
    """The value of option ``name`` at this call through ``alternative``, and whether the
    caller decides it."""
    plan = alternative.plans.get(name, ("fixed",))
    inner = alternative.site.options.get(name, ABSENT)
    if plan[0] == "parameter":
        arg = bound.by_name.get(plan[1])
        if arg is not None:
            return value_of(arg.value, model, arg, inner.origin), True
        if bound.open:
            return UNKNOWN, True
        default = summary.defaults.get(plan[1])
        if default is None:
            return UNKNOWN, True
        value = literal_value(default, summary.analysis.model)
        if value is NOT_LITERAL:
            return OptionValue(OptionState.EXPRESSION), True
        return OptionValue(OptionState.LITERAL, value), True
    if plan[0] == "keywords":
        for arg in bound.extra_keywords:
            if arg.keyword is not None and arg.keyword.value == name:
                return value_of(arg.value, model, arg, inner.origin), True
        if arguments.double_starred:
            return arguments.option(name, model), True
        return ABSENT, True
    # fixed by the helper: the value without the helper's nodes (they are another call's)
    return OptionValue(inner.state, inner.value, origin=inner.origin), False


def _inputs(alive: tuple[HelperCall, ...], bound: _Bound) -> tuple[cst.Arg, ...]:
    """The caller's arguments that reach the checkpointed function, when every call the
    helper may make passes its own parameters / ``*args`` on and the call binds them."""
    plans = {c.inputs for c in alive}
    if len(plans) != 1 or bound.open:
        return ()
    plan = plans.pop()
    if plan is None:
        return ()
    out: list[cst.Arg] = []
    for step in plan:
        if step[0] == "rest":
            out += bound.rest
        else:
            arg = bound.by_name.get(step[1])
            if arg is None:
                return ()
            out.append(arg)
    return tuple(out)


def literal_flags(site: CheckpointSite, model: SemanticModel) -> frozenset[str]:
    """The flag parameters of the helper that ``site`` (a ``HELPER_CALL`` in ``model``'s
    module) calls which the call passes a literal for, or leaves at a literal default: the
    tests ``if flag:`` of those are decided by the call (empty for other sites)."""
    summary = site.helper
    if summary is None:
        return frozenset()
    bound = _Bound(summary, site.call)
    names = {name for alternative in site.alternatives for name, _ in alternative.guards}
    return frozenset(name for name in names if bound.literal(name, summary, model) is not NOT_LITERAL)


def parameter_arguments(site: CheckpointSite, model: SemanticModel) -> dict[str, cst.BaseExpression | None]:
    """The parameters of the helper that ``site`` (a ``HELPER_CALL`` in ``model``'s module)
    calls whose value the call decides: each maps to the expression the call passes for it when
    that is no literal (``use_cp=self.with_cp``), or to ``None`` when the value is a literal
    (passed or the default) or cannot be known (a ``*`` or ``**`` argument may pass it). A
    parameter left at a default that is no literal is not listed."""
    summary = site.helper
    if summary is None:
        return {}
    bound = _Bound(summary, site.call)
    found: dict[str, cst.BaseExpression | None] = {}
    for name in (*summary.params, *summary.keyword_only):
        arg = bound.by_name.get(name)
        if arg is not None:
            found[name] = None if literal_value(arg.value, model) is not NOT_LITERAL else arg.value
        elif bound.open or bound.literal(name, summary, model) is not NOT_LITERAL:
            found[name] = None
    return found


def passed_parameters(site: CheckpointSite) -> frozenset[str]:
    """The parameters of the helper ``site`` calls that the call may pass (by name, by position,
    or all of them after a ``*``/``**`` argument): their defaults say nothing at this call."""
    summary = site.helper
    if summary is None:
        return frozenset()
    bound = _Bound(summary, site.call)
    return frozenset((*summary.params, *summary.keyword_only)) if bound.open else frozenset(bound.by_name)


def inputs_bound(site: CheckpointSite) -> bool:
    """Whether ``site.inputs`` of a helper call are all the inputs the checkpointed function
    gets (so the region binds them to its parameters)."""
    if site.helper is None:
        return True
    plans = {c.inputs for c in site.alternatives}
    if len(plans) != 1:
        return False
    plan = plans.pop()
    if plan is None:
        return False
    return not any(a.star for a in site.call.args) and (bool(site.inputs) or not plan)

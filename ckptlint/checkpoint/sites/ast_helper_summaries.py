"""Helpers of one module on CPython's ``ast``: the functions and methods that pass one of
their parameters to a checkpoint API as the callable, summarised as
:class:`~ckptlint.checkpoint.sites.site.HelperSummary` records (the parameter, guards, plans
and input plans of each checkpoint call; see :mod:`ckptlint.checkpoint.sites.helper_sites`).
Used by :mod:`ckptlint.checkpoint.sites.ast_helper_sites`, which finds the calls of these
helpers.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ckptlint.checkpoint.sites.ast_options import AstArg
from ckptlint.checkpoint.sites.ast_reversible import AstFunction
from ckptlint.checkpoint.sites.ast_site_builders import AstSite
from ckptlint.checkpoint.sites.helper_sites import HELPED_KINDS
from ckptlint.checkpoint.sites.options import OptionState
from ckptlint.checkpoint.sites.site import HelperCall, HelperSummary, SiteForm
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.ast_walk import FUNCTIONS, last_name

if TYPE_CHECKING:
    from ckptlint.semantic.ast_analysis import AstAnalysis, AstModuleLoader
from ckptlint.semantic.bindings import BindingKind, ScopeKind

__all__ = ["AstHelperCall", "AstHelperSummary", "summarise_helpers"]

AstHelperCall = HelperCall[AstSite]
AstHelperSummary = HelperSummary[AstFunction, ast.expr, AstModel, AstSite]

_DECORATORS_OF_PLAIN_FUNCTIONS = frozenset({"staticmethod"})


def helper_analysis(helper: AstHelperSummary, near: AstAnalysis, loader: AstModuleLoader | None = None) -> AstAnalysis:
    """The analysis of the module ``helper`` is written in (a summary holds its module's
    model, not its analysis): ``near`` when it is that module, else the loader's
    analysis of it (``loader``, default ``near``'s), else one made around the model (its text
    and tree, the module's name standing for its path)."""
    model = helper.analysis
    if near.model is model:
        return near
    loader = loader if loader is not None else near.project
    if loader is not None:
        found = loader.ast_analysis_for_module(helper.module)
        if found is not None and found.__dict__.get("model") is model:
            return found
    from ckptlint.semantic.ast_analysis import AstAnalysis
    from ckptlint.text.source import SourceFile

    made = AstAnalysis(SourceFile(helper.module, model.text or ""), model.module, helper.module)
    made.__dict__["model"] = model
    made.project = loader
    return made


def summarise_helpers(sites: list[AstSite], model: AstModel, level: int = 1) -> dict[str, AstHelperSummary]:
    """The helpers among the functions around ``sites`` (sites of ``model``'s module), by
    qualified name in the module (see :mod:`ckptlint.checkpoint.sites.helper_sites`)."""
    grouped: dict[AstFunction, list[tuple[AstSite, str]]] = {}
    for site in sites:
        if site.function is None or site.form in (SiteForm.PARTIAL, SiteForm.BOUND_CALL):
            continue
        if site.api.kind not in HELPED_KINDS:
            continue
        function = model.enclosing(site.call, *FUNCTIONS, ast.Lambda, ast.ClassDef)
        if not isinstance(function, FUNCTIONS):
            continue
        parameter = _parameter_in(site.function, function, model)
        if parameter is not None:
            grouped.setdefault(function, []).append((site, parameter))
    found: dict[str, AstHelperSummary] = {}
    for function, entries in grouped.items():
        summary = _summary(function, entries, model, level)
        if summary is not None:
            found[summary.qualname] = summary
    return found


def _summary(function: AstFunction, entries: list[tuple[AstSite, str]], model: AstModel, level: int) -> AstHelperSummary | None:
    scope = model.scope_of_definition.get(function)
    outer = model.scope_of(function)
    if scope is None or outer.kind not in (ScopeKind.MODULE, ScopeKind.CLASS):
        return None  # a nested def: its callers are in the same function, and rare
    if outer.kind is ScopeKind.CLASS and (outer.parent is None or outer.parent.kind is not ScopeKind.MODULE):
        return None
    args = function.args
    decorators = {last_name(d) for d in function.decorator_list}
    method = outer.kind is ScopeKind.CLASS and not decorators & _DECORATORS_OF_PLAIN_FUNCTIONS
    params = [p.arg for p in (*args.posonlyargs, *args.args)]
    if method:
        if not params:
            return None
        params = params[1:]
    parameter = entries[0][1]
    if any(entry[1] != parameter for entry in entries):
        entries = [entry for entry in entries if entry[1] == parameter]
    var_positional = args.vararg.arg if args.vararg is not None else None
    var_keyword = args.kwarg.arg if args.kwarg is not None else None
    keyword_only = tuple(p.arg for p in args.kwonlyargs)
    positional = [*args.posonlyargs, *args.args]
    defaults: dict[str, ast.expr] = {}
    for param, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True):
        defaults[param.arg] = default
    for param, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if kw_default is not None:
            defaults[param.arg] = kw_default
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
        node.id == var_keyword and id(node) not in forwarded and _is_parameter(node, function, model)
        for statement in function.body
        for node in ast.walk(statement)
        if isinstance(node, ast.Name)
    )
    return HelperSummary(
        node=function,
        qualname=scope.qualname,
        module=model.module_name,
        analysis=model,
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


def _is_parameter(name: ast.Name, function: AstFunction, model: AstModel) -> bool:
    return any(b.kind is BindingKind.PARAMETER and b.scope.node is function for b in model.bindings_of(name))


def _parameter_in(expr: ast.expr, function: AstFunction, model: AstModel) -> str | None:
    """The parameter of ``function`` (not ``self``/``cls``) that the callable expression
    ``expr`` is or is built from (see ``helper_sites._parameter_in``): ``func``,
    ``block.forward``, the first positional argument of a call (a factory, ``partial``), the
    callee of a lambda's call; ``None`` otherwise."""
    args = function.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    first = params[0].arg if params else None
    method_receiver = first if model.scope_of(function).kind is ScopeKind.CLASS else None
    node: ast.expr = expr
    for _ in range(8):
        if isinstance(node, ast.Attribute):
            node = node.value
        elif isinstance(node, ast.Lambda):
            if not isinstance(node.body, ast.Call):
                return None
            node = node.body.func
        elif isinstance(node, ast.Call):
            positional = [a for a in node.args if not isinstance(a, ast.Starred)]
            if not positional:
                return None
            node = positional[0]
        else:
            break
    if not isinstance(node, ast.Name) or node.id == method_receiver:
        return None
    return node.id if _is_parameter(node, function, model) else None


def _in(child: ast.AST, nodes: list[ast.stmt]) -> bool:
    return any(node is child for node in nodes)


def _guards(call: ast.Call, function: AstFunction, named: set[str], model: AstModel) -> tuple[tuple[str, bool], ...]:
    """``(parameter, truth)`` of the ``if`` tests around ``call`` that are a parameter of the
    helper or its negation (``elif`` chains included; see ``helper_sites._guards``)."""
    guards: list[tuple[str, bool]] = []
    child: ast.AST = call
    for ancestor in model.ancestors(call):
        if ancestor is function:
            break
        if isinstance(ancestor, ast.IfExp):  # checkpoint(layer, *args) if flag else layer(*args)
            test = _flag(ancestor.test, named)
            if test is not None and child is ancestor.body:
                guards.append(test)
            elif test is not None and child is ancestor.orelse and not isinstance(ancestor.test, ast.BoolOp):
                guards.append((test[0], not test[1]))
        if isinstance(ancestor, ast.If):
            test = _flag(ancestor.test, named)
            if test is not None:
                name, truth = test
                conjunction = isinstance(ancestor.test, ast.BoolOp)
                if _in(child, ancestor.body):
                    guards.append((name, truth))
                elif _in(child, ancestor.orelse) and not conjunction:
                    guards.append((name, not truth))
        child = ancestor
    return tuple(guards)


def _flag(test: ast.expr, named: set[str]) -> tuple[str, bool] | None:
    if isinstance(test, ast.Name) and test.id in named:
        return test.id, True
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        # `if use_gc and has_deepspeed:` runs only when use_gc is true
        left = _flag(test.values[0], named)
        return left if left is not None and left[1] else None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _flag(test.operand, named)
        return (inner[0], not inner[1]) if inner is not None else None
    return None


def _forwards(site: AstSite, var_keyword: str | None, function: AstFunction, model: AstModel) -> bool:
    """Whether the call passes the helper's ``**`` parameter on, and no other ``**``."""
    splats = site.arguments.double_starred
    if var_keyword is None or not splats:
        return False
    return all(
        isinstance(arg.value, ast.Name) and arg.value.id == var_keyword and _is_parameter(arg.value, function, model)
        for arg in splats
    )


def _plans(
    site: AstSite, function: AstFunction, named: set[str], var_keyword: str | None, model: AstModel
) -> dict[str, tuple[str, ...]]:
    """Where each option of the helper's call comes from (see ``HelperCall.plans``)."""
    forwards = _forwards(site, var_keyword, function, model)
    plans: dict[str, tuple[str, ...]] = {}
    scope = model.scope_of_definition.get(function)
    for name, value in site.options.items():
        node = value.node
        if (
            value.state in (OptionState.EXPRESSION, OptionState.LITERAL)
            and isinstance(node, ast.Name)
            and node.id in named
            and _is_parameter(node, function, model)
        ):
            rebound = scope is not None and any(b.kind is not BindingKind.PARAMETER for b in scope.bindings.get(node.id, ()))
            plans[name] = ("fixed",) if rebound else ("parameter", node.id)
        elif forwards and (value.is_unknown or value.is_absent):
            plans[name] = ("keywords",)
        else:
            plans[name] = ("fixed",)
    return plans


def _star_and_value(arg: AstArg) -> tuple[str, ast.expr]:
    """The star (``""``, ``"*"``, ``"**"``) and the value of an ``ast`` call argument."""
    if isinstance(arg, ast.Starred):
        return "*", arg.value
    if isinstance(arg, ast.keyword):
        return ("**" if arg.arg is None else ""), arg.value
    return "", arg


def _input_plan(
    site: AstSite, function: AstFunction, named: set[str], var_positional: str | None, model: AstModel
) -> tuple[tuple[str, ...], ...] | None:
    plan: list[tuple[str, ...]] = []
    for arg in site.inputs:
        star, value = _star_and_value(arg)
        if not isinstance(value, ast.Name) or not _is_parameter(value, function, model):
            return None
        if star == "*" and value.id == var_positional:
            plan.append(("rest",))
        elif star == "" and value.id in named:
            plan.append(("parameter", value.id))
        else:
            return None
    return tuple(plan)

"""Whether the switch of a random or stateful op is off (:mod:`ckptlint.checkpoint.analyses.layer_switches` tells
which values are followed), with :func:`switched_on`, what the constructor call of a
:class:`~ckptlint.checkpoint.evaluator.denotations.LayerUse` writes as a literal.

The region builder is asked only for a class's method order and for writes of an attribute
outside ``__init__`` (:class:`SwitchReader`, which the region builder answers); a
parameter is an ``ast.arg``, whose default :func:`~ckptlint.checkpoint.evaluator.ast_literals.binding_default`
finds.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ckptlint.checkpoint.analyses.layer_switches import switch_is_on
from ckptlint.checkpoint.evaluator.ast_class_summary import self_parameter
from ckptlint.checkpoint.evaluator.ast_literals import binding_default
from ckptlint.checkpoint.evaluator.ast_norm_configs import call_argument
from ckptlint.checkpoint.evaluator.denotations import MAX_EVAL_DEPTH, ConstructorEnv, Context, LayerUse
from ckptlint.checkpoint.sites.ast_options import literal_value
from ckptlint.checkpoint.sites.options import NOT_LITERAL
from ckptlint.semantic.bindings import BindingKind

if TYPE_CHECKING:
    from ckptlint.checkpoint.evaluator.ast_class_summary import AstClassInfo, AstMethod
    from ckptlint.semantic.ast_analysis import AstAnalysis

    AstContext = Context[AstAnalysis, ast.expr, ast.AST]

__all__ = ["SwitchReader", "argument_value", "layer_switched_on", "switch_is_on", "switched_on"]


@runtime_checkable
class SwitchReader(Protocol):
    """What following ``self.rate`` asks of the region builder (``RegionBuilder.mro`` and
    ``RegionBuilder.assigned_outside`` on ``ast``)."""

    def mro(self, info: AstClassInfo) -> list[AstClassInfo]: ...

    def assigned_outside(self, analysis: AstAnalysis, attr: str, init: AstMethod | None) -> bool: ...


def switched_on(layer: LayerUse) -> bool | None:
    """Whether ``layer``'s switch is on, as its constructor call writes it: ``False``
    when the constructor (or the config) turns the behaviour off with a literal, ``None`` when
    the switch is an expression, ``True`` otherwise."""
    fact = layer.fact
    if fact.switch is None:
        return True
    keyword, position, default = fact.switch
    value: object = default
    call: ast.Call | None = layer.call  # an ``ast`` layer's call
    if layer.config is not None:
        value = layer.config.get(keyword, default) if isinstance(layer.config, dict) else default
        if value is NOT_LITERAL:
            return None
    elif call is not None:
        arg = call_argument(call, keyword, position)
        if arg is not None:
            ctx: AstContext = layer.ctx  # an ``ast`` layer's context
            value = literal_value(arg, ctx.analysis.model)
            if value is NOT_LITERAL:
                return None
    return switch_is_on(value, fact.off_when)


def layer_switched_on(layer: LayerUse, builder: SwitchReader | None) -> bool | None:
    """:func:`switched_on`, with an argument that is not a literal followed to its value."""
    on = switched_on(layer)
    if on is not None or layer.config is not None or layer.call is None or layer.fact.switch is None:
        return on
    keyword, position, _ = layer.fact.switch
    call: ast.Call = layer.call  # an ``ast`` layer's call
    arg = call_argument(call, keyword, position)
    if arg is None:
        return on
    ctx: AstContext = layer.ctx
    return switch_is_on(argument_value(arg, ctx, builder), layer.fact.off_when)


def argument_value(expr: ast.expr, ctx: AstContext, builder: SwitchReader | None, depth: int = 0) -> object:
    """The value ``expr`` (written in ``ctx``'s module) has for the calls the evaluator
    followed, or :data:`NOT_LITERAL`."""
    model = ctx.analysis.model
    value = literal_value(expr, model)
    if value is not NOT_LITERAL or depth > MAX_EVAL_DEPTH:
        return value
    if isinstance(expr, ast.IfExp):
        body = argument_value(expr.body, ctx, builder, depth + 1)
        other = argument_value(expr.orelse, ctx, builder, depth + 1)
        return body if body is not NOT_LITERAL and other is not NOT_LITERAL and body == other else NOT_LITERAL
    if isinstance(expr, ast.Attribute):
        return _self_attribute(expr, ctx, builder, depth)
    if not isinstance(expr, ast.Name) or expr not in model.parents:
        return NOT_LITERAL
    bindings = model.lookup(expr.id, model.scope_of(expr))
    if len(bindings) != 1:
        return NOT_LITERAL
    binding = bindings[0]
    if binding in ctx.env:
        arg, arg_ctx = ctx.env[binding]
        return argument_value(arg, arg_ctx, builder, depth + 1)
    if binding.kind is BindingKind.PARAMETER and isinstance(binding.node, ast.arg):
        default = binding_default(binding)
        if default is None or not _call_seen(ctx, binding.scope.node):
            return NOT_LITERAL
        return argument_value(default, Context(ctx.analysis, ctx.self_class), builder, depth + 1)
    if binding.kind is BindingKind.ASSIGNMENT and binding.value is not None:
        return argument_value(binding.value, ctx, builder, depth + 1)
    return NOT_LITERAL


def _call_seen(ctx: AstContext, function: ast.AST | None) -> bool:
    """Whether the call that runs ``function`` in ``ctx`` was seen whole, so that a parameter it
    does not pass holds its default."""
    env: Any = ctx.env
    if isinstance(env, ConstructorEnv) and env.init is function:
        return True
    return function is not None and function is ctx.bound and not ctx.open_call


def _self_attribute(expr: ast.Attribute, ctx: AstContext, builder: SwitchReader | None, depth: int) -> object:
    """``self.rate``: the one value ``__init__`` assigns it (in the class or a base class of the
    tree), evaluated with the constructor's bindings, when no other code of its module assigns
    ``.rate``."""
    info = ctx.self_class
    model = ctx.analysis.model
    if builder is None or info is None or not isinstance(expr.value, ast.Name) or expr.value not in model.parents:
        return NOT_LITERAL
    function = model.enclosing(expr, ast.FunctionDef, ast.AsyncFunctionDef)
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or self_parameter(function) != expr.value.id:
        return NOT_LITERAL
    name = expr.attr
    assigned = [(entry, owner) for owner in builder.mro(info) for entry in owner.attributes.get(name, ())]
    if len(assigned) != 1:
        return NOT_LITERAL
    (value, method, path), owner = assigned[0]
    if path or method is None or method.name != "__init__" or builder.assigned_outside(owner.analysis, name, method):
        return NOT_LITERAL
    owner_ctx: AstContext = Context(owner.analysis, info, ctx.self_env, self_env=ctx.self_env)
    return argument_value(value, owner_ctx, builder, depth + 1)

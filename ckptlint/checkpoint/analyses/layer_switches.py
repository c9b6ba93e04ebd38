"""Whether the switch of a random or stateful op is off (dropout's ``p`` is 0, BatchNorm's
``track_running_stats`` is ``False``), following its argument through the bindings the region
evaluator made.

:meth:`LayerUse.switched_on` reads a literal written at the constructor call
(``nn.Dropout(0.0)``). Most models pass the rate down instead: ``self.proj_drop =
nn.Dropout(proj_drop)`` in a class that another class of the tree builds with
``WindowedAttention(..., proj_drop=0.)`` (ViT-Adapter's Uni-Perceiver), or without passing it,
so that ``__init__``'s default ``proj_drop=0.`` holds. The value is followed:

- a parameter bound by the call the evaluator followed (the ``env`` of the context) to the
  argument passed, evaluated where it was written;
- a parameter that call did not pass, to its default, only when the call was seen whole: a
  constructor call without ``*``/``**`` arguments (:class:`ConstructorEnv`), or the function
  call that bound the context (``ctx.bound``, not ``ctx.open_call``). The ``__init__`` of the
  class a site is in was called by code not seen (a config, another module): its defaults
  say nothing about the rate used, and the op stays undecided;
- a local assigned once, ``self.attr`` assigned once in ``__init__`` of the class (or a base
  class of the tree) and nowhere else in its module, and a conditional expression whose
  branches are equal.

Anything else is not known (``None``): the op may draw, as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.checkpoint.evaluator.class_summary import self_parameter
from ckptlint.checkpoint.evaluator.denotations import (
    MAX_EVAL_DEPTH,
    ConstructorEnv,
    Context,
    LayerUse,
    call_argument,
)
from ckptlint.checkpoint.sites.options import NOT_LITERAL, literal_value
from ckptlint.semantic.bindings import BindingKind

if TYPE_CHECKING:
    from ckptlint.checkpoint.evaluator.regions import RegionBuilder

__all__ = ["argument_value", "layer_switched_on", "switch_is_on"]


def layer_switched_on(layer: LayerUse, builder: RegionBuilder | None) -> bool | None:
    """:meth:`LayerUse.switched_on`, with an argument that is not a literal followed to its
    value (see the module's description)."""
    on = layer.switched_on()
    if on is not None or layer.config is not None or layer.call is None or layer.fact.switch is None:
        return on
    keyword, position, _ = layer.fact.switch
    arg = call_argument(layer.call, keyword, position)
    if arg is None:
        return on
    return switch_is_on(argument_value(arg.value, layer.ctx, builder), layer.fact.off_when)


def switch_is_on(value: object, off_when: object) -> bool | None:
    """Whether a switch of value ``value`` leaves the behaviour on (``None``: not known)."""
    if value is NOT_LITERAL:
        return None
    if isinstance(value, bool) or isinstance(off_when, bool):
        return value != off_when
    try:
        return float(value) != float(off_when)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def argument_value(expr: cst.BaseExpression, ctx: Context, builder: RegionBuilder | None, depth: int = 0) -> object:
    """The value ``expr`` (written in ``ctx``'s module) has for the calls the evaluator
    followed, or :data:`NOT_LITERAL`."""
    model = ctx.analysis.model
    value = literal_value(expr, model)
    if value is not NOT_LITERAL or depth > MAX_EVAL_DEPTH:
        return value
    if isinstance(expr, cst.IfExp):
        body = argument_value(expr.body, ctx, builder, depth + 1)
        other = argument_value(expr.orelse, ctx, builder, depth + 1)
        return body if body is not NOT_LITERAL and other is not NOT_LITERAL and body == other else NOT_LITERAL
    if isinstance(expr, cst.Attribute):
        return _self_attribute(expr, ctx, builder, depth)
    if not isinstance(expr, cst.Name) or expr not in model.scopes:
        return NOT_LITERAL
    bindings = model.lookup(expr.value, model.scope_of(expr))
    if len(bindings) != 1:
        return NOT_LITERAL
    binding = bindings[0]
    if binding in ctx.env:
        arg, arg_ctx = ctx.env[binding]
        return argument_value(arg, arg_ctx, builder, depth + 1)
    node = binding.node
    if binding.kind is BindingKind.PARAMETER and isinstance(node, cst.Param):
        if node.default is None or node.star or not _call_seen(ctx, binding.scope.node):
            return NOT_LITERAL
        return argument_value(node.default, Context(ctx.analysis, ctx.self_class), builder, depth + 1)
    if binding.kind is BindingKind.ASSIGNMENT and binding.value is not None:
        return argument_value(binding.value, ctx, builder, depth + 1)
    return NOT_LITERAL


def _call_seen(ctx: Context, function: cst.CSTNode | None) -> bool:
    """Whether the call that runs ``function`` in ``ctx`` was seen whole, so that a parameter it
    does not pass holds its default."""
    env = ctx.env
    if isinstance(env, ConstructorEnv) and env.init is function:
        return True
    return function is not None and function is ctx.bound and not ctx.open_call


def _self_attribute(expr: cst.Attribute, ctx: Context, builder: RegionBuilder | None, depth: int) -> object:
    """``self.rate``: the one value ``__init__`` assigns it (in the class or a base class of the
    tree), evaluated with the constructor's bindings, when no other code of its module assigns
    ``.rate``."""
    info = ctx.self_class
    model = ctx.analysis.model
    if builder is None or info is None or not isinstance(expr.value, cst.Name) or expr.value not in model.scopes:
        return NOT_LITERAL
    function = model.enclosing(expr, cst.FunctionDef)
    if not isinstance(function, cst.FunctionDef) or self_parameter(function) != expr.value.value:
        return NOT_LITERAL
    name = expr.attr.value
    assigned = [(entry, owner) for owner in builder.mro(info) for entry in owner.attributes.get(name, ())]
    if len(assigned) != 1:
        return NOT_LITERAL
    (value, method, path), owner = assigned[0]
    if path or method is None or method.name.value != "__init__" or builder.assigned_outside(owner.analysis, name, method):
        return NOT_LITERAL
    owner_ctx = Context(owner.analysis, info, ctx.self_env, self_env=ctx.self_env)
    return argument_value(value, owner_ctx, builder, depth + 1)

"""Norm layers built from a config: ``build_norm_layer(dict(type='BN'), c)``, mmcv's
``ConvModule(..., norm_cfg=...)`` (the factories of :data:`ckptlint.facts.torch_facts.NORM_FACTORIES`),
read for :class:`~ckptlint.checkpoint.evaluator.evaluation.ExpressionEvaluator`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import libcst as cst

from ckptlint.checkpoint.evaluator.denotations import (
    MAX_EVAL_DEPTH,
    ContainerValue,
    Context,
    LayerClassValue,
    LayerUse,
    OpaqueValue,
    Value,
    call_argument,
)
from ckptlint.checkpoint.evaluator.literals import skip_self_copies
from ckptlint.facts.torch_facts import layer_fact
from ckptlint.semantic.bindings import BindingKind

if TYPE_CHECKING:
    from ckptlint.facts.torch_facts import NormFactory

__all__ = ["norm_factory_values"]

#: ``ExpressionEvaluator.values``: what an expression denotes in a context.
Evaluate = Callable[[cst.BaseExpression, Context, int], list[Value]]
#: ``LiteralDecisions.literal``: an expression's literal value, or a marker when unknown.
Literal = Callable[[cst.BaseExpression, Context, int], Any]


def norm_factory_values(
    factory: NormFactory, call: cst.Call, ctx: Context, depth: int, *, values: Evaluate, literal: Literal
) -> list[Value]:
    """A norm layer built from a config (``build_norm_layer(dict(type='BN'), c)``, a ``ConvModule``
    running it): the layer ``cfg['type']`` names (its other keys are the layer's keywords);
    an opaque value for a type without training behaviour (GroupNorm); nothing when unknown."""
    keyword, position = factory.config
    arg = call_argument(call, keyword, position)
    if arg is None:
        return []
    layer: Value | None = None
    config = literal(arg.value, ctx, depth + 1)
    if isinstance(config, dict) and isinstance(config.get("type"), str):
        qualified = factory.types.get(config["type"])
        if qualified is None:
            return []
        fact = layer_fact({qualified})
        layer = LayerUse(fact[0], fact[1], call, ctx, config) if fact is not None else OpaqueValue()
    else:
        for value in _config_types(arg.value, ctx, depth + 1, values):
            layer = LayerUse(value.qualified, value.fact, call, ctx, config)
            break
    if layer is None:
        return []
    return [ContainerValue([OpaqueValue(), layer])] if factory.returns_pair or factory.module else [layer]


def _config_types(expr: cst.BaseExpression, ctx: Context, depth: int, values: Evaluate) -> list[LayerClassValue]:
    """The torch layer classes given as ``type=`` of a ``dict(type=nn.BatchNorm2d, ...)``
    config (followed through names and parameters like :meth:`literal`)."""
    if depth > MAX_EVAL_DEPTH:
        return []
    model = ctx.analysis.model
    if isinstance(expr, cst.Name) and expr in model.scopes:
        bindings = skip_self_copies(model.lookup(expr.value, model.scope_of(expr)), model)
        if len(bindings) != 1:
            return []
        binding = bindings[0]
        if binding in ctx.env:
            arg, arg_ctx = ctx.env[binding]
            return _config_types(arg, arg_ctx, depth + 1, values)
        if isinstance(binding.node, cst.Param) and binding.node.default is not None:
            return _config_types(binding.node.default, Context(ctx.analysis, ctx.self_class), depth + 1, values)
        if binding.kind is BindingKind.ASSIGNMENT and binding.value is not None:
            return _config_types(binding.value, ctx, depth + 1, values)
        return []
    if isinstance(expr, cst.Call) and "builtins.dict" in model.qualified_names(expr.func):
        for argument in expr.args:
            if argument.keyword is not None and argument.keyword.value == "type":
                return [v for v in values(argument.value, ctx, depth + 1) if isinstance(v, LayerClassValue)]
    return []

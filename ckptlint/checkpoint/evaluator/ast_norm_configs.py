"""Norm layers built from a config on CPython's ``ast``: ``build_norm_layer(dict(type='BN'), c)``,
mmcv's ``ConvModule(..., norm_cfg=...)``, and :func:`call_argument`, the argument a call
passes for a parameter, on ``ast``'s split of positional and keyword arguments."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ckptlint.checkpoint.evaluator.ast_literals import binding_default, skip_self_copies
from ckptlint.checkpoint.evaluator.denotations import (
    MAX_EVAL_DEPTH,
    ContainerValue,
    Context,
    LayerClassValue,
    LayerUse,
    OpaqueValue,
    Value,
)
from ckptlint.facts.torch_facts import layer_fact
from ckptlint.semantic.bindings import BindingKind

if TYPE_CHECKING:
    from ckptlint.facts.torch_facts import NormFactory
    from ckptlint.semantic.ast_analysis import AstAnalysis

    AstContext = Context[AstAnalysis, ast.expr, ast.AST]

__all__ = ["call_argument", "norm_factory_values"]

#: ``ExpressionEvaluator.values``: what an expression denotes in a context.
Evaluate = Callable[[ast.expr, "AstContext", int], list[Value]]
#: ``LiteralDecisions.literal``: an expression's literal value, or a marker when unknown.
Literal = Callable[[ast.expr, "AstContext", int], Any]


def call_argument(call: ast.Call, keyword: str, position: int) -> ast.expr | None:
    """The expression ``call`` passes for the parameter ``keyword`` at ``position``: by
    keyword, else the positional argument there; ``None`` when not passed or when a ``*`` argument hides the
    positions."""
    for one in call.keywords:
        if one.arg == keyword:
            return one.value
    if any(isinstance(a, ast.Starred) for a in call.args):
        return None
    return call.args[position] if len(call.args) > position else None


def norm_factory_values(
    factory: NormFactory, call: ast.Call, ctx: AstContext, depth: int, *, values: Evaluate, literal: Literal
) -> list[Value]:
    """A norm layer built from a config: the layer ``cfg['type']`` names (its other keys are
    the layer's keywords); an opaque value for a type without training behaviour; nothing
    when unknown.
    The layer's ``call`` is the ``ast`` call."""
    keyword, position = factory.config
    arg = call_argument(call, keyword, position)
    if arg is None:
        return []
    layer: Value | None = None
    config = literal(arg, ctx, depth + 1)
    if isinstance(config, dict) and isinstance(config.get("type"), str):
        qualified = factory.types.get(config["type"])
        if qualified is None:
            return []
        fact = layer_fact({qualified})
        layer = LayerUse(fact[0], fact[1], call, ctx, config) if fact is not None else OpaqueValue()
    else:
        for value in _config_types(arg, ctx, depth + 1, values):
            layer = LayerUse(value.qualified, value.fact, call, ctx, config)
            break
    if layer is None:
        return []
    return [ContainerValue([OpaqueValue(), layer])] if factory.returns_pair or factory.module else [layer]


def _config_types(expr: ast.expr, ctx: AstContext, depth: int, values: Evaluate) -> list[LayerClassValue]:
    """The torch layer classes given as ``type=`` of a ``dict(type=nn.BatchNorm2d, ...)``
    config (followed through names and parameters)."""
    if depth > MAX_EVAL_DEPTH:
        return []
    model = ctx.analysis.model
    if isinstance(expr, ast.Name) and expr in model.parents:
        bindings = skip_self_copies(model.lookup(expr.id, model.scope_of(expr)), model)
        if len(bindings) != 1:
            return []
        binding = bindings[0]
        if binding in ctx.env:
            arg, arg_ctx = ctx.env[binding]
            return _config_types(arg, arg_ctx, depth + 1, values)
        default = binding_default(binding) if isinstance(binding.node, ast.arg) else None
        if default is not None:
            return _config_types(default, Context(ctx.analysis, ctx.self_class), depth + 1, values)
        if binding.kind is BindingKind.ASSIGNMENT and binding.value is not None:
            return _config_types(binding.value, ctx, depth + 1, values)
        return []
    if isinstance(expr, ast.Call) and "builtins.dict" in model.qualified_names(expr.func):
        for one in expr.keywords:
            if one.arg == "type":
                return [v for v in values(one.value, ctx, depth + 1) if isinstance(v, LayerClassValue)]
    return []


"""Calls of the program's functions on CPython's ``ast``: a call's arguments bound to the
parameters of the function it calls, and the keywords a function accepts, into the
:class:`~ckptlint.checkpoint.evaluator.denotations.Context` records of the evaluator.

A call's arguments are given as ``ast`` keeps them: ``call.args`` (positional expressions,
``ast.Starred`` for ``*args``) and ``call.keywords`` (``ast.keyword``, ``arg`` ``None`` for
``**kwargs``). A ``**`` argument counts as starred: positions are not bound after it
either.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ckptlint.checkpoint.evaluator.denotations import Context, FunctionValue
from ckptlint.semantic.bindings import BindingKind
from ckptlint.semantic.callables import Signature

if TYPE_CHECKING:
    from ckptlint.semantic.ast_analysis import AstAnalysis
    from ckptlint.semantic.ast_model import AstBinding, AstScope

    # The records parametrised for ``ast`` (a function value's node: ``def``, ``async def``, lambda).
    AstCallable = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
    AstContext = Context[AstAnalysis, ast.expr, ast.AST]
    AstFunctionValue = FunctionValue[AstCallable, AstAnalysis, ast.expr, ast.AST]

__all__ = ["bind_arguments", "signature_of"]


def bind_arguments(
    value: AstFunctionValue, args: list[ast.expr], keywords: list[ast.keyword], caller: AstContext
) -> AstContext:
    """A context for calling ``value`` with ``args`` and ``keywords`` (a call's, evaluated in
    ``caller``): its parameters bound to the arguments passed for them (the first one skipped
    for a bound method); positions are not bound when the call has a ``*`` or ``**``
    argument. ``value``'s own context when its function has no scope in the semantic model
    ."""
    function = value.node
    params = [*function.args.posonlyargs, *function.args.args]
    if value.bound_method and params:
        params = params[1:]
    env = dict(value.ctx.env)
    keyword_params: set[str] = set()
    scope = value.ctx.analysis.model.scope_of_definition.get(function)
    if scope is None:
        return value.ctx
    starred = any(isinstance(a, ast.Starred) for a in args) or any(k.arg is None for k in keywords)
    positional = [a for a in args if not isinstance(a, ast.Starred)]
    for param, arg in zip(params, positional, strict=False):
        binding = _param_binding(scope, param)
        if binding is not None and not starred:
            env[binding] = (arg, caller)
    for keyword in keywords:
        name = keyword.arg
        if name is None:
            continue
        keyword_params.add(name)
        for param in [*params, *function.args.kwonlyargs]:
            if param.arg == name:
                binding = _param_binding(scope, param)
                if binding is not None:
                    env[binding] = (keyword.value, caller)
    return Context(
        value.ctx.analysis,
        value.ctx.self_class,
        env,
        frozenset(keyword_params),
        value.ctx.self_env,
        value.ctx.open_call or starred,  # a partial's bound arguments are not seen
        function,
    )


def signature_of(value: AstFunctionValue) -> Signature | None:
    """The keywords a function value takes (``self`` left out for a bound method); ``None``
    for a decorated ``def``, whose wrapper may take other arguments."""
    function = value.node
    if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) and function.decorator_list:
        return None
    params = function.args
    named = list(params.args)
    if value.bound_method and not params.posonlyargs:
        named = named[1:]
    keywords = frozenset(p.arg for p in [*named, *params.kwonlyargs])
    return Signature(keywords, params.kwarg is not None, function)


def _param_binding(scope: AstScope, param: ast.arg) -> AstBinding | None:
    for binding in scope.bindings.get(param.arg, ()):
        if binding.kind is BindingKind.PARAMETER and binding.node is param:
            return binding
    return None

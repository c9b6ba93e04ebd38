"""Calls of the program's functions: a call's arguments bound to the parameters of the function
it calls, and the keywords a function accepts."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.checkpoint.evaluator.denotations import Context, FunctionValue
from ckptlint.semantic.bindings import Binding, BindingKind
from ckptlint.semantic.callables import Signature

if TYPE_CHECKING:
    from ckptlint.semantic.bindings import Scope

__all__ = ["bind_arguments", "signature_of"]


def bind_arguments(value: FunctionValue, args: tuple[cst.Arg, ...], caller: Context) -> Context:
    """A context for calling ``value`` with ``args`` (evaluated in ``caller``): its parameters
    bound to the arguments passed for them (the first one skipped for a bound method);
    positions after a ``*args`` argument are not bound. ``value``'s own context when its
    function has no scope in the semantic model."""
    function = value.node
    params = list(function.params.posonly_params) + list(function.params.params)
    if value.bound_method and params:
        params = params[1:]
    env = dict(value.ctx.env)
    keyword_params: set[str] = set()
    scope = value.ctx.analysis.model.scope_of_definition.get(function)
    if scope is None:
        return value.ctx
    positional = [a for a in args if a.keyword is None and not a.star]
    starred = any(a.star for a in args if a.keyword is None)
    for param, arg in zip(params, positional, strict=False):
        binding = _param_binding(scope, param)
        if binding is not None and not starred:
            env[binding] = (arg.value, caller)
    for arg in args:
        if arg.keyword is None:
            continue
        name = arg.keyword.value
        keyword_params.add(name)
        for param in params + list(function.params.kwonly_params):
            if param.name.value == name:
                binding = _param_binding(scope, param)
                if binding is not None:
                    env[binding] = (arg.value, caller)
    return Context(
        value.ctx.analysis,
        value.ctx.self_class,
        env,
        frozenset(keyword_params),
        value.ctx.self_env,
        value.ctx.open_call or any(a.star for a in args),  # a partial's bound arguments are not seen
        function,
    )


def signature_of(value: FunctionValue) -> Signature | None:
    """The keywords a function value takes (``self`` left out for a bound method); ``None``
    for a decorated ``def``, whose wrapper may take other arguments."""
    function = value.node
    if isinstance(function, cst.FunctionDef) and function.decorators:
        return None
    params = function.params
    named = list(params.params)
    if value.bound_method and not params.posonly_params:
        named = named[1:]
    keywords = frozenset(p.name.value for p in named + list(params.kwonly_params))
    return Signature(keywords, isinstance(params.star_kwarg, cst.Param), function)


def _param_binding(scope: Scope, param: cst.Param) -> Binding | None:
    for binding in scope.bindings.get(param.name.value, ()):
        if binding.kind is BindingKind.PARAMETER and binding.node is param:
            return binding
    return None

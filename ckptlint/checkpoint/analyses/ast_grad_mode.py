"""The autograd grad mode a statement runs under, for an
:class:`~ckptlint.semantic.ast_model.AstModel` (:mod:`ckptlint.checkpoint.analyses.grad_mode` tells which
contexts count and holds the records).

A body is a list of statements, ``async with`` and ``async def`` are classes of their own, a
call keeps its keyword arguments apart, and ``True``/``False`` are constants.
"""

from __future__ import annotations

import ast

from ckptlint.checkpoint.analyses.grad_mode import GradMode, GradModeContext, context_mode
from ckptlint.checkpoint.sites.ast_options import literal_value
from ckptlint.facts.grad_mode import GRAD_MODE_CONTEXTS, GradModeEffect
from ckptlint.semantic.ast_model import AstModel

__all__ = ["GradMode", "GradModeContext", "grad_mode_at"]

_NONE: GradModeContext[ast.AST] = GradModeContext(GradMode.ENABLED)
_WITH = (ast.With, ast.AsyncWith)
_DEF = (ast.FunctionDef, ast.AsyncFunctionDef)


def grad_mode_at(node: ast.AST, model: AstModel) -> GradModeContext[ast.AST]:
    """The grad mode ``node`` runs under as far as its own function's code says: the innermost
    ``with`` item or decorator of its function that sets one, ``ENABLED`` with ``node=None``
    when none does (the caller decides)."""
    child = node
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, _WITH) and _in_body(child, ancestor):
            for item in reversed(ancestor.items):
                found = _context_of(item.context_expr, model, decorator=False)
                if found is not None:
                    return found
        elif isinstance(ancestor, _DEF) and _in_body(child, ancestor):
            for decorator in reversed(ancestor.decorator_list):
                found = _context_of(decorator, model, decorator=True)
                if found is not None:
                    return found
            return _NONE
        elif isinstance(ancestor, ast.Lambda) and ancestor.body is child:
            return _NONE
        elif isinstance(ancestor, ast.ClassDef) and _in_body(child, ancestor):
            return _NONE
        child = ancestor
    return _NONE


def _in_body(child: ast.AST, owner: ast.With | ast.AsyncWith | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> bool:
    """Whether ``child`` is one of the statements of ``owner``'s body (not a decorator, a
    ``with`` item, a base or a parameter)."""
    return any(statement is child for statement in owner.body)


def _context_of(expr: ast.expr, model: AstModel, decorator: bool) -> GradModeContext[ast.AST] | None:
    call = expr if isinstance(expr, ast.Call) else None
    target = call.func if call is not None else expr
    if call is None and not decorator:
        return None  # `with torch.no_grad:` is not a context manager
    names = model.qualified_names(target)
    for name in sorted(names):
        effect = GRAD_MODE_CONTEXTS.get(name)
        if effect is None:
            continue
        return GradModeContext(_mode(effect, name, call, model), expr, name, decorator)
    return None


def _mode(effect: GradModeEffect, name: str, call: ast.Call | None, model: AstModel) -> GradMode:
    argument = _mode_argument(call)
    value = literal_value(argument, model) if argument is not None else None
    return context_mode(effect, name, value, passed=argument is not None)


def _mode_argument(call: ast.Call | None) -> ast.expr | None:
    """The ``mode`` argument: by keyword, else the first positional one (not ``*args``)."""
    if call is None:
        return None
    for keyword in call.keywords:
        if keyword.arg == "mode":
            return keyword.value
    positional = [arg for arg in call.args if not isinstance(arg, ast.Starred)]
    return positional[0] if positional else None

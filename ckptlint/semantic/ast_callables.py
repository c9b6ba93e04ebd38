"""The parameters of a checkpointed callable this module defines (:mod:`ckptlint.semantic.callables`
tells what is resolved and why): a ``def`` or lambda bound to a name, a lambda literal,
``self.method`` of the enclosing class, a factory call whose ``def`` ends by returning a nested
``def``/lambda, read with an :class:`~ckptlint.semantic.ast_model.AstModel`, into a
:class:`~ckptlint.semantic.callables.Signature` (its ``node`` an ``ast`` node).

Positional-only parameters are not keywords; ``async def`` is a ``def``; a factory whose body
sits on the ``def`` line (``def make(m): return lambda: m``) returns nothing known, nor one
whose last line holds
more than one statement. ``ast`` keeps no colon nor ``;``: both are read from the logical
lines of the text (:mod:`ckptlint.semantic.ast_lines`).
"""

from __future__ import annotations

import ast

from ckptlint.semantic.ast_lines import body_on_header, starts_logical_line
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.bindings import BindingKind
from ckptlint.semantic.callables import Signature

__all__ = ["Signature", "signature_of"]

_Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def signature_of(expr: ast.expr | None, model: AstModel) -> Signature | None:
    """The signature of the callable ``expr`` denotes (keyword-able parameter names, whether it
    has ``**kwargs``, its ``def``/lambda), or ``None`` when it is not known."""
    definition = _definition(expr, model, depth=0)
    if definition is None:
        return None
    params = definition.args
    keywords = frozenset(p.arg for p in [*params.args, *params.kwonlyargs])
    return Signature(keywords, params.kwarg is not None, definition)


def _definition(expr: ast.expr | None, model: AstModel, depth: int) -> _Definition | None:
    """See ``callables._definition``."""
    if expr is None or depth > 3:
        return None
    if isinstance(expr, ast.Lambda):
        return expr
    if isinstance(expr, ast.Name):
        bindings = model.bindings_of(expr)
        if len(bindings) != 1:
            return None
        binding = bindings[0]
        if binding.kind is BindingKind.FUNCTION and isinstance(binding.node, _DEFS):
            return binding.node if not binding.node.decorator_list else None
        if binding.kind is BindingKind.ASSIGNMENT and isinstance(binding.value, ast.Lambda):
            return binding.value
        return None
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
        return _method(expr, model)
    if isinstance(expr, ast.Call):
        factory = _definition(expr.func, model, depth + 1)
        if isinstance(factory, _DEFS):
            return _returned_definition(factory, model)
    return None


def _method(attribute: ast.Attribute, model: AstModel) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The one undecorated method of the enclosing class named like ``self.<attr>``."""
    cls = model.enclosing(attribute, ast.ClassDef)
    if not isinstance(cls, ast.ClassDef):
        return None
    found = [s for s in cls.body if isinstance(s, _DEFS) and s.name == attribute.attr]
    if len(found) != 1 or found[0].decorator_list:
        return None
    return found[0]


def _returned_definition(factory: ast.FunctionDef | ast.AsyncFunctionDef, model: AstModel) -> _Definition | None:
    """The lambda, or the nested undecorated ``def``, the factory's last statement returns
    (alone on its logical line, in an indented body)."""
    body = factory.body
    if body_on_header(model, body):
        return None
    last = body[-1]
    if not starts_logical_line(model, last):
        return None  # `x = 1; return f`: the last line holds two statements
    if not isinstance(last, ast.Return) or last.value is None:
        return None
    value = last.value
    if isinstance(value, ast.Lambda):
        return value
    if isinstance(value, ast.Name):
        nested = [s for s in body if isinstance(s, _DEFS) and s.name == value.id and not s.decorator_list]
        if len(nested) == 1:
            return nested[0]
    return None

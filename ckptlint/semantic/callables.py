"""The parameters of a checkpointed callable, when this module defines it.

Enough to answer "does the function accept keyword ``k``?" for the site-level rules (a
keyword that is a real parameter is not a misspelled option, CKP003; a keyword the function
does not accept makes ``use_reentrant=False`` no fix, CKP002). Resolved: a ``def`` or a
lambda bound to a name, a lambda literal, ``self.method`` of the enclosing class, and a
factory call ``make(layer)`` whose ``def`` ends by returning a nested ``def``/lambda (the
``create_custom_forward(module)`` idiom of Hugging Face code). Anything else is unknown.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ckptlint.semantic.bindings import BindingKind
from ckptlint.semantic.model import SemanticModel

__all__ = ["Signature", "signature_of"]


@dataclass(frozen=True)
class Signature:
    """What a ``def``/lambda accepts.

    Attributes:
        keywords: names that can be passed by keyword (positional-or-keyword and
            keyword-only parameters).
        var_keyword: it has ``**kwargs``.
        node: the ``FunctionDef`` or ``Lambda``.
    """

    keywords: frozenset[str]
    var_keyword: bool
    node: cst.CSTNode

    def accepts(self, keyword: str) -> bool:
        """Whether passing ``keyword=...`` binds (TypeError otherwise)."""
        return self.var_keyword or keyword in self.keywords


def signature_of(expr: cst.BaseExpression | None, model: SemanticModel) -> Signature | None:
    """The signature of the callable ``expr`` denotes, or ``None`` when it is not known."""
    definition = _definition(expr, model, depth=0)
    if definition is None:
        return None
    params = definition.params
    keywords = frozenset(p.name.value for p in list(params.params) + list(params.kwonly_params))
    return Signature(keywords, isinstance(params.star_kwarg, cst.Param), definition)


def _definition(
    expr: cst.BaseExpression | None, model: SemanticModel, depth: int
) -> cst.FunctionDef | cst.Lambda | None:
    if expr is None or depth > 3:
        return None
    if isinstance(expr, cst.Lambda):
        return expr
    if isinstance(expr, cst.Name):
        bindings = model.bindings_of(expr)
        if len(bindings) != 1:
            return None
        binding = bindings[0]
        if binding.kind is BindingKind.FUNCTION and isinstance(binding.node, cst.FunctionDef):
            return binding.node if not binding.node.decorators else None
        if binding.kind is BindingKind.ASSIGNMENT and isinstance(binding.value, cst.Lambda):
            return binding.value
        return None
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return _method(expr, model)
    if isinstance(expr, cst.Call):
        factory = _definition(expr.func, model, depth + 1)
        if isinstance(factory, cst.FunctionDef):
            return _returned_definition(factory, model, depth)
    return None


def _method(attribute: cst.Attribute, model: SemanticModel) -> cst.FunctionDef | None:
    cls = model.enclosing(attribute, cst.ClassDef)
    if not isinstance(cls, cst.ClassDef):
        return None
    found = [
        s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == attribute.attr.value
    ]
    if len(found) != 1 or found[0].decorators:
        return None
    return found[0]


def _returned_definition(
    factory: cst.FunctionDef, model: SemanticModel, depth: int
) -> cst.FunctionDef | cst.Lambda | None:
    body = factory.body.body if isinstance(factory.body, cst.IndentedBlock) else ()
    if not body:
        return None
    last = body[-1]
    if not isinstance(last, cst.SimpleStatementLine) or len(last.body) != 1:
        return None
    statement = last.body[0]
    if not isinstance(statement, cst.Return) or statement.value is None:
        return None
    value = statement.value
    if isinstance(value, cst.Lambda):
        return value
    if isinstance(value, cst.Name):
        nested = [
            s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == value.value and not s.decorators
        ]
        if len(nested) == 1:
            return nested[0]
    return None

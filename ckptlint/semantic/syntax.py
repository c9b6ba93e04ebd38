"""Small readings of libcst nodes that several analyses ask: the last name of a dotted or called
expression, a class's methods, a function's positional parameters, a function's own nodes."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ckptlint.semantic.walk import children

__all__ = ["class_methods", "last_name", "own_nodes", "positional_parameters"]


def last_name(expr: cst.BaseExpression) -> str:
    """The last name of a dotted expression (``torch.cuda.amp.custom_bwd`` -> ``custom_bwd``),
    of the called expression for a call; ``""`` for anything else."""
    if isinstance(expr, cst.Call):
        expr = expr.func
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    if isinstance(expr, cst.Name):
        return expr.value
    return ""


def class_methods(node: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    """The ``def`` statements of a class body, by name (the last one of a name wins)."""
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    return {s.name.value: s for s in body if isinstance(s, cst.FunctionDef)}


def positional_parameters(function: cst.FunctionDef) -> list[str]:
    """The names of ``function``'s positional-only and positional-or-keyword parameters, in order."""
    return [p.name.value for p in list(function.params.posonly_params) + list(function.params.params)]


def own_nodes(function: cst.FunctionDef) -> Iterator[cst.CSTNode]:
    """Every node of ``function``'s body, not entering nested ``def``, ``class`` and lambdas
    (their code runs only when called)."""
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        stack.extend(children(node))

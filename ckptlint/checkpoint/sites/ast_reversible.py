"""Reversible-network recompute on CPython's ``ast`` (see
:mod:`ckptlint.checkpoint.sites.reversible` for the shapes and where they were read), giving
a :class:`~ckptlint.checkpoint.sites.reversible.ReversibleShape` of ``ast.Call`` nodes.

How the tree is read: a ``for`` or ``with`` is either kind (``async`` included), a call's
arguments are taken in source order (``ast`` keeps keywords apart), a node's children are
walked in field order (:func:`ckptlint.semantic.ast_walk.fields_order_children`, the order
findings have always been reported in), ``xs[(a, b)]`` is one index and ``xs[a, b]`` two
(``ast`` gives a tuple for both; a parenthesised one starts before its first element and
ends after its last). Known limit: ``xs[(a), (b)]`` reads as one index (positions alone
cannot tell it from ``xs[((a), (b))]``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from typing import TypeGuard

from ckptlint.checkpoint.sites.ast_options import argument_value, ordered_arguments
from ckptlint.checkpoint.sites.reversible import ReversibleShape
from ckptlint.facts.home_made import names_rng
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.ast_subscripts import Commas, module_commas, subscript_elements_in
from ckptlint.semantic.ast_walk import class_methods, fields_order_children, last_name, own_nodes, positional_parameters

__all__ = ["AstFunction", "reversible_shape"]

AstFunction = ast.FunctionDef | ast.AsyncFunctionDef

_ITERATION_WRAPPERS = frozenset({"enumerate", "reversed", "list", "tuple", "iter"})
_NOT_ENTERED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_FORS = (ast.For, ast.AsyncFor)
_WITHS = (ast.With, ast.AsyncWith)


def reversible_shape(
    node: ast.ClassDef, model: AstModel, bases: Sequence[tuple[ast.ClassDef, AstModel]] = ()
) -> ReversibleShape[ast.Call] | None:
    """The reversible recompute of the ``autograd.Function`` subclass ``node`` (a class of
    ``model``'s module; ``bases`` with the models of their modules), or ``None`` (the shapes are in
    :mod:`ckptlint.checkpoint.sites.reversible`)."""
    module = model.module
    methods: dict[str, AstFunction] = {}
    owners: dict[str, AstModel] = {}
    for base, base_model in [*reversed(bases), (node, model)]:
        own = class_methods(base)
        methods |= own
        owners |= dict.fromkeys(own, base_model)
    forward, backward = methods.get("forward"), methods.get("backward")
    if forward is None or backward is None:
        return None
    forward_commas, backward_commas = module_commas(owners["forward"]), module_commas(owners["backward"])
    params = positional_parameters(forward)
    backward_params = positional_parameters(backward)
    if len(params) < 2 or not backward_params:
        return None
    ctx, rest = params[0], params[1:]
    stored = _stored(forward, ctx, rest)
    if not stored:
        return None
    forward_calls = [n for n in own_nodes(forward) if type(n) is ast.Call]
    run = {attr for attr, parameter in stored.items() if _runs(forward, parameter, forward_calls, forward_commas)}
    if not run:
        return None
    bctx = backward_params[0]
    holders = {attr: _holders(backward, bctx, attr) for attr in run}
    recomputing = _recomputing_methods(module)
    for _, base_model in bases:
        for name, found in _recomputing_methods(base_model.module).items():
            recomputing.setdefault(name, []).extend(m for m in found if m not in recomputing[name])
    for attr, names in holders.items():
        elements = _elements(backward, bctx, attr, names, backward_commas)
        reruns, method = _reruns(backward, elements, recomputing)
        if not reruns:
            continue
        bodies = [backward, *(recomputing.get(method, ()) if method else ())]
        backward_calls = [n for body in bodies for n in own_nodes(body) if type(n) is ast.Call]
        restores_rng = any(names_rng(last_name(c)) or _asks_for_rng(c) for c in backward_calls)
        custom_bwd = any("custom_bwd" in last_name(d) for d in backward.decorator_list)
        reads_autocast = any("autocast" in last_name(c).lower() for c in forward_calls)
        enters_autocast = any("autocast" in last_name(c).lower() for c in backward_calls)
        return ReversibleShape(
            function_index=rest.index(stored[attr]),
            reruns=tuple(reruns),
            method=method,
            restores_rng=restores_rng,
            restores_autocast=custom_bwd or (reads_autocast and enters_autocast),
        )
    return None


# ---------------------------------------------------------------------------- reading
def _is_attr(expr: ast.AST | None, owner: str, attr: str | None = None) -> TypeGuard[ast.Attribute]:
    return type(expr) is ast.Attribute and type(expr.value) is ast.Name and expr.value.id == owner and (attr is None or expr.attr == attr)


def _stored(forward: AstFunction, ctx: str, rest: list[str]) -> dict[str, str]:
    """``ctx.ATTR = P`` with ``P`` a parameter: ATTR -> P."""
    stored: dict[str, str] = {}
    for node in own_nodes(forward):
        if type(node) is ast.Assign and type(node.value) is ast.Name and node.value.id in rest:
            for target in node.targets:
                if _is_attr(target, ctx):
                    stored[target.attr] = node.value.id
    return stored


def _first_argument(call: ast.Call) -> ast.expr:
    """The first argument in source order, without its ``*``."""
    return argument_value(ordered_arguments(call)[0])


def _unwrapped(expr: ast.expr) -> ast.expr:
    """``enumerate(reversed(xs[::-1]))`` -> ``xs``."""
    while True:
        if type(expr) is ast.Subscript:
            expr = expr.value
        elif (
            type(expr) is ast.Call and type(expr.func) is ast.Name and expr.func.id in _ITERATION_WRAPPERS and (expr.args or expr.keywords)
        ):
            expr = _first_argument(expr)
        else:
            return expr


def _slices_only(subscript: ast.Subscript, commas: Commas) -> bool:
    """Every element of the subscript is a slice (``xs[::-1]``, ``xs[1:, :2]``)."""
    return all(type(e) is ast.Slice for e in subscript_elements_in(commas, subscript))


def _element_value(element: ast.expr) -> ast.expr:
    return element.value if type(element) is ast.Starred else element


def _loop_elements(target: ast.expr, iterated: ast.expr, is_source: Callable[[ast.expr], bool], commas: Commas) -> set[str]:
    """The names ``for TARGET in ITERATED`` binds to elements of the collection ``is_source``
    recognises (the collection
    itself, through slices and ``reversed``/``list``/``tuple``/``iter``, and ``enumerate``/``zip``
    of it unpacked)."""
    while True:
        if type(iterated) is ast.Subscript and _slices_only(iterated, commas):
            iterated = iterated.value
        elif _called(iterated, "reversed", "list", "tuple", "iter"):
            iterated = iterated.args[0]
        else:
            break
    elements = target.elts if type(target) is ast.Tuple or type(target) is ast.List else None
    if _called(iterated, "enumerate"):
        if elements is None or len(elements) != 2:
            return set()
        return _loop_elements(_element_value(elements[1]), iterated.args[0], is_source, commas)
    if _called(iterated, "zip"):
        if elements is None or len(elements) != len(iterated.args):
            return set()
        return {n for e, a in zip(elements, iterated.args, strict=True) for n in _loop_elements(_element_value(e), a, is_source, commas)}
    if type(target) is ast.Name and is_source(_unwrapped(iterated)):
        return {target.id}
    return set()


def _called(expr: ast.expr, *names: str) -> TypeGuard[ast.Call]:
    return (
        type(expr) is ast.Call
        and type(expr.func) is ast.Name
        and expr.func.id in names
        and bool(expr.args)
        and not expr.keywords
        and not any(type(a) is ast.Starred for a in expr.args)
    )


def _indexed(expr: ast.expr, is_source: Callable[[ast.expr], bool], commas: Commas) -> bool:
    """``layers[-1]``, ``layers[::-1][0]``: one element of the collection."""
    if type(expr) is not ast.Subscript:
        return False
    elements = subscript_elements_in(commas, expr)
    return len(elements) == 1 and type(elements[0]) is not ast.Slice and is_source(_unwrapped(expr.value))


def _element_names(function: AstFunction, is_source: Callable[[ast.expr], bool], commas: Commas) -> set[str]:
    """Names bound to elements of the collection ``is_source`` recognises: ``for`` targets,
    tuple unpackings and one element taken by index (``layer = layers[-1]``)."""
    names: set[str] = set()
    for node in own_nodes(function):
        if isinstance(node, _FORS):
            names |= _loop_elements(node.target, node.iter, is_source, commas)
        elif type(node) is ast.Assign and is_source(node.value):
            for target in node.targets:
                if type(target) is ast.Tuple or type(target) is ast.List:
                    for element in target.elts:
                        value = _element_value(element)
                        if type(value) is ast.Name:
                            names.add(value.id)
        elif type(node) is ast.Assign and _indexed(node.value, is_source, commas):
            names |= {t.id for t in node.targets if type(t) is ast.Name}
    return names


def _runs(forward: AstFunction, parameter: str, calls: list[ast.Call], commas: Commas) -> bool:
    """Whether forward calls ``parameter`` or one of its elements."""

    def is_source(expr: ast.expr) -> bool:
        return type(expr) is ast.Name and expr.id == parameter

    callable_names = _element_names(forward, is_source, commas) | {parameter}
    return any(type(c.func) is ast.Name and c.func.id in callable_names for c in calls)


def _holders(backward: AstFunction, bctx: str, attr: str) -> set[str]:
    """Local names bound to ``ctx.ATTR`` in backward (``layers = ctx.layers``)."""
    names: set[str] = set()
    for node in own_nodes(backward):
        if type(node) is ast.Assign and _is_attr(node.value, bctx, attr):
            names |= {t.id for t in node.targets if type(t) is ast.Name}
    return names


def _elements(backward: AstFunction, bctx: str, attr: str, holders: set[str], commas: Commas) -> set[str]:
    def is_source(expr: ast.expr) -> bool:
        return _is_attr(expr, bctx, attr) or (type(expr) is ast.Name and expr.id in holders)

    return _element_names(backward, is_source, commas)


def _enables_grad(node: ast.AST) -> bool:
    if type(node) is not ast.Call:
        return False
    name = last_name(node)
    if name == "enable_grad":
        return True
    return name == "set_grad_enabled" and bool(node.args or node.keywords) and _is_true(_first_argument(node))


def _is_true(expr: ast.expr) -> bool:
    return type(expr) is ast.Constant and expr.value is True


def _recomputing_methods(module: ast.Module) -> dict[str, list[AstFunction]]:
    """Methods of the module's classes that run a part of their block inside ``with
    torch.enable_grad()``, by name."""
    found: dict[str, list[AstFunction]] = {}
    for statement in module.body:
        if type(statement) is not ast.ClassDef:
            continue
        for name, method in class_methods(statement).items():
            if name != "forward" and _runs_self_with_grad(method):
                found.setdefault(name, []).append(method)
    return found


def _grad_with(node: ast.AST) -> bool:
    return isinstance(node, _WITHS) and any(_enables_grad(item.context_expr) for item in node.items)


def _runs_self_with_grad(method: AstFunction) -> bool:
    params = positional_parameters(method)
    if not params:
        return False
    owner = params[0]

    def runs_self(node: ast.AST) -> bool:  # self(x), self.G(y), self.f.forward(y)
        if type(node) is not ast.Call:
            return False
        func = node.func
        while type(func) is ast.Attribute:
            func = func.value
        return type(func) is ast.Name and func.id == owner

    stack: list[tuple[ast.AST, bool]] = [(s, False) for s in reversed(method.body)]
    statement_switch = False  # torch.set_grad_enabled(True) as a statement: the rest of the method
    while stack:
        node, grad = stack.pop()
        if isinstance(node, _NOT_ENTERED):
            continue
        if _grad_with(node):
            grad = True
        elif type(node) is ast.Expr and _enables_grad(node.value):
            statement_switch = True
        if runs_self(node) and (grad or statement_switch):
            return True
        stack.extend(reversed([(child, grad) for child in fields_order_children(node)]))  # source order
    return False


def _reruns(backward: AstFunction, elements: set[str], recomputing: dict[str, list[AstFunction]]) -> tuple[list[ast.Call], str | None]:
    reruns: list[ast.Call] = []
    method: str | None = None
    stack: list[tuple[ast.AST, bool]] = [(s, False) for s in reversed(backward.body)]
    while stack:
        node, grad = stack.pop()
        if isinstance(node, _NOT_ENTERED):
            continue
        if _grad_with(node):
            grad = True
        if type(node) is ast.Call:
            func = node.func
            if type(func) is ast.Name and func.id in elements and grad:
                reruns.append(node)
            elif (
                type(func) is ast.Attribute
                and type(func.value) is ast.Name
                and func.value.id in elements
                and func.attr in recomputing
                and method in (None, func.attr)
            ):
                reruns.append(node)
                method = func.attr
        stack.extend(reversed([(child, grad) for child in fields_order_children(node)]))  # source order
    if method is not None:
        reruns = [c for c in reruns if type(c.func) is ast.Attribute]
    return reruns, method


def _asks_for_rng(call: ast.Call) -> bool:
    """``self.g(y1, set_rng=True)``: the block is asked to restore the RNG state it recorded."""
    return any(k.arg is not None and "rng" in k.arg.lower() and _is_true(k.value) for k in call.keywords)

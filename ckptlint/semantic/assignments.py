"""What value each target of a binding gets: the one answer every analysis asks.

Every form that binds a name or an attribute is read here, and nowhere else:

- ``x = v``; chained ``a = b = v`` (each target gets ``v``); annotated ``x: T = v``;
- unpacking ``a, (b, *c) = v`` into tuple, list and starred targets: element-wise when ``v``
  is a tuple or list display of matching length (``self.fc, self.bn = nn.Linear(4, 4),
  nn.BatchNorm1d(4)``), else the target gets position ``i`` of ``v`` (a :attr:`Assigned.path`
  step the evaluator may follow through a known function result); a starred target gets an
  unknown list;
- augmented ``x += v`` (:attr:`Assigned.kind` ``AUGMENTED``: the target combines its old
  value with ``v``); walrus ``(x := v)``;
- ``for t in v`` and comprehension targets (an element of ``v``: step :data:`EACH`);
  ``with m as t`` (what entering ``m`` returns: step :data:`ENTER`);
- ``setattr(obj, "name", v)`` with a literal name; class-level attributes are the
  assignments of a class body.

The semantic model binds names with it (``Binding.assigned``); class summaries, home-made
recompute functions and the checkpoint site finder read ``self.X``/``ctx.X`` with it.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from ckptlint.facts.context_managers import ENTER_RETURNS_ARGUMENT
from ckptlint.semantic.bindings import EACH, ENTER, Assigned, BindingKind

__all__ = ["EACH", "ENTER", "Assigned", "assignments", "attribute_name", "candidate_values", "textual_key"]

#: The nodes :func:`assignments` reads (libcst's concrete classes, never subclassed).
BINDING_NODES = frozenset(
    {cst.Assign, cst.AnnAssign, cst.AugAssign, cst.NamedExpr, cst.For, cst.CompFor, cst.WithItem, cst.Call}
)


def textual_key(expr: cst.BaseExpression) -> str | None:
    """The string a string literal spells (``"drop"``, ``'a' 'b'``); ``None`` for anything else."""
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


def assignments(
    node: cst.CSTNode, key: Callable[[cst.BaseExpression], str | None] = textual_key
) -> list[Assigned]:
    """Every elementary target ``node`` binds, with where its value comes from (see the
    module docstring for the forms); ``[]`` for a node that binds nothing. ``key`` reads
    the attribute name of ``setattr(obj, name, v)`` (a literal string by default; a caller
    may follow constants); a ``setattr`` whose name it cannot read binds nothing."""
    out: list[Assigned] = []
    kind = type(node)
    if kind is cst.Assign:
        for target in node.targets:  # type: ignore[attr-defined]
            _unpack(node, BindingKind.ASSIGNMENT, target.target, node.value, (), out)  # type: ignore[attr-defined]
    elif kind is cst.AnnAssign:
        _unpack(node, BindingKind.ASSIGNMENT, node.target, node.value, (), out)  # type: ignore[attr-defined]
    elif kind is cst.AugAssign:
        _unpack(node, BindingKind.AUGMENTED, node.target, node.value, (), out)  # type: ignore[attr-defined]
    elif kind is cst.NamedExpr:
        _unpack(node, BindingKind.WALRUS, node.target, node.value, (), out)  # type: ignore[attr-defined]
    elif kind in (cst.For, cst.CompFor):
        _unpack(node, BindingKind.LOOP, node.target, node.iter, (EACH,), out)  # type: ignore[attr-defined]
    elif kind is cst.WithItem:
        if node.asname is not None:  # type: ignore[attr-defined]
            _unpack(node, BindingKind.WITH, node.asname.name, node.item, (ENTER,), out)  # type: ignore[attr-defined]
    elif kind is cst.Call:
        call: cst.Call = node  # type: ignore[assignment]
        if isinstance(call.func, cst.Name) and call.func.value == "setattr" and len(call.args) == 3:
            if not any(a.star or a.keyword is not None for a in call.args):
                name = key(call.args[1].value)
                if name is not None:
                    obj = call.args[0].value
                    out.append(Assigned(node, BindingKind.ASSIGNMENT, obj, call.args[2].value, (), obj, name))
    return out


def _unpack(
    node: cst.CSTNode,
    kind: BindingKind,
    target: cst.BaseExpression,
    value: cst.BaseExpression | None,
    path: tuple[int | str, ...],
    out: list[Assigned],
) -> None:
    if isinstance(target, (cst.Tuple, cst.List)):
        elements = list(target.elements)
        count = len(elements)
        stars = [i for i, e in enumerate(elements) if isinstance(e, cst.StarredElement)]
        star = stars[0] if len(stars) == 1 else None
        items = _display_items(value) if not path else None
        for index, element in enumerate(elements):
            inner = element.value
            if isinstance(element, cst.StarredElement) or len(stars) > 1:
                _unpack(node, kind, inner, None, (), out)  # a list of the rest: not known
                continue
            position = index if star is None or index < star else index - count
            if items is not None:
                fits = len(items) == count if star is None else len(items) >= count - 1
                _unpack(node, kind, inner, items[position] if fits else None, (), out)
            elif value is not None:
                _unpack(node, kind, inner, value, (*path, position), out)
            else:
                _unpack(node, kind, inner, None, (), out)
        return
    if isinstance(target, cst.StarredElement):
        _unpack(node, kind, target.value, None, (), out)
        return
    if value is None:
        path = ()
    owner = target.value if isinstance(target, cst.Attribute) else None
    attr = target.attr.value if isinstance(target, cst.Attribute) else None
    out.append(Assigned(node, kind, target, value, path, owner, attr))


def _display_items(value: cst.BaseExpression | None) -> list[cst.BaseExpression] | None:
    """The elements of a tuple or list display without starred elements; else ``None``."""
    if isinstance(value, (cst.Tuple, cst.List)) and not any(isinstance(e, cst.StarredElement) for e in value.elements):
        return [e.value for e in value.elements]
    return None


def attribute_name(assigned: Assigned, owner: str) -> str | None:
    """The attribute ``assigned`` sets on the object named ``owner`` (``"fc"`` for
    ``self.fc = v`` or ``setattr(self, "fc", v)`` with ``owner="self"``); else ``None``."""
    if isinstance(assigned.owner, cst.Name) and assigned.owner.value == owner:
        return assigned.attr
    return None


def candidate_values(
    assigned: Assigned, qualified_names: Callable[[cst.BaseExpression], frozenset[str]] | None = None
) -> list[cst.BaseExpression] | None:
    """The expressions the target may hold, as far as the text says: ``[value]`` for a
    whole value; each element of a tuple, list or set display for a loop (then positions
    into each element); the argument of ``contextlib.nullcontext(x)`` for ``with`` (when
    ``qualified_names`` is given); ``None`` when a step is not readable from the text (a
    function result, an augmented target)."""
    if assigned.value is None or assigned.kind is BindingKind.AUGMENTED:
        return None
    current = [assigned.value]
    for step in assigned.path:
        following: list[cst.BaseExpression] = []
        for expr in current:
            if step == EACH:
                items = _display_items(expr) if not isinstance(expr, cst.Set) else [e.value for e in expr.elements]
            elif step == ENTER:
                items = _entered(expr, qualified_names)
            else:
                items = _display_items(expr)
                items = [items[step]] if items is not None and -len(items) <= step < len(items) else None  # type: ignore[index,operator]
            if items is None:
                return None
            following += items
        current = following
    return current


def _entered(
    expr: cst.BaseExpression, qualified_names: Callable[[cst.BaseExpression], frozenset[str]] | None
) -> list[cst.BaseExpression] | None:
    if qualified_names is None or not isinstance(expr, cst.Call):
        return None
    for name in qualified_names(expr.func):
        keyword = ENTER_RETURNS_ARGUMENT.get(name)
        if keyword is None:
            continue
        for index, arg in enumerate(expr.args):
            if arg.star:
                return None
            if (arg.keyword is None and index == 0) or (arg.keyword is not None and arg.keyword.value == keyword):
                return [arg.value]
        return None
    return None

"""What value each target of a binding gets: the one answer every analysis asks. Every form
that binds a name or an attribute is read here: plain, chained (each target gets the value),
annotated (with or without a value), unpacked (element-wise for a display of matching length,
else a position of the value; a starred target gets an unknown list), augmented (the target
combines its old value with the new), walrus, ``for`` and comprehension targets (step
:data:`EACH`), ``with ... as`` (step :data:`ENTER`) and ``setattr(obj, "name", v)`` with a
literal name. The model binds names with it (``Binding.assigned``); class summaries and the
site finder read ``self.X`` with it.

The binding node of a comprehension target is its ``ast.comprehension``, of a ``with`` target
its ``ast.withitem``; neither has a position in ``ast``, the target has.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from ckptlint.facts.context_managers import ENTER_RETURNS_ARGUMENT
from ckptlint.semantic.bindings import EACH, ENTER, Assigned, BindingKind

__all__ = ["AstAssigned", "assignments", "attribute_name", "candidate_values", "textual_key"]

AstAssigned = Assigned[ast.AST, ast.expr]


def textual_key(expr: ast.expr) -> str | None:
    """The string a string literal spells (``"drop"``, ``'a' 'b'``); ``None`` for anything
    else (bytes, f-strings)."""
    if type(expr) is ast.Constant and type(expr.value) is str:
        return expr.value
    return None


def assignments(node: ast.AST, key: Callable[[ast.expr], str | None] = textual_key) -> list[AstAssigned]:
    """Every elementary target ``node`` binds, with where its value comes from; ``[]`` for
    a node that binds nothing. ``key`` reads the attribute name of ``setattr(obj, name, v)``
    (a literal string by default); a ``setattr`` whose name it cannot read binds nothing."""
    out: list[AstAssigned] = []
    kind = type(node)
    if kind is ast.Assign:
        assign: ast.Assign = node  # type: ignore[assignment]
        for target in assign.targets:
            _unpack(node, BindingKind.ASSIGNMENT, target, assign.value, (), out)
    elif kind is ast.AnnAssign:
        annotated: ast.AnnAssign = node  # type: ignore[assignment]
        _unpack(node, BindingKind.ASSIGNMENT, annotated.target, annotated.value, (), out)
    elif kind is ast.AugAssign:
        augmented: ast.AugAssign = node  # type: ignore[assignment]
        _unpack(node, BindingKind.AUGMENTED, augmented.target, augmented.value, (), out)
    elif kind is ast.NamedExpr:
        walrus: ast.NamedExpr = node  # type: ignore[assignment]
        _unpack(node, BindingKind.WALRUS, walrus.target, walrus.value, (), out)
    elif kind is ast.For or kind is ast.AsyncFor or kind is ast.comprehension:
        loop: ast.For | ast.AsyncFor | ast.comprehension = node  # type: ignore[assignment]
        _unpack(node, BindingKind.LOOP, loop.target, loop.iter, (EACH,), out)
    elif kind is ast.withitem:
        item: ast.withitem = node  # type: ignore[assignment]
        if item.optional_vars is not None:
            _unpack(node, BindingKind.WITH, item.optional_vars, item.context_expr, (ENTER,), out)
    elif kind is ast.Call:
        call: ast.Call = node  # type: ignore[assignment]
        func = call.func
        if (
            type(func) is ast.Name
            and func.id == "setattr"
            and len(call.args) == 3
            and not call.keywords
            and not any(type(a) is ast.Starred for a in call.args)
        ):
            name = key(call.args[1])
            if name is not None:
                obj = call.args[0]
                out.append(Assigned(node, BindingKind.ASSIGNMENT, obj, call.args[2], (), obj, name))
    return out


def _unpack(
    node: ast.AST,
    kind: BindingKind,
    target: ast.expr,
    value: ast.expr | None,
    path: tuple[int | str, ...],
    out: list[AstAssigned],
) -> None:
    target_kind = type(target)
    if target_kind is ast.Tuple or target_kind is ast.List:
        elements: list[ast.expr] = target.elts  # type: ignore[attr-defined]
        count = len(elements)
        stars = [i for i, e in enumerate(elements) if type(e) is ast.Starred]
        star = stars[0] if len(stars) == 1 else None
        items = _display_items(value) if not path else None
        for index, element in enumerate(elements):
            if type(element) is ast.Starred or len(stars) > 1:
                inner = element.value if type(element) is ast.Starred else element
                _unpack(node, kind, inner, None, (), out)  # a list of the rest: not known
                continue
            position = index if star is None or index < star else index - count
            if items is not None:
                fits = len(items) == count if star is None else len(items) >= count - 1
                _unpack(node, kind, element, items[position] if fits else None, (), out)
            elif value is not None:
                _unpack(node, kind, element, value, (*path, position), out)
            else:
                _unpack(node, kind, element, None, (), out)
        return
    if target_kind is ast.Starred:
        _unpack(node, kind, target.value, None, (), out)  # type: ignore[attr-defined]
        return
    if value is None:
        path = ()
    if target_kind is ast.Attribute:
        attribute: ast.Attribute = target  # type: ignore[assignment]
        out.append(Assigned(node, kind, target, value, path, attribute.value, attribute.attr))
    else:
        out.append(Assigned(node, kind, target, value, path))


def _display_items(value: ast.expr | None) -> list[ast.expr] | None:
    """The elements of a tuple or list display without starred elements; else ``None``."""
    if (type(value) is ast.Tuple or type(value) is ast.List) and not any(
        type(e) is ast.Starred for e in value.elts
    ):
        return list(value.elts)
    return None


def attribute_name(assigned: AstAssigned, owner: str) -> str | None:
    """The attribute ``assigned`` sets on the object named ``owner`` (``"fc"`` for ``self.fc =
    v`` or ``setattr(self, "fc", v)`` with ``owner="self"``); else ``None``."""
    if type(assigned.owner) is ast.Name and assigned.owner.id == owner:
        return assigned.attr
    return None


def candidate_values(
    assigned: AstAssigned, qualified_names: Callable[[ast.expr], frozenset[str]] | None = None
) -> list[ast.expr] | None:
    """The expressions the target may hold, as far as the text says: ``[value]`` for a whole
    value; each element of a display for a loop; the argument of ``contextlib.nullcontext(x)``
    for ``with`` (when ``qualified_names`` is given); ``None`` when a step is not readable
    from the text (a function result, an augmented target)."""
    if assigned.value is None or assigned.kind is BindingKind.AUGMENTED:
        return None
    current = [assigned.value]
    for step in assigned.path:
        following: list[ast.expr] = []
        for expr in current:
            if step == EACH:
                items = list(expr.elts) if type(expr) is ast.Set else _display_items(expr)
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


def _entered(expr: ast.expr, qualified_names: Callable[[ast.expr], frozenset[str]] | None) -> list[ast.expr] | None:
    if qualified_names is None or type(expr) is not ast.Call:
        return None
    call: ast.Call = expr
    for name in qualified_names(call.func):
        keyword = ENTER_RETURNS_ARGUMENT.get(name)
        if keyword is None:
            continue
        given: list[ast.expr | ast.keyword] = [*call.args, *call.keywords]
        ordered = sorted(given, key=lambda a: (a.lineno, a.col_offset))
        for index, arg in enumerate(ordered):
            if type(arg) is ast.Starred or (type(arg) is ast.keyword and arg.arg is None):
                return None
            if type(arg) is not ast.keyword and index == 0:
                return [arg]  # type: ignore[list-item]
            if type(arg) is ast.keyword and arg.arg == keyword:
                return [arg.value]
        return None
    return None

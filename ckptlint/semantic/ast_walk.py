"""Fast reading of CPython ``ast`` trees: a node's children, where a node starts, the names
a ``Name``/``Attribute`` chain spells, the readings rules share (a class's methods, a
function's positional parameters and own nodes, a callee's last name), and the walks of a
function's body and of a tree in the order findings have always come out in.

``ast.iter_child_nodes`` is a generator that reads every field, the context and operator
singletons (``Load()``, ``Add()``) included; :func:`child_nodes` reads, per node class, only the
fields that can hold a node, with one ``operator.attrgetter``, and returns a list.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from operator import attrgetter

__all__ = [
    "FUNCTIONS",
    "base_name",
    "child_nodes",
    "class_methods",
    "dotted_name",
    "fields_order_children",
    "iter_tree",
    "last_name",
    "nodes_of_function",
    "own_nodes",
    "positional_parameters",
    "start",
]

#: ``def`` and ``async def``.
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_NOT_ENTERED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)

#: Fields that never hold a child node: names and flags, and the shared context and operator
#: singletons (``ctx``, ``op``, ``ops``), which are no part of the source.
_SCALAR_FIELDS = frozenset(
    {"ctx", "op", "ops", "id", "arg", "attr", "name", "asname", "module", "level", "kind", "type_comment",
     "is_async", "simple", "conversion", "tag", "lineno"}
)
_GETTERS: dict[type, Callable[[ast.AST], tuple[object, ...]]] = {}


def _no_fields(node: ast.AST) -> tuple[object, ...]:
    return ()


def _getter(kind: type) -> Callable[[ast.AST], tuple[object, ...]]:
    names = [] if kind is ast.Constant else [f for f in kind._fields if f not in _SCALAR_FIELDS]  # type: ignore[attr-defined]
    if not names:
        getter = _no_fields
    elif len(names) == 1:
        single = attrgetter(names[0])

        def getter(node: ast.AST) -> tuple[object, ...]:
            return (single(node),)
    else:
        getter = attrgetter(*names)  # type: ignore[assignment]
    _GETTERS[kind] = getter
    return getter


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """The child nodes of ``node`` in field order (``ast.iter_child_nodes`` without the
    context and operator singletons)."""
    getter = _GETTERS.get(type(node)) or _getter(type(node))
    found: list[ast.AST] = []
    for value in getter(node):
        if type(value) is list:
            found.extend([item for item in value if isinstance(item, ast.AST)])
        elif isinstance(value, ast.AST):
            found.append(value)
    return found


def start(node: ast.AST) -> tuple[int, int]:
    """Where ``node`` starts, as CPython reports it: ``(line, UTF-8 byte column)``, both as
    ``ast`` counts them. A node without a position (``comprehension``, ``withitem``,
    ``arguments``, ``match_case``) starts where its first child does."""
    lineno = getattr(node, "lineno", None)
    if lineno is not None:
        return lineno, node.col_offset  # type: ignore[attr-defined]
    starts = [start(child) for child in child_nodes(node)]
    return min(starts) if starts else (0, 0)


def dotted_name(expr: ast.AST | None) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else ``None``."""
    if type(expr) is ast.Name:
        return expr.id
    if type(expr) is ast.Attribute:
        base = dotted_name(expr.value)
        return f"{base}.{expr.attr}" if base is not None else None
    return None


def base_name(expr: ast.AST) -> str | None:
    """The leftmost name of ``a.b[c].d``, or ``None`` when it is not a plain name."""
    while type(expr) is ast.Attribute or type(expr) is ast.Subscript:
        expr = expr.value
    return expr.id if type(expr) is ast.Name else None


def last_name(expr: ast.AST) -> str:
    """The last name of a dotted expression (``torch.cuda.amp.custom_bwd`` -> ``custom_bwd``),
    of the called expression for a call; ``""`` for anything else."""
    if type(expr) is ast.Call:
        expr = expr.func
    if type(expr) is ast.Attribute:
        return expr.attr
    if type(expr) is ast.Name:
        return expr.id
    return ""


def class_methods(node: ast.ClassDef) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """The ``def`` statements of a class body, by name (the last one of a name wins)."""
    return {s.name: s for s in node.body if isinstance(s, FUNCTIONS)}


def positional_parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The names of ``function``'s positional-only and positional-or-keyword parameters, in order."""
    return [p.arg for p in (*function.args.posonlyargs, *function.args.args)]


def fields_order_children(node: ast.AST) -> list[ast.AST]:
    """The children of ``node`` in source order where it differs from :func:`child_nodes`'s
    field order: a dict's keys and values alternate, a call's arguments are in source order
    (``ast`` keeps keywords apart); and an ``except`` clause's body comes before its type.
    Walks that stop at the first match or keep a list read their nodes in this order, so that
    findings come out in the order they always did."""
    kind = type(node)
    if kind is ast.Dict:
        found: list[ast.AST] = []
        for key, value in zip(node.keys, node.values, strict=True):  # type: ignore[attr-defined]
            if key is not None:
                found.append(key)
            found.append(value)
        return found
    if kind is ast.Call:
        call: ast.Call = node  # type: ignore[assignment]
        arguments: list[ast.AST] = [*call.args, *call.keywords]
        if call.args and call.keywords:
            arguments.sort(key=lambda a: (a.lineno, a.col_offset))  # type: ignore[attr-defined]
        return [call.func, *arguments]
    if kind is ast.ExceptHandler:
        handler: ast.ExceptHandler = node  # type: ignore[assignment]
        return [*handler.body, *([handler.type] if handler.type is not None else [])]
    return child_nodes(node)


def own_nodes(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """Every node of ``function``'s body, not entering nested ``def``, ``class`` and lambdas,
    last statement first, each node before its children, later children first
    (:func:`fields_order_children`): the order rules have always read them in."""
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _NOT_ENTERED):
            continue
        stack.extend(fields_order_children(node))


#: What :func:`nodes_of_function` yields but does not enter: nested ``def``/``class`` run only
#: when called; the names of ``global``, ``nonlocal`` and imports are no expressions that run.
_FRAME_NOT_ENTERED = (
    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Global, ast.Nonlocal, ast.Import, ast.ImportFrom
)


def nodes_of_function(
    function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
    decide: Callable[[ast.expr], bool | None] | None = None,
) -> Iterator[ast.AST]:
    """Every node of ``function``'s body (a lambda's expression), parents before children and
    in source order (:func:`fields_order_children`), not entering nested
    ``def`` and ``class`` statements; lambdas and comprehensions are entered. With ``decide``
    (a test -> ``True``/``False``/``None`` for undecided), the branch of an ``if`` statement or
    expression that cannot run is skipped: its test is walked, then the branch taken."""
    stack: list[ast.AST] = [function.body] if isinstance(function, ast.Lambda) else list(reversed(function.body))
    while stack:
        node = stack.pop()
        yield node
        kind = type(node)
        if kind in _FRAME_NOT_ENTERED:
            continue
        if decide is not None and (kind is ast.If or kind is ast.IfExp):
            choice: ast.If | ast.IfExp = node  # type: ignore[assignment]
            taken = decide(choice.test)
            if taken is not None:
                branch = choice.body if taken else choice.orelse
                if isinstance(branch, list):
                    stack.extend(reversed(branch))
                else:
                    stack.append(branch)
                stack.append(choice.test)
                continue
        found = fields_order_children(node)
        found.reverse()
        stack.extend(found)


def iter_tree(root: ast.AST) -> Iterator[ast.AST]:
    """``root`` and every node below it, parents before children, in source order
    (:func:`fields_order_children`)."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        found = fields_order_children(node)
        found.reverse()
        stack.extend(found)

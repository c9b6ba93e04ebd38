"""The calls of a function when the linted module shows all of them, on CPython's ``ast``
(the rules are in :mod:`ckptlint.checkpoint.sites.callers`' docstring): :func:`calls_of`
gives the calls in the order :func:`libcst_order` walks the tree (parents first, children
in field order, with a few exceptions: the order findings have always been reported in), so
the first call's condition orders the parts the calls share. Read by
:mod:`ckptlint.checkpoint.sites.ast_guards`.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ckptlint.checkpoint.sites.callers import word_occurrences
from ckptlint.semantic.ast_walk import FUNCTIONS, fields_order_children, last_name

if TYPE_CHECKING:
    from ckptlint.semantic.ast_analysis import AstAnalysis

__all__ = ["calls_of", "libcst_order"]

AstFunction = ast.FunctionDef | ast.AsyncFunctionDef

#: Methods that Python or ``nn.Module.__call__`` call: their callers are never all in the module.
_CALLED_BY_THE_RUNTIME = frozenset({"forward", "_call_impl", "_wrapped_call_impl"})


def calls_of(analysis: AstAnalysis, function: AstFunction) -> list[ast.Call] | None:
    """Every call of ``function`` (of ``analysis``), when the module shows all of them and
    there is at least one; else ``None`` (rules: :mod:`ckptlint.checkpoint.sites.callers`)."""
    name = function.name
    owner = _owner(analysis, function)
    if owner is None or name in _CALLED_BY_THE_RUNTIME or (name.startswith("__") and name.endswith("__")):
        return None
    if isinstance(owner, ast.Module) and not name.startswith("_"):
        return None
    named = _calls_by_name(analysis).get(name, [])
    namesakes = _namesakes(analysis, owner, name) if isinstance(owner, ast.ClassDef) else []
    if namesakes is None:
        return None
    calls = named
    if namesakes:  # the calls inside those classes call their own method
        calls = [c for c in calls if not any(_self_call(analysis, c, other) for other in namesakes)]
    if not calls or _occurrences(analysis, name) != len(named) + 1 + len(namesakes):
        return None
    model = analysis.model
    for call in calls:
        if any(ancestor is function for ancestor in model.ancestors(call)):
            return None
        if isinstance(owner, ast.ClassDef) and not _self_call(analysis, call, owner):
            return None
        if not isinstance(owner, ast.ClassDef) and not isinstance(call.func, ast.Name):
            return None
    return calls


def _namesakes(analysis: AstAnalysis, owner: ast.ClassDef, name: str) -> list[ast.ClassDef] | None:
    """The other classes of the module that define a method ``name`` in their own body;
    ``None`` when one of them is a base or a subclass of ``owner`` by name."""
    found: list[ast.ClassDef] = []
    for node in _classes_by_method(analysis).get(name, []):
        if node is owner:
            continue
        bases = {last_name(b.value if isinstance(b, ast.Starred) else b) for b in (*owner.bases, *node.bases)}
        if {node.name, owner.name} & bases:
            return None
        found.append(node)
    return found


def _owner(analysis: AstAnalysis, function: AstFunction) -> ast.AST | None:
    """The class, function or module whose body defines ``function`` (``None`` when it is
    nested in another statement)."""
    parent = analysis.model.parent(function)
    return parent if isinstance(parent, (ast.ClassDef, *FUNCTIONS, ast.Module)) else None


def _self_call(analysis: AstAnalysis, call: ast.Call, cls: ast.ClassDef) -> bool:
    """Whether ``call`` is ``<first parameter>.name(...)`` in a method of ``cls``."""
    func = call.func
    if not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name):
        return False
    method: AstFunction | None = None
    for ancestor in analysis.model.ancestors(call):
        if isinstance(ancestor, FUNCTIONS):
            method = ancestor
        elif isinstance(ancestor, ast.ClassDef):
            break
    else:
        return False
    if ancestor is not cls or method is None or not method.args.args:
        return False
    return method.args.args[0].arg == func.value.id


def _classes_by_method(analysis: AstAnalysis) -> dict[str, list[ast.ClassDef]]:
    """The module's classes by the names of the methods their own bodies define, built once
    per module."""
    cached = analysis.derived.get("classes_by_method")
    if isinstance(cached, dict):
        return cached
    index: dict[str, list[ast.ClassDef]] = {}
    for node in ast.walk(analysis.tree):
        if isinstance(node, ast.ClassDef):
            for method in dict.fromkeys(s.name for s in node.body if isinstance(s, FUNCTIONS)):
                index.setdefault(method, []).append(node)
    analysis.derived["classes_by_method"] = index
    return index


def _calls_by_name(analysis: AstAnalysis) -> dict[str, list[ast.Call]]:
    """The module's calls by the last name of what they call (``f(...)``, ``x.f(...)``), in
    the order :func:`libcst_order` walks them, built once per module."""
    cached = analysis.derived.get("calls_by_name")
    if isinstance(cached, dict):
        return cached
    index: dict[str, list[ast.Call]] = {}
    for node in libcst_order(analysis.tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if name is not None:
                index.setdefault(name, []).append(node)
    analysis.derived["calls_by_name"] = index
    return index


def libcst_order(root: ast.AST) -> list[ast.AST]:
    """``root`` and every node below it, parents first, children in field order
    (:func:`~ckptlint.semantic.ast_walk.fields_order_children`; a class's body
    before its bases and decorators, a parameter's default with it, a ``case``'s body before
    its guard): the order findings have always been reported in (the function is named after
    the parser that first defined it)."""
    found: list[ast.AST] = []
    stack = [root]
    while stack:
        node = stack.pop()
        found.append(node)
        children = _children(node)
        children.reverse()
        stack.extend(children)
    return found


def _children(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.ClassDef):
        return [*node.body, *node.bases, *node.keywords, *node.decorator_list]
    if isinstance(node, ast.arguments):
        return _parameters(node)
    if isinstance(node, ast.match_case):
        return [node.pattern, *node.body, *([node.guard] if node.guard is not None else [])]
    return fields_order_children(node)


def _parameters(arguments: ast.arguments) -> list[ast.AST]:
    """The parameters in walk order (positional, ``*``, keyword-only, ``**``,
    positional-only), each with its annotation and default."""
    positional = [*arguments.posonlyargs, *arguments.args]
    defaults: dict[int, ast.expr | None] = {}
    for param, default in zip(positional[len(positional) - len(arguments.defaults) :], arguments.defaults, strict=True):
        defaults[id(param)] = default
    for param, kw_default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
        defaults[id(param)] = kw_default
    found: list[ast.AST] = []
    ordered = [*arguments.args, arguments.vararg, *arguments.kwonlyargs, arguments.kwarg, *arguments.posonlyargs]
    for one in ordered:
        if one is None:
            continue
        found.append(one)
        value = defaults.get(id(one))
        if value is not None:
            found.append(value)
    return found


def _occurrences(analysis: AstAnalysis, name: str) -> int:
    return word_occurrences(analysis.derived, analysis.source.text, name)

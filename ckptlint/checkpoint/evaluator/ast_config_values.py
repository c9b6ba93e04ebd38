"""The values a module itself gives a field of its configuration class, on CPython's ``ast``:
the choices of a configuration string that its shipped configurations can select
(:mod:`ckptlint.checkpoint.evaluator.config_values` says what is read and holds the limit).

A class whose body sits on the ``class`` line declares no field; the
field's position among a helper's parameters (followed to what the module's calls pass by
position) counts its positional-or-keyword parameters only, not the positional-only ones.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ckptlint.checkpoint.evaluator.config_values import MAX_CHOICES
from ckptlint.checkpoint.sites.ast_options import literal_value
from ckptlint.checkpoint.sites.options import NOT_LITERAL
from ckptlint.semantic.ast_lines import body_on_header

if TYPE_CHECKING:
    from ckptlint.semantic.ast_analysis import AstAnalysis

__all__ = ["MAX_CHOICES", "annotated_class", "shipped_values"]

#: How many helpers deep a keyword's value is followed (``_nfres_cfg(attn_layer='se')``).
_MAX_HELPERS = 2
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def annotated_class(analysis: AstAnalysis, param: ast.arg) -> ast.ClassDef | None:
    """The class of ``analysis``'s module that ``param`` is annotated with (``cfg: NfCfg``),
    when it has no ``__init__`` of its own; else ``None``."""
    if not isinstance(param.annotation, ast.Name):
        return None
    name = param.annotation.id
    for statement in analysis.tree.body:
        if isinstance(statement, ast.ClassDef) and statement.name == name:
            if any(isinstance(s, _FUNCTIONS) and s.name == "__init__" for s in statement.body):
                return None
            return statement
    return None


def _fields(analysis: AstAnalysis, cls: ast.ClassDef) -> list[tuple[str, ast.AnnAssign]]:
    """The annotated names of ``cls``'s body with their statements (none in a body on the
    ``class`` line)."""
    if body_on_header(analysis.model, cls.body):
        return []
    return [(s.target.id, s) for s in cls.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]


def shipped_values(analysis: AstAnalysis, cls: ast.ClassDef, field: str) -> frozenset[object] | None:
    """The values ``analysis``'s module gives field ``field`` of its class ``cls``, ``None``
    when one of them is unknown."""
    found: set[object] = set()
    declared = False
    fields = _fields(analysis, cls)
    for name, statement in fields:
        if name == field:
            declared = True
            if statement.value is not None and not _add(found, _literal(statement.value, analysis)):
                return None
    if not declared:
        return None
    names = [name for name, _ in fields]
    index = names.index(field)
    for node in ast.walk(analysis.tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Attribute) and t.attr == field for t in targets):
                return None  # `cfg.attn_layer = ...`: set after construction
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        starred = any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords)
        if called == cls.name:
            if starred or len(node.args) > index:
                return None  # `NfCfg(**kw)`, or the field passed by position
        elif called != "replace":  # `dataclasses.replace(cfg, attn_layer=...)`
            continue
        elif any(k.arg is None and not _var_keyword(analysis, k.value) for k in node.keywords):
            return None  # `replace(cfg, **kwargs)` of the caller's `**kwargs` is no shipped value
        for keyword in node.keywords:
            if keyword.arg == field:
                values = _argument_values(analysis, keyword.value, 0)
                if values is None:
                    return None
                found |= values
    return frozenset(found) if len(found) <= MAX_CHOICES else None


def _default(function: ast.FunctionDef | ast.AsyncFunctionDef, param: ast.arg) -> ast.expr | None:
    """The default of ``function``'s parameter ``param``, ``None`` when it has none."""
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    for index, one in enumerate(positional):
        if one is param:
            offset = index - (len(positional) - len(args.defaults))
            return args.defaults[offset] if offset >= 0 else None
    for one, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if one is param:
            return default
    return None


def _argument_values(analysis: AstAnalysis, value: ast.expr, level: int) -> set[object] | None:
    """The values an argument written in ``analysis`` may have: a literal, or a parameter of the
    module-level function around it, followed to its default and to what the module's calls of
    the function pass for it."""
    literal = _literal(value, analysis)
    if literal is not NOT_LITERAL:
        return {literal} if _hashable(literal) else None
    if not isinstance(value, ast.Name) or level >= _MAX_HELPERS:
        return None
    function = analysis.model.enclosing(value, *_FUNCTIONS)
    if not isinstance(function, _FUNCTIONS) or not any(s is function for s in analysis.tree.body):
        return None
    params = list(function.args.args)
    param = next((p for p in (*params, *function.args.kwonlyargs) if p.arg == value.id), None)
    if param is None or any(
        isinstance(n, (ast.Assign, ast.AugAssign)) and value.id in _assigned_names(n)
        for statement in function.body
        for n in ast.walk(statement)
    ):
        return None
    found: set[object] = set()
    default = _default(function, param)
    if default is not None and not _add(found, _literal(default, analysis)):
        return None
    position = next((i for i, p in enumerate(params) if p is param), None)
    for node in ast.walk(analysis.tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == function.name):
            continue
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return None
        passed = [k.value for k in node.keywords if k.arg == param.arg]
        if position is not None and len(node.args) > position:
            passed.append(node.args[position])
        for arg in passed:
            values = _argument_values(analysis, arg, level + 1)
            if values is None:
                return None
            found |= values
    return found


def _var_keyword(analysis: AstAnalysis, value: ast.expr) -> bool:
    """Whether ``value`` is the ``**kwargs`` parameter of the function around it."""
    function = analysis.model.enclosing(value, *_FUNCTIONS)
    star = function.args.kwarg if isinstance(function, _FUNCTIONS) else None
    return isinstance(value, ast.Name) and star is not None and star.arg == value.id


def _assigned_names(node: ast.Assign | ast.AugAssign) -> set[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return {t.id for t in targets if isinstance(t, ast.Name)}


def _literal(expr: ast.expr, analysis: AstAnalysis) -> object:
    return literal_value(expr, analysis.model)


def _hashable(value: object) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _add(found: set[object], value: object) -> bool:
    """Adds a known, hashable ``value``; ``False`` when it is neither."""
    if value is NOT_LITERAL or not _hashable(value):
        return False
    found.add(value)
    return True

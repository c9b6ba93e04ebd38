"""The values a module itself gives a field of its configuration class: the choices of a
configuration string that its shipped configurations can select.

A model family picks a layer by a string of its configuration (timm's NFNet: ``get_attn(
cfg.attn_layer)``, an ``if``/``elif`` chain over attention names, ``cfg`` a parameter annotated
with the module's ``@dataclass NfCfg``). The module's own table (``model_cfgs = dict(nfnet_f0=
_nfnet_cfg(...), ...)``) gives that field only some strings (``"se"``, ``"eca"``, the default
``None``): :func:`shipped_values` collects them, so a branch that no shipped configuration
takes is not judged. Only the module that defines the class is read (locality): the class's
default for the field, every ``field=`` keyword of the module's calls of the class and of
``dataclasses.replace``, and a helper's parameter passed on as that keyword
(``attn_layer=attn_layer``), followed to its default and to what the module's calls of the
helper pass. The caller's keywords laid over a configuration (timm's ``cfg = replace(cfg, **kwargs)``, the
model's own ``**kwargs``) are no shipped value and are not counted. Anything else (a positional
argument for the field, ``NfCfg(**kw)``, a value that is not a literal, a write of ``.field``)
makes the set unknown (``None``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.checkpoint.sites.options import NOT_LITERAL, literal_value
from ckptlint.semantic.walk import iter_tree

if TYPE_CHECKING:
    from ckptlint.semantic.analysis import ModuleAnalysis

__all__ = ["MAX_CHOICES", "annotated_class", "shipped_values"]

#: Most values a field may have for its set to be used (past it: unknown).
MAX_CHOICES = 32

#: How many helpers deep a keyword's value is followed (``_nfres_cfg(attn_layer='se')``).
_MAX_HELPERS = 2


def annotated_class(analysis: ModuleAnalysis, param: cst.Param) -> cst.ClassDef | None:
    """The class of ``analysis``'s module that ``param`` is annotated with (``cfg: NfCfg``,
    ``cfg: Optional[NfCfg]`` not read), when it declares its fields in its body and has no
    ``__init__`` of its own (a ``@dataclass`` or a ``NamedTuple``)."""
    if param.annotation is None or not isinstance(param.annotation.annotation, cst.Name):
        return None
    name = param.annotation.annotation.value
    for statement in analysis.module.body:
        if isinstance(statement, cst.ClassDef) and statement.name.value == name:
            body = statement.body.body
            if any(isinstance(s, cst.FunctionDef) and s.name.value == "__init__" for s in body):
                return None
            return statement
    return None


def shipped_values(analysis: ModuleAnalysis, cls: cst.ClassDef, field: str) -> frozenset[object] | None:
    """The values ``analysis``'s module gives field ``field`` of its class ``cls`` (see the
    module's docstring), ``None`` when one of them is unknown."""
    found: set[object] = set()
    declared = False
    for statement in cls.body.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.target.value == field:
                declared = True
                if small.value is not None and not _add(found, _literal(small.value, analysis)):
                    return None
    if not declared:
        return None
    for node in iter_tree(analysis.module):
        if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            if any(isinstance(t, cst.Attribute) and t.attr.value == field for t in targets):
                return None  # `cfg.attn_layer = ...`: set after construction
        if not isinstance(node, cst.Call):
            continue
        called = node.func.attr.value if isinstance(node.func, cst.Attribute) else getattr(node.func, "value", "")
        if called == cls.name.value:
            if any(a.star for a in node.args) or any(a.keyword is None for a in node.args[_field_index(cls, field) :]):
                return None  # `NfCfg(**kw)`, or the field passed by position
        elif called != "replace":  # `dataclasses.replace(cfg, attn_layer=...)`
            continue
        elif any(a.star == "**" and not _var_keyword(analysis, a.value) for a in node.args):
            return None  # `replace(cfg, **kwargs)` of the caller's `**kwargs` is no shipped value
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == field:
                values = _argument_values(analysis, arg.value, 0)
                if values is None:
                    return None
                found |= values
    return frozenset(found) if len(found) <= MAX_CHOICES else None


def _field_index(cls: cst.ClassDef, field: str) -> int:
    """The position of ``field`` among ``cls``'s annotated fields."""
    names = [
        small.target.value
        for statement in cls.body.body
        if isinstance(statement, cst.SimpleStatementLine)
        for small in statement.body
        if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name)
    ]
    return names.index(field) if field in names else len(names)


def _argument_values(analysis: ModuleAnalysis, value: cst.BaseExpression, level: int) -> set[object] | None:
    """The values an argument written in ``analysis`` may have: a literal, or a parameter of the
    module-level function around it, followed to its default and to what the module's calls of
    the function pass for it."""
    literal = _literal(value, analysis)
    if literal is not NOT_LITERAL:
        return {literal} if _hashable(literal) else None
    if not isinstance(value, cst.Name) or level >= _MAX_HELPERS:
        return None
    function = analysis.model.enclosing(value, cst.FunctionDef)
    if not isinstance(function, cst.FunctionDef) or function not in analysis.module.body:
        return None
    params = list(function.params.params)
    param = next((p for p in (*params, *function.params.kwonly_params) if p.name.value == value.value), None)
    if param is None or any(
        isinstance(n, (cst.Assign, cst.AugAssign)) and value.value in _assigned_names(n) for n in iter_tree(function.body)
    ):
        return None
    found: set[object] = set()
    if param.default is not None and not _add(found, _literal(param.default, analysis)):
        return None
    position = params.index(param) if param in params else None
    for node in iter_tree(analysis.module):
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == function.name.value):
            continue
        if any(a.star for a in node.args):
            return None
        passed = [a for a in node.args if a.keyword is not None and a.keyword.value == param.name.value]
        positional = [a for a in node.args if a.keyword is None]
        if position is not None and len(positional) > position:
            passed.append(positional[position])
        for arg in passed:
            values = _argument_values(analysis, arg.value, level + 1)
            if values is None:
                return None
            found |= values
    return found


def _var_keyword(analysis: ModuleAnalysis, value: cst.BaseExpression) -> bool:
    """Whether ``value`` is the ``**kwargs`` parameter of the function around it."""
    function = analysis.model.enclosing(value, cst.FunctionDef)
    star = function.params.star_kwarg if isinstance(function, cst.FunctionDef) else None
    return isinstance(value, cst.Name) and star is not None and star.name.value == value.value


def _assigned_names(node: cst.Assign | cst.AugAssign) -> set[str]:
    targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
    return {t.value for t in targets if isinstance(t, cst.Name)}


def _literal(expr: cst.BaseExpression, analysis: ModuleAnalysis) -> object:
    if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[expr.value]
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

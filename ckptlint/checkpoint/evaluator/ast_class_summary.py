"""Summaries of the classes a region reaches, on CPython's ``ast``: methods, what the class
body and every method assign to ``self`` (``self.x = ...``, ``setattr``, ``add_module``,
``register_buffer``, ``self.blocks.append(...)``), and the method order over the bases of the
tree, into :class:`~ckptlint.checkpoint.evaluator.denotations.ClassInfo` records.

An ``async def`` is a method; a class whose body sits on the ``class`` line
(``class A: x = 1``) has no summarised body; the nodes of a method are visited in source
order (:func:`~ckptlint.semantic.ast_walk.nodes_of_function`), so each attribute's values
keep the order they are written in. ``ast`` keeps no parentheses: the key of
an attribute named at run time (:func:`dynamic_key`) is the expression's text without the
parentheses around it.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from ckptlint.checkpoint.evaluator.denotations import AttributeValue, ClassInfo, ClassValue, LayerClassValue
from ckptlint.checkpoint.sites.ast_options import argument_value, literal_value, ordered_arguments
from ckptlint.facts.torch_facts import LayerFact, LayerKind
from ckptlint.semantic.ast_assignments import AstAssigned, assignments, attribute_name, candidate_values
from ckptlint.semantic.ast_lines import body_on_header
from ckptlint.semantic.ast_walk import nodes_of_function
from ckptlint.semantic.bindings import EACH, BindingKind

if TYPE_CHECKING:
    from ckptlint.semantic.ast_analysis import AstAnalysis
    from ckptlint.semantic.ast_model import AstModel

    #: A class summary on ``ast``.
    AstClassInfo = ClassInfo[AstAnalysis, ast.ClassDef, "AstMethod", ast.expr]

__all__ = [
    "AstMethod",
    "class_mro",
    "dynamic_key",
    "find_method",
    "is_property",
    "layer_base",
    "self_attribute",
    "self_parameter",
    "summarise_class",
]

#: A method: ``def`` or ``async def``.
AstMethod = ast.FunctionDef | ast.AsyncFunctionDef

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: The nodes that can bind or register something (an assignment's, a loop's, a call).
_BINDING_NODES = frozenset(
    {ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For, ast.AsyncFor, ast.comprehension, ast.withitem, ast.Call}
)


def self_parameter(method: AstMethod) -> str | None:
    """The name of ``method``'s first parameter (its ``self``), ``None`` for a static method
    or a method without parameters."""
    params = [*method.args.posonlyargs, *method.args.args]
    if not params:
        return None
    for decorator in method.decorator_list:
        if isinstance(decorator, ast.Name) and decorator.id == "staticmethod":
            return None
    return params[0].arg


def summarise_class(analysis: AstAnalysis, node: ast.ClassDef) -> AstClassInfo:
    """The summary of class ``node`` of ``analysis`` (methods, attributes, bases): read once per
    analysis (kept in the model's memo); each call returns a new record whose tables are
    shared and must not be changed; ``bases`` is left empty."""
    memo: dict[int, tuple[ast.ClassDef, AstClassInfo]] = analysis.model.memo.setdefault("class_summaries", {})  # type: ignore[assignment]
    known = memo.get(id(node))
    if known is None or known[0] is not node:
        known = memo[id(node)] = (node, _summarise(analysis, node))
    info = known[1]
    return ClassInfo(info.analysis, node, info.qualname, info.methods, info.attributes, info.appended, info.buffers)


def _summarise(analysis: AstAnalysis, node: ast.ClassDef) -> AstClassInfo:
    scope = analysis.model.scope_of_definition.get(node)
    info: AstClassInfo = ClassInfo(analysis, node, scope.qualname if scope else node.name)
    body = [] if body_on_header(analysis.model, node.body) else node.body
    for statement in body:
        if isinstance(statement, _FUNCTIONS):
            info.methods[statement.name] = statement
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)):  # class-level attributes
            for assigned in assignments(statement):
                if isinstance(assigned.target, ast.Name):
                    _record(info, assigned.target.id, assigned, None)
    for method in info.methods.values():
        self_name = self_parameter(method)
        if self_name is None:
            continue
        for inner in nodes_of_function(method):
            _record_self_write(info, inner, self_name, method)
    return info


def self_attribute(expr: ast.AST, self_name: str) -> str | None:
    """``attr`` when ``expr`` is ``<self_name>.attr``, else ``None``."""
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == self_name:
        return expr.attr
    return None


def _record(info: AstClassInfo, name: str, assigned: AstAssigned, method: AstMethod | None) -> None:
    """Record what ``assigned`` gives attribute ``name`` (see ``class_summary._record``)."""
    if assigned.kind is BindingKind.AUGMENTED:
        node = assigned.node
        if method is not None and isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
            items = candidate_values(replace(assigned, kind=BindingKind.LOOP, path=(EACH,)))
            info.appended.setdefault(name, []).extend((item, method) for item in items or ())
        return
    texts = candidate_values(assigned, info.analysis.model.qualified_names)
    if texts is not None:
        info.attributes.setdefault(name, []).extend(AttributeValue(t, method) for t in texts)
    elif assigned.value is not None:
        info.attributes.setdefault(name, []).append(AttributeValue(assigned.value, method, assigned.path))


def _literal_string(expr: ast.expr, model: AstModel) -> str | None:
    value = literal_value(expr, model)
    return value if isinstance(value, str) else None


def _record_self_write(info: AstClassInfo, node: ast.AST, self_name: str, method: AstMethod) -> None:
    if type(node) not in _BINDING_NODES:
        return
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        _record_registration(info, node, node.func, self_name, method)
        return
    model = info.analysis.model
    for assigned in assignments(node, partial(_literal_string, model=model)):
        attr = attribute_name(assigned, self_name)
        if attr is not None:
            _record(info, attr, assigned, method)
        elif isinstance(assigned.target, ast.Attribute) and assigned.owner is not None:
            # `self.mid = nn.Module(); self.mid.block_1 = Block(...)`: recorded under "mid.block_1"
            outer = self_attribute(assigned.owner, self_name)
            if outer is not None:
                _record(info, f"{outer}.{assigned.attr}", assigned, method)


def _record_registration(info: AstClassInfo, node: ast.Call, func: ast.Attribute, self_name: str, method: AstMethod) -> None:
    """``self.register_buffer(...)``, ``self.add_module(name, m)``, ``self.blocks.append(m)``..."""
    method_name = func.attr
    owner = func.value
    args = [argument_value(a) for a in ordered_arguments(node)]  # positional and keyword, in source order
    if method_name in ("register_buffer", "register_parameter", "add_module", "register_module") and (
        isinstance(owner, ast.Name) and owner.id == self_name
    ):
        if len(args) >= 1:
            key = literal_value(args[0], info.analysis.model)
            if not isinstance(key, str) and method_name in ("add_module", "register_module"):
                key = dynamic_key(info.analysis, args[0])
            if isinstance(key, str):
                if method_name == "register_buffer":
                    info.buffers.add(key)
                elif len(args) >= 2 and method_name != "register_parameter":
                    info.attributes.setdefault(key, []).append(AttributeValue(args[1], method))
    attr = self_attribute(owner, self_name)
    if attr is not None and method_name in ("append", "extend", "insert", "add_module", "update"):
        for arg in args:
            info.appended.setdefault(attr, []).append((arg, method))


def dynamic_key(analysis: AstAnalysis, expr: ast.expr) -> str:
    """An attribute name known only at run time, keyed by the code that computes it: a NUL
    character, then the expression's text (no name of Python's starts with one)."""
    return "\0" + analysis.text_of(expr).strip()


def is_property(method: AstMethod) -> bool:
    """Whether ``method`` is decorated ``@property``/``@cached_property`` (any module's)."""
    for decorator in method.decorator_list:
        name = decorator.attr if isinstance(decorator, ast.Attribute) else decorator.id if isinstance(decorator, ast.Name) else ""
        if name in ("property", "cached_property"):
            return True
    return False


def class_mro(info: AstClassInfo) -> list[AstClassInfo]:
    """``info`` and its base classes of the tree, nearest first, breadth first (bases that are
    not classes of the tree are left out; at most 16 classes, so cyclic bases end)."""
    order: list[AstClassInfo] = []
    stack = [info]
    while stack and len(order) < 16:
        current = stack.pop(0)
        if current in order:
            continue
        order.append(current)
        stack += [b.info for b in current.bases if isinstance(b, ClassValue)]
    return order


def find_method(info: AstClassInfo, name: str) -> tuple[AstMethod, AstClassInfo] | None:
    """Method ``name`` of the class ``info``, its own or that of the first class of the tree
    in :func:`class_mro` that defines it, with that class; ``None`` when none does."""
    return next(((owner.methods[name], owner) for owner in class_mro(info) if name in owner.methods), None)


def layer_base(info: AstClassInfo) -> tuple[str, LayerFact] | None:
    """The torch layer class (qualified name and table entry) that ``info`` or a base class
    of the tree derives from (``class BatchNormAct2d(nn.BatchNorm2d)``); containers
    (``nn.Sequential``) do not count; ``None`` when there is none."""
    for owner in class_mro(info):
        for base in owner.bases:
            if isinstance(base, LayerClassValue) and base.fact.kind is not LayerKind.CONTAINER:
                return base.qualified, base.fact
    return None

"""Summaries of the classes a region reaches: methods, bases, what ``__init__`` assigns to
``self``; the method order over the bases of the tree and the methods found along it."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.checkpoint.evaluator.denotations import AttributeValue, ClassInfo, ClassValue, LayerClassValue
from ckptlint.checkpoint.sites.options import literal_string, literal_value
from ckptlint.facts.torch_facts import LayerFact, LayerKind
from ckptlint.semantic.assignments import BINDING_NODES, assignments, attribute_name, candidate_values
from ckptlint.semantic.bindings import EACH, Assigned, BindingKind
from ckptlint.semantic.walk import nodes_of_function

if TYPE_CHECKING:
    from ckptlint.semantic.analysis import ModuleAnalysis


def self_parameter(method: cst.FunctionDef) -> str | None:
    params = list(method.params.posonly_params) + list(method.params.params)
    if not params:
        return None
    for decorator in method.decorators:
        if isinstance(decorator.decorator, cst.Name) and decorator.decorator.value == "staticmethod":
            return None
    return params[0].name.value


def summarise_class(analysis: ModuleAnalysis, node: cst.ClassDef) -> ClassInfo:
    """The summary of class ``node`` of ``analysis``: its methods, the values assigned to its
    attributes (class body, ``self.x = ...`` in any method, ``setattr``, ``add_module``...),
    appended values and buffers; ``bases`` is left empty (the evaluator fills it).

    Read from the tree once per analysis (kept in the model's memo: every file whose regions
    reach the class in the same process shares it); each call returns a new record whose
    tables are shared and must not be changed."""
    memo: dict[int, tuple[cst.ClassDef, ClassInfo]] = analysis.model.memo.setdefault("class_summaries", {})  # type: ignore[assignment]
    known = memo.get(id(node))
    if known is None or known[0] is not node:
        known = memo[id(node)] = (node, _summarise(analysis, node))
    info = known[1]
    return ClassInfo(info.analysis, node, info.qualname, info.methods, info.attributes, info.appended, info.buffers)


def _summarise(analysis: ModuleAnalysis, node: cst.ClassDef) -> ClassInfo:
    scope = analysis.model.scope_of_definition.get(node)
    info = ClassInfo(analysis, node, scope.qualname if scope else node.name.value)
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    for statement in body:
        if isinstance(statement, cst.FunctionDef):
            info.methods[statement.name.value] = statement
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, (cst.Assign, cst.AnnAssign)):  # class-level attributes
                    for assigned in assignments(small):
                        if isinstance(assigned.target, cst.Name):
                            _record(info, assigned.target.value, assigned, None)
    for method in info.methods.values():
        self_name = self_parameter(method)
        if self_name is None:
            continue
        for inner in nodes_of_function(method):
            _record_self_write(info, inner, self_name, method)
    return info


def self_attribute(expr: cst.BaseExpression, self_name: str) -> str | None:
    """``attr`` when ``expr`` is ``<self_name>.attr``, else ``None``."""
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == self_name:
        return expr.attr.value
    return None


def _record(info: ClassInfo, name: str, assigned: Assigned, method: cst.FunctionDef | None) -> None:
    """Record what ``assigned`` gives attribute ``name``: the expressions the text shows (a
    display's element, ``nullcontext``'s argument), else the value with its path; ``x +=
    [...]`` adds the display's elements to the container like ``extend``; an unknown value
    is not recorded."""
    if assigned.kind is BindingKind.AUGMENTED:
        node = assigned.node
        if method is not None and isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.AddAssign):
            items = candidate_values(replace(assigned, kind=BindingKind.LOOP, path=(EACH,)))
            info.appended.setdefault(name, []).extend((item, method) for item in items or ())
        return
    texts = candidate_values(assigned, info.analysis.model.qualified_names)
    if texts is not None:
        info.attributes.setdefault(name, []).extend(AttributeValue(t, method) for t in texts)
    elif assigned.value is not None:
        info.attributes.setdefault(name, []).append(AttributeValue(assigned.value, method, assigned.path))


def _record_self_write(info: ClassInfo, node: cst.CSTNode, self_name: str, method: cst.FunctionDef) -> None:
    if type(node) not in BINDING_NODES:
        return  # most nodes: one set lookup instead of several isinstance checks
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        _record_registration(info, node, node.func, self_name, method)
        return
    model = info.analysis.model
    for assigned in assignments(node, partial(literal_string, model=model)):
        attr = attribute_name(assigned, self_name)
        if attr is not None:
            _record(info, attr, assigned, method)
        elif isinstance(assigned.target, cst.Attribute) and assigned.owner is not None:
            # `self.mid = nn.Module(); self.mid.block_1 = Block(...)` (diffusers' KVAE,
            # ldm-style VAEs): recorded under "mid.block_1"
            outer = self_attribute(assigned.owner, self_name)
            if outer is not None:
                _record(info, f"{outer}.{assigned.attr}", assigned, method)


def _record_registration(info: ClassInfo, node: cst.Call, func: cst.Attribute, self_name: str, method: cst.FunctionDef) -> None:
    """``self.register_buffer(...)``, ``self.add_module(name, m)``, ``self.blocks.append(m)``..."""
    method_name = func.attr.value
    owner = func.value
    if method_name in ("register_buffer", "register_parameter", "add_module", "register_module") and (
        isinstance(owner, cst.Name) and owner.value == self_name
    ):
        if len(node.args) >= 1:
            key = literal_value(node.args[0].value, info.analysis.model)
            if not isinstance(key, str) and method_name in ("add_module", "register_module"):
                key = dynamic_key(info.analysis, node.args[0].value)
            if isinstance(key, str):
                if method_name == "register_buffer":
                    info.buffers.add(key)
                elif len(node.args) >= 2 and method_name != "register_parameter":
                    info.attributes.setdefault(key, []).append(AttributeValue(node.args[1].value, method))
    attr = self_attribute(owner, self_name)
    if attr is not None and method_name in ("append", "extend", "insert", "add_module", "update"):
        for arg in node.args:
            info.appended.setdefault(attr, []).append((arg.value, method))


def dynamic_key(analysis: ModuleAnalysis, expr: cst.BaseExpression) -> str:
    """An attribute name known only at run time, keyed by the code that computes it
    (``self.norm1_name``): ``add_module`` and ``getattr`` with the same code meet there."""
    return "\0" + analysis.module.code_for_node(expr).strip()


def is_property(method: cst.FunctionDef) -> bool:
    for decorator in method.decorators:
        target = decorator.decorator
        name = target.attr.value if isinstance(target, cst.Attribute) else target.value if isinstance(target, cst.Name) else ""
        if name in ("property", "cached_property"):
            return True
    return False


def class_mro(info: ClassInfo) -> list[ClassInfo]:
    """``info`` and its base classes of the tree, nearest first, breadth first (bases that are
    not classes of the tree are left out; at most 16 classes, so cyclic bases end)."""
    order: list[ClassInfo] = []
    stack = [info]
    while stack and len(order) < 16:
        current = stack.pop(0)
        if current in order:
            continue
        order.append(current)
        stack += [b.info for b in current.bases if isinstance(b, ClassValue)]
    return order


def find_method(info: ClassInfo, name: str) -> tuple[cst.FunctionDef, ClassInfo] | None:
    """Method ``name`` of the class ``info``, its own or that of the first class of the tree
    in :func:`class_mro` that defines it, with that class; ``None`` when none does."""
    return next(((owner.methods[name], owner) for owner in class_mro(info) if name in owner.methods), None)


def layer_base(info: ClassInfo) -> tuple[str, LayerFact] | None:
    """The torch layer class (qualified name and table entry) that ``info`` or a base class
    of the tree derives from (``class BatchNormAct2d(nn.BatchNorm2d)``); containers
    (``nn.Sequential``) do not count; ``None`` when there is none."""
    for owner in class_mro(info):
        for base in owner.bases:
            if isinstance(base, LayerClassValue) and base.fact.kind is not LayerKind.CONTAINER:
                return base.qualified, base.fact
    return None

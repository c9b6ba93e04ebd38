"""Summaries of the classes a region reaches: methods, bases, what ``__init__`` assigns to ``self``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.checkpoint.denotations import ClassInfo
from ckptlint.checkpoint.options import literal_value
from ckptlint.semantic.walk import child_nodes, node_types

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
                if isinstance(small, cst.Assign):
                    for target in small.targets:
                        if isinstance(target.target, cst.Name):
                            info.attributes.setdefault(target.target.value, []).append((small.value, None))
                elif isinstance(small, cst.AnnAssign) and small.value is not None and isinstance(small.target, cst.Name):
                    info.attributes.setdefault(small.target.value, []).append((small.value, None))
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

_RECORDED = node_types(cst.Assign, cst.AnnAssign, cst.Call)
_NOT_ENTERED = node_types(cst.FunctionDef, cst.ClassDef, cst.Global, cst.Nonlocal, cst.Import, cst.ImportFrom)
_BRANCHES = node_types(cst.If, cst.IfExp)


def _record_self_write(info: ClassInfo, node: cst.CSTNode, self_name: str, method: cst.FunctionDef) -> None:
    if type(node) not in _RECORDED:
        return  # most nodes: one set lookup instead of four ABC isinstance checks
    if isinstance(node, cst.Assign):
        for target in node.targets:
            attr = self_attribute(target.target, self_name)
            if attr is not None:
                info.attributes.setdefault(attr, []).append((node.value, method))
            elif isinstance(target.target, cst.Attribute):
                # `self.mid = nn.Module(); self.mid.block_1 = Block(...)` (diffusers' KVAE,
                # ldm-style VAEs): recorded under "mid.block_1"
                outer = self_attribute(target.target.value, self_name)
                if outer is not None:
                    info.attributes.setdefault(f"{outer}.{target.target.attr.value}", []).append((node.value, method))
    elif isinstance(node, cst.AnnAssign) and node.value is not None:
        attr = self_attribute(node.target, self_name)
        if attr is not None:
            info.attributes.setdefault(attr, []).append((node.value, method))
    elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        method_name = node.func.attr.value
        owner = node.func.value
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
                        info.attributes.setdefault(key, []).append((node.args[1].value, method))
        attr = self_attribute(owner, self_name)
        if attr is not None and method_name in ("append", "extend", "insert", "add_module", "update"):
            for arg in node.args:
                info.appended.setdefault(attr, []).append((arg.value, method))
    elif isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "setattr":
        if len(node.args) >= 3 and isinstance(node.args[0].value, cst.Name) and node.args[0].value.value == self_name:
            key = literal_value(node.args[1].value, info.analysis.model)
            if isinstance(key, str):
                info.attributes.setdefault(key, []).append((node.args[2].value, method))

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

def nodes_of_function(
    function: cst.FunctionDef | cst.Lambda, decide: Callable[[cst.BaseExpression], bool | None] | None = None
) -> Iterator[cst.CSTNode]:
    """Every node of ``function``'s body, not entering nested defs and classes (which run
    only when called). With ``decide`` (a branch condition -> ``True``/``False``/``None``
    for undecided), the branch of an ``if`` statement or expression that cannot run is
    skipped."""
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        yield node
        kind = type(node)
        if kind in _NOT_ENTERED:
            continue
        if decide is not None and kind in _BRANCHES:
            taken = decide(node.test)
            if taken is not None:
                branch = node.body if taken else node.orelse
                stack.extend(b for b in (branch, node.test) if b is not None)
                continue
        children = [child for _, child in child_nodes(node)]
        children.reverse()
        stack.extend(children)

def returns_of(
    function: cst.FunctionDef, decide: Callable[[cst.BaseExpression], bool | None] | None = None
) -> list[cst.Return]:
    return [node for node in nodes_of_function(function, decide) if isinstance(node, cst.Return)]

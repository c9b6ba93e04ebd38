"""Which classes of a module build a class (its users): the classes that name it, or name a
subclass of it in the same module, and their subclasses there. Read from the module's own text
only (locality: the code that calls a class elsewhere is never searched). Used by
:mod:`~ckptlint.checkpoint.analyses.frozen_norms` (a backbone that freezes its blocks' BatchNorm)
and :mod:`~ckptlint.checkpoint.analyses.parent_builds` (the configuration a backbone hands its
blocks)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.semantic.walk import iter_tree

if TYPE_CHECKING:
    from ckptlint.checkpoint.evaluator.denotations import ClassInfo
    from ckptlint.checkpoint.evaluator.regions import RegionBuilder
    from ckptlint.semantic.analysis import ModuleAnalysis

__all__ = ["class_users"]


def _top_class(analysis: ModuleAnalysis, node: cst.CSTNode) -> cst.ClassDef | None:
    """The module-level class whose body holds ``node``, or ``None``."""
    found = None
    for ancestor in analysis.model.ancestors(node):
        if isinstance(ancestor, cst.ClassDef):
            found = ancestor
        elif isinstance(ancestor, cst.Module):
            return found
    return found


def _class_names(analysis: ModuleAnalysis) -> dict[str, list[cst.Name]]:
    """The ``Name`` nodes of the module spelling the name of one of its classes, by name (one
    walk of the module, kept with it)."""
    index = analysis.derived.get("class_name_nodes")
    if index is None:
        classes = {n.name.value for n in iter_tree(analysis.module) if isinstance(n, cst.ClassDef)}
        found: dict[str, list[cst.Name]] = {}
        for inner in iter_tree(analysis.module):
            if isinstance(inner, cst.Name) and inner.value in classes:
                found.setdefault(inner.value, []).append(inner)
        analysis.derived["class_name_nodes"] = index = found
    return index  # type: ignore[return-value]


def _references(analysis: ModuleAnalysis, node: cst.ClassDef) -> list[cst.Name]:
    """``Name`` nodes of the module that denote the class ``node`` (its own name excluded)."""
    model = analysis.model
    found: list[cst.Name] = []
    for inner in _class_names(analysis).get(node.name.value, ()):
        if inner is node.name or inner not in model.scopes:
            continue
        parent = model.parent(inner)
        if isinstance(parent, cst.Attribute) and parent.attr is inner:
            continue  # `other.Bottleneck`: another object's attribute
        if any(b.node is node for b in model.bindings_of(inner)):
            found.append(inner)
    return found


def class_users(builder: RegionBuilder, analysis: ModuleAnalysis, cls: ClassInfo) -> tuple[list[ClassInfo], bool]:
    """The classes of ``cls``'s module that name it or one of its subclasses there (their
    ``arch_settings``, ``make_res_layer(block=Bottleneck)``...), with their subclasses in the
    module, and whether they are all its users there: ``False`` when a reference is outside
    any class (a module-level table or function builds it: a user not known)."""
    if cls.analysis is not analysis:
        return [], False
    blocks: list[cst.ClassDef] = [cls.node]
    users: list[cst.ClassDef] = []
    complete = True
    queue = [cls.node]
    while queue:
        current = queue.pop(0)
        is_block = current in blocks
        for name in _references(analysis, current):
            subclass = _defined_with_base(analysis, name)
            if subclass is not None:
                # a subclass of a block is a block (it may inherit the checkpointing forward),
                # a subclass of a user builds the same blocks
                if subclass not in blocks and subclass not in users:
                    (blocks if is_block else users).append(subclass)
                    queue.append(subclass)
                continue
            if not is_block:
                continue  # whoever builds the backbone, the backbone builds its own modules
            top = _top_class(analysis, name)
            if top is None:
                complete = False  # a module-level table or function builds it
                continue
            if top in blocks or top in users:
                continue  # `super(Bottleneck, self)`, `isinstance(m, Bottleneck)` in a user
            users.append(top)
            queue.append(top)
    return [builder.class_info(analysis, node) for node in users], complete


def _defined_with_base(analysis: ModuleAnalysis, name: cst.Name) -> cst.ClassDef | None:
    """The class whose base list holds ``name`` (``class Bottleneck(_Bottleneck):``), if any."""
    for ancestor in analysis.model.ancestors(name):
        if isinstance(ancestor, cst.Arg):
            parent = analysis.model.parent(ancestor)
            if isinstance(parent, cst.ClassDef) and any(base is ancestor for base in parent.bases):
                return parent
            return None
        if isinstance(ancestor, (cst.ClassDef, cst.FunctionDef, cst.Module)):
            return None
    return None

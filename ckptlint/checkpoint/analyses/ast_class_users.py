"""Which classes of a module build a class (its users), for CKP203's view of a backbone
(:mod:`ckptlint.checkpoint.analyses.parent_builds` and :mod:`ckptlint.checkpoint.analyses.frozen_norms`
say why).

A name is a reference where the module binds it as well as where it reads it: a keyword's name
(``f(Bottleneck=...)``), an ``except ... as`` name and a name a ``match`` pattern binds count,
held by their ``keyword``, handler or pattern node."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ckptlint.checkpoint.evaluator.ast_class_summary import AstClassInfo
    from ckptlint.checkpoint.evaluator.ast_regions import AstRegionBuilder
    from ckptlint.semantic.ast_analysis import AstAnalysis

__all__ = ["class_users"]


def _spelled(node: ast.AST) -> list[str]:
    """The class names ``node`` may spell where the module binds or reads a name: a
    ``Name``'s identifier, a keyword's name, an ``except ... as`` name, the names a ``match``
    pattern binds (a ``class``'s or ``def``'s own name, a parameter's, an import's and a
    ``global``'s are not counted)."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, (ast.keyword, ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
        name = node.arg if isinstance(node, ast.keyword) else node.name
        return [name] if name is not None else []
    if isinstance(node, ast.MatchMapping):
        return [node.rest] if node.rest is not None else []
    if isinstance(node, ast.MatchClass):
        return list(node.kwd_attrs)
    return []


def _class_names(analysis: AstAnalysis) -> dict[str, list[ast.AST]]:
    """The nodes of the module spelling the name of one of its classes, by name (one walk of
    the module, kept with it)."""
    index = analysis.derived.get("ast_class_name_nodes")
    if index is None:
        classes = {n.name for n in ast.walk(analysis.tree) if isinstance(n, ast.ClassDef)}
        found: dict[str, list[ast.AST]] = {}
        for inner in ast.walk(analysis.tree):
            for name in _spelled(inner):
                if name in classes:
                    found.setdefault(name, []).append(inner)
        analysis.derived["ast_class_name_nodes"] = index = found
    return index  # type: ignore[return-value]


def _references(analysis: AstAnalysis, node: ast.ClassDef) -> list[ast.AST]:
    """The nodes of the module that denote the class ``node`` (its own ``class`` excluded),
    in the module's order."""
    model = analysis.model
    found: list[ast.AST] = []
    for inner in _class_names(analysis).get(node.name, ()):
        if inner is node or inner not in model.parents:
            continue
        scope = model.scope_of(inner)
        if any(b.node is node for b in model.lookup(node.name, scope)):
            found.append(inner)
    found.sort(key=lambda n: (n.lineno, n.col_offset))  # type: ignore[attr-defined]
    return found


def _top_class(analysis: AstAnalysis, node: ast.AST) -> ast.ClassDef | None:
    """The module-level class whose body holds ``node``, or ``None``."""
    found = None
    for ancestor in analysis.model.ancestors(node):
        if isinstance(ancestor, ast.ClassDef):
            found = ancestor
    return found


def _defined_with_base(analysis: AstAnalysis, name: ast.AST) -> ast.ClassDef | None:
    """The class whose base list holds ``name`` (``class Bottleneck(_Bottleneck):``), if any:
    the nearest argument around it (a call's, a class's keyword) must be one of its bases."""
    if not isinstance(name, ast.Name):
        return None
    child: ast.AST = name
    for ancestor in analysis.model.ancestors(name):
        if isinstance(ancestor, ast.keyword):
            return None
        if isinstance(ancestor, ast.Call) and child is not ancestor.func:
            return None  # an argument of a call
        if isinstance(ancestor, ast.ClassDef):
            return ancestor if any(base is child for base in ancestor.bases) else None
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            return None
        child = ancestor
    return None


def class_users(builder: AstRegionBuilder, analysis: AstAnalysis, cls: AstClassInfo) -> tuple[list[AstClassInfo], bool]:
    """The classes of ``cls``'s module that name it or one of its subclasses there, with
    their subclasses in the module, and whether they are all its users there (``False`` when a
    reference is outside any class: a module-level table or function builds it)."""
    if cls.analysis is not analysis:
        return [], False
    blocks: list[ast.ClassDef] = [cls.node]
    users: list[ast.ClassDef] = []
    complete = True
    queue = [cls.node]
    while queue:
        current = queue.pop(0)
        is_block = current in blocks
        for name in _references(analysis, current):
            subclass = _defined_with_base(analysis, name)
            if subclass is not None:
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
                continue
            users.append(top)
            queue.append(top)
    return [builder.class_info(analysis, node) for node in users], complete

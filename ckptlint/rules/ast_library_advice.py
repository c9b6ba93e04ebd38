"""What CKP001 may advise where a model's own code decides, on CPython's ``ast``: the twin of
:func:`ckptlint.rules.library_advice.remote_code`, the one function of
:mod:`ckptlint.rules.library_advice` that reads nodes (the others read a context's version
decisions and texts, :class:`~ckptlint.rules.library_advice.AdviceContext`, and serve both
sides as they are).

libcst's ``True``/``False`` names are ``ast.Constant`` here; the assignments are read in
libcst's field order (:func:`~ckptlint.semantic.ast_walk.fields_order_children`), parents
before children, so the first load found is libcst's."""

from __future__ import annotations

import ast

from ckptlint.checkpoint.sites.ast_site_builders import AstSite
from ckptlint.rules.ast_base import AstRuleContext
from ckptlint.rules.library_advice import RemoteCode
from ckptlint.semantic.ast_assignments import assignments
from ckptlint.semantic.ast_walk import iter_tree

__all__ = ["remote_code"]


def remote_code(ctx: AstRuleContext, site: AstSite) -> RemoteCode | None:
    """The ``trust_remote_code=...`` load (not literally ``False``) of the receiver of
    ``receiver.gradient_checkpointing_enable()`` (see
    :func:`ckptlint.rules.library_advice.remote_code`); ``None`` when there is none."""
    func = site.call.func
    if not isinstance(func, ast.Attribute):
        return None
    receiver = func.value
    analysis = ctx.analysis
    scope: ast.AST | None = None
    for ancestor in analysis.model.ancestors(site.call):
        if isinstance(receiver, ast.Name) and isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            scope = ancestor
            break
        if isinstance(receiver, ast.Attribute) and isinstance(ancestor, ast.ClassDef):
            scope = ancestor
            break
    if scope is None:
        return None
    wanted = analysis.text_of(receiver)
    for node in iter_tree(scope):
        for assigned in assignments(node):
            if analysis.text_of(assigned.target) != wanted or not isinstance(assigned.value, ast.Call):
                continue
            for keyword in assigned.value.keywords:
                if keyword.arg != "trust_remote_code":
                    continue
                value = keyword.value
                if isinstance(value, ast.Constant) and value.value is False:
                    continue
                literal = isinstance(value, ast.Constant) and value.value is True
                row = analysis.range(assigned.value)[0][0]
                return RemoteCode("" if literal else analysis.text_of(value), row)
    return None

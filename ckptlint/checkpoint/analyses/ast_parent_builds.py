"""How the classes of a module build the class a site is in (CKP203), into
:class:`~ckptlint.checkpoint.analyses.parent_builds.ParentBuild` records over the class summaries
(:mod:`ckptlint.checkpoint.analyses.parent_builds` tells the case). The module is read whole."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ckptlint.checkpoint.analyses.ast_class_users import class_users
from ckptlint.checkpoint.analyses.parent_builds import MAX_BUILDS, ParentBuild
from ckptlint.checkpoint.evaluator.denotations import InstanceValue
from ckptlint.facts.torch_facts import NORM_FACTORIES, norm_factory
from ckptlint.text.identifiers import may_name

if TYPE_CHECKING:
    from ckptlint.checkpoint.evaluator.ast_class_summary import AstClassInfo
    from ckptlint.checkpoint.evaluator.ast_regions import AstRegionBuilder
    from ckptlint.checkpoint.sites.ast_site_builders import AstSite
    from ckptlint.semantic.ast_analysis import AstAnalysis

    AstParentBuild = ParentBuild[AstClassInfo]

__all__ = ["ParentBuild", "parent_builds"]

#: The last names of the norm factories: every name a module's calls resolve to ends with an
#: identifier of its text, so a module without any of them calls none.
_FACTORY_NAMES = tuple(sorted({name.rsplit(".", 1)[-1] for name in NORM_FACTORIES}))


def parent_builds(builder: AstRegionBuilder, site: AstSite, analysis: AstAnalysis) -> list[AstParentBuild]:
    """The instances of the class ``site``'s method belongs to that the classes of its module
    build; ``[]``
    when the class builds no norm from a config, or nothing in the module builds it with
    arguments."""
    cls = builder.enclosing_class(analysis, site.call)
    if cls is None or not _builds_configured_norm(builder, cls):
        return []
    known: dict[ast.ClassDef, list[AstParentBuild]] = analysis.derived.setdefault("parent_builds", {})  # type: ignore[assignment]
    if cls.node not in known:
        known[cls.node] = _builds(builder, analysis, cls)
    return known[cls.node]


def _builds(builder: AstRegionBuilder, analysis: AstAnalysis, cls: AstClassInfo) -> list[AstParentBuild]:
    users, _ = class_users(builder, analysis, cls)
    found: list[AstParentBuild] = []
    for user in users:
        count = 0
        for value in builder.held(InstanceValue(user)):
            if count >= MAX_BUILDS:
                break
            if not isinstance(value, InstanceValue) or not value.env:
                continue  # built without arguments: what the class's defaults give
            if any(info.node is cls.node for info in builder.mro(value.info)):
                found.append(ParentBuild(user, value))
                count += 1
    return found


def _builds_configured_norm(builder: AstRegionBuilder, cls: AstClassInfo) -> bool:
    """Whether ``cls`` or a base class of the tree calls a norm factory (``ConvModule``,
    ``build_norm_layer``) in one of its methods."""
    for info in builder.mro(cls):
        model = info.analysis.model
        if not may_name(model.text, _FACTORY_NAMES):
            continue
        for node in ast.walk(info.node):
            if isinstance(node, ast.Call) and node.func in model.parents:
                if any(norm_factory(name) is not None for name in model.qualified_names(node.func)):
                    return True
    return False

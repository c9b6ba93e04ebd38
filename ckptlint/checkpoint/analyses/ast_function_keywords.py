"""The keywords a checkpoint call forwards to the checkpointed function, and which of them
that function refuses (CKP001/CKP002). A keyword is an ``ast.keyword`` (``arg`` its name,
``None`` for ``**``); a call keeps its keywords apart from its positional arguments."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ckptlint.facts.apis import ApiKind
from ckptlint.semantic.ast_callables import signature_of

if TYPE_CHECKING:
    from ckptlint.checkpoint.evaluator.ast_regions import AstRegionBuilder
    from ckptlint.checkpoint.sites.ast_site_builders import AstSite
    from ckptlint.semantic.ast_analysis import AstAnalysis

__all__ = ["own_function_keywords", "reentrant_call_refuses_keywords", "refused_keywords"]


def own_function_keywords(site: AstSite) -> list[ast.keyword]:
    """The keywords written in this call (not bound by a partial) that checkpoint forwards
    to the function; misspelled options (CKP003's) are left out."""
    own = {id(arg) for arg in (*site.call.args, *site.call.keywords)}
    return [
        arg
        for arg in site.function_keywords
        if id(arg) in own and isinstance(arg, ast.keyword) and arg.arg is not None and not site.is_misspelled(arg)
    ]


def refused_keywords(
    regions: AstRegionBuilder, analysis: AstAnalysis, site: AstSite, keywords: list[ast.keyword]
) -> list[ast.keyword]:
    """The ``keywords`` the checkpointed callable does not accept (as resolved by the region
    evaluator, else the site model's signature lookup); ``[]`` when it cannot be resolved."""
    if not keywords:
        return []
    signature = regions.signature(site.function, analysis) or signature_of(site.function, analysis.model)
    return [arg for arg in keywords if signature is not None and arg.arg is not None and not signature.accepts(arg.arg)]


def reentrant_call_refuses_keywords(regions: AstRegionBuilder, analysis: AstAnalysis, site: AstSite) -> bool:
    """Whether ``site`` runs the reentrant variant with keywords that the checkpointed
    function does not take either: then ``use_reentrant=False`` is no fix (``TypeError``
    instead), so CKP001 stays silent and CKP002 reports the call."""
    if site.save_misuse is not None or site.api.kind not in (ApiKind.FUNCTION, ApiKind.WRAPPER):
        return False
    if site.runs_reentrant is not True:
        return False
    return bool(refused_keywords(regions, analysis, site, own_function_keywords(site)))

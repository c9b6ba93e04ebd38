"""Keywords a checkpoint call forwards to the checkpointed function, and which of them that
function refuses (asked of the region evaluator). Shared by CKP001 and CKP002, so both judge
one call the same way and a rule never imports another rule."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.checkpoint.sites.site import CheckpointSite
from ckptlint.facts.apis import ApiKind
from ckptlint.semantic.callables import signature_of

if TYPE_CHECKING:
    from ckptlint.checkpoint.evaluator.regions import RegionBuilder
    from ckptlint.semantic.analysis import ModuleAnalysis

__all__ = ["own_function_keywords", "refused_keywords", "reentrant_call_refuses_keywords"]


def own_function_keywords(site: CheckpointSite) -> list[cst.Arg]:
    """The keywords written in this call (not bound by a partial) that checkpoint forwards
    to the function; misspelled options (CKP003's) are left out."""
    own = {id(arg) for arg in site.call.args}
    return [
        arg
        for arg in site.function_keywords
        if id(arg) in own and arg.keyword is not None and not site.is_misspelled(arg)
    ]


def refused_keywords(
    regions: RegionBuilder, analysis: ModuleAnalysis, site: CheckpointSite, keywords: list[cst.Arg]
) -> list[cst.Arg]:
    """The ``keywords`` the checkpointed callable does not accept (as resolved by the region
    evaluator, else the site model's signature lookup); ``[]`` when it cannot be resolved."""
    if not keywords:
        return []
    signature = regions.signature(site.function, analysis) or signature_of(site.function, analysis.model)
    return [
        arg
        for arg in keywords
        if signature is not None and arg.keyword is not None and not signature.accepts(arg.keyword.value)
    ]


def reentrant_call_refuses_keywords(regions: RegionBuilder, analysis: ModuleAnalysis, site: CheckpointSite) -> bool:
    """Whether ``site`` runs the reentrant variant (which raises ``ValueError`` for function
    keywords) with keywords that the checkpointed function does not take either: then
    ``use_reentrant=False`` is no fix (``TypeError`` instead), so CKP001, whose advice is to
    pass it, stays silent and CKP002 reports the call (one finding per problem)."""
    if site.save_misuse is not None or site.api.kind not in (ApiKind.FUNCTION, ApiKind.WRAPPER):
        return False
    if site.runs_reentrant is not True:
        return False
    return bool(refused_keywords(regions, analysis, site, own_function_keywords(site)))

"""Checkpoint sites: every call or binding of an activation-checkpointing API in a module.

A site records which API is used (from :mod:`ckptlint.facts.apis`), the callable it checkpoints,
its inputs, and every option resolved to an :class:`~ckptlint.checkpoint.sites.options.OptionValue`,
plus the reentrancy the call ends up with. Rules query sites; they never resolve imports
themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial as partial_of
from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.checkpoint.sites.helper_calls import HelperResolver
from ckptlint.checkpoint.sites.helper_sites import MAX_LEVELS, build_helper_site, summarise_helpers
from ckptlint.checkpoint.sites.misspelling import find_misspellings
from ckptlint.checkpoint.sites.misuse import find_save_misuse
from ckptlint.checkpoint.sites.options import (
    CallArguments,
    in_branch_torch_never_takes,
    torch_version_test,
)
from ckptlint.checkpoint.sites.site import CheckpointSite, HelperSummary, SiteForm, SiteIndex
from ckptlint.checkpoint.sites.site_builders import BUILDERS, build_bound_call, build_site
from ckptlint.facts.apis import (
    API_BY_QUALIFIED_NAME,
    HF_ENABLE_METHODS,
    PARTIAL_QUALIFIED_NAMES,
    UTILS_CHECKPOINT_MODULE,
    ApiKind,
    api_for,
)
from ckptlint.facts.saving import DCP_FUNCTIONS
from ckptlint.semantic.bindings import BindingKind
from ckptlint.semantic.model import SemanticModel
from ckptlint.semantic.reaching import reaching

if TYPE_CHECKING:
    from ckptlint.checkpoint.sites.reach import Recogniser
    from ckptlint.semantic.analysis import ModuleAnalysis, ModuleLoader

__all__ = ["collect_sites", "helper_summaries", "site_index"]


#: Kinds whose sites CKP003 (misspelled options) and CKP301 (used as save) judge: torch's
#: and transformers' own functions.
_TORCH_KINDS = frozenset(
    {ApiKind.FUNCTION, ApiKind.SEQUENTIAL, ApiKind.WRAPPER, ApiKind.COMPOSABLE, ApiKind.HF_ENABLE, ApiKind.HF_TRAINING_ARGS}
)

def site_index(analysis: ModuleAnalysis) -> SiteIndex:
    """The checkpoint sites of ``analysis`` (collected once and kept with it)."""
    found = analysis.derived.get("sites")
    if found is None:
        found = analysis.derived["sites"] = collect_sites(analysis.model, analysis.project, analysis.source.path, analysis)
    return found  # type: ignore[return-value]

_IN_PROGRESS: set[int] = set()

def helper_summaries(analysis: ModuleAnalysis) -> dict[str, HelperSummary]:
    """The helpers of ``analysis``'s module (functions and methods that pass one of their
    parameters to a checkpoint API as the callable, see
    :mod:`ckptlint.checkpoint.sites.helper_sites`), by qualified name in the module. Empty while
    the module's own sites are being collected (imports between modules can be cyclic)."""
    if id(analysis) in _IN_PROGRESS:
        return {}
    _IN_PROGRESS.add(id(analysis))
    try:
        return site_index(analysis).helpers
    finally:
        _IN_PROGRESS.discard(id(analysis))

def collect_sites(
    model: SemanticModel, project: ModuleLoader | None = None, path: str | None = None, analysis: ModuleAnalysis | None = None
) -> SiteIndex:
    """Find every checkpoint site of the module described by ``model``; with ``project``,
    names imported from other modules of the linted tree are followed (re-exports of an
    API, home-made implementations and helpers, ``TrainingArguments`` subclasses); with
    ``analysis`` (the module's), calls of helpers that checkpoint their parameter are sites
    too (:mod:`ckptlint.checkpoint.sites.helper_sites`)."""
    from ckptlint.checkpoint.sites.reach import Recogniser

    recogniser = Recogniser(model, project, path)
    found = _Calls()
    for call in model.calls:
        _sort_call(call, model, recogniser, found)
    sites = found.sites + _bound_call_sites(found, model)
    # a call in a branch that torch 2.9-2.13 never take (`else` of `if is_torch_version(">=",
    # "1.11.0")`) checkpoints nothing there: no site
    sites = [site for site in sites if not in_branch_torch_never_takes(model, site.call)]
    for site in sites:
        if site.api.kind in _TORCH_KINDS:
            site.save_misuse = find_save_misuse(site, model)
            site.misspellings = find_misspellings(site, model)
    helpers: dict[str, HelperSummary] = {}
    if analysis is not None:
        seen = {id(site.call) for site in sites}
        candidates = [call for call in found.deferred + found.others if id(call) not in seen]
        resolver = HelperResolver(model, project, helpers, helper_summaries, recogniser.namespace_root)
        sites += _helper_call_sites(sites, candidates, analysis, resolver, helpers)
    return SiteIndex(sites, found.module_calls, found.dcp_calls, helpers)


@dataclass
class _Calls:
    """What the first pass over a module's calls found: the sites of API calls, and the calls
    judged once every call has been seen."""

    sites: list[CheckpointSite] = field(default_factory=list)
    module_calls: list[cst.Call] = field(default_factory=list)  # calls of torch.utils.checkpoint itself
    dcp_calls: list[cst.Call] = field(default_factory=list)  # torch.distributed.checkpoint functions
    partial_sites: dict[cst.Call, CheckpointSite] = field(default_factory=dict)  # partial(API, ...)
    partial_bindings: dict[cst.CSTNode, CheckpointSite] = field(default_factory=dict)  # name = partial(API, ...)
    deferred: list[cst.Call] = field(default_factory=list)  # calls of a plain name
    through_self: list[tuple[cst.Call, cst.Call]] = field(default_factory=list)  # self._ckpt(...), its partial
    others: list[cst.Call] = field(default_factory=list)  # attribute calls nothing above recognised

    def add(self, site: CheckpointSite | None) -> None:
        if site is not None:
            self.sites.append(site)


def _sort_call(call: cst.Call, model: SemanticModel, recogniser: Recogniser, found: _Calls) -> None:
    """Record ``call`` in ``found``: the site of a call of an API (directly, through
    ``functools.partial``, a Hugging Face switch or another library's API), or the list it
    waits in until every call has been seen."""
    names = model.qualified_names(call.func)
    api = api_for(names)
    if api is not None and isinstance(call.func, cst.Name) and _rebound_to_partials(model, call.func):
        found.deferred.append(call)  # `checkpoint = partial(checkpoint, use_reentrant=False)` at module level
        return
    if api is not None:
        found.add(build_site(api, SiteForm.CALL, call, CallArguments.of(call), model))
        return
    if UTILS_CHECKPOINT_MODULE in names:
        found.module_calls.append(call)
        return
    if any(name in DCP_FUNCTIONS for name in names):
        found.dcp_calls.append(call)
        return
    if names & PARTIAL_QUALIFIED_NAMES and call.args and not call.args[0].keyword and not call.args[0].star:
        inner = api_for(model.qualified_names(call.args[0].value))
        if inner is not None and inner.kind is not ApiKind.HF_TRAINING_ARGS:
            arguments = CallArguments.of(call.with_changes(args=call.args[1:]))
            site = build_site(inner, SiteForm.PARTIAL, call, arguments, model)
            if site is not None:
                found.sites.append(site)
                found.partial_sites[call] = site
                parent = model.parent(call)
                if isinstance(parent, cst.Assign):
                    found.partial_bindings[parent] = site
        return
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in HF_ENABLE_METHODS:
        found.add(build_site(HF_ENABLE_METHODS[call.func.attr.value], SiteForm.CALL, call, CallArguments.of(call), model))
        return
    other = recogniser.api_of_call(call, names)
    if other is not None:
        found.add(build_site(other, SiteForm.CALL, call, CallArguments.of(call), model))
        return
    if isinstance(call.func, cst.Name):
        found.deferred.append(call)
    elif isinstance(call.func, cst.Attribute):
        partial = recogniser.self_partial(call.func)
        if partial is not None:
            found.through_self.append((call, partial))
        else:
            found.others.append(call)


def _bound_call_sites(found: _Calls, model: SemanticModel) -> list[CheckpointSite]:
    """Sites of calls of a partial bound earlier: ``self._ckpt(block, x)`` after
    ``self._ckpt = partial(API, ...)``, then ``ckpt(block, x)`` after ``ckpt = partial(API, ...)``."""
    sites: list[CheckpointSite] = []
    for call, partial in found.through_self:
        bound = found.partial_sites.get(partial)
        if bound is not None:
            site = build_bound_call(bound, call, model)
            if site is not None:
                sites.append(site)
    if found.partial_bindings:
        for call in found.deferred:
            if not isinstance(call.func, cst.Name):
                continue
            for binding in reaching(model, call.func, partial_of(torch_version_test, model=model)):
                bound = found.partial_bindings.get(binding.node)
                if bound is not None and binding.kind is BindingKind.ASSIGNMENT:
                    site = build_bound_call(bound, call, model)
                    if site is not None:
                        sites.append(site)
                    break
    return sites


def _rebound_to_partials(model: SemanticModel, name: cst.Name) -> bool:
    """Whether every binding of ``name`` that can hold its value at the call is a
    ``functools.partial(...)`` assignment, although some other binding (the import it rebinds)
    is a checkpoint API (a module-level ``if`` that a torch fact decides counts as taken)."""
    final = reaching(model, name, partial_of(torch_version_test, model=model))
    return len(final) < len(model.bindings_of(name)) and all(
        b.kind is BindingKind.ASSIGNMENT
        and isinstance(b.value, cst.Call)
        and bool(model.qualified_names(b.value.func) & PARTIAL_QUALIFIED_NAMES)
        for b in final
    )


def _helper_call_sites(
    sites: list[CheckpointSite],
    candidates: list[cst.Call],
    analysis: ModuleAnalysis,
    resolver: HelperResolver,
    helpers: dict[str, HelperSummary],
) -> list[CheckpointSite]:
    """The sites of calls of helpers, level by level: helpers around ``sites``, then
    helpers around the calls of those, up to ``MAX_LEVELS`` (``helpers`` is filled in)."""
    model = analysis.model
    found: list[CheckpointSite] = []
    level_sites = sites
    for level in range(1, MAX_LEVELS + 1):
        for name, helper in summarise_helpers(level_sites, analysis, level).items():
            helpers.setdefault(name, helper)
        new: list[CheckpointSite] = []
        remaining: list[cst.Call] = []
        for call in candidates:
            summary = resolver.helper_of(call)
            if summary is None:
                remaining.append(call)
                continue
            site = build_helper_site(summary, call, model)
            if site is not None and not in_branch_torch_never_takes(model, call):
                new.append(site)
        if not new:
            break
        found += new
        level_sites, candidates = new, remaining
    return found

assert set(BUILDERS) == set(ApiKind), "every API kind needs a site builder"

assert all(api.kind in BUILDERS for api in API_BY_QUALIFIED_NAME.values())

"""Stage 1 on CPython's ``ast``, whole: every checkpoint site of one module, in the order
findings are reported in:

1. the calls the module's pass sorts (:func:`~ckptlint.checkpoint.sites.ast_sites.sort_calls`
   with an :class:`~ckptlint.checkpoint.sites.ast_reach.AstReach` that recognises home-made
   rows): API calls, ``functools.partial(API, ...)``, switches, method
   APIs, API instances, ``Impl.apply(f, x)`` and home-made helpers of the module (read with
   the tree) or imported from another module of the tree, re-exports of an API,
   ``TrainingArguments`` subclasses; then the calls through partial bindings; none in a branch
   no judged torch release takes; misuse and misspellings attached to torch's and
   transformers' own;
2. the calls of helpers, level by level, the candidates being the calls the pass left (plain
   names, then attributes nothing recognised), resolved by an
   :class:`~ckptlint.checkpoint.sites.ast_helper_calls.AstHelperResolver` whose helpers of other
   modules are those modules' own :func:`ast_site_index` helpers (with a guard against import
   cycles).

The files read and the import roots of namespace packages added are recorded in a fixed
order (the reach's, then the resolver's), the order earlier releases recorded them in.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ckptlint.checkpoint.sites.ast_helper_calls import AstHelperResolver
from ckptlint.checkpoint.sites.ast_helper_sites import AstHelperSummary, build_helper_site, summarise_helpers
from ckptlint.checkpoint.sites.ast_options import in_branch_torch_never_takes
from ckptlint.checkpoint.sites.ast_reach import AstReach
from ckptlint.checkpoint.sites.ast_site_builders import AstSite
from ckptlint.checkpoint.sites.ast_sites import sort_calls
from ckptlint.checkpoint.sites.helper_sites import MAX_LEVELS
from ckptlint.semantic.ast_analysis import AstAnalysis

__all__ = ["AstSiteIndex", "ast_helper_summaries", "ast_site_index"]

_KEY = "site_index"
_IN_PROGRESS: set[int] = set()


@dataclass
class AstSiteIndex:
    """The module's sites,
    its calls of ``torch.utils.checkpoint`` itself and of ``torch.distributed.checkpoint``
    functions (in call order), and its helpers by qualified name in the module."""

    sites: list[AstSite]
    module_calls: list[ast.Call]
    dcp_calls: list[ast.Call] = field(default_factory=list)
    helpers: dict[str, AstHelperSummary] = field(default_factory=dict)


def ast_site_index(analysis: AstAnalysis) -> AstSiteIndex:
    """The checkpoint sites of ``analysis``'s module (see the module docstring), following the
    linted tree through ``analysis.project`` when it is set; found once and kept in
    ``analysis.derived``."""
    found = analysis.derived.get(_KEY)
    if not isinstance(found, AstSiteIndex):
        found = analysis.derived[_KEY] = _collect(analysis)
    return found


def ast_helper_summaries(analysis: AstAnalysis) -> dict[str, AstHelperSummary]:
    """The helpers of ``analysis``'s module (:func:`ast_site_index`'s ``helpers``); empty while
    that module's own sites are being collected (imports between modules can be cyclic:
    ``sites.helper_summaries``)."""
    if id(analysis) in _IN_PROGRESS:
        return {}
    _IN_PROGRESS.add(id(analysis))
    try:
        return ast_site_index(analysis).helpers
    finally:
        _IN_PROGRESS.discard(id(analysis))


def _collect(analysis: AstAnalysis) -> AstSiteIndex:
    """``sites.collect_sites`` of the module with its analysis (see the module docstring)."""
    model = analysis.model
    reach = AstReach(model, analysis.project, analysis.source.path, home=True)
    sites, calls = sort_calls(model, reach)
    seen = {id(site.call) for site in sites}
    candidates = [call for call in calls.deferred + calls.others if id(call) not in seen]
    helpers: dict[str, AstHelperSummary] = {}
    resolver = AstHelperResolver(analysis, helpers, ast_helper_summaries)
    found: list[AstSite] = []
    level_sites = sites
    for level in range(1, MAX_LEVELS + 1):
        for name, helper in summarise_helpers(level_sites, model, level).items():
            helpers.setdefault(name, helper)
        new: list[AstSite] = []
        remaining: list[ast.Call] = []
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
    return AstSiteIndex(sites + found, calls.module_calls, calls.dcp_calls, helpers)

"""Checkpoint sites of one module found on CPython's ``ast`` (API, form, options, variant) for
the calls recognised without leaving the module:

- a call whose callee's qualified names name an API of :mod:`ckptlint.facts.apis` (torch's
  ``checkpoint``, ``checkpoint_sequential``, ``checkpoint_wrapper``, the composable
  ``checkpoint``, other libraries' functions, sequences and wrappers, ``TrainingArguments``
  and its kin, the policies of ``apply_activation_checkpointing`` and friends);
- ``x.gradient_checkpointing_enable(...)`` / ``x.activation_checkpointing_enable(...)``
  (:data:`~ckptlint.facts.apis.HF_ENABLE_METHODS`) and the method names that are an API
  whatever the receiver (:data:`~ckptlint.facts.apis.METHOD_APIS`:
  ``self._gradient_checkpointing_func(...)``);
- methods of instances of an API class (:data:`~ckptlint.facts.apis.INSTANCE_METHOD_APIS`:
  ``ckpt.checkpoint(f, x)`` after ``ckpt = CheckpointWithoutOutput()``, or ``self.ckpt`` set
  so in the class) and ``self.attr(...)`` where the class stores a checkpoint function in
  ``self.attr`` (:mod:`~ckptlint.checkpoint.sites.ast_receivers`);
- ``functools.partial(API, ...)`` (``SiteForm.PARTIAL``) and calls through such a binding
  (``SiteForm.BOUND_CALL``): ``ckpt(block, x)`` after ``ckpt = partial(API, ...)``, and
  ``self.ckpt(block, x)`` after ``self.ckpt = partial(API, ...)`` (or a helper returning one).

The sites of torch's and transformers' own APIs carry their misspelled options
(:mod:`~ckptlint.checkpoint.sites.ast_misspelling`) and save misuse
(:mod:`~ckptlint.checkpoint.sites.ast_misuse`).

With a loader of the linted tree (``project``, :func:`module_sites`), names imported from other
modules of the tree that are a re-export or an alias of an API, and ``TrainingArguments``
subclasses of the tree, are sites too (:mod:`~ckptlint.checkpoint.sites.ast_reach`; without
one, the subclasses defined in the module itself); a policy site's ``function`` is the list
of the classes it selects (:func:`~ckptlint.checkpoint.sites.ast_reach.policy_region_expression`).

Calls of helpers and home-made implementations (of the module or of other modules of the
tree) are sites of :func:`~ckptlint.checkpoint.sites.ast_site_index.ast_site_index`, which
sorts the calls with :func:`sort_calls` and a reach that recognises home-made rows.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

from ckptlint.checkpoint.sites.ast_misspelling import find_misspellings
from ckptlint.checkpoint.sites.ast_misuse import find_save_misuse
from ckptlint.checkpoint.sites.ast_options import (
    AstCallArguments,
    in_branch_torch_never_takes,
    ordered_arguments,
    torch_version_test,
)
from ckptlint.checkpoint.sites.ast_reach import AstReach
from ckptlint.checkpoint.sites.ast_receivers import instance_method_api, self_attribute_api, self_partial
from ckptlint.checkpoint.sites.ast_site_builders import AstSite, build_bound_call, build_site
from ckptlint.checkpoint.sites.site import SiteForm
from ckptlint.checkpoint.sites.sites import _TORCH_KINDS
from ckptlint.facts.apis import (
    HF_ENABLE_METHODS,
    METHOD_APIS,
    PARTIAL_QUALIFIED_NAMES,
    UTILS_CHECKPOINT_MODULE,
    ApiKind,
    api_for,
)
from ckptlint.facts.saving import DCP_FUNCTIONS
from ckptlint.semantic.ast_analysis import AstAnalysis, AstModuleLoader
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.ast_reaching import reaching
from ckptlint.semantic.bindings import BindingKind

__all__ = ["AstSite", "direct_sites", "module_sites", "rebound_to_partials", "sort_calls"]

_Decide = Callable[[ast.expr], "bool | None"]


@dataclass
class _Calls:
    """What the pass over the module's calls found (see ``sites._Calls``)."""

    sites: list[AstSite] = field(default_factory=list)
    partial_sites: dict[ast.Call, AstSite] = field(default_factory=dict)  # partial(API, ...)
    partial_bindings: dict[ast.AST, AstSite] = field(default_factory=dict)  # name = partial(API, ...)
    deferred: list[ast.Call] = field(default_factory=list)  # calls of a plain name
    through_self: list[tuple[ast.Call, ast.Call]] = field(default_factory=list)  # self._ckpt(...), its partial
    module_calls: list[ast.Call] = field(default_factory=list)  # calls of torch.utils.checkpoint itself
    dcp_calls: list[ast.Call] = field(default_factory=list)  # torch.distributed.checkpoint functions
    others: list[ast.Call] = field(default_factory=list)  # attribute calls nothing above recognised


def module_sites(analysis: AstAnalysis) -> list[AstSite]:
    """:func:`direct_sites` of ``analysis``'s module with its loader of the linted tree
    (``analysis.project``; found once, kept in ``analysis.derived``)."""
    found = analysis.derived.get("direct_sites")
    if found is None:
        found = analysis.derived["direct_sites"] = direct_sites(analysis.model, analysis.project, analysis.source.path)
    return found  # type: ignore[return-value]


def direct_sites(model: AstModel, project: AstModuleLoader | None = None, path: str | None = None) -> list[AstSite]:
    """The module's sites of the forms in the module docstring: those of API calls in the
    order of ``model.calls``, then those of calls through partial bindings; a call in a branch
    no judged torch release takes is none. Each site of torch's or transformers' own APIs
    carries its ``save_misuse`` and ``misspellings``. With
    ``project`` (the loader of the linted tree) and ``path`` (the module's file), names are
    followed into other modules of the tree (every file read is recorded by the loader)."""

    return sort_calls(model, AstReach(model, project, path))[0]


def sort_calls(model: AstModel, reach: AstReach) -> tuple[list[AstSite], _Calls]:
    """The sites of :func:`direct_sites` (home-made ones too when ``reach.home``), with what
    the pass over the module's calls left: the calls of ``torch.utils.checkpoint`` itself and
    of ``torch.distributed.checkpoint``, and the candidate helper calls (``deferred``, calls
    of plain names, and ``others``, attribute calls nothing recognised)."""

    def decide(test: ast.expr) -> bool | None:
        return torch_version_test(test, model)

    found = _Calls()
    for call in model.calls:
        _sort_call(call, model, decide, found, reach)
    sites = found.sites + _bound_call_sites(found, model, decide)
    sites = [site for site in sites if not in_branch_torch_never_takes(model, site.call)]
    for site in sites:
        if site.api.kind in _TORCH_KINDS:
            site.save_misuse = find_save_misuse(site, model)
            site.misspellings = find_misspellings(site, model)
    return sites, found


def _sort_call(call: ast.Call, model: AstModel, decide: _Decide, found: _Calls, reach: AstReach) -> None:
    """Record ``call``'s site in ``found``, or the list it waits in (see ``sites._sort_call``)."""
    func = call.func
    names = model.qualified_names(func)
    api = api_for(names)
    if api is not None:
        if isinstance(func, ast.Name) and rebound_to_partials(model, func, decide):
            found.deferred.append(call)  # `checkpoint = partial(checkpoint, ...)` at module level
            return
        _add(found, build_site(api, SiteForm.CALL, call, AstCallArguments.of(call), model))
        return
    if UTILS_CHECKPOINT_MODULE in names:
        found.module_calls.append(call)
        return
    if any(name in DCP_FUNCTIONS for name in names):
        found.dcp_calls.append(call)
        return
    if names & PARTIAL_QUALIFIED_NAMES and call.args:
        first = ordered_arguments(call)[0]
        if not isinstance(first, (ast.keyword, ast.Starred)):
            inner = api_for(model.qualified_names(first))
            if inner is not None and inner.kind is not ApiKind.HF_TRAINING_ARGS:
                site = build_site(inner, SiteForm.PARTIAL, call, AstCallArguments.of(call, skip_first=True), model)
                if site is not None:
                    found.sites.append(site)
                    found.partial_sites[call] = site
                    parent = model.parent(call)
                    if isinstance(parent, ast.Assign):
                        found.partial_bindings[parent] = site
            return
    if isinstance(func, ast.Attribute):
        other = HF_ENABLE_METHODS.get(func.attr) or METHOD_APIS.get(func.attr)
        other = other or instance_method_api(func, model) or reach.home_apply(call) or self_attribute_api(func, model)
        other = other or reach.api_of_call(call, names)
        if other is not None:
            _add(found, build_site(other, SiteForm.CALL, call, AstCallArguments.of(call), model))
            return
        partial = self_partial(func, model)
        if partial is not None:
            found.through_self.append((call, partial))
        else:
            found.others.append(call)
        return
    other = reach.api_of_call(call, names)
    if other is not None:
        _add(found, build_site(other, SiteForm.CALL, call, AstCallArguments.of(call), model))
    elif isinstance(func, ast.Name):
        found.deferred.append(call)


def _add(found: _Calls, site: AstSite | None) -> None:
    if site is not None:
        found.sites.append(site)


def _bound_call_sites(found: _Calls, model: AstModel, decide: _Decide) -> list[AstSite]:
    """Sites of calls of a partial bound earlier (see ``sites._bound_call_sites``)."""
    sites: list[AstSite] = []
    for call, partial in found.through_self:
        bound = found.partial_sites.get(partial)
        if bound is not None:
            site = build_bound_call(bound, call, model)
            if site is not None:
                sites.append(site)
    if found.partial_bindings:
        for call in found.deferred:
            if not isinstance(call.func, ast.Name):
                continue
            for binding in reaching(model, call.func, decide):
                bound = found.partial_bindings.get(binding.node)
                if bound is not None and binding.kind is BindingKind.ASSIGNMENT:
                    site = build_bound_call(bound, call, model)
                    if site is not None:
                        sites.append(site)
                    break
    return sites


def rebound_to_partials(model: AstModel, name: ast.Name, decide: _Decide) -> bool:
    """Whether every binding of ``name`` that can hold its value at the call is a
    ``functools.partial(...)`` assignment, although some other binding (the import it rebinds)
    is a checkpoint API (a module-level ``if`` that a torch fact decides counts as taken)."""
    final = reaching(model, name, decide)
    return len(final) < len(model.bindings_of(name)) and all(
        b.kind is BindingKind.ASSIGNMENT
        and isinstance(b.value, ast.Call)
        and bool(model.qualified_names(b.value.func) & PARTIAL_QUALIFIED_NAMES)
        for b in final
    )

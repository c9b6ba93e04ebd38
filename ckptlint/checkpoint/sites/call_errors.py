"""Arguments that make a torch checkpoint call raise, and whether a call raises whenever it runs.

CKP002 reports these calls; :func:`always_raises` tells the rules that judge what a site
recomputes (``RuleContext.site_regions``, CKP1xx/CKP2xx) that such a site recomputes nothing:
the call fails on the first forward, before anything is saved for backward. Both read the
same facts (torch/utils/checkpoint.py 2.9, unchanged in 2.13):

- the reentrant variant (``use_reentrant=True``, or omitted / ``None``, which means ``True``)
  raises ``ValueError: Unexpected keyword arguments`` for keywords meant for the function,
  and ``ValueError`` for a ``context_fn`` other than ``noop_context_fn`` and a ``debug`` that
  is not the literal ``False``;
- ``checkpoint_sequential`` raises ``TypeError`` for a 5th positional argument and
  ``ValueError`` for keywords other than ``use_reentrant`` / ``preserve_rng_state``;
- the composable ``checkpoint(module)`` raises ``NotImplementedError`` for
  ``use_reentrant=True`` and ``ValueError`` for unknown keywords.
"""

from __future__ import annotations

import libcst as cst

from ckptlint.checkpoint.sites.options import OptionState, OptionValue
from ckptlint.checkpoint.sites.site import CheckpointSite, SiteForm
from ckptlint.facts.apis import ApiKind
from ckptlint.facts.saving import NOOP_CONTEXT_FN
from ckptlint.semantic.model import SemanticModel

__all__ = [
    "SEQUENTIAL_KEYWORDS",
    "always_raises",
    "composable_raising",
    "keyword_list",
    "own_option",
    "reentrant_raising",
    "sequential_extra_positionals",
    "sequential_unexpected_keywords",
]

#: What ``checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs)`` takes
#: by keyword (``preserve_rng_state`` is popped from ``**kwargs``; anything else raises).
SEQUENTIAL_KEYWORDS = frozenset({"functions", "segments", "input", "use_reentrant", "preserve_rng_state"})


def own_option(site: CheckpointSite, value: OptionValue) -> bool:
    """Whether the option comes from this site's own call (a call through a partial is
    judged only on what it adds; the binding is judged at the binding)."""
    if site.form is not SiteForm.BOUND_CALL:
        return True
    return value.arg is not None and any(arg is value.arg for arg in site.call.args)


def keyword_list(args: list[cst.Arg]) -> str:
    return ", ".join(f"`{arg.keyword.value}=`" for arg in args if arg.keyword is not None)


def _is_noop_context_fn(model: SemanticModel, value: OptionValue) -> bool:
    return value.node is not None and NOOP_CONTEXT_FN in model.qualified_names(value.node)


def reentrant_raising(
    site: CheckpointSite, model: SemanticModel, keywords: list[cst.Arg], *, own_only: bool = True, certain: bool = False
) -> list[str]:
    """What the reentrant variant raises ``ValueError`` for in this call, as phrases for a
    message: ``keywords`` (those meant for the function), ``context_fn``, ``debug``. With
    ``own_only`` options bound by a ``functools.partial`` are left to the binding. With
    ``certain``, only what raises whatever the run-time values are: a ``debug`` written as a
    literal other than ``False`` and a ``context_fn`` written as a lambda or a call (a name
    or attribute may hold ``noop_context_fn`` itself)."""
    raising: list[str] = []
    if keywords:
        raising.append(f"keyword arguments meant for the checkpointed function ({keyword_list(keywords)})")
    context_fn = site.option("context_fn")
    if context_fn.is_passed and (not own_only or own_option(site, context_fn)) and not _is_noop_context_fn(model, context_fn):
        if not certain or isinstance(context_fn.node, (cst.Lambda, cst.Call)):
            raising.append("`context_fn`")
    debug = site.option("debug")
    if debug.is_passed and not debug.is_false and (not own_only or own_option(site, debug)):
        if not certain or debug.state is OptionState.LITERAL:
            raising.append("`debug` other than `False`")
    return raising


def sequential_extra_positionals(site: CheckpointSite, *, own_only: bool = True) -> int:
    """How many positional arguments a ``checkpoint_sequential`` call passes when that is
    more than its 4 (``TypeError``), else 0."""
    arguments = site.arguments
    own = {id(arg) for arg in site.call.args}
    positional = [arg for arg in arguments.positional if not own_only or id(arg) in own]
    if arguments.starred or len(positional) <= 4:
        return 0
    return len(positional)


def sequential_unexpected_keywords(site: CheckpointSite, *, own_only: bool = True) -> list[cst.Arg]:
    """The keywords of a ``checkpoint_sequential`` call it does not take (``ValueError``);
    misspelled options are left to CKP003."""
    own = {id(arg) for arg in site.call.args}
    return [
        arg
        for arg in site.function_keywords
        if (not own_only or id(arg) in own)
        and arg.keyword is not None
        and arg.keyword.value not in SEQUENTIAL_KEYWORDS
        and not site.is_misspelled(arg)
    ]


def composable_raising(site: CheckpointSite, keywords: list[cst.Arg], *, own_only: bool = True) -> list[str]:
    """What the composable ``checkpoint(module)`` raises for: ``use_reentrant=True``
    (``NotImplementedError``) and ``keywords`` it does not take (``ValueError``)."""
    raising: list[str] = []
    use_reentrant = site.use_reentrant
    if use_reentrant.state is OptionState.LITERAL and bool(use_reentrant.value) and (not own_only or own_option(site, use_reentrant)):
        raising.append("use_reentrant")
    if keywords:
        raising.append("keywords")
    return raising


def _function_keywords(site: CheckpointSite) -> list[cst.Arg]:
    """Every keyword the call (and its ``functools.partial`` binding) forwards to the function,
    misspelled options left out (CKP003 renames them; the call then no longer raises)."""
    return [arg for arg in site.function_keywords if arg.keyword is not None and not site.is_misspelled(arg)]


def always_raises(site: CheckpointSite, model: SemanticModel) -> bool:
    """Whether ``site`` (a torch checkpoint call, a ``functools.partial`` of one or a call
    through it) raises whenever it runs, whatever the run-time values: then it never runs
    the checkpointed function, nothing is saved and nothing is recomputed.

    The arguments are those CKP002 reports as raising, bound keywords included, counted only
    when they raise for certain (see :func:`reentrant_raising`); an option hidden in a
    ``**`` dictionary or a variant chosen at run time decides nothing (``runs_reentrant`` is
    not ``True``). Remembered on the site."""
    cached = site.extra.get("always_raises")
    if isinstance(cached, bool):
        return cached
    found = False
    if site.save_misuse is None:
        kind = site.api.kind
        if kind in (ApiKind.FUNCTION, ApiKind.WRAPPER):
            found = site.runs_reentrant is True and bool(
                reentrant_raising(site, model, _function_keywords(site), own_only=False, certain=True)
            )
        elif kind is ApiKind.SEQUENTIAL:
            found = bool(sequential_extra_positionals(site, own_only=False) or sequential_unexpected_keywords(site, own_only=False))
        elif kind is ApiKind.COMPOSABLE:
            found = bool(composable_raising(site, _function_keywords(site), own_only=False))
    site.extra["always_raises"] = found
    return found

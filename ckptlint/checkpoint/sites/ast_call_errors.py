"""Arguments that make a torch checkpoint call raise, and whether a call raises whenever it
runs, on CPython's ``ast``, for the sites of :mod:`ckptlint.checkpoint.sites.ast_site_index`
(the facts of torch/utils/checkpoint.py 2.9, unchanged in 2.13, are listed in
:mod:`ckptlint.checkpoint.sites.call_errors`). CKP002 reports these calls; :func:`always_raises`
tells the rules that judge what a site recomputes that such a site recomputes nothing.

A call argument is either a positional expression (``ast.Starred`` for ``*args``) or an
``ast.keyword``: a call's own arguments are its ``args`` and its ``keywords``, and a
keyword's name is the string ``arg`` (``None`` for ``**``).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ckptlint.checkpoint.sites.call_errors import SEQUENTIAL_KEYWORDS
from ckptlint.checkpoint.sites.options import OptionState, OptionValue
from ckptlint.checkpoint.sites.site import SiteForm
from ckptlint.facts.apis import ApiKind
from ckptlint.facts.saving import NOOP_CONTEXT_FN

if TYPE_CHECKING:
    from ckptlint.checkpoint.sites.ast_options import AstArg
    from ckptlint.checkpoint.sites.ast_site_builders import AstSite
    from ckptlint.semantic.ast_model import AstModel

    AstOptionValue = OptionValue[ast.expr, AstArg]

__all__ = [
    "always_raises",
    "composable_raising",
    "keyword_list",
    "own_option",
    "reentrant_raising",
    "sequential_extra_positionals",
    "sequential_unexpected_keywords",
]


def _own_arguments(site: AstSite) -> list[AstArg]:
    """The arguments written in the site's own call, positional and keyword."""
    return [*site.call.args, *site.call.keywords]


def own_option(site: AstSite, value: AstOptionValue) -> bool:
    """Whether the option comes from this site's own call (a call through a partial is
    judged only on what it adds; the binding is judged at the binding)."""
    if site.form is not SiteForm.BOUND_CALL:
        return True
    return value.arg is not None and any(arg is value.arg for arg in _own_arguments(site))


def keyword_list(args: list[ast.keyword]) -> str:
    """``\\`a=\\`, \\`b=\\```: the names of keyword arguments, for a message."""
    return ", ".join(f"`{arg.arg}=`" for arg in args if arg.arg is not None)


def _is_noop_context_fn(model: AstModel, value: AstOptionValue) -> bool:
    return value.node is not None and NOOP_CONTEXT_FN in model.qualified_names(value.node)


def reentrant_raising(
    site: AstSite, model: AstModel, keywords: list[ast.keyword], *, own_only: bool = True, certain: bool = False
) -> list[str]:
    """What the reentrant variant raises ``ValueError`` for in this call, as phrases for a
    message (the facts are listed in :mod:`ckptlint.checkpoint.sites.call_errors`)."""
    raising: list[str] = []
    if keywords:
        raising.append(f"keyword arguments meant for the checkpointed function ({keyword_list(keywords)})")
    context_fn = site.option("context_fn")
    if context_fn.is_passed and (not own_only or own_option(site, context_fn)) and not _is_noop_context_fn(model, context_fn):
        if not certain or isinstance(context_fn.node, (ast.Lambda, ast.Call)):
            raising.append("`context_fn`")
    debug = site.option("debug")
    if debug.is_passed and not debug.is_false and (not own_only or own_option(site, debug)):
        if not certain or debug.state is OptionState.LITERAL:
            raising.append("`debug` other than `False`")
    return raising


def sequential_extra_positionals(site: AstSite, *, own_only: bool = True) -> int:
    """How many positional arguments a ``checkpoint_sequential`` call passes when that is
    more than its 4 (``TypeError``), else 0."""
    arguments = site.arguments
    own = {id(arg) for arg in site.call.args}
    positional = [arg for arg in arguments.positional if not own_only or id(arg) in own]
    if arguments.starred or len(positional) <= 4:
        return 0
    return len(positional)


def sequential_unexpected_keywords(site: AstSite, *, own_only: bool = True) -> list[ast.keyword]:
    """The keywords of a ``checkpoint_sequential`` call it does not take (``ValueError``);
    misspelled options are left to CKP003."""
    own = {id(arg) for arg in site.call.keywords}
    return [
        arg
        for arg in site.function_keywords
        if isinstance(arg, ast.keyword)
        and (not own_only or id(arg) in own)
        and arg.arg is not None
        and arg.arg not in SEQUENTIAL_KEYWORDS
        and not site.is_misspelled(arg)
    ]


def composable_raising(site: AstSite, keywords: list[ast.keyword], *, own_only: bool = True) -> list[str]:
    """What the composable ``checkpoint(module)`` raises for: ``use_reentrant=True``
    (``NotImplementedError``) and ``keywords`` it does not take (``ValueError``)."""
    raising: list[str] = []
    use_reentrant = site.use_reentrant
    if use_reentrant.state is OptionState.LITERAL and bool(use_reentrant.value) and (not own_only or own_option(site, use_reentrant)):
        raising.append("use_reentrant")
    if keywords:
        raising.append("keywords")
    return raising


def _function_keywords(site: AstSite) -> list[ast.keyword]:
    """Every keyword the call (and its ``functools.partial`` binding) forwards to the function,
    misspelled options left out."""
    return [arg for arg in site.function_keywords if isinstance(arg, ast.keyword) and arg.arg is not None and not site.is_misspelled(arg)]


def always_raises(site: AstSite, model: AstModel) -> bool:
    """Whether ``site`` raises whenever it runs, whatever the run-time values (see
    :mod:`ckptlint.checkpoint.sites.call_errors`). Remembered on the site."""
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

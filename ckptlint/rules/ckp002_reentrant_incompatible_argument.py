"""CKP002 reentrant-incompatible-argument, on CPython's ``ast``.

A call's own positional arguments are its ``args`` (expressions, ``ast.Starred`` for ``*``)
and its keywords ``ast.keyword`` nodes; what ``**`` dictionaries surely hold is
:meth:`AstCallArguments.passed_on_every_path
<ckptlint.checkpoint.sites.ast_options.AstCallArguments.passed_on_every_path>`. The fix
(``use_reentrant=False``) is built through :mod:`ckptlint.rules.edits`; whether the
checkpointed callable refuses a keyword is the region builder's answer
(:func:`~ckptlint.checkpoint.analyses.ast_function_keywords.refused_keywords`)."""

from __future__ import annotations

import ast

from ckptlint.checkpoint.analyses.ast_function_keywords import own_function_keywords, refused_keywords
from ckptlint.checkpoint.sites.ast_call_errors import (
    composable_raising,
    keyword_list,
    own_option,
    reentrant_raising,
    sequential_extra_positionals,
    sequential_unexpected_keywords,
)
from ckptlint.checkpoint.sites.ast_site_builders import AstSite
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.checkpoint.sites.options import OptionOrigin, OptionState
from ckptlint.checkpoint.sites.site import Reentrancy, SiteForm
from ckptlint.facts.apis import ApiKind
from ckptlint.rules.base import Invalid, Rule, RuleContext
from ckptlint.rules.edits import add_keyword_argument, replace_node
from ckptlint.text.diagnostics import Applicability, Fix

_KEYWORD = "use_reentrant=False"


class ReentrantIncompatibleArgument(Rule):
    """Flags arguments that the checkpoint variant in use rejects or silently ignores.

    Facts (torch/utils/checkpoint.py 2.9, verified on 2.13.0):

    - the reentrant variant (``use_reentrant=True``, or omitted, which means True) raises
      ``ValueError: Unexpected keyword arguments`` for keyword arguments meant for the
      function, and ``ValueError: Passing `context_fn` or `debug` is only supported when
      use_reentrant=False`` for any ``context_fn`` but the default and any ``debug`` that is
      not the literal ``False`` (``debug=0`` and ``debug=None`` raise too: the check is
      ``debug is not False``);
    - it silently ignores ``early_stop`` and ``determinism_check`` (only reported when they
      ask for something the reentrant variant does not do: ``early_stop`` other than
      ``False``, ``determinism_check`` other than ``"none"``);
    - ``checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs)``
      takes one input: a 4th positional argument binds to ``use_reentrant``, a 5th raises
      ``TypeError``, and keywords other than ``use_reentrant``/``preserve_rng_state`` raise
      ``ValueError: Unexpected keyword arguments``;
    - the composable ``torch.distributed._composable.checkpoint(module, use_reentrant=True)``
      raises ``NotImplementedError``, and unknown keywords raise ``ValueError``.
    """

    code = "CKP002"

    VALID = (
        """\
        from torch.utils.checkpoint import checkpoint
        checkpoint(f, x, mask=m, use_reentrant=False)
        """,
        """\
        from torch.utils.checkpoint import checkpoint
        checkpoint(f, x, use_reentrant=True, debug=False)
        """,
        """\
        from torch.utils.checkpoint import checkpoint
        checkpoint(f, x, use_reentrant=True, preserve_rng_state=False)
        """,
        """\
        from torch.utils.checkpoint import checkpoint
        checkpoint(f, x, use_reentrant=True, early_stop=False)
        """,
        """\
        from torch.utils.checkpoint import checkpoint
        checkpoint(f, x, use_reentrant=flag, context_fn=ctx)
        """,
        """\
        import torch.utils.checkpoint as cp
        cp.checkpoint_sequential(m, 2, x, use_reentrant=False)
        """,
        """\
        import torch.utils.checkpoint as cp
        cp.checkpoint_sequential(m, 2, x, self.use_reentrant)
        """,
        """\
        from torch.distributed._composable import checkpoint
        checkpoint(model, use_reentrant=False)
        """,
        """\
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
        checkpoint_wrapper(block, context_fn=ctx)
        """,
        """\
        def checkpoint(f, x, **kw):
            pass
        checkpoint(f, x, mask=m)
        """,
        """\
        from torch.utils.checkpoint import checkpoint
        checkpoint(model.state_dict(), 'model.pt', debug=True)
        """,
    )
    INVALID = (
        Invalid(
            """\
            from torch.utils.checkpoint import checkpoint
            checkpoint(f, x, mask=m)
            """,
            at=(2, 1),
            message="`checkpoint()` leaves `use_reentrant` unset, so the legacy reentrant variant runs",
            fixed="""\
            from torch.utils.checkpoint import checkpoint
            checkpoint(f, x, mask=m, use_reentrant=False)
            """,
        ),
        Invalid(
            """\
            from torch.utils.checkpoint import checkpoint
            checkpoint(f, x, use_reentrant=True, context_fn=ctx)
            """,
            at=(2, 1),
            message="`checkpoint()` runs the reentrant variant (`use_reentrant=True`), which raises ValueError for `context_fn`",
        ),
        Invalid(
            """\
            from torch.utils.checkpoint import checkpoint
            checkpoint(f, x, use_reentrant=True, debug=0)
            """,
            at=(2, 1),
            message="which raises ValueError for `debug` other than `False`",
        ),
        Invalid(
            """\
            from torch.utils.checkpoint import checkpoint
            checkpoint(f, x, early_stop=True)
            """,
            at=(2, 1),
            message="`checkpoint()` leaves `use_reentrant` unset, so the legacy reentrant variant runs",
            fixed="""\
            from torch.utils.checkpoint import checkpoint
            checkpoint(f, x, early_stop=True, use_reentrant=False)
            """,
        ),
        Invalid(
            """\
            import torch.utils.checkpoint as cp
            cp.checkpoint_sequential(m, 2, x, mask)
            """,
            at=(2, 1),
            message="`checkpoint_sequential()`: its 4th positional argument `mask` binds to `use_reentrant`",
        ),
        Invalid(
            """\
            import torch.utils.checkpoint as cp
            cp.checkpoint_sequential(m, 2, x, use_reentrant=False, context_fn=c)
            """,
            at=(2, 1),
            message="it accepts only `use_reentrant` and `preserve_rng_state` as options, so `context_fn=` raise ValueError",
        ),
        Invalid(
            """\
            from torch.distributed._composable import checkpoint
            checkpoint(model, use_reentrant=True)
            """,
            at=(2, 1),
            message="composable `checkpoint()`: `use_reentrant=True` is not supported and raises NotImplementedError",
        ),
        Invalid(
            """\
            from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl, checkpoint_wrapper
            checkpoint_wrapper(block, CheckpointImpl.REENTRANT, context_fn=ctx)
            """,
            at=(2, 1),
            message="`checkpoint_wrapper(...)` uses `CheckpointImpl.REENTRANT`",
        ),
    )
    reads_regions = True

    def check(self, ctx: RuleContext) -> None:
        for site in ast_site_index(ctx.analysis).sites:
            if site.save_misuse is not None:
                continue  # CKP301: not activation checkpointing
            kind = site.api.kind
            if kind in (ApiKind.FUNCTION, ApiKind.WRAPPER):
                _check_function(ctx, site)
            elif kind is ApiKind.SEQUENTIAL:
                _check_sequential(ctx, site)
            elif kind is ApiKind.COMPOSABLE:
                _check_composable(ctx, site)


def _check_function(ctx: RuleContext, site: AstSite) -> None:
    if site.runs_reentrant is None:
        _check_open_dictionary(ctx, site)
        return
    if site.runs_reentrant is not True:
        return
    ignored: list[str] = []
    keywords = own_function_keywords(site)
    raising = reentrant_raising(site, ctx.analysis.model, keywords)
    early_stop = site.option("early_stop")
    if early_stop.is_passed and not early_stop.is_false and own_option(site, early_stop):
        ignored.append("`early_stop`")
    determinism = site.option("determinism_check")
    asks_none = determinism.state is OptionState.LITERAL and determinism.value == "none"
    if determinism.is_passed and not asks_none and own_option(site, determinism):
        ignored.append("`determinism_check`")
    if not raising and not ignored:
        return
    refused = refused_keywords(ctx.regions, ctx.analysis, site, keywords)
    message = _function_message(ctx, site, raising, ignored, refused)
    # with refused keywords use_reentrant=False would only trade the ValueError for a TypeError
    ctx.report(site.call, message, fix=None if refused else _fix(ctx, site, bool(raising)), site=site)


def _check_open_dictionary(ctx: RuleContext, site: AstSite) -> None:
    """A ``**`` dictionary that surely passes function keywords (``{"cu_seqlens": c, **kwargs}``)
    to an API that runs the reentrant variant when ``use_reentrant`` is left out, and no
    ``use_reentrant`` written anywhere: the reentrant variant raises ``ValueError: Unexpected
    keyword arguments`` (torch 2.13 ``checkpoint``: ``if kwargs and use_reentrant: raise``) unless
    the unknown rest of the dictionary happens to carry ``use_reentrant=False``."""
    api = site.api
    if not (api.reentrant_when_omitted and api.accepts_function_kwargs and api.fixed_reentrancy is None):
        return
    if not site.reported_here or not site.option("use_reentrant").is_unknown or "use_reentrant" in site.arguments.keywords:
        return
    options = set(api.options)
    every_path = site.arguments.passed_on_every_path(ctx.analysis.model)
    if any("use_reentrant" in keys for paths in every_path for keys in paths):
        return
    groups: list[str] = []
    for paths in every_path:
        meant = [sorted(keys - options) for keys in paths]
        if meant and all(meant):
            groups = sorted({", ".join(f"`{k}`" for k in keys) for keys in meant})
            break
    if not groups:
        return
    names = " or ".join(groups)
    ctx.report(
        site.call,
        f"{_what(site)} passes {names} through `**` without `use_reentrant`: unless the rest of that "
        "dictionary carries `use_reentrant=False`, the legacy reentrant variant runs and raises "
        "ValueError (Unexpected keyword arguments) for keyword arguments meant for the checkpointed "
        "function; pass `use_reentrant=False`",
        site=site,
    )


def _what(site: AstSite) -> str:
    short = site.api.name.rsplit(".", 1)[-1]
    if site.form is SiteForm.PARTIAL:
        return f"`functools.partial({short}, ...)`"
    if site.api.kind is ApiKind.WRAPPER:
        return "`checkpoint_wrapper(...)`"
    return f"`{short}()`"


def _variant(site: AstSite) -> str:
    if site.reentrancy is Reentrancy.OMITTED_REENTRANT:
        return "leaves `use_reentrant` unset, so the legacy reentrant variant runs; it"
    if site.api.kind is ApiKind.WRAPPER and site.option("use_reentrant").is_absent:
        return "uses `CheckpointImpl.REENTRANT`; the reentrant variant"
    return "runs the reentrant variant (`use_reentrant=True`), which"


def _function_message(
    ctx: RuleContext, site: AstSite, raising: list[str], ignored: list[str], refused: list[ast.keyword]
) -> str:
    parts: list[str] = []
    if raising:
        parts.append(f"raises ValueError for {_and(raising)}")
    if ignored:
        parts.append(f"silently ignores {_and(ignored)}")
    advice = "pass `use_reentrant=False`"
    if site.reentrancy is Reentrancy.REENTRANT:
        advice = "use the non-reentrant variant (`use_reentrant=False`) or drop these arguments"
    if site.form is SiteForm.BOUND_CALL and site.binding is not None and site.reentrancy is Reentrancy.OMITTED_REENTRANT:
        row = ctx.analysis.range(site.binding.call)[0][0]
        advice = f"pass `use_reentrant=False` in the `functools.partial` at line {row}"
    if refused:
        advice = (
            f"and the checkpointed function does not take {keyword_list(refused)} either (TypeError even "
            "with `use_reentrant=False`): pass the value positionally or bind it inside the function"
        )
    return f"{_what(site)} {_variant(site)} {' and '.join(parts)}; {advice}"


def _fix(ctx: RuleContext, site: AstSite, raises: bool) -> Fix | None:
    """``use_reentrant=False`` where it is unset: safe when the call raises today, unsafe when
    the only problem is an ignored option."""
    if site.reentrancy is not Reentrancy.OMITTED_REENTRANT or site.form is SiteForm.BOUND_CALL:
        return None
    if site.misspelling_of("use_reentrant") is not None:
        return None  # CKP003 renames the misspelled keyword
    applicability = Applicability.SAFE if raises else Applicability.UNSAFE
    message = "Pass `use_reentrant=False`"
    passed = site.use_reentrant
    if passed.is_passed and passed.arg is not None:
        value = passed.arg.value if isinstance(passed.arg, ast.keyword) else passed.arg
        return ctx.fix_from(applicability, message, lambda: replace_node(ctx.analysis, value, "False"))
    if not passed.is_absent or passed.origin is OptionOrigin.DICT or site.arguments.double_starred:
        return None
    return ctx.fix_from(applicability, message, lambda: add_keyword_argument(ctx.analysis, site.call, _KEYWORD))


def _check_sequential(ctx: RuleContext, site: AstSite) -> None:
    problems: list[str] = []
    arguments = site.arguments
    own = {id(arg) for arg in site.call.args}
    given = sequential_extra_positionals(site)
    if given:
        problems.append(f"it takes at most 4 positional arguments, {given} are given (TypeError)")
    if not arguments.starred and len(arguments.positional) >= 4 and id(arguments.positional[3]) in own:
        fourth = arguments.positional[3]
        value = site.use_reentrant
        if not (value.state is OptionState.LITERAL and (value.value is None or isinstance(value.value, bool))):
            text = ctx.analysis.text_of(fourth)
            if "reentrant" not in text.lower():
                problems.append(
                    f"its 4th positional argument `{text}` binds to `use_reentrant`, not to a second "
                    "input (only one input flows between segments; a multi-element tensor there raises "
                    "RuntimeError, anything else silently picks the variant by its truth value)"
                )
    unexpected = sequential_unexpected_keywords(site)
    if unexpected:
        problems.append(
            f"it accepts only `use_reentrant` and `preserve_rng_state` as options, so "
            f"{keyword_list(unexpected)} raise ValueError (Unexpected keyword arguments)"
        )
    if problems:
        ctx.report(site.call, f"{_what(site)}: {'; '.join(problems)}", site=site)


def _check_composable(ctx: RuleContext, site: AstSite) -> None:
    problems: list[str] = []
    unexpected = own_function_keywords(site)
    raising = composable_raising(site, unexpected)
    if "use_reentrant" in raising:
        problems.append(
            "`use_reentrant=True` is not supported and raises NotImplementedError (it drives the "
            "non-reentrant variant only); drop it or use torch.utils.checkpoint.checkpoint"
        )
    if unexpected:
        problems.append(f"{keyword_list(unexpected)} raise ValueError (Unexpected keyword arguments)")
    if problems:
        ctx.report(site.call, f"composable `checkpoint()`: {'; '.join(problems)}", site=site)


def _and(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]

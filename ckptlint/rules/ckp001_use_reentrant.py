"""CKP001 checkpoint-without-use-reentrant, on CPython's ``ast``.

A call's keywords are ``ast.keyword`` nodes (``arg`` the name); an option's argument is a
keyword or a positional expression (its value is the expression itself). Hugging Face
receivers are the region builder's (``ctx.regions.receivers``/``method_signature``), the
checkpointed callable's signature ``ctx.regions.signature`` or
:func:`~ckptlint.semantic.ast_callables.signature_of`, grad mode
:func:`~ckptlint.checkpoint.analyses.ast_grad_mode.grad_mode_at`, a remote-code load
:func:`~ckptlint.rules.library_advice.remote_code`; the library advice that reads no node
is :mod:`ckptlint.rules.library_advice`'s. Fixes are built through
:mod:`ckptlint.rules.edits`."""

from __future__ import annotations

import ast

from ckptlint.checkpoint.analyses.ast_function_keywords import reentrant_call_refuses_keywords
from ckptlint.checkpoint.analyses.ast_grad_mode import grad_mode_at
from ckptlint.checkpoint.analyses.grad_mode import GradMode
from ckptlint.checkpoint.sites.ast_options import AstArg
from ckptlint.checkpoint.sites.ast_site_builders import AstSite
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.checkpoint.sites.options import OptionOrigin, OptionState
from ckptlint.checkpoint.sites.site import Reentrancy, SiteForm
from ckptlint.facts.apis import ApiKind
from ckptlint.facts.hf_formats import OLD_FORMAT_PARAMETER, OLD_FORMAT_SETTER
from ckptlint.facts.version_facts import HF_DEFAULT_REENTRANT
from ckptlint.facts.versions import Placement
from ckptlint.rules.base import Invalid, Rule, RuleContext
from ckptlint.rules.edits import add_dict_entry, add_keyword_argument, replace_node
from ckptlint.rules.library_advice import is_peft, is_timm, kwargs_advice, peft_advice, remote_code, remote_code_message, timm_message
from ckptlint.semantic.ast_callables import signature_of
from ckptlint.text.diagnostics import Applicability, Fix

_RECEIVER_STEPS = 100
_HF_DICT = '{"use_reentrant": False}'
_HF_ENTRY = '"use_reentrant": False'
_HF_KINDS = (ApiKind.HF_ENABLE, ApiKind.HF_TRAINING_ARGS)


class CheckpointWithoutUseReentrant(Rule):
    """Flags checkpoint sites that leave ``use_reentrant`` unchosen.

    torch.utils.checkpoint (2.9, still so in 2.13) warns when ``use_reentrant`` is omitted
    and then runs the legacy reentrant variant; transformers before 5.0 does the same for
    ``gradient_checkpointing_enable()`` / ``TrainingArguments(gradient_checkpointing=True)``
    without ``gradient_checkpointing_kwargs={"use_reentrant": ...}``. Those two are decided
    from the project's declared transformers versions
    (:data:`~ckptlint.facts.version_facts.HF_DEFAULT_REENTRANT`): no finding when every declared
    version is 5.0 or later, the versions named when some are. 5.24's
    ``activation_checkpointing_enable()`` / ``activation_checkpointing=True`` default to
    non-reentrant; a kwargs dictionary without ``"use_reentrant"`` leaves torch's default.
    """

    code = "CKP001"

    VALID = (
        """\
        from torch.utils.checkpoint import checkpoint
        checkpoint(f, x, use_reentrant=False)
        """,
        """\
        import torch
        torch.utils.checkpoint.checkpoint(f, x, use_reentrant=True)
        """,
        """\
        import torch.utils.checkpoint as cp
        cp.checkpoint_sequential(m, 2, x, False)
        """,
        """\
        from torch.utils.checkpoint import checkpoint
        checkpoint(f, x, **kwargs)
        """,
        """\
        import torch.distributed.checkpoint as dcp
        dcp.save(state)
        """,
        """\
        def checkpoint(step):
            pass
        checkpoint(3)
        """,
        """\
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
        checkpoint_wrapper(m)
        """,
        """\
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={'use_reentrant': False})
        """,
        # a helper that forwards its keywords: the call passes use_reentrant
        """\
        from torch.utils.checkpoint import checkpoint
        def run(module, *args, **kwargs):
            return checkpoint(module, *args, **kwargs)
        run(block, x, use_reentrant=False)
        """,
    )
    INVALID = (
        Invalid(
            """\
            from torch.utils.checkpoint import checkpoint
            checkpoint(f, x)
            """,
            at=(2, 1),
            message="`checkpoint()` without `use_reentrant`",
            fixed="""\
            from torch.utils.checkpoint import checkpoint
            checkpoint(f, x, use_reentrant=False)
            """,
        ),
        Invalid(
            """\
            from torch.utils.checkpoint import checkpoint
            checkpoint(f, x, use_reentrant=None)
            """,
            at=(2, 1),
            message="`checkpoint()` without `use_reentrant` (`use_reentrant=None` is the default)",
            fixed="""\
            from torch.utils.checkpoint import checkpoint
            checkpoint(f, x, use_reentrant=False)
            """,
        ),
        Invalid(
            """\
            from torch.utils.checkpoint import checkpoint_sequential
            checkpoint_sequential(m, 2, x, None)
            """,
            at=(2, 1),
            message="`checkpoint_sequential()` without `use_reentrant` (`use_reentrant=None` is the default)",
            fixed="""\
            from torch.utils.checkpoint import checkpoint_sequential
            checkpoint_sequential(m, 2, x, False)
            """,
        ),
        # misspelled use_reentrant: reported, but the fix is CKP003's rename
        Invalid(
            """\
            from torch.utils.checkpoint import checkpoint
            checkpoint(f, x, use_reentrent=False)
            """,
            at=(2, 1),
            message="(`use_reentrent` looks like a misspelling of it, see CKP003)",
        ),
        Invalid(
            """\
            from torch.utils import checkpoint
            checkpoint.checkpoint(f, x)
            """,
            at=(2, 1),
            message="`checkpoint()` without `use_reentrant`",
            fixed="""\
            from torch.utils import checkpoint
            checkpoint.checkpoint(f, x, use_reentrant=False)
            """,
        ),
        Invalid(
            """\
            import functools, torch
            ck = functools.partial(torch.utils.checkpoint.checkpoint, preserve_rng_state=True)
            ck(f, x)
            """,
            at=(2, 6),
            message="`functools.partial(checkpoint, ...)` without `use_reentrant`",
            fixed="""\
            import functools, torch
            ck = functools.partial(torch.utils.checkpoint.checkpoint, preserve_rng_state=True, use_reentrant=False)
            ck(f, x)
            """,
        ),
        Invalid(
            """\
            from torch.utils.checkpoint import checkpoint
            opts = {'preserve_rng_state': True}
            checkpoint(f, x, **opts)
            """,
            at=(3, 1),
            message="`checkpoint()` without `use_reentrant` (its `**` dictionary has no `use_reentrant` key)",
        ),
        # a helper that forwards its keywords: reported at the call that gives none
        Invalid(
            """\
            from torch.utils.checkpoint import checkpoint
            def run(module, *args, **kwargs):
                return checkpoint(module, *args, **kwargs)
            run(block, x)
            """,
            at=(4, 1),
            message="`run()` (which passes `use_reentrant` on to `checkpoint()`) called without `use_reentrant`",
            fixed="""\
            from torch.utils.checkpoint import checkpoint
            def run(module, *args, **kwargs):
                return checkpoint(module, *args, **kwargs)
            run(block, x, use_reentrant=False)
            """,
        ),
        Invalid(
            """\
            model.gradient_checkpointing_enable()
            """,
            at=(1, 1),
            message="`gradient_checkpointing_enable()` without `gradient_checkpointing_kwargs`",
            fixed="""\
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            """,
        ),
        Invalid(
            """\
            from transformers import TrainingArguments
            args = TrainingArguments('out', gradient_checkpointing=True, gradient_checkpointing_kwargs={})
            """,
            at=(2, 8),
            message='`TrainingArguments(gradient_checkpointing=True)`: `gradient_checkpointing_kwargs` has no "use_reentrant" key',
            fixed="""\
            from transformers import TrainingArguments
            args = TrainingArguments('out', gradient_checkpointing=True, gradient_checkpointing_kwargs={"use_reentrant": False})
            """,
        ),
    )
    reads_regions = True

    def check(self, ctx: RuleContext) -> None:
        sites = ast_site_index(ctx.analysis).sites
        chosen_by_every_call = _bindings_chosen_by_every_call(sites)
        for site in sites:
            if is_timm(site) and site.use_reentrant.is_absent and site.reported_here and not site.function_keywords:
                text = timm_message(ctx, site)  # releases before 1.0.13 run torch's omitted default
                if text is not None:
                    ctx.report(site.call, text, fix=_fix(ctx, site) if "pass `use_reentrant=False`" in text else None, site=site)
                continue
            if site.reentrancy is not Reentrancy.OMITTED_REENTRANT or not site.reported_here:
                continue
            if site.form is SiteForm.HELPER_CALL and "use_reentrant" not in site.caller_options:
                continue  # the helper's own call leaves it out: reported there, once
            if id(site) in chosen_by_every_call:
                continue
            if site.save_misuse is not None:
                continue  # CKP301: not a real checkpoint; adding the option would hide it
            if is_peft(site):
                peft = peft_advice(ctx, site, _message(site))
                if peft is not None:
                    ctx.report(site.call, peft.message, fix=_fix(ctx, site) if peft.fixable else None, site=site)
                continue
            if site.api.kind is ApiKind.HF_ENABLE and _receiver_decides(ctx, site):
                continue  # the receiver's own method, or an old-format model that ignores the kwargs
            if reentrant_call_refuses_keywords(ctx.regions, ctx.analysis, site):
                continue  # CKP002 reports it
            versions = None
            if _transformers_default_decides(site):
                decision = ctx.decide(HF_DEFAULT_REENTRANT)
                if decision.placement is Placement.OUTSIDE:
                    continue  # every declared transformers defaults to use_reentrant=False
                if decision.placement is not Placement.UNDECLARED:
                    versions = decision.which("transformers")
            fix = _fix(ctx, site)
            message = _message(site, versions)
            if site.api.kind in _HF_KINDS:
                loaded = remote_code(ctx, site) if site.api.kind is ApiKind.HF_ENABLE else None
                advice = kwargs_advice(ctx, _kwargs_name(site))
                if loaded is not None:
                    message = remote_code_message(_what(site), _kwargs_name(site), loaded)
                elif not advice.usable and site.use_reentrant.origin is OptionOrigin.DEFAULT:
                    message = message.split("; pass `", 1)[0] + "; " + advice.note
                    fix = None  # the keyword raises TypeError on the releases that lack it
            ctx.report(site.call, message, fix=fix, site=site)


def _transformers_default_decides(site: AstSite) -> bool:
    """A Hugging Face switch without kwargs: transformers' default decides the variant."""
    return site.api.kind in _HF_KINDS and site.use_reentrant.origin is OptionOrigin.DEFAULT


def _kwargs_name(site: AstSite) -> str:
    """The kwargs keyword of a Hugging Face site."""
    return str(site.extra.get("kwargs_option", "gradient_checkpointing_kwargs"))


def _receiver_decides(ctx: RuleContext, site: AstSite) -> bool:
    """Whether ``receiver.gradient_checkpointing_enable(...)`` is not decided by Hugging Face's
    ``gradient_checkpointing_kwargs``: every value the receiver may be (directly, or as the
    model a DeepSpeed engine forwards the method to: ``engine, *_ =
    deepspeed.initialize(model=critic)``, :mod:`ckptlint.facts.wrappers`) is known, and is an
    instance of a class of the linted tree that either

    - defines the method itself without ``gradient_checkpointing_kwargs`` (and without
      ``**kwargs``): not Hugging Face's method, and passing the keyword would raise TypeError;
    - or overrides ``_set_gradient_checkpointing`` in the old format (a ``value`` parameter):
      transformers then switches the modules' own flags and ignores the kwargs, and the model's
      own checkpoint calls (judged where they are written) choose the variant
      (:mod:`ckptlint.facts.hf_formats`)."""
    func = site.call.func
    if not isinstance(func, ast.Attribute):
        return False
    kwargs_name = _kwargs_name(site)
    values = ctx.regions.receivers(func.value, func.attr, ctx.analysis, budget=_RECEIVER_STEPS)
    if not values:
        return False
    for value in values:
        signature = ctx.regions.method_signature(value, func.attr)
        if signature is not None and not signature.accepts(kwargs_name):
            continue
        setter = ctx.regions.method_signature(value, OLD_FORMAT_SETTER)
        if signature is None and setter is not None and OLD_FORMAT_PARAMETER in setter.keywords:
            continue
        return False
    return True


def _bindings_chosen_by_every_call(sites: list[AstSite]) -> set[int]:
    """Partial bindings whose every call in the module passes ``use_reentrant`` itself."""
    calls: dict[int, list[AstSite]] = {}
    for site in sites:
        if site.form is SiteForm.BOUND_CALL and site.binding is not None:
            calls.setdefault(id(site.binding), []).append(site)
    return {key for key, bound in calls.items() if all("use_reentrant" in s.arguments.keywords for s in bound)}


def _what(site: AstSite) -> str:
    api = site.api
    if api.kind is ApiKind.HF_ENABLE:
        return f"`{api.name}()`"
    if api.kind is ApiKind.HF_TRAINING_ARGS:
        switch = "activation_checkpointing" if site.option("activation_checkpointing").is_passed else "gradient_checkpointing"
        return f"`TrainingArguments({switch}=True)`"
    short = api.name.rsplit(".", 1)[-1]
    if site.form is SiteForm.HELPER_CALL and site.helper is not None:
        helper = site.helper.qualname.rsplit(".", 1)[-1]
        return f"`{helper}()` (which passes `{_keyword(site)}` on to `{short}()`)"
    if site.form is SiteForm.PARTIAL:
        return f"`functools.partial({short}, ...)`"
    if api.kind is ApiKind.WRAPPER:
        return "`checkpoint_wrapper(checkpoint_fn=checkpoint)`"
    return f"`{short}()`"


def _keyword(site: AstSite) -> str:
    """The keyword that chooses ``use_reentrant`` at this call."""
    for alternative in site.alternatives:
        plan = alternative.plans.get("use_reentrant", ("fixed",))
        if plan[0] == "parameter":
            return plan[1]
    return "use_reentrant"


def _keywords_reach_other_calls(site: AstSite) -> bool:
    """A helper call whose ``use_reentrant`` would travel through the helper's ``**kwargs``,
    which the helper also passes to other code."""
    return (
        site.helper is not None
        and site.helper.keywords_elsewhere
        and any(c.plans.get("use_reentrant") == ("keywords",) for c in site.alternatives)
    )


def _message(site: AstSite, versions: str | None = None) -> str:
    """The finding's text; ``versions``: for a switch without kwargs, the declared transformers
    versions that default to reentrant (``None``: nothing declared, "before 5.0")."""
    what = _what(site)
    typo = site.misspelling_of("use_reentrant")
    if site.api.kind in _HF_KINDS:
        kwargs = _kwargs_name(site)
        if typo is not None:
            return (
                f"{what}: `{kwargs}` has no \"use_reentrant\" key (\"{typo.written}\" looks "
                "like a misspelling of it, see CKP003), so torch runs the legacy reentrant "
                f"checkpoint; rename \"{typo.written}\" to \"use_reentrant\""
            )
        if _passed_none(site) is not None:
            return (
                f"{what}: `{kwargs}` sets \"use_reentrant\" to None, so the legacy "
                "reentrant checkpoint runs; use `\"use_reentrant\": False`"
            )
        if site.use_reentrant.origin is OptionOrigin.DICT:
            return (
                f"{what}: `{kwargs}` has no \"use_reentrant\" key, so torch runs the legacy reentrant "
                "checkpoint (transformers passes the dictionary on as it is); add `\"use_reentrant\": False`"
            )
        when = f"with {versions}, transformers" if versions else "transformers before 5.0"
        return (
            f"{what} without `{kwargs}`: {when} runs the legacy reentrant checkpoint; pass `{kwargs}="
            '{"use_reentrant": False}`'
        )
    via = " (its `**` dictionary has no `use_reentrant` key)" if site.use_reentrant.origin is OptionOrigin.DICT else ""
    if _passed_none(site) is not None:
        via = " (`use_reentrant=None` is the default)"
    if site.form is SiteForm.HELPER_CALL and site.helper is not None:
        keyword = _keyword(site)
        if _keywords_reach_other_calls(site):
            helper = site.helper.qualname.rsplit(".", 1)[-1]
            return (
                f"{what} called without `{keyword}`: PyTorch warns and silently runs the legacy reentrant "
                f"variant; pass `use_reentrant=False` in `{helper}()`'s own checkpoint call (its keywords "
                "also reach the code it runs without checkpointing, which may not accept it)"
            )
        return (
            f"{what} called without `{keyword}`: PyTorch warns and silently runs the legacy reentrant "
            f"variant; pass `{keyword}=False` (recommended)"
        )
    if typo is not None:
        return (
            f"{what} without `use_reentrant` (`{typo.written}` looks like a misspelling of it, see "
            "CKP003): PyTorch warns and runs the legacy reentrant variant, which rejects the unknown "
            f"keyword with ValueError; rename `{typo.written}` to `use_reentrant`"
        )
    return (
        f"{what} without `use_reentrant`{via}: PyTorch warns and silently runs the legacy "
        "reentrant variant; pass `use_reentrant=False` (recommended)"
    )


def _raises_when_reentrant(site: AstSite) -> bool:
    """The reentrant variant raises ValueError for function keyword arguments, a non-default
    ``context_fn`` and ``debug`` other than ``False``."""
    if site.function_keywords:
        return True
    if site.option("context_fn").is_passed:
        return True
    debug = site.option("debug")
    return debug.is_passed and not debug.is_false


def _records_nothing(ctx: RuleContext, site: AstSite) -> bool:
    """A direct call that runs where grad mode is off: neither variant records a graph."""
    if site.form not in (SiteForm.CALL, SiteForm.BOUND_CALL) or site.api.kind not in (ApiKind.FUNCTION, ApiKind.SEQUENTIAL):
        return False
    return grad_mode_at(site.call, ctx.analysis.model).mode is GradMode.DISABLED


def variant_keeps_behaviour(ctx: RuleContext, site: AstSite) -> bool:
    """Whether passing ``use_reentrant=False`` provably changes nothing that works today (see
    :func:`ckptlint.rules.ckp001_use_reentrant.variant_keeps_behaviour`)."""
    return _raises_when_reentrant(site) or _records_nothing(ctx, site)


def _passed_none(site: AstSite) -> ast.expr | None:
    """The expression that passes ``use_reentrant`` as ``None``, or ``None`` when it is absent."""
    value = site.use_reentrant
    if value.state is OptionState.LITERAL and value.value is None and isinstance(value.node, ast.expr):
        return value.node
    return None


def _value(arg: AstArg) -> ast.expr:
    """The expression an argument passes (a keyword's value, or the positional expression itself)."""
    return arg.value if isinstance(arg, ast.keyword) else arg


def _fix(ctx: RuleContext, site: AstSite) -> Fix | None:
    analysis = ctx.analysis
    if site.misspelling_of("use_reentrant") is not None:
        return None  # CKP003 renames the misspelled keyword/key; adding one would pass it twice
    if site.api.kind in _HF_KINDS:
        return _hf_fix(ctx, site)
    signature = None
    if site.function_keywords:
        signature = ctx.regions.signature(site.function, analysis) or signature_of(site.function, analysis.model)
    if signature is not None and any(
        isinstance(a, ast.keyword) and a.arg is not None and not signature.accepts(a.arg) for a in site.function_keywords
    ):
        return None  # the function refuses the keyword too: the fix would trade ValueError for TypeError
    applicability = Applicability.SAFE if variant_keeps_behaviour(ctx, site) else Applicability.UNSAFE
    passed = site.use_reentrant.arg
    if _passed_none(site) is not None and passed is not None:
        value = _value(passed)
        return ctx.fix_from(applicability, "Pass `use_reentrant=False`", lambda: replace_node(analysis, value, "False"))
    if site.use_reentrant.origin is OptionOrigin.DICT or site.arguments.double_starred:
        return None
    if site.form is SiteForm.HELPER_CALL and _keywords_reach_other_calls(site):
        return None  # the keyword would also reach the helper's call without checkpointing
    keyword = _keyword(site)
    return ctx.fix_from(
        applicability, f"Pass `{keyword}=False`", lambda: add_keyword_argument(analysis, site.call, f"{keyword}=False")
    )


def _hf_fix(ctx: RuleContext, site: AstSite) -> Fix | None:
    analysis = ctx.analysis
    name = _kwargs_name(site)
    kwargs = site.option(name)
    message = f'Pass `{name}={{"use_reentrant": False}}`'
    if kwargs.is_absent:
        if site.arguments.double_starred:
            return None
        return ctx.fix_from(Applicability.UNSAFE, message, lambda: add_keyword_argument(analysis, site.call, f"{name}={_HF_DICT}"))
    given = _value(kwargs.arg) if kwargs.arg is not None else None
    if kwargs.state is OptionState.LITERAL and kwargs.value is None and given is not None:
        return ctx.fix_from(Applicability.UNSAFE, message, lambda: replace_node(analysis, given, _HF_DICT))
    none = _passed_none(site)
    if none is not None:
        # {"use_reentrant": None}: replace the value in the literal passed here
        if isinstance(given, ast.Dict) and any(
            key is not None and value is none for key, value in zip(given.keys, given.values, strict=True)
        ):
            return ctx.fix_from(Applicability.UNSAFE, 'Set `"use_reentrant": False`', lambda: replace_node(analysis, none, "False"))
        return None
    if isinstance(given, ast.Dict):
        dictionary = given
        return ctx.fix_from(
            Applicability.UNSAFE,
            f'Add `"use_reentrant": False` to `{name}`',
            lambda: add_dict_entry(analysis, dictionary, _HF_ENTRY),
        )
    return None

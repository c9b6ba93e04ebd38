"""CKP001 checkpoint-without-use-reentrant."""

from __future__ import annotations

import libcst as cst

from ckptlint.checkpoint.analyses.function_keywords import reentrant_call_refuses_keywords
from ckptlint.checkpoint.analyses.grad_mode import GradMode, grad_mode_at
from ckptlint.checkpoint.sites.options import OptionOrigin, OptionState
from ckptlint.checkpoint.sites.site import Reentrancy
from ckptlint.checkpoint.sites.sites import CheckpointSite, SiteForm, site_index
from ckptlint.facts.apis import ApiKind
from ckptlint.facts.hf_formats import OLD_FORMAT_PARAMETER, OLD_FORMAT_SETTER
from ckptlint.facts.version_facts import HF_DEFAULT_REENTRANT
from ckptlint.facts.versions import Placement
from ckptlint.rules.base import Invalid, Rule, RuleContext
from ckptlint.rules.edits import add_dict_entry, add_keyword_argument, replace_node
from ckptlint.rules.library_advice import (
    is_peft,
    is_timm,
    kwargs_advice,
    peft_advice,
    remote_code,
    remote_code_message,
    timm_message,
)
from ckptlint.semantic.callables import signature_of
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

    def check(self, ctx: RuleContext) -> None:
        sites = site_index(ctx.analysis).sites
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
                continue  # CKP002 reports it: use_reentrant=False would only trade ValueError for TypeError
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


def _transformers_default_decides(site: CheckpointSite) -> bool:
    """A Hugging Face switch without kwargs: transformers' default decides the variant
    (reentrant before 5.0, not from 5.0 on: :data:`~ckptlint.facts.version_facts.HF_DEFAULT_REENTRANT`)."""
    return site.api.kind in _HF_KINDS and site.use_reentrant.origin is OptionOrigin.DEFAULT


def _kwargs_name(site: CheckpointSite) -> str:
    """The kwargs keyword of a Hugging Face site (``gradient_checkpointing_kwargs``, or 5.24's
    ``activation_checkpointing_kwargs``)."""
    return str(site.extra.get("kwargs_option", "gradient_checkpointing_kwargs"))


def _receiver_decides(ctx: RuleContext, site: CheckpointSite) -> bool:
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
    if not isinstance(func, cst.Attribute):
        return False
    kwargs_name = _kwargs_name(site)
    # a receiver built by a class of the tree is a few steps away (`model = Model()`, `self`, a
    # builder function's return); a small budget keeps this question from following long call
    # chains into other files. What is not known stays among the values (a complete query), so
    # `model = AutoModel...; if flag: model = Wrapper(model)` is not taken for the wrapper alone.
    values = ctx.regions.receivers(func.value, func.attr.value, ctx.analysis, budget=_RECEIVER_STEPS)
    if not values:
        return False
    for value in values:
        signature = ctx.regions.method_signature(value, func.attr.value)
        if signature is not None and not signature.accepts(kwargs_name):
            continue
        setter = ctx.regions.method_signature(value, OLD_FORMAT_SETTER)
        if signature is None and setter is not None and OLD_FORMAT_PARAMETER in setter.keywords:
            continue
        return False
    return True


def _bindings_chosen_by_every_call(sites: list[CheckpointSite]) -> set[int]:
    """Partial bindings whose every call in the module passes ``use_reentrant`` itself."""
    calls: dict[int, list[CheckpointSite]] = {}
    for site in sites:
        if site.form is SiteForm.BOUND_CALL and site.binding is not None:
            calls.setdefault(id(site.binding), []).append(site)
    return {
        key
        for key, bound in calls.items()
        if all("use_reentrant" in s.arguments.keywords for s in bound)
    }


def _what(site: CheckpointSite) -> str:
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


def _keyword(site: CheckpointSite) -> str:
    """The keyword that chooses ``use_reentrant`` at this call: ``use_reentrant``, or, for
    a call of a helper that passes a parameter of its own, that parameter."""
    for alternative in site.alternatives:
        plan = alternative.plans.get("use_reentrant", ("fixed",))
        if plan[0] == "parameter":
            return plan[1]
    return "use_reentrant"


def _keywords_reach_other_calls(site: CheckpointSite) -> bool:
    """A helper call whose ``use_reentrant`` would travel through the helper's ``**kwargs``,
    which the helper also passes to other code (``module(*args, **kwargs)``)."""
    return (
        site.helper is not None
        and site.helper.keywords_elsewhere
        and any(c.plans.get("use_reentrant") == ("keywords",) for c in site.alternatives)
    )


def _message(site: CheckpointSite, versions: str | None = None) -> str:
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


def _raises_when_reentrant(site: CheckpointSite) -> bool:
    """torch.utils.checkpoint 2.9-2.13: the reentrant variant raises ValueError for function
    keyword arguments, a non-default ``context_fn`` and ``debug`` other than ``False``
    (``checkpoint()``: "Unexpected keyword arguments", "Passing `context_fn` or `debug` is only
    supported when use_reentrant=False")."""
    if site.function_keywords:
        return True
    if site.option("context_fn").is_passed:
        return True
    debug = site.option("debug")
    return debug.is_passed and not debug.is_false


def _records_nothing(ctx: RuleContext, site: CheckpointSite) -> bool:
    """The call runs where grad mode is off (``with torch.no_grad()``, ``inference_mode()``,
    ``set_grad_enabled(False)``, or such a decorator, in its own function): neither variant
    records a graph, both run the function once and return what it returns
    (torch.utils.checkpoint 2.13: ``CheckpointFunction.forward`` runs it under ``no_grad``; the
    non-reentrant generator sees an input saver without ``grad_fn`` and runs it plainly,
    lines 1566-1569). Only for a direct call: a ``partial`` or a wrapper runs where it is
    called, and a helper's own code may turn grad mode back on."""
    if site.form not in (SiteForm.CALL, SiteForm.BOUND_CALL) or site.api.kind not in (ApiKind.FUNCTION, ApiKind.SEQUENTIAL):
        return False
    return grad_mode_at(site.call, ctx.analysis.model).mode is GradMode.DISABLED


def variant_keeps_behaviour(ctx: RuleContext, site: CheckpointSite) -> bool:
    """Whether passing ``use_reentrant=False`` provably changes nothing that works today: the
    reentrant variant raises at this call whatever the inputs (:func:`_raises_when_reentrant`),
    or no graph is recorded (:func:`_records_nothing`). Everywhere else the variants differ in
    ways the text does not decide (which tensors require grad at run time, nested or
    keyword-only inputs, ``torch.autograd.grad`` elsewhere, grad mode read inside the region,
    early stop of recomputation, the metadata check of recomputed tensors), so the fix is
    unsafe there."""
    return _raises_when_reentrant(site) or _records_nothing(ctx, site)


def _passed_none(site: CheckpointSite) -> cst.BaseExpression | None:
    """The expression that passes ``use_reentrant`` as ``None`` (the default, which warns and
    runs reentrant), or ``None`` when it is absent."""
    value = site.use_reentrant
    if value.state is OptionState.LITERAL and value.value is None and isinstance(value.node, cst.BaseExpression):
        return value.node
    return None


def _fix(ctx: RuleContext, site: CheckpointSite) -> Fix | None:
    analysis = ctx.analysis
    if site.misspelling_of("use_reentrant") is not None:
        return None  # CKP003 renames the misspelled keyword/key; adding one would pass it twice
    if site.api.kind in _HF_KINDS:
        return _hf_fix(ctx, site)
    signature = None
    if site.function_keywords:
        signature = ctx.regions.signature(site.function, analysis) or signature_of(site.function, analysis.model)
    if signature is not None and any(
        a.keyword is not None and not signature.accepts(a.keyword.value) for a in site.function_keywords
    ):
        return None  # the function refuses the keyword too: the fix would trade ValueError for TypeError
    # No fix writes use_reentrant=True: the recommended variant is the only fix, safe where it
    # provably changes nothing that works today (variant_keeps_behaviour), unsafe elsewhere.
    applicability = Applicability.SAFE if variant_keeps_behaviour(ctx, site) else Applicability.UNSAFE
    passed = site.use_reentrant.arg
    if _passed_none(site) is not None and passed is not None:
        # use_reentrant=None (keyword, or checkpoint_sequential's 4th positional): replace
        # the value; adding the keyword would repeat it.
        return ctx.fix(applicability, "Pass `use_reentrant=False`", replace_node(analysis, passed.value, "False"))
    if site.use_reentrant.origin is OptionOrigin.DICT or site.arguments.double_starred:
        return None
    if site.form is SiteForm.HELPER_CALL and _keywords_reach_other_calls(site):
        return None  # the keyword would also reach the helper's call without checkpointing
    keyword = _keyword(site)
    return ctx.fix(applicability, f"Pass `{keyword}=False`", *add_keyword_argument(analysis, site.call, f"{keyword}=False"))


def _hf_fix(ctx: RuleContext, site: CheckpointSite) -> Fix | None:
    analysis = ctx.analysis
    name = _kwargs_name(site)
    kwargs = site.option(name)
    message = f'Pass `{name}={{"use_reentrant": False}}`'
    if kwargs.is_absent:
        if site.arguments.double_starred:
            return None
        edits = add_keyword_argument(analysis, site.call, f"{name}={_HF_DICT}")
        return ctx.fix(Applicability.UNSAFE, message, *edits)
    if kwargs.state is OptionState.LITERAL and kwargs.value is None and kwargs.arg is not None:
        return ctx.fix(Applicability.UNSAFE, message, replace_node(analysis, kwargs.arg.value, _HF_DICT))
    none = _passed_none(site)
    if none is not None:
        # {"use_reentrant": None}: replace the value in the literal passed here
        if kwargs.arg is not None and isinstance(kwargs.arg.value, cst.Dict) and any(
            isinstance(e, cst.DictElement) and e.value is none for e in kwargs.arg.value.elements
        ):
            return ctx.fix(Applicability.UNSAFE, 'Set `"use_reentrant": False`', replace_node(analysis, none, "False"))
        return None
    if kwargs.arg is not None and isinstance(kwargs.arg.value, cst.Dict):
        return ctx.fix(
            Applicability.UNSAFE,
            f'Add `"use_reentrant": False` to `{name}`',
            *add_dict_entry(analysis, kwargs.arg.value, _HF_ENTRY),
        )
    return None

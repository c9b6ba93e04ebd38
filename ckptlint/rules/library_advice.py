"""What CKP001 may advise where a library's version or a model's own code decides: the
transformers releases that have ``gradient_checkpointing_kwargs``, timm's ``checkpoint_seq``
before 1.0.13, peft's ``prepare_model_for_kbit_training``, and models loaded with
``trust_remote_code=True`` (:data:`~ckptlint.facts.version_facts.HF_CHECKPOINTING_KWARGS`,
:data:`~ckptlint.facts.version_facts.TIMM_CHECKPOINT_REENTRANT`,
:data:`~ckptlint.facts.version_facts.PEFT_KBIT_EMPTY_KWARGS`)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ckptlint.checkpoint.sites.options import OptionOrigin, OptionState
from ckptlint.checkpoint.sites.site import CheckpointSite
from ckptlint.checkpoint.sites.site_builders import LIBRARY_SWITCH
from ckptlint.facts.apis import PEFT_PREPARE_KBIT, TIMM_CHECKPOINT, TIMM_CHECKPOINT_SEQ
from ckptlint.facts.version_facts import (
    HF_CHECKPOINTING_KWARGS,
    HF_DEFAULT_REENTRANT,
    PEFT_KBIT_EMPTY_KWARGS,
    TIMM_CHECKPOINT_REENTRANT,
    VersionFact,
)
from ckptlint.facts.versions import Decision, Placement
from ckptlint.semantic.ast_assignments import assignments
from ckptlint.semantic.ast_walk import iter_tree

if TYPE_CHECKING:
    from ckptlint.checkpoint.sites.ast_site_builders import AstSite
    from ckptlint.rules.base import RuleContext

__all__ = [
    "AdviceContext",
    "AnySite",
    "KwargsAdvice",
    "PeftAdvice",
    "RemoteCode",
    "is_peft",
    "kwargs_advice",
    "peft_advice",
    "remote_code",
    "timm_message",
]


#: A site of any node types (the advice reads its records, never its nodes).
AnySite = CheckpointSite[Any, Any, Any, Any]


class _Texts(Protocol):
    def text_of(self, node: Any) -> str: ...


class AdviceContext(Protocol):
    """What the advice reads of a rule's context (:class:`~ckptlint.rules.base.RuleContext`):
    the declared versions' decisions and the linted module's texts."""

    @property
    def analysis(self) -> _Texts: ...

    def decide(self, fact: VersionFact) -> Decision: ...


@dataclass(frozen=True)
class KwargsAdvice:
    """Whether the declared transformers has ``gradient_checkpointing_kwargs``.

    Attributes:
        usable: every declared release has it (or nothing is declared): advise it, with a fix.
        note: what to say instead or besides (``""`` when ``usable``).
    """

    usable: bool
    note: str = ""


def kwargs_advice(ctx: AdviceContext, kwargs_name: str) -> KwargsAdvice:
    """Whether advising ``gradient_checkpointing_kwargs`` fits the declared transformers
    (4.35 and later only); ``activation_checkpointing_kwargs`` is 5.24's, always usable where
    it is written."""
    if kwargs_name != "gradient_checkpointing_kwargs":
        return KwargsAdvice(True)
    decision = ctx.decide(HF_CHECKPOINTING_KWARGS)
    if decision.placement in (Placement.INSIDE, Placement.UNDECLARED):
        return KwargsAdvice(True)
    then = f'require transformers>=4.35, then pass `{kwargs_name}={{"use_reentrant": False}}`'
    if decision.placement is Placement.OUTSIDE:
        return KwargsAdvice(
            False, f"those releases have no `{kwargs_name}` (it came in 4.35; passing it raises TypeError): {then}"
        )
    return KwargsAdvice(
        False,
        f"the releases before 4.35 that the declared range also allows have no `{kwargs_name}` (TypeError there): {then}",
    )


@dataclass(frozen=True)
class RemoteCode:
    """A receiver loaded with ``trust_remote_code``: ``condition`` is ``""`` for a literal
    ``True``, else the expression's text (it holds when that is true); ``row``: the load's line."""

    condition: str
    row: int


def remote_code(ctx: RuleContext, site: AstSite) -> RemoteCode | None:
    """The ``trust_remote_code=...`` load (not literally ``False``) of the receiver of
    ``receiver.gradient_checkpointing_enable()``: a name, or ``self.attr``, assigned in the
    function (for a name) or the class (for ``self.attr``) around the call from a call that
    passes it; ``None`` when there is none. Such a model's class is its repository's own code,
    which decides what the method runs; ckptlint does not read it. The assignments are read in
    field order (:func:`~ckptlint.semantic.ast_walk.fields_order_children`), parents
    before children, so the first load found is the first in that order."""
    func = site.call.func
    if not isinstance(func, ast.Attribute):
        return None
    receiver = func.value
    analysis = ctx.analysis
    scope: ast.AST | None = None
    for ancestor in analysis.model.ancestors(site.call):
        if isinstance(receiver, ast.Name) and isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            scope = ancestor
            break
        if isinstance(receiver, ast.Attribute) and isinstance(ancestor, ast.ClassDef):
            scope = ancestor
            break
    if scope is None:
        return None
    wanted = analysis.text_of(receiver)
    for node in iter_tree(scope):
        for assigned in assignments(node):
            if analysis.text_of(assigned.target) != wanted or not isinstance(assigned.value, ast.Call):
                continue
            for keyword in assigned.value.keywords:
                if keyword.arg != "trust_remote_code":
                    continue
                value = keyword.value
                if isinstance(value, ast.Constant) and value.value is False:
                    continue
                literal = isinstance(value, ast.Constant) and value.value is True
                row = analysis.range(assigned.value)[0][0]
                return RemoteCode("" if literal else analysis.text_of(value), row)
    return None


def remote_code_message(what: str, kwargs_name: str, loaded: RemoteCode) -> str:
    """CKP001's text for a receiver loaded with ``trust_remote_code``: what runs is unknown."""
    when = "" if not loaded.condition else f" when `{loaded.condition}` is true"
    return (
        f"{what} without `{kwargs_name}` on a model loaded with `trust_remote_code` (line {loaded.row}){when}: "
        "the model's own code, which ckptlint does not read, decides which checkpoint this runs; if it keeps "
        f'transformers\' method, pass `{kwargs_name}={{"use_reentrant": False}}` to choose the non-reentrant variant'
    )


def is_timm(site: AnySite) -> bool:
    return site.api in (TIMM_CHECKPOINT_SEQ, TIMM_CHECKPOINT)


def timm_message(ctx: AdviceContext, site: AnySite) -> str | None:
    """CKP001's text for timm's ``checkpoint_seq()``/``checkpoint()`` without ``use_reentrant``
    where the declared timm has releases before 1.0.13 (``None``: no finding: nothing declared,
    whose default timm's run-time setting decides, or every declared release is 1.0.13 or later)."""
    decision = ctx.decide(TIMM_CHECKPOINT_REENTRANT)
    if decision.placement not in (Placement.INSIDE, Placement.PARTLY):
        return None
    which = decision.which("timm")
    if site.api is TIMM_CHECKPOINT:
        return (
            f"`checkpoint()` without `use_reentrant`: with {which}, timm has no `checkpoint` of its own "
            "(`timm.models._manipulate.checkpoint` is torch's, imported; `timm.models` exports none), so PyTorch "
            "warns and silently runs the legacy reentrant variant; pass `use_reentrant=False` (recommended; timm "
            "1.0.13 and later take it too)"
        )
    newer = "" if decision.placement is Placement.INSIDE else " (1.0.13 and later default to the non-reentrant one)"
    return (
        f"`checkpoint_seq()` without `use_reentrant`: with {which}, timm calls torch's checkpoint without it, so "
        f"PyTorch warns and silently runs the legacy reentrant variant{newer}; those releases take no "
        "`use_reentrant` (TypeError), so require timm>=1.0.13 to choose the variant"
    )


@dataclass(frozen=True)
class PeftAdvice:
    """CKP001's finding at peft's ``prepare_model_for_kbit_training(...)``: its text, and
    whether the fix (``gradient_checkpointing_kwargs={"use_reentrant": False}``) fits every
    declared release."""

    message: str
    fixable: bool


def is_peft(site: AnySite) -> bool:
    return site.api is PEFT_PREPARE_KBIT


def peft_condition(ctx: AdviceContext, site: AnySite) -> str:
    """When peft turns checkpointing on at all: its switch on, and a quantized model."""
    switch = site.option(LIBRARY_SWITCH)
    if switch.is_absent:
        when = f"when `{LIBRARY_SWITCH}` is true (it defaults to `True`) and "
    elif switch.state is OptionState.LITERAL:
        when = "when "
    else:
        text = ctx.analysis.text_of(switch.node) if switch.node is not None else LIBRARY_SWITCH
        when = f"when `{text}` is true and "
    return f"; peft turns checkpointing on only {when}the model is quantized (8-bit or 4-bit, GPTQ, AQLM, EETQ, HQQ, torchao)"


def _declared(decision: Decision, fallback: str) -> str:
    """The declaration a decision read, for messages (``fallback`` when nothing is declared)."""
    target = decision.target
    return f"`{target.declared}` ({target.where})" if target is not None else fallback


def peft_advice(ctx: AdviceContext, site: AnySite, generic: str) -> PeftAdvice | None:
    """CKP001 at ``prepare_model_for_kbit_training(...)`` whose variant is reentrant.

    A kwargs dictionary written at the call goes to transformers as it is (``generic``, the
    Hugging Face text). Without kwargs, peft 0.6 and later pass ``{}``, never ``None``, so
    transformers' default does not apply and torch's omitted ``use_reentrant`` does (reentrant
    whatever the transformers release); before 0.6 peft calls ``gradient_checkpointing_enable()``
    and transformers' default decides (``None``: no finding, every declared transformers is 5.0
    or later). Where the model's method takes no kwargs (transformers before 4.35) peft calls it
    without them and ignores those it was given (a FutureWarning, no error)."""
    condition = peft_condition(ctx, site)
    if site.use_reentrant.origin is not OptionOrigin.DEFAULT:
        return PeftAdvice(generic + condition, True)
    kwargs = "gradient_checkpointing_kwargs"
    then = f'pass `{kwargs}={{"use_reentrant": False}}`'
    peft = ctx.decide(PEFT_KBIT_EMPTY_KWARGS)
    transformers = ctx.decide(HF_CHECKPOINTING_KWARGS)
    if transformers.placement is Placement.OUTSIDE:
        return PeftAdvice(
            f"`prepare_model_for_kbit_training()`: with {_declared(transformers, 'transformers before 4.35')}, "
            "`model.gradient_checkpointing_enable()` takes no kwargs, so peft calls it without them (and ignores "
            f"`{kwargs}` with a FutureWarning) and the model's own checkpoint calls choose the variant; require "
            f"transformers>=4.35, then {then}" + condition,
            False,
        )
    if peft.placement is Placement.OUTSIDE:
        default = ctx.decide(HF_DEFAULT_REENTRANT)
        if default.placement is Placement.OUTSIDE:
            return None
        when = f"with {default.which('transformers')}, transformers" if default.placement is Placement.PARTLY else (
            "transformers before 5.0"
        )
        return PeftAdvice(
            f"`prepare_model_for_kbit_training()`: with {_declared(peft, 'peft before 0.6')}, peft calls "
            f"`model.gradient_checkpointing_enable()` without kwargs, and {when} runs the legacy reentrant "
            f"checkpoint; those peft releases take no `{kwargs}` (TypeError): require peft>=0.6, then {then}" + condition,
            False,
        )
    if peft.placement is Placement.PARTLY:
        advice = (
            f"; the peft releases before 0.6 that the declared range also allows take no `{kwargs}` (TypeError): "
            f"require peft>=0.6, then {then}"
        )
    else:
        advice = f"; {then}"
    if transformers.placement is Placement.PARTLY:
        advice += (
            " (with the transformers releases before 4.35 that the declared range also allows, peft ignores it "
            "with a FutureWarning and the model's own checkpoint calls choose the variant)"
        )
    return PeftAdvice(
        f"`prepare_model_for_kbit_training()` without `{kwargs}`: peft hands `model.gradient_checkpointing_enable()` "
        f"an empty `{kwargs}={{}}` (where it takes them: transformers 4.35 and later), so transformers' default does not "
        f"apply and PyTorch warns and silently runs the legacy reentrant variant, with transformers 5 too{advice}" + condition,
        peft.placement is not Placement.PARTLY,
    )

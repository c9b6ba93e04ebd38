"""The records of checkpoint sites: what a site is, which variant it runs, and the two
findings attached to it while sites are collected (a save misuse, misspelled options).

Leaf records only (no analysis): :mod:`ckptlint.checkpoint.sites` builds them,
:mod:`~ckptlint.checkpoint.misuse`, :mod:`~ckptlint.checkpoint.misspelling` and
:mod:`~ckptlint.checkpoint.reach` fill parts of them, rules read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import libcst as cst

from ckptlint.checkpoint.options import ABSENT, CallArguments, OptionValue
from ckptlint.facts.apis import CheckpointApi
from ckptlint.semantic.bindings import Scope

__all__ = ["CheckpointSite", "Misspelling", "Reentrancy", "SaveForm", "SaveMisuse", "SiteForm", "SiteIndex"]


class SiteForm(str, Enum):
    CALL = "call"  # the API is called directly
    PARTIAL = "partial"  # functools.partial(API, ...): a binding, reported itself
    BOUND_CALL = "bound-call"  # a call through a partial binding of this module


class Reentrancy(str, Enum):
    """Which checkpoint variant a site runs, as far as the source says."""

    REENTRANT = "reentrant"  # use_reentrant=True (or CheckpointImpl.REENTRANT)
    NON_REENTRANT = "non-reentrant"  # use_reentrant=False (or CheckpointImpl.NO_REENTRANT)
    OMITTED_REENTRANT = "omitted"  # not chosen; the API falls back to reentrant (CKP001)
    DEFAULT_NON_REENTRANT = "default-non-reentrant"  # not chosen; the API defaults to False
    DYNAMIC = "dynamic"  # chosen by an expression evaluated at run time
    UNKNOWN = "unknown"  # may be hidden in ** arguments, or decided by a custom function

    @property
    def runs_reentrant(self) -> bool | None:
        if self in (Reentrancy.REENTRANT, Reentrancy.OMITTED_REENTRANT):
            return True
        if self in (Reentrancy.NON_REENTRANT, Reentrancy.DEFAULT_NON_REENTRANT):
            return False
        return None


class SaveForm(str, Enum):
    """Which ``torch.save``/``torch.load`` call the checkpoint call stands for."""

    SAVE_OBJECT = "save-object"  # torch.save(saved, destination)
    SAVE_STATE_OF = "save-state-of"  # torch.save(saved.state_dict(), destination)
    SAVE_CALL = "save-call"  # checkpoint(torch.save, *args): torch.save(*args)
    LOAD_CALL = "load-call"  # checkpoint(torch.load, *args): torch.load(*args)
    UNKNOWN = "unknown"  # the arguments do not map


@dataclass(frozen=True)
class SaveMisuse:
    """Why a checkpoint call looks like saving (or loading) training state.

    Attributes:
        reason: a phrase for messages (``"its callable is a `state_dict()` call"``).
        form: how the arguments map to ``torch.save``/``torch.load``.
        saved: for ``SAVE_OBJECT``/``SAVE_STATE_OF``, the object meant to be saved.
        destination: for those forms, the path expression.
        arguments: for ``SAVE_CALL``/``LOAD_CALL``, the arguments ``torch.save``/``torch.load``
            should get.
    """

    reason: str
    form: SaveForm
    saved: cst.BaseExpression | None = None
    destination: cst.BaseExpression | None = None
    arguments: tuple[cst.Arg, ...] = ()



@dataclass(frozen=True)
class Misspelling:
    """A keyword (or a key of a ``gradient_checkpointing_kwargs`` dict literal) that is
    probably a misspelled option.

    Attributes:
        written: the name as written (``"use_reentrent"``).
        option: the option it probably means (``"use_reentrant"``).
        ratio: difflib's similarity ratio of the two, 0..1.
        node: the node to rename: the keyword ``Name`` or the dict key string.
        arg: the call argument carrying it (``None`` for a dict key).
        value: the value passed with it.
    """

    written: str
    option: str
    ratio: float
    node: cst.CSTNode
    arg: cst.Arg | None
    value: cst.BaseExpression



@dataclass(eq=False)
class CheckpointSite:
    """One use of a checkpoint API.

    Attributes:
        api: the API (see :mod:`ckptlint.facts.apis`).
        form: direct call, ``functools.partial`` binding, or call through such a binding.
        call: the call node of the site (the ``partial(...)`` call for a binding).
        arguments: the arguments of ``call`` sorted by form (for a partial, without the
            API itself).
        function: the checkpointed callable (``function``, ``functions`` or the wrapped
            module) or ``None`` when not given here.
        inputs: positional arguments passed to the checkpointed function.
        function_keywords: keyword arguments forwarded to the checkpointed function.
        options: every option of the API the site passes or omits.
        reentrancy: which variant runs.
        hidden_arguments: a ``**`` argument of unknown content may carry more options.
        binding: for a ``BOUND_CALL``, the ``PARTIAL`` site it goes through.
        scope: the scope the call is evaluated in.
        save_misuse: set when the call is not activation checkpointing at all but an
            attempt to save training state (a state dict, a path, an optimizer...; see
            :mod:`ckptlint.checkpoint.misuse`). Reported by CKP301; no other rule judges it.
        misspellings: the site's own keywords that look like misspelled options (see
            :mod:`ckptlint.checkpoint.misspelling`). Reported by CKP003; other rules neither
            count them as function keywords nor add the option they stand for.
    """

    api: CheckpointApi
    form: SiteForm
    call: cst.Call
    arguments: CallArguments
    function: cst.BaseExpression | None
    inputs: tuple[cst.Arg, ...]
    function_keywords: tuple[cst.Arg, ...]
    options: dict[str, OptionValue]
    reentrancy: Reentrancy
    hidden_arguments: bool
    scope: Scope
    binding: CheckpointSite | None = None
    extra: dict[str, object] = field(default_factory=dict)
    save_misuse: SaveMisuse | None = None
    misspellings: tuple[Misspelling, ...] = ()

    def misspelling_of(self, option: str) -> Misspelling | None:
        """The first keyword of this site that probably misspells ``option``."""
        return next((m for m in self.misspellings if m.option == option), None)

    def is_misspelled(self, arg: cst.Arg) -> bool:
        """Whether ``arg`` is one of :attr:`misspellings`."""
        return any(m.arg is arg for m in self.misspellings)

    def option(self, name: str) -> OptionValue:
        """The value passed for option ``name`` (``ABSENT`` when the API has no such option)."""
        return self.options.get(name, ABSENT)

    @property
    def use_reentrant(self) -> OptionValue:
        return self.option("use_reentrant")

    @property
    def runs_reentrant(self) -> bool | None:
        return self.reentrancy.runs_reentrant

    @property
    def reported_here(self) -> bool:
        """Whether option findings belong to this site (calls through a binding are judged
        at the binding)."""
        return self.form is not SiteForm.BOUND_CALL


@dataclass
class SiteIndex:
    """All sites of a module, plus calls of the ``torch.utils.checkpoint`` module itself and
    calls of ``torch.distributed.checkpoint`` functions (``dcp_calls``, see
    :data:`ckptlint.facts.saving.DCP_FUNCTIONS`; not activation checkpointing, CKP303 judges them)."""

    sites: list[CheckpointSite]
    module_calls: list[cst.Call]
    dcp_calls: list[cst.Call] = field(default_factory=list)

"""The records of checkpoint sites: what a site is, which variant it runs, and the two
findings attached to it while sites are collected (a save misuse, misspelled options).

Leaf records only (no analysis): :mod:`ckptlint.checkpoint.sites.ast_sites`,
:mod:`~ckptlint.checkpoint.sites.ast_site_builders` and
:mod:`~ckptlint.checkpoint.sites.ast_helper_sites` build them,
:mod:`~ckptlint.checkpoint.sites.ast_misuse` and :mod:`~ckptlint.checkpoint.sites.ast_misspelling`
fill parts of them, rules read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Generic

from ckptlint.checkpoint.sites.options import ABSENT, OptionState, OptionValue
from ckptlint.facts.apis import CheckpointApi
from ckptlint.semantic.bindings import Scope

if TYPE_CHECKING:
    from typing_extensions import TypeVar


    # A site's call, expressions, call arguments and their sorted form (sites found on
    # CPython's ``ast`` are ``CheckpointSite[ast.Call, ast.expr, ast.AST, AstCallArguments]``,
    # see :mod:`ckptlint.checkpoint.sites.ast_sites`).
    C = TypeVar("C")
    E = TypeVar("E")
    A = TypeVar("A")
    G = TypeVar("G")
    # A helper's ``def``, the module it lives in (its ``AstModel``) and the sites of its checkpoint calls (see
    # :mod:`ckptlint.checkpoint.sites.ast_helper_sites`).
    F = TypeVar("F")
    M = TypeVar("M")
    S = TypeVar("S", bound="CheckpointSite[Any, Any, Any, Any]", default="CheckpointSite")
    # The node a misspelling renames (the ``ast.keyword`` or the key's ``ast.Constant``).
    N = TypeVar("N")
else:
    from typing import TypeVar

    C = TypeVar("C")
    E = TypeVar("E")
    A = TypeVar("A")
    G = TypeVar("G")
    F = TypeVar("F")
    M = TypeVar("M")
    S = TypeVar("S")
    N = TypeVar("N")


__all__ = ["CheckpointSite", "HelperCall", "HelperSummary", "Misspelling", "Reentrancy", "SaveForm", "SaveMisuse", "SiteForm"]


class SiteForm(str, Enum):
    CALL = "call"  # the API is called directly
    PARTIAL = "partial"  # functools.partial(API, ...): a binding, reported itself
    BOUND_CALL = "bound-call"  # a call through a partial binding of this module
    HELPER_CALL = "helper-call"  # a call of a function or method that checkpoints its parameter


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
class SaveMisuse(Generic[E, A]):
    """Why a checkpoint call looks like saving (or loading) training state.

    Generic over the expression and call-argument types
    (:mod:`ckptlint.checkpoint.sites.ast_misuse` builds ``SaveMisuse[ast.expr, AstArg]``).

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
    saved: E | None = None
    destination: E | None = None
    arguments: tuple[A, ...] = ()


@dataclass(frozen=True)
class Misspelling(Generic[N, A, E]):
    """A keyword (or a key of a ``gradient_checkpointing_kwargs`` dict literal) that is
    probably a misspelled option.

    Generic over the renamed node, call-argument and expression types
    (:mod:`ckptlint.checkpoint.sites.ast_misspelling` builds
    ``Misspelling[ast.AST, AstArg, ast.expr]``, whose ``node`` for a keyword is the
    ``ast.keyword``: ``ast`` has no node for the keyword's name, which starts it).

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
    node: N
    arg: A | None
    value: E


@dataclass(frozen=True, eq=False)
class HelperCall(Generic[S]):
    """One checkpoint call inside a helper (a helper may pick one of several by its flags).

    Attributes:
        site: the site of that call, in the helper's module.
        guards: ``(parameter, truth)`` for each ``if parameter:`` / ``if not parameter:``
            (and ``elif``/``else``) around the call: it runs only when the helper's
            ``parameter`` has that truth value.
        plans: for each option of the API, where its value comes from: ``("fixed",)``
            (the helper's own call decides it), ``("parameter", name)`` (the helper passes
            its parameter ``name``), ``("keywords",)`` (the helper forwards its ``**``
            parameter, so the caller's keyword decides).
        inputs: how the call's inputs map to the helper's parameters: one ``("parameter",
            name)`` or ``("rest",)`` (the helper's ``*args``) per input; ``None`` when an
            input is anything else.
    """

    site: S
    guards: tuple[tuple[str, bool], ...]
    plans: dict[str, tuple[str, ...]]
    inputs: tuple[tuple[str, ...], ...] | None


@dataclass(frozen=True, eq=False)
class HelperSummary(Generic[F, E, M, S]):
    """A function or method of the linted tree that passes its parameter ``parameter`` to a
    checkpoint API as the checkpointed callable: calls of it are sites
    (``SiteForm.HELPER_CALL``) whose callable is the argument bound to ``parameter``.

    Attributes:
        node: the ``def``; qualname: its name in its module (``run``, ``Net.ckpt``).
        module: the module's dotted name; analysis: the module (its
            ``AstModel``).
        parameter: the parameter checkpointed; method: ``self``/``cls`` is bound by the call.
        params: the positional parameters after ``self``; keyword_only: the keyword-only ones.
        defaults: the default expression of each parameter that has one.
        var_positional, var_keyword: the names of ``*args`` / ``**kwargs`` (or ``None``).
        calls: the checkpoint calls the helper makes with ``parameter``.
        level: 1 when the helper calls an API itself, 2 when it calls a level-1 helper, ...
        keywords_elsewhere: the helper also uses its ``**`` parameter outside its checkpoint
            calls (``return module(*args, **kwargs)`` when checkpointing is off), so an
            option passed at a call reaches that code too.
    """

    node: F
    qualname: str
    module: str
    analysis: M
    parameter: str
    method: bool
    params: tuple[str, ...]
    keyword_only: tuple[str, ...]
    defaults: dict[str, E]
    var_positional: str | None
    var_keyword: str | None
    calls: tuple[HelperCall[S], ...]
    level: int = 1
    keywords_elsewhere: bool = False

    @property
    def api(self) -> CheckpointApi:
        """The API its (first) checkpoint call uses."""
        return self.calls[0].site.api

    def describe(self) -> str:
        """``function run passes its parameter module to checkpoint API X with options O``."""
        what = "method" if self.method else "function"
        apis = sorted({call.site.api.name for call in self.calls})
        options = sorted(
            {f"{name}={_plan_text(call, name)}" for call in self.calls for name in call.plans if _plan_text(call, name)}
        )
        shown = f" with options {', '.join(options)}" if options else ""
        if any(plan == ("keywords",) for call in self.calls for plan in call.plans.values()):
            shown += "; other options from the caller's keywords" if options else " with the caller's keywords as options"
        return f"{what} {self.qualname} passes its parameter {self.parameter} to checkpoint API {' or '.join(apis)}{shown}"


def _plan_text(call: HelperCall[Any], name: str) -> str:
    plan = call.plans[name]
    if plan[0] == "parameter":
        return f"<parameter {plan[1]}>"
    if plan[0] == "keywords":
        return ""
    value = call.site.options.get(name)
    if value is None or value.is_absent:
        return ""
    return repr(value.value) if value.state is OptionState.LITERAL else "<expression>"


@dataclass(eq=False)
class CheckpointSite(Generic[C, E, A, G]):
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
            :mod:`ckptlint.checkpoint.sites.misuse`). Reported by CKP301; no other rule judges it.
        misspellings: the site's own keywords that look like misspelled options (see
            :mod:`ckptlint.checkpoint.sites.misspelling`). Reported by CKP003; other rules neither
            count them as function keywords nor add the option they stand for.
        helper: for a ``HELPER_CALL``, the helper called.
        alternatives: for a ``HELPER_CALL``, the helper's checkpoint calls this call can
            reach (the others are ruled out by the literal flags it passes).
        caller_options: for a ``HELPER_CALL``, the options this call decides (through a
            parameter of the helper or its forwarded ``**kwargs``); the others are fixed by
            the helper and judged at the helper's own call.
    """

    api: CheckpointApi
    form: SiteForm
    call: C
    arguments: G
    function: E | None
    inputs: tuple[A, ...]
    function_keywords: tuple[A, ...]
    options: dict[str, OptionValue[E, A]]
    reentrancy: Reentrancy
    hidden_arguments: bool
    scope: Scope[Any, Any]
    binding: CheckpointSite[C, E, A, G] | None = None
    extra: dict[str, object] = field(default_factory=dict)
    save_misuse: SaveMisuse[E, A] | None = None
    misspellings: tuple[Misspelling[Any, A, E], ...] = ()
    helper: HelperSummary[Any, E, Any, CheckpointSite[C, E, A, G]] | None = None
    alternatives: tuple[HelperCall[CheckpointSite[C, E, A, G]], ...] = ()
    caller_options: frozenset[str] = frozenset()

    def misspelling_of(self, option: str) -> Misspelling[Any, A, E] | None:
        """The first keyword of this site that probably misspells ``option``."""
        return next((m for m in self.misspellings if m.option == option), None)

    def is_misspelled(self, arg: A) -> bool:
        """Whether ``arg`` is one of :attr:`misspellings`."""
        return any(m.arg is arg for m in self.misspellings)

    def option(self, name: str) -> OptionValue[E, A]:
        """The value passed for option ``name`` (``ABSENT`` when the API has no such option)."""
        return self.options.get(name, ABSENT)  # ABSENT holds no node

    @property
    def use_reentrant(self) -> OptionValue[E, A]:
        return self.option("use_reentrant")

    @property
    def runs_reentrant(self) -> bool | None:
        return self.reentrancy.runs_reentrant

    @property
    def reported_here(self) -> bool:
        """Whether option findings belong to this site (calls through a binding are judged
        at the binding; calls of a helper only for the options the call decides)."""
        if self.form is SiteForm.HELPER_CALL:
            return bool(self.caller_options)
        return self.form is not SiteForm.BOUND_CALL



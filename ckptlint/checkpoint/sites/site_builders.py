"""The variant a checkpoint site ends up with, shared by the builders and the rules' advice:
``reentrancy_from`` (torch's ``use_reentrant`` option read into a
:class:`~ckptlint.checkpoint.sites.site.Reentrancy`), ``library_reentrancy`` (other libraries'
functions and wrappers) and ``LIBRARY_SWITCH``. Used by
:mod:`ckptlint.checkpoint.sites.ast_site_builders` (which builds the sites, one builder per
kind of API), :mod:`ckptlint.checkpoint.sites.ast_helper_sites` and
:mod:`ckptlint.rules.library_advice`.
"""

from __future__ import annotations

from ckptlint.checkpoint.sites.options import (
    OptionState,
    OptionValue,
)
from ckptlint.checkpoint.sites.site import Reentrancy
from ckptlint.facts.apis import CheckpointApi


def _reentrancy_from(use_reentrant: OptionValue, reentrant_when_omitted: bool) -> Reentrancy:
    if use_reentrant.state is OptionState.ABSENT:
        return Reentrancy.OMITTED_REENTRANT if reentrant_when_omitted else Reentrancy.DEFAULT_NON_REENTRANT
    if use_reentrant.state is OptionState.UNKNOWN:
        return Reentrancy.UNKNOWN
    if use_reentrant.state is OptionState.LITERAL:
        if use_reentrant.value is True:
            return Reentrancy.REENTRANT
        if use_reentrant.value is False:
            return Reentrancy.NON_REENTRANT
        if use_reentrant.value is None:
            return Reentrancy.OMITTED_REENTRANT if reentrant_when_omitted else Reentrancy.DEFAULT_NON_REENTRANT
        return Reentrancy.REENTRANT if use_reentrant.value else Reentrancy.NON_REENTRANT
    return Reentrancy.DYNAMIC


#: The switch parameter of a library function that enables transformers' checkpointing (peft).
LIBRARY_SWITCH = "use_gradient_checkpointing"


def _library_reentrancy(api: CheckpointApi, use_reentrant: OptionValue) -> Reentrancy:
    """The variant a library's own entry point runs (see ``CheckpointApi.fixed_reentrancy``).
    A library's default is explicit (no torch warning), so leaving ``use_reentrant`` out is
    never ``OMITTED_REENTRANT`` (CKP001 judges torch's own functions only)."""
    fixed = api.fixed_reentrancy
    if fixed == "reentrant":
        return Reentrancy.REENTRANT
    if fixed == "non-reentrant":
        return Reentrancy.NON_REENTRANT
    if fixed == "unknown":
        return Reentrancy.UNKNOWN
    if use_reentrant.is_absent and fixed == "config":
        return Reentrancy.DYNAMIC
    reentrancy = _reentrancy_from(use_reentrant, api.reentrant_when_omitted)
    if reentrancy is Reentrancy.OMITTED_REENTRANT:
        return Reentrancy.REENTRANT
    return reentrancy


#: Public names of the variant rules, for sites built elsewhere (calls of helpers).
reentrancy_from = _reentrancy_from


library_reentrancy = _library_reentrancy



"""Checkpoint sites: every call or binding of an activation-checkpointing API in a module.

A site records which API is used (from :mod:`ckptlint.facts.apis`), the callable it checkpoints,
its inputs, and every option resolved to an :class:`~ckptlint.checkpoint.sites.options.OptionValue`,
plus the reentrancy the call ends up with. Rules query sites; they never resolve imports
themselves.

Holds ``_TORCH_KINDS``, the API kinds whose sites carry misspellings and save misuse, read by
:mod:`ckptlint.checkpoint.sites.ast_sites`, which finds the sites.
"""

from __future__ import annotations

from ckptlint.facts.apis import ApiKind

__all__ = []


#: Kinds whose sites CKP003 (misspelled options) and CKP301 (used as save) judge: torch's
#: and transformers' own functions.
_TORCH_KINDS = frozenset(
    {ApiKind.FUNCTION, ApiKind.SEQUENTIAL, ApiKind.WRAPPER, ApiKind.COMPOSABLE, ApiKind.HF_ENABLE, ApiKind.HF_TRAINING_ARGS}
)



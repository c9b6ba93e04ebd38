"""Helpers that take the checkpointed callable as an argument, and their callers as sites.

A function or method of the linted tree whose parameter ``P`` is passed to a checkpoint API
as the callable (``def ckpt(self, func, *args, **kwargs): return checkpoint(func, *args,
use_reentrant=False, **kwargs)``, ``def run(module, *args): return checkpoint(module,
*args)``, a ``(model, use_checkpointing, use_offload, *args, **kwargs)`` function that picks
one of several checkpoint calls by its flags, ``checkpoint(create_custom_forward(model),
...)``) is summarised once per module (:func:`~ckptlint.checkpoint.sites.ast_helper_summaries.summarise_helpers`: "function F passes its
parameter P to checkpoint API X with options O", a
:class:`~ckptlint.checkpoint.sites.site.HelperSummary`). Each call of it
(:func:`~ckptlint.checkpoint.sites.ast_helper_sites.build_helper_site`) is a site whose callable is the argument bound to ``P`` and
whose options are those the helper fixes, or, where the helper passes a parameter of its own
or forwards its ``**kwargs``, those the caller gives (``CheckpointSite.caller_options``).
A flag the caller passes as a literal rules out the checkpoint calls it does not take.

A helper that calls a helper is summarised too (its call is a ``HELPER_CALL`` site of its
own module), up to :data:`MAX_LEVELS` levels, so recursion between helpers ends.

Holds :data:`MAX_LEVELS` and ``HELPED_KINDS`` (the API kinds a helper may wrap), used by
:mod:`ckptlint.checkpoint.sites.ast_helper_summaries`, :mod:`ckptlint.checkpoint.sites.ast_helper_sites` and
:mod:`ckptlint.checkpoint.sites.ast_site_index`.
"""

from __future__ import annotations

from ckptlint.facts.apis import ApiKind

__all__ = ["HELPED_KINDS", "MAX_LEVELS"]


#: Helper levels followed: a helper (1), a helper calling it (2), one calling that (3).
MAX_LEVELS = 3


#: The API kinds whose callable a helper may pass on: torch's function form and other
#: libraries' functions (Megatron's ``checkpoint(forward_func, distribute, *args)``).
HELPED_KINDS = frozenset({ApiKind.FUNCTION, ApiKind.LIBRARY_FUNCTION})



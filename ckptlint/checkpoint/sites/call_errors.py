"""Arguments that make a torch checkpoint call raise, and whether a call raises whenever it runs.

CKP002 reports these calls; :func:`~ckptlint.checkpoint.sites.ast_call_errors.always_raises`
tells the rules that judge what a site recomputes (``RuleContext.site_regions``, CKP1xx/CKP2xx) that such a site recomputes nothing:
the call fails on the first forward, before anything is saved for backward. Both read the
same facts (torch/utils/checkpoint.py 2.9, unchanged in 2.13):

- the reentrant variant (``use_reentrant=True``, or omitted / ``None``, which means ``True``)
  raises ``ValueError: Unexpected keyword arguments`` for keywords meant for the function,
  and ``ValueError`` for a ``context_fn`` other than ``noop_context_fn`` and a ``debug`` that
  is not the literal ``False``;
- ``checkpoint_sequential`` raises ``TypeError`` for a 5th positional argument and
  ``ValueError`` for keywords other than ``use_reentrant`` / ``preserve_rng_state``;
- the composable ``checkpoint(module)`` raises ``NotImplementedError`` for
  ``use_reentrant=True`` and ``ValueError`` for unknown keywords.

Holds the keywords ``checkpoint_sequential`` accepts (``SEQUENTIAL_KEYWORDS``);
:mod:`ckptlint.checkpoint.sites.ast_call_errors` answers the questions.
"""

from __future__ import annotations

__all__ = ["SEQUENTIAL_KEYWORDS"]


#: What ``checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs)`` takes
#: by keyword (``preserve_rng_state`` is popped from ``**kwargs``; anything else raises).
SEQUENTIAL_KEYWORDS = frozenset({"functions", "segments", "input", "use_reentrant", "preserve_rng_state"})



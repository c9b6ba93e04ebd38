"""Keywords of a checkpoint site that look like misspelled checkpoint options.

``torch.utils.checkpoint.checkpoint`` forwards every keyword it does not know to the
checkpointed function (torch/utils/checkpoint.py, 2.9; still so in 2.13), so a misspelled
option (``use_reentrent=False``, ``preserve_rng=False``) is never rejected as such: the
reentrant variant raises ``ValueError: Unexpected keyword arguments``, the non-reentrant one
hands it to the function, where a ``**kwargs`` signature swallows it silently.
``checkpoint_sequential`` and the composable ``checkpoint`` raise ``ValueError``.

Closeness is measured with :class:`difflib.SequenceMatcher` (the ratio ``2*M/T``), in two
tiers, tuned on every keyword and parameter name of the four corpus repositories
(diffusers, fairseq, timm, DeepSpeed; 13,784 names, see tests/rules/test_ckp003.py):

- ``ratio >= STRONG_RATIO`` (0.85): one or two characters off a long name
  (``use_reentrent`` 0.92, ``contextfn`` 0.95, ``preserve_rng_states`` 0.97); no real
  argument name in the corpus comes that close;
- ``ratio >= WEAK_RATIO`` (0.75) and the value has the option's type (a bool literal for
  ``use_reentrant``/``preserve_rng_state``/``debug``/``early_stop``, ``"default"``/``"none"``
  for ``determinism_check``, a ``functools.partial``/lambda/function for ``context_fn``):
  truncations such as ``preserve_rng=False`` (0.80), ``determinism="none"`` (0.79),
  ``early_stopping=False`` (0.83), ``reentrant=False`` (0.82) — while real function
  arguments in that band (``context=ctx`` 0.82, ``deterministic=True`` 0.73 is below) are
  tensors or variables.

Never a misspelling: a keyword that contains the option as a whole ``_``-separated part
(``eos_early_stop``, ``debug_log``: another name, not a typo), and a keyword the
checkpointed function declares as a parameter (a ``def``/``lambda``/method/factory of this
module, see :mod:`ckptlint.semantic.callables`).

Holds the tiers (:data:`STRONG_RATIO`, :data:`WEAK_RATIO`) and the options of a site
(``option_names``), used by :mod:`ckptlint.checkpoint.sites.ast_misspelling`, which finds the misspellings.
"""

from __future__ import annotations

from ckptlint.checkpoint.sites.site import CheckpointSite, Misspelling
from ckptlint.facts.apis import CHECKPOINT_OPTIONS, ApiKind

__all__ = ["STRONG_RATIO", "WEAK_RATIO", "Misspelling"]


STRONG_RATIO = 0.85


WEAK_RATIO = 0.75


_BOOL_OPTIONS = frozenset({"use_reentrant", "preserve_rng_state", "debug", "early_stop"})


def option_names(site: CheckpointSite) -> tuple[str, ...]:
    """Every keyword the site's API consumes itself, including keyword-able parameters."""
    kind = site.api.kind
    if kind in (ApiKind.HF_ENABLE, ApiKind.HF_TRAINING_ARGS):
        return CHECKPOINT_OPTIONS
    return tuple(dict.fromkeys(site.api.options + site.api.positional))


def _extends(written: str, option: str) -> bool:
    """``eos_early_stop`` / ``debug_log``: the option is a whole ``_`` part of the name."""
    padded, part = f"_{written}_", f"_{option}_"
    return part in padded



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
"""

from __future__ import annotations

import difflib

import libcst as cst

from ckptlint.checkpoint.sites.options import NOT_LITERAL, literal_value
from ckptlint.checkpoint.sites.site import CheckpointSite, Misspelling
from ckptlint.facts.apis import CHECKPOINT_OPTIONS, ApiKind
from ckptlint.semantic.bindings import BindingKind
from ckptlint.semantic.callables import signature_of
from ckptlint.semantic.model import SemanticModel

__all__ = ["STRONG_RATIO", "WEAK_RATIO", "Misspelling", "closest_option", "find_misspellings"]

STRONG_RATIO = 0.85
WEAK_RATIO = 0.75

_BOOL_OPTIONS = frozenset({"use_reentrant", "preserve_rng_state", "debug", "early_stop"})


def option_names(site: CheckpointSite) -> tuple[str, ...]:
    """Every keyword the site's API consumes itself, including keyword-able parameters."""
    kind = site.api.kind
    if kind in (ApiKind.HF_ENABLE, ApiKind.HF_TRAINING_ARGS):
        return CHECKPOINT_OPTIONS
    return tuple(dict.fromkeys(site.api.options + site.api.positional))


def closest_option(
    written: str, options: tuple[str, ...], value: cst.BaseExpression | None, model: SemanticModel
) -> tuple[str, float] | None:
    """The option ``written`` probably misspells, with the ratio, or ``None``."""
    if written in options:
        return None
    matches = difflib.get_close_matches(written, options, n=1, cutoff=WEAK_RATIO)
    if not matches:
        return None
    option = matches[0]
    if _extends(written, option):
        return None
    ratio = difflib.SequenceMatcher(None, written, option).ratio()
    if ratio >= STRONG_RATIO or (value is not None and _fits(option, value, model)):
        return option, ratio
    return None


def find_misspellings(site: CheckpointSite, model: SemanticModel) -> tuple[Misspelling, ...]:
    """Misspelled options among the site's own keywords (for a call through a partial, the
    call's keywords), and, for transformers' switches, among the keys of a
    ``gradient_checkpointing_kwargs`` dict literal."""
    options = option_names(site)
    found: list[Misspelling] = []
    if site.api.kind in (ApiKind.HF_ENABLE, ApiKind.HF_TRAINING_ARGS):
        kwargs = site.option("gradient_checkpointing_kwargs")
        if kwargs.arg is not None and isinstance(kwargs.arg.value, cst.Dict):
            for element in kwargs.arg.value.elements:
                if not isinstance(element, cst.DictElement) or not isinstance(element.key, cst.SimpleString):
                    continue
                key = element.key.evaluated_value
                if not isinstance(key, str):
                    continue
                match = closest_option(key, options, element.value, model)
                if match is not None:
                    found.append(Misspelling(key, match[0], match[1], element.key, None, element.value))
        return tuple(found)
    own = {id(arg) for arg in site.call.args}
    signature = signature_of(site.function, model)
    accepted = signature.keywords if signature is not None else None
    for arg in site.function_keywords:
        if id(arg) not in own or arg.keyword is None:
            continue
        written = arg.keyword.value
        if accepted is not None and written in accepted:
            continue
        match = closest_option(written, options, arg.value, model)
        if match is not None:
            found.append(Misspelling(written, match[0], match[1], arg.keyword, arg, arg.value))
    return tuple(found)


def _extends(written: str, option: str) -> bool:
    """``eos_early_stop`` / ``debug_log``: the option is a whole ``_`` part of the name."""
    padded, part = f"_{written}_", f"_{option}_"
    return part in padded


def _fits(option: str, value: cst.BaseExpression, model: SemanticModel) -> bool:
    """Whether ``value`` has the type the option takes (see the module docstring)."""
    if option in _BOOL_OPTIONS:
        return isinstance(literal_value(value, model), bool)
    if option == "determinism_check":
        return literal_value(value, model) in ("default", "none")
    if option == "context_fn":
        if isinstance(value, cst.Lambda):
            return True
        if isinstance(value, cst.Call):
            return any(name.endswith("partial") for name in model.qualified_names(value.func))
        if isinstance(value, cst.Name):
            bindings = model.bindings_of(value)
            if bindings and all(b.kind is BindingKind.FUNCTION for b in bindings):
                return True
            return any("selective_checkpoint" in name for name in model.qualified_names(value))
        return False
    if option == "checkpoint_impl":
        return any(name.endswith(("CheckpointImpl.REENTRANT", "CheckpointImpl.NO_REENTRANT")) for name in model.qualified_names(value))
    return literal_value(value, model) is not NOT_LITERAL

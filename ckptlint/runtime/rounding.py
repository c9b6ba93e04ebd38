"""Tell float rounding from a real difference: rerun a small failure in float64.

Two correct ways to compute a step (with and without checkpointing, the reentrant variant's
forward under ``no_grad``) may order floating-point operations differently and round
differently in float32. Such a gap shrinks by about nine orders of magnitude in float64; a
difference caused by checkpointing (another dropout mask, state read twice) does not.
"""

from __future__ import annotations

import copy
import functools
import types
from typing import Any

import torch
from torch import nn

from .compare import Difference

__all__ = ["SMALL_GAP", "float64_copy", "is_small_gap", "rounding_note", "to_float64"]

#: a difference is small when its largest absolute gap is at most this fraction of the largest
#: absolute value of the reference tensor
SMALL_GAP = 1e-3

#: kinds of differences that rounding can cause
_VALUE_KINDS = frozenset({"output", "input_grad", "param_grad", "buffer", "param_value"})


def is_small_gap(differences: list[Difference]) -> bool:
    """True when every difference is a value gap of a tensor within :data:`SMALL_GAP` of its
    scale: no error, no RNG, Python-state or warning difference, nothing None in one run."""
    if not differences:
        return False
    for d in differences:
        if d.kind not in _VALUE_KINDS or d.max_abs is None or d.reference_none or d.variant_none:
            return False
        if d.max_abs > SMALL_GAP * max(d.scale or 0.0, 1e-3):
            return False
    return True


def to_float64(value: Any) -> Any:
    """A float64 copy of inputs: floating tensors converted (``requires_grad`` kept), containers
    rebuilt, anything else as it is."""
    if isinstance(value, torch.Tensor):
        out = value.detach().to(torch.float64) if value.is_floating_point() else value.detach().clone()
        return out.requires_grad_(value.requires_grad) if out.is_floating_point() else out
    if type(value) in (tuple, list):
        return type(value)(to_float64(v) for v in value)
    if type(value) is dict:
        return {k: to_float64(v) for k, v in value.items()}
    return value


def float64_copy(fn: Any) -> Any:
    """A float64 deep copy of a module, of a bound method of one, or of a ``functools.partial``
    (the modules among its arguments converted). Raises ``TypeError`` for other callables: a
    plain function's modules are the caller's and are not converted."""
    if isinstance(fn, nn.Module):
        return copy.deepcopy(fn).to(torch.float64)
    if isinstance(fn, types.MethodType) and isinstance(fn.__self__, nn.Module):
        return getattr(copy.deepcopy(fn.__self__).to(torch.float64), fn.__func__.__name__)
    if isinstance(fn, functools.partial):
        wide = copy.deepcopy(fn)
        for a in (*wide.args, *wide.keywords.values()):
            if isinstance(a, nn.Module):
                a.to(torch.float64)
        return wide
    raise TypeError(f"cannot make a float64 copy of {type(fn).__name__}")


def rounding_note(differences: list[Difference], float64: list[Difference]) -> str:
    """The note on a small gap and its float64 rerun (``float64``: the differences there)."""
    top = max(differences, key=lambda d: d.max_abs or 0.0)
    head = f"a small gap in the original dtype (largest: {top.describe()})"
    if not float64:
        return (
            head + "; rerun in float64 both steps agree within float64 tolerances: floating-point rounding "
            "of another order of operations, not checkpointing, so the check passes"
        )
    return head + "; it stays in float64 (" + "; ".join(d.describe() for d in float64[:2]) + "), so it is a real difference"

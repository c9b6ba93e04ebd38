"""Compare tensors and nested outputs by value and describe each difference.

A :class:`Difference` names one thing that is not the same in a checkpointed run as in the
reference run: a tensor (output, input gradient, parameter gradient, buffer), a generator
state, a watched Python value, a warning or an exception. Tensor differences carry the
maximum absolute difference and the maximum relative difference ``|a - b| / |reference|``
(``inf`` where the reference is 0 and the value is not).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterator

import torch

__all__ = ["Difference", "compare_tensors", "flatten"]


@dataclass
class Difference:
    """One difference between the reference run and a checkpointed run.

    Attributes:
        kind: one of ``"output"``, ``"input_grad"``, ``"param_grad"``, ``"buffer"``, ``"rng"``,
            ``"python_state"``, ``"module_attr"``, ``"warning"``, ``"error"``.
        name: what differs, e.g. ``"output[0]"``, ``"grad of 0.weight"``, ``"buffer bn.running_mean"``.
        detail: a short human-readable description (shapes, values, message).
        max_abs: largest absolute elementwise difference (tensors only, else None).
        max_rel: largest relative difference against the reference (tensors only, else None).
        reference_none: the reference value is None (e.g. a gradient that was never computed).
        variant_none: the checkpointed value is None; ``variant_none and not reference_none``
            is the reentrant no-input-requires-grad symptom for gradients.
        variant: label of the checkpoint variant this difference belongs to.
    """

    kind: str
    name: str
    detail: str = ""
    max_abs: float | None = None
    max_rel: float | None = None
    reference_none: bool = False
    variant_none: bool = False
    variant: str = ""

    def describe(self) -> str:
        """One line, e.g. ``grad of 0.weight: max abs diff 0.0123, max rel diff 0.456``."""
        if self.max_abs is not None:
            text = f"{self.name}: max abs diff {_fmt(self.max_abs)}, max rel diff {_fmt(self.max_rel)}"
            return text + (f" ({self.detail})" if self.detail else "")
        return f"{self.name}: {self.detail}" if self.detail else self.name


def _fmt(x: float | None) -> str:
    if x is None:
        return "n/a"
    if math.isinf(x):
        return "inf"
    return f"{x:.3g}"


def flatten(value: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    """Yield ``(name, leaf)`` for a nested structure of tuples, lists and dicts.

    Names look like ``output``, ``output[1]``, ``output['logits']``. Other objects are leaves.
    """
    if isinstance(value, dict):
        for k, v in value.items():
            yield from flatten(v, f"{prefix}[{k!r}]")
    elif isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            yield from flatten(v, f"{prefix}[{i}]")
    else:
        yield prefix, value


def compare_tensors(
    kind: str, name: str, reference: Any, value: Any, *, rtol: float, atol: float
) -> Difference | None:
    """Compare two values by content and return a :class:`Difference` or None when equal.

    Floating and complex tensors are equal when ``|value - reference| <= atol + rtol * |reference|``
    elementwise (``torch.allclose`` semantics, NaN equal to NaN); integer and bool tensors must
    be exactly equal. Shape, dtype or device mismatches and None-vs-tensor are differences.
    Non-tensor leaves are compared with ``==``.
    """
    if reference is None and value is None:
        return None
    if reference is None or value is None:
        return Difference(
            kind,
            name,
            "None in the reference run, a tensor in the checkpointed run"
            if reference is None
            else "computed in the reference run, None in the checkpointed run",
            reference_none=reference is None,
            variant_none=value is None,
        )
    if not isinstance(reference, torch.Tensor) or not isinstance(value, torch.Tensor):
        try:
            same = type(reference) is type(value) and bool(reference == value)
        except Exception:
            same = False
        return None if same else Difference(kind, name, f"{reference!r} vs {value!r}")
    if reference.shape != value.shape:
        return Difference(kind, name, f"shape {tuple(reference.shape)} vs {tuple(value.shape)}")
    if reference.dtype != value.dtype:
        return Difference(kind, name, f"dtype {reference.dtype} vs {value.dtype}")
    if reference.device != value.device:
        return Difference(kind, name, f"device {reference.device} vs {value.device}")
    a = reference.detach()
    b = value.detach()
    if a.is_floating_point() or a.is_complex():
        close = torch.isclose(b, a, rtol=rtol, atol=atol, equal_nan=True)
        if bool(close.all()):
            return None
        a64 = a.to(torch.complex128 if a.is_complex() else torch.float64)
        b64 = b.to(a64.dtype)
    else:
        if torch.equal(a, b):
            return None
        a64, b64 = a.to(torch.float64), b.to(torch.float64)
    diff = (b64 - a64).abs()
    both_nan = torch.isnan(a64.abs()) & torch.isnan(b64.abs())
    diff = torch.where(both_nan, torch.zeros_like(diff), diff)
    diff = torch.nan_to_num(diff, nan=math.inf)
    ref = a64.abs()
    rel = torch.where(diff == 0, torch.zeros_like(diff), diff / ref)
    rel = torch.nan_to_num(rel, nan=math.inf, posinf=math.inf)
    detail = f"shape {tuple(reference.shape)}" if reference.dim() else ""
    return Difference(kind, name, detail, max_abs=float(diff.max()), max_rel=float(rel.max()))

"""Compare tensors and nested outputs by value and describe each difference.

A :class:`Difference` names one thing that is not the same in a checkpointed run as in the
reference run: a tensor (output, input gradient, parameter gradient, buffer), a generator
state, a watched Python value, a warning or an exception. Tensor differences carry the
maximum absolute difference and the maximum relative difference ``|a - b| / |reference|``
(computed only where the reference is not 0; elements where the reference is exactly 0 are
named in the detail instead of giving ``inf``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import reprlib
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["DTYPE_TOLERANCES", "Difference", "tolerances", "compare_tensors", "compare_values", "flatten", "short_repr", "values_equal"]


@dataclass
class Difference:
    """One difference between the reference run and a checkpointed run.

    Attributes:
        kind: one of ``"output"``, ``"input_grad"``, ``"param_grad"``, ``"buffer"``, ``"rng"``,
            ``"python_state"``, ``"module_attr"``, ``"warning"``, ``"error"``.
        name: what differs, e.g. ``"output[0]"``, ``"grad of 0.weight"``, ``"buffer bn.running_mean"``.
        detail: a short human-readable description (shapes, values, message).
        max_abs: largest absolute elementwise difference (tensors only, else None).
        max_rel: largest relative difference against the reference (tensors only, else None); None too
            where the reference is exactly 0 at every differing element.
        reference_none: the reference value is None (e.g. a gradient that was never computed).
        variant_none: the checkpointed value is None; ``variant_none and not reference_none``
            is the reentrant no-input-requires-grad symptom for gradients.
        variant: label of the checkpoint variant this difference belongs to.
        scale: the largest absolute value of the reference tensor (tensors only).
    """

    kind: str
    name: str
    detail: str = ""
    max_abs: float | None = None
    max_rel: float | None = None
    reference_none: bool = False
    variant_none: bool = False
    variant: str = ""
    scale: float | None = None

    def describe(self) -> str:
        """One line, e.g. ``grad of 0.weight: max abs diff 0.0123, max rel diff 0.456``.

        The relative difference is left out where the reference is exactly 0 (the detail says so).
        """
        if self.max_abs is not None:
            text = f"{self.name}: max abs diff {_fmt(self.max_abs)}"
            if self.max_rel is not None:
                text += f", max rel diff {_fmt(self.max_rel)}"
            return text + (f" ({self.detail})" if self.detail else "")
        return f"{self.name}: {self.detail}" if self.detail else self.name


def _fmt(x: float | None) -> str:
    if x is None:
        return "n/a"
    if math.isinf(x):
        return "inf"
    return f"{x:.3g}"


_REPR = reprlib.Repr()
_REPR.maxstring = 60
_REPR.maxother = 60
_REPR.maxlist = _REPR.maxtuple = _REPR.maxset = _REPR.maxdict = 6
_REPR.maxlevel = 3


def short_repr(value: Any) -> str:
    """``repr(value)`` bounded to about 80 characters (:mod:`reprlib`, strings cut to 60)."""
    text = _REPR.repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


_ATOMS = (type(None), bool, int, float, complex, str, bytes, torch.dtype, torch.device, torch.Size)
_MAX_DEPTH = 12


def _has_own_eq(obj: Any) -> bool:
    return type(obj).__eq__ is not object.__eq__


def flatten(value: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    """Yield ``(name, leaf)`` for a nested output or state, pytree-style.

    Containers entered: dicts (``ModelOutput`` and ``OrderedDict`` included; names
    ``prefix['key']``), lists and tuples (``prefix[1]``), NamedTuples and dataclass instances
    (``prefix.field``), and plain objects that define no ``__eq__`` of their own (a transformers
    ``DynamicCache``, a holder of tensors: ``prefix.attr`` over ``vars(obj)``). Leaves: tensors,
    scalars, strings, ``torch.dtype``/``device``/``Size``, generators, modules, sets and
    objects with their own ``__eq__``. Cycles and nesting deeper than 12 stop at a leaf.
    """
    yield from _flatten(value, prefix, set(), 0)


def _flatten(value: Any, prefix: str, seen: set[int], depth: int) -> Iterator[tuple[str, Any]]:
    if isinstance(value, (torch.Tensor, torch.Generator, torch.nn.Module) + _ATOMS) or depth > _MAX_DEPTH:
        yield prefix, value
        return
    if id(value) in seen:
        yield prefix, value
        return
    seen = seen | {id(value)}
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _flatten(v, f"{prefix}[{k!r}]", seen, depth + 1)
    elif isinstance(value, tuple) and hasattr(type(value), "_fields"):
        for k, v in zip(getattr(type(value), "_fields", ()), value, strict=False):
            yield from _flatten(v, f"{prefix}.{k}", seen, depth + 1)
    elif isinstance(value, (tuple, list)):
        if not value:
            yield prefix, type(value)()
        for i, v in enumerate(value):
            yield from _flatten(v, f"{prefix}[{i}]", seen, depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _flatten(getattr(value, f.name, None), f"{prefix}.{f.name}", seen, depth + 1)
    elif (
        not isinstance(value, (type, types.ModuleType, types.FunctionType, types.MethodType, functools.partial))
        and hasattr(value, "__dict__")
        and not _has_own_eq(value)
    ):
        attrs = vars(value)
        if not attrs:
            yield prefix, f"<{type(value).__name__} object>"
        for k, v in attrs.items():
            yield from _flatten(v, f"{prefix}.{k}", seen, depth + 1)
    else:
        yield prefix, value


def values_equal(a: Any, b: Any) -> bool:
    """Equality that never raises: tensors by content, generators by state, modules by type."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (
            isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
            and a.dtype == b.dtype and bool(torch.equal(a.detach().cpu(), b.detach().cpu()))
        )
    if isinstance(a, torch.Generator) and isinstance(b, torch.Generator):
        return bool(torch.equal(a.get_state(), b.get_state()))
    if isinstance(a, torch.nn.Module) and isinstance(b, torch.nn.Module):
        return type(a) is type(b)
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - a user type's __eq__ or __bool__ may raise anything: unequal
        return False


def compare_values(
    kind: str, name: str, reference: Any, value: Any, *, rtol: float | None, atol: float | None, ignore: Any = None
) -> list[Difference]:
    """Flatten two nested values (see :func:`flatten`) and compare leaf by leaf.

    Tensors go through :func:`compare_tensors`; a leaf present in one run only is a difference;
    generators are compared by state. ``ignore(leaf_name) -> bool`` skips leaves.
    """
    ref = dict(flatten(reference, name))
    var = dict(flatten(value, name))
    out: list[Difference] = []
    for leaf in list(ref) + [k for k in var if k not in ref]:
        if ignore is not None and ignore(leaf):
            continue
        if leaf not in ref or leaf not in var:
            where = "the reference" if leaf in ref else "the checkpointed"
            out.append(Difference(kind, leaf, f"present only in {where} run"))
            continue
        d = compare_tensors(kind, leaf, ref[leaf], var[leaf], rtol=rtol, atol=atol)
        if d is not None:
            out.append(d)
    return out


#: ``{dtype: (rtol, atol)}``: the tolerances of ``torch.testing.assert_close`` for each dtype
#: (torch 2.13 ``torch/testing/_comparison.py``, ``_DTYPE_PRECISIONS``); other dtypes compare exactly
DTYPE_TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.complex32: (1e-3, 1e-5),
    torch.complex64: (1.3e-6, 1e-5),
    torch.complex128: (1e-7, 1e-7),
}


def tolerances(dtype: torch.dtype, rtol: float | None, atol: float | None) -> tuple[float, float]:
    """``(rtol, atol)`` for a tensor of ``dtype``: the given values, or where None those of
    :data:`DTYPE_TOLERANCES`."""
    default = DTYPE_TOLERANCES.get(dtype, (0.0, 0.0))
    return (default[0] if rtol is None else rtol, default[1] if atol is None else atol)


def compare_tensors(
    kind: str, name: str, reference: Any, value: Any, *, rtol: float | None, atol: float | None
) -> Difference | None:
    """Compare two values by content and return a :class:`Difference` or None when equal.

    Floating and complex tensors are equal when ``|value - reference| <= atol + rtol * |reference|``
    elementwise (``torch.allclose`` semantics, NaN equal to NaN; a tolerance given as None
    follows the reference's dtype, :func:`tolerances`); integer and bool tensors must be exactly
    equal. Shape, dtype or device mismatches and None-vs-tensor are differences.
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
    if isinstance(reference, torch.Generator) and isinstance(value, torch.Generator):
        if values_equal(reference, value):
            return None
        return Difference(kind, name, "generator state after the step differs")
    if not isinstance(reference, torch.Tensor) or not isinstance(value, torch.Tensor):
        if values_equal(reference, value):
            return None
        return Difference(
            kind, name, f"{short_repr(reference)} after the reference step, {short_repr(value)} after the checkpointed step"
        )
    if reference.shape != value.shape:
        return Difference(kind, name, f"shape {tuple(reference.shape)} vs {tuple(value.shape)}")
    if reference.dtype != value.dtype:
        return Difference(kind, name, f"dtype {reference.dtype} vs {value.dtype}")
    if reference.device != value.device:
        return Difference(kind, name, f"device {reference.device} vs {value.device}")
    a = reference.detach()
    b = value.detach()
    if a.is_floating_point() or a.is_complex():
        rtol, atol = tolerances(a.dtype, rtol, atol)
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
    nonzero = ref != 0
    rel = torch.where(nonzero & (diff != 0), diff / torch.where(nonzero, ref, torch.ones_like(ref)), torch.zeros_like(diff))
    rel = torch.nan_to_num(rel, nan=math.inf, posinf=math.inf)
    at_zero = bool(((diff != 0) & ~nonzero).any())
    max_rel: float | None = float(rel.max()) if bool(((diff != 0) & nonzero).any()) else None
    parts = [f"shape {tuple(reference.shape)}"] if reference.dim() else []
    if at_zero:
        parts.append("differs where the reference is 0" if max_rel is not None else "the reference is 0 where they differ")
    scale = float(torch.nan_to_num(a64.abs(), nan=0.0, posinf=0.0).max()) if a64.numel() else 0.0
    return Difference(kind, name, "; ".join(parts), max_abs=float(diff.max()), max_rel=max_rel, scale=scale)

"""Capture, restore and compare every global random-number generator state.

The equivalence helper starts the reference step and each checkpointed step from the same
state, and compares the state each step leaves behind. The generators covered are:

* torch's default CPU generator (``torch.get_rng_state``);
* the default generator of every visible device of the current accelerator type
  (``torch.cuda.get_rng_state(i)`` for each index, or the same calls on ``torch.xpu`` ...);
* Python's :mod:`random` module (``random.getstate``);
* NumPy's legacy global generator (``numpy.random.get_state``), only when NumPy imports.

Explicit ``torch.Generator`` objects are not global state and are not covered here; the RNG audit
(:mod:`ckptlint.runtime.rng_audit`) reports ops that use them.

Note that reading a CUDA generator state initialises CUDA. PyTorch's own
``torch.random.fork_rng`` does the same for the devices it forks.
"""

from __future__ import annotations

import random
import types
from dataclasses import dataclass, field
from typing import Any

import torch

__all__ = [
    "RngSnapshot",
    "accelerator_type",
    "capture_rng",
    "numpy_states_equal",
    "restore_rng",
    "rng_differences",
]


def _numpy() -> types.ModuleType | None:
    try:
        import numpy
    except ImportError:  # NumPy is optional
        return None
    return numpy


def accelerator_type() -> str | None:
    """Return the device type of the available accelerator (``"cuda"``, ``"xpu"`` ...) or None.

    Uses ``torch.accelerator.current_accelerator()`` (torch >= 2.6) and falls back to
    ``torch.cuda.is_available()`` on older releases. Never raises.
    """
    acc = getattr(torch, "accelerator", None)
    if acc is not None and hasattr(acc, "current_accelerator"):
        try:
            dev = acc.current_accelerator()
        except Exception:  # noqa: BLE001 # pragma: no cover - defensive, backend specific
            dev = None
        return None if dev is None else dev.type
    return "cuda" if torch.cuda.is_available() else None  # pragma: no cover - torch < 2.6


def _device_states() -> dict[str, torch.Tensor]:
    dtype = accelerator_type()
    if dtype is None:
        return {}
    mod = getattr(torch, dtype, None)
    if mod is None or not hasattr(mod, "get_rng_state"):
        return {}  # pragma: no cover - backend without a default generator API
    count = mod.device_count() if hasattr(mod, "device_count") else 1
    states = {}
    for i in range(count):
        try:
            states[f"{dtype}:{i}"] = mod.get_rng_state(i).clone()
        except TypeError:  # pragma: no cover - e.g. torch.mps.get_rng_state() takes no index
            states[f"{dtype}:{i}"] = mod.get_rng_state().clone()
    return states


def _set_device_state(name: str, state: torch.Tensor) -> None:
    dtype, _, index = name.partition(":")
    mod = getattr(torch, dtype)
    try:
        mod.set_rng_state(state, int(index))
    except TypeError:  # pragma: no cover - single-device backends
        mod.set_rng_state(state)


@dataclass
class RngSnapshot:
    """The state of every global generator at one moment.

    Attributes:
        cpu: ``torch.get_rng_state()`` (a uint8 tensor).
        devices: ``{"cuda:0": state, ...}`` for every visible device of the accelerator type.
        python: ``random.getstate()``.
        numpy: ``numpy.random.get_state()`` or None when NumPy is not installed.
    """

    cpu: torch.Tensor
    devices: dict[str, torch.Tensor] = field(default_factory=dict)
    python: Any = None
    numpy: Any = None


def capture_rng() -> RngSnapshot:
    """Return an :class:`RngSnapshot` of torch CPU, every visible device, Python and NumPy RNGs."""
    np = _numpy()
    return RngSnapshot(
        cpu=torch.get_rng_state(),
        devices=_device_states(),
        python=random.getstate(),
        numpy=np.random.get_state() if np is not None else None,
    )


def restore_rng(snap: RngSnapshot) -> None:
    """Set every generator captured in ``snap`` back to its captured state."""
    torch.set_rng_state(snap.cpu)
    for name, state in snap.devices.items():
        _set_device_state(name, state)
    random.setstate(snap.python)
    if snap.numpy is not None:
        np = _numpy()
        if np is not None:
            np.random.set_state(snap.numpy)


def numpy_states_equal(a: Any, b: Any) -> bool:
    """True when two ``numpy.random.get_state()`` tuples (or two Nones) are equal."""
    if a is None or b is None:
        return a is b
    import numpy as np  # two NumPy states: NumPy imports

    # legacy state tuple: ('MT19937', keys ndarray, pos, has_gauss, cached_gaussian)
    return a[0] == b[0] and bool(np.array_equal(a[1], b[1])) and tuple(a[2:]) == tuple(b[2:])


def rng_differences(reference: RngSnapshot, other: RngSnapshot) -> list[str]:
    """Names of the generators whose state differs between two snapshots.

    Returns a list drawn from ``"torch CPU RNG"``, ``"torch cuda:0 RNG"`` (one per device),
    ``"Python random"`` and ``"NumPy global RNG"``; empty when all are equal.
    """
    out = []
    if not torch.equal(reference.cpu, other.cpu):
        out.append("torch CPU RNG")
    for name in sorted(set(reference.devices) | set(other.devices)):
        a, b = reference.devices.get(name), other.devices.get(name)
        if a is None or b is None or not torch.equal(a, b):
            out.append(f"torch {name} RNG")
    if reference.python != other.python:
        out.append("Python random")
    if not numpy_states_equal(reference.numpy, other.numpy):
        out.append("NumPy global RNG")
    return out

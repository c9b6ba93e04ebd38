"""What recomputed during a step, how often, and in which state: forward pre-hooks and a record
of the ``torch.utils.checkpoint`` calls.

:class:`RecomputeCounter` puts a forward pre-hook on every submodule. A call counts as a
recomputation when ``torch._C._current_graph_task_id() != -1`` (the autograd engine is running;
both checkpoint implementations recompute inside backward, torch 2.13). Each hook also notes
the CPU RNG state and whether autocast was on (CPU, CUDA), so that a recomputation that starts
from another RNG state or without the forward's autocast can be named: torch.utils.checkpoint
restores both (``torch/utils/checkpoint.py``, 2.13: ``fork_rng`` + ``set_rng_state``, and the
device and CPU autocast kwargs it saved in forward); a home-made recompute often does not
(rules CKP104, CKP105).

:func:`record_checkpoint_calls` notes each call of torch.utils.checkpoint's two implementations
with its ``preserve_rng_state`` (``CheckpointFunction.apply(function, preserve, *args)`` and
``_checkpoint_without_reentrant_generator(function, preserve, ...)``, looked up as globals of
``torch.utils.checkpoint`` by ``checkpoint()``; torch 2.13 lines 511-515).
"""

from __future__ import annotations

import contextlib
import functools
import math
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.utils.checkpoint as torch_checkpoint
from torch import nn

from .switches import unwrap_name

__all__ = ["CheckpointCall", "RecomputeCounter", "record_checkpoint_calls"]


@dataclass(frozen=True)
class CheckpointCall:
    """One call of torch.utils.checkpoint seen during a step."""

    reentrant: bool
    preserve_rng_state: bool


@contextlib.contextmanager
def record_checkpoint_calls() -> Iterator[list[CheckpointCall]]:
    """Yield a list that fills with a :class:`CheckpointCall` per torch.utils.checkpoint call
    made inside the block (torch's functions are put back on exit). When torch's internals are
    not where this expects them, nothing is recorded."""
    calls: list[CheckpointCall] = []
    originals: dict[str, Any] = {name: getattr(torch_checkpoint, name, None) for name in _RECORDED}
    reentrant_fn, generator = originals["CheckpointFunction"], originals["_checkpoint_without_reentrant_generator"]
    if reentrant_fn is None or generator is None:
        yield calls
        return

    class RecordingFunction:
        @staticmethod
        def apply(function: Any, preserve: Any, *args: Any) -> Any:
            calls.append(CheckpointCall(True, bool(preserve)))
            return reentrant_fn.apply(function, preserve, *args)

    @functools.wraps(generator)
    def recording_generator(function: Any, preserve: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(CheckpointCall(False, bool(preserve)))
        return (yield from generator(function, preserve, *args, **kwargs))

    _replace(torch_checkpoint, {"CheckpointFunction": RecordingFunction, "_checkpoint_without_reentrant_generator": recording_generator})
    try:
        yield calls
    finally:
        _replace(torch_checkpoint, originals)


#: The functions of ``torch.utils.checkpoint`` (2.1-2.13) that :func:`record_checkpoint_calls`
#: replaces: the reentrant ``autograd.Function`` and the non-reentrant generator.
_RECORDED = ("CheckpointFunction", "_checkpoint_without_reentrant_generator")


def _replace(module: types.ModuleType, values: dict[str, Any]) -> None:
    """Set the attributes ``values`` names on ``module`` (a library's functions replaced
    while a block runs, and put back)."""
    for name, value in values.items():
        setattr(module, name, value)


def _autocast_state() -> tuple[bool, bool]:
    try:
        return bool(torch.is_autocast_enabled("cpu")), bool(torch.is_autocast_enabled("cuda"))
    except TypeError:  # pragma: no cover - torch < 2.4 takes no device type
        return bool(torch.is_autocast_cpu_enabled()), bool(torch.is_autocast_enabled())


@dataclass
class _Call:
    rng: torch.Tensor
    autocast: tuple[bool, bool]


@dataclass
class RecomputeCounter:
    """Forward pre-hooks on every submodule of ``model``; see the module docstring.

    Attributes:
        forward_calls, backward_calls: ``{module name: calls}`` outside / inside backward.
        parents: ``{module name: parent name}`` (names as in the plain model).
        wrapped: modules a ``CheckpointWrapper`` wraps.
    """

    model: nn.Module
    forward_calls: dict[str, int] = field(default_factory=dict)
    backward_calls: dict[str, int] = field(default_factory=dict)
    parents: dict[str, str] = field(default_factory=dict)
    wrapped: set[str] = field(default_factory=set)
    _states: dict[tuple[str, bool], list[_Call]] = field(default_factory=dict)
    _handles: list = field(default_factory=list)

    def __post_init__(self) -> None:
        for name, module in self.model.named_modules():
            clean = unwrap_name(name)
            if name.endswith("_checkpoint_wrapped_module"):
                self.wrapped.add(clean)
            else:
                self.parents[clean] = clean.rsplit(".", 1)[0] if "." in clean else ""
            self._handles.append(module.register_forward_pre_hook(functools.partial(self._hook, clean)))

    def _hook(self, name: str, module: nn.Module, args: Any) -> None:
        task = getattr(torch._C, "_current_graph_task_id", None)
        backward = task is not None and task() != -1
        calls = self.backward_calls if backward else self.forward_calls
        calls[name] = calls.get(name, 0) + 1
        states = self._states.setdefault((name, backward), [])
        if len(states) < 4:
            states.append(_Call(torch.get_rng_state(), _autocast_state()))

    def remove(self) -> None:
        """Remove the hooks."""
        for h in self._handles:
            h.remove()
        self._handles.clear()

    def _ran_parent(self, name: str) -> str | None:
        """The nearest ancestor that ran in the forward (containers such as ``ModuleList`` never
        run and are skipped); None when there is none below the root."""
        parent = self.parents.get(name, "")
        while parent and not self.forward_calls.get(parent, 0) and parent not in self.wrapped:
            parent = self.parents.get(parent, "")
        return parent

    def _outermost(self) -> list[str]:
        recomputed = set(self.backward_calls)
        out = []
        for name in sorted(recomputed):
            parent, above = name, False
            while parent:
                parent = self.parents.get(parent, "")
                if parent in recomputed:
                    above = True
                    break
            if not above:
                out.append(name)
        return out

    def regions(self) -> dict[str, int]:
        """``{region: recomputations}`` over the outermost modules that ran during backward.

        Such a module is its own region (diffusers checkpoints ``resnet.__call__``; a
        ``CheckpointWrapper`` its wrapped module), except when its nearest ancestor that ran in
        the forward is not the root and every module whose nearest ran ancestor it is was
        recomputed: then that ancestor is the region (transformers checkpoints a layer's
        ``forward``, so the layer's own hooks run outside the region and only its children run
        again; a T5 block's children sit in a ``ModuleList`` that never runs). The count of a
        module is its backward calls divided by its forward calls (a dropout called twice per
        forward counts once), rounded up.
        """
        recomputed = set(self.backward_calls)
        out: dict[str, int] = {}
        for name in self._outermost():
            region = name
            parent = self._ran_parent(name)
            if name and name not in self.wrapped and parent and parent not in self.wrapped:
                ran = [c for c in self.parents if c != parent and self.forward_calls.get(c, 0) and self._ran_parent(c) == parent]
                if ran and all(c in recomputed for c in ran):
                    region = parent
            per_forward = math.ceil(self.backward_calls[name] / max(self.forward_calls.get(name, 0), 1))
            out[region] = max(out.get(region, 0), per_forward)
        return out

    def rng_not_restored(self) -> list[str]:
        """Outermost recomputed modules whose first recomputation started from another CPU RNG
        state than their first forward call."""
        out = []
        for name in self._outermost():
            fwd, bwd = self._states.get((name, False)), self._states.get((name, True))
            if fwd and bwd and not torch.equal(fwd[0].rng, bwd[0].rng):
                out.append(name)
        return out

    def autocast_lost(self) -> list[str]:
        """Outermost recomputed modules that ran under autocast in the forward and without it
        when recomputed."""
        out = []
        for name in self._outermost():
            fwd, bwd = self._states.get((name, False)), self._states.get((name, True))
            if fwd and bwd and any(f and not b for f, b in zip(fwd[0].autocast, bwd[0].autocast, strict=False)):
                out.append(name)
        return out

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
from torch.utils._python_dispatch import TorchDispatchMode

from .compare import short_repr, values_equal
from .module_state import SWITCH_ATTRIBUTES, module_attributes
from .state_values import state_copy
from .switches import unwrap_name

__all__ = ["BackwardRandomOps", "CheckpointCall", "RecomputeCounter", "in_backward", "record_checkpoint_calls"]


@dataclass
class CheckpointCall:
    """One call of torch.utils.checkpoint seen during a step.

    Attributes:
        reentrant, preserve_rng_state: the implementation and option the call used.
        function: the function checkpointed (a module, a bound method, a partial ...).
        name: the function's name in the model (``block``, ``ParamOnly.body``, a qualname).
        recomputations: times the function ran again while backward ran.
        hooked: some submodule's forward pre-hook ran during a recomputation (the region has
            submodules, so :meth:`RecomputeCounter.regions` names it already).
        forward, recompute: the state at the first forward call and the first recomputation.
    """

    reentrant: bool
    preserve_rng_state: bool
    function: Any = None
    name: str = ""
    owner_name: str = ""
    recomputations: int = 0
    hooked: bool = False
    forward: _Call | None = None
    recompute: _Call | None = None


def in_backward() -> bool:
    """True while the autograd engine runs a backward pass (``torch._C._current_graph_task_id``)."""
    task = getattr(torch._C, "_current_graph_task_id", None)
    return task is not None and task() != -1


def _owner(function: Any) -> nn.Module | None:
    """The module whose code ``function`` runs: itself, a bound method's ``self``, a partial's."""
    while isinstance(function, functools.partial):
        function = function.func
    if isinstance(function, nn.Module):
        return function
    owner = getattr(function, "__self__", None)
    return owner if isinstance(owner, nn.Module) else None


def _function_name(function: Any, names: dict[int, str], root: str) -> str:
    inner = function
    while isinstance(inner, functools.partial):
        inner = inner.func
    owner = _owner(function)
    if owner is not None and id(owner) in names:
        where = names[id(owner)] or root
        method = getattr(inner, "__name__", "forward")
        return where if method in ("forward", "__call__") or isinstance(inner, nn.Module) else f"{where}.{method}"
    return getattr(inner, "__qualname__", None) or type(inner).__qualname__


@contextlib.contextmanager
def record_checkpoint_calls(counter: RecomputeCounter | None = None) -> Iterator[list[CheckpointCall]]:
    """Yield a list that fills with a :class:`CheckpointCall` per torch.utils.checkpoint call
    made inside the block (torch's functions are put back on exit). The function each call
    checkpoints is wrapped to count its recomputations and note the state it starts from
    (``counter``, when given, names it as in its model and tells whether submodules ran).
    When torch's internals are not where this expects them, nothing is recorded."""
    calls: list[CheckpointCall] = []
    originals: dict[str, Any] = {name: getattr(torch_checkpoint, name, None) for name in _RECORDED}
    reentrant_fn, generator = originals["CheckpointFunction"], originals["_checkpoint_without_reentrant_generator"]
    if reentrant_fn is None or generator is None:
        yield calls
        return
    names = {} if counter is None else {id(m): unwrap_name(n) for n, m in counter.model.named_modules()}
    root = "" if counter is None else type(counter.model).__name__

    def watched(function: Any, call: CheckpointCall) -> Any:
        call.function, call.name = function, _function_name(function, names, root)
        owner = _owner(function)
        call.owner_name = (names.get(id(owner)) or root) if owner is not None else call.name

        def run(*args: Any, **kwargs: Any) -> Any:
            backward = in_backward()
            if backward:
                call.recomputations += 1
            if (call.recompute if backward else call.forward) is None:
                state = _Call(torch.get_rng_state(), _autocast_state(), _attributes(owner) if owner is not None else {})
                if backward:
                    call.recompute = state
                else:
                    call.forward = state
            before = counter.hook_calls if counter is not None else 0
            try:
                return function(*args, **kwargs)
            finally:
                if backward and counter is not None and counter.hook_calls > before:
                    call.hooked = True

        return run

    class RecordingFunction:
        @staticmethod
        def apply(function: Any, preserve: Any, *args: Any) -> Any:
            call = CheckpointCall(True, bool(preserve))
            calls.append(call)
            return reentrant_fn.apply(watched(function, call), preserve, *args)

    @functools.wraps(generator)
    def recording_generator(function: Any, preserve: Any, *args: Any, **kwargs: Any) -> Any:
        call = CheckpointCall(False, bool(preserve))
        calls.append(call)
        return (yield from generator(watched(function, call), preserve, *args, **kwargs))

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


def _autocast_state() -> dict[str, torch.dtype | None]:
    """``{"cpu": dtype or None, "cuda": ...}``: the autocast dtype of each device type, None where
    autocast is off (``torch.is_autocast_enabled`` / ``torch.get_autocast_dtype``, torch >= 2.4)."""
    out: dict[str, torch.dtype | None] = {}
    for device in ("cpu", "cuda"):
        try:
            on = bool(torch.is_autocast_enabled(device))
            out[device] = torch.get_autocast_dtype(device) if on else None
        except (TypeError, RuntimeError, AttributeError):  # pragma: no cover - torch < 2.4
            out[device] = None
    return out


def _attributes(module: nn.Module) -> dict[str, Any]:
    """Copies of the state attributes of ``module`` itself and its ``training`` flag."""
    out = {k: state_copy(v) for k, v in module_attributes(module).items() if k not in SWITCH_ATTRIBUTES}
    out["training"] = module.training
    return out


@dataclass
class _Call:
    rng: torch.Tensor
    autocast: dict[str, torch.dtype | None]
    attributes: dict[str, Any] = field(default_factory=dict)


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
    hook_calls: int = 0
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
        backward = in_backward()
        calls = self.backward_calls if backward else self.forward_calls
        calls[name] = calls.get(name, 0) + 1
        self.hook_calls += backward
        states = self._states.setdefault((name, backward), [])
        if not states:
            states.append(_Call(torch.get_rng_state(), _autocast_state(), _attributes(module)))

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

    def autocast_changed(self) -> list[str]:
        """Outermost recomputed modules recomputed under another autocast dtype than their
        forward, e.g. ``"block (autocast bfloat16 in the forward, float16 when recomputed)"``."""
        out = []
        for name in self._outermost():
            fwd, bwd = self._states.get((name, False)), self._states.get((name, True))
            if fwd and bwd:
                out += [f"{name or type(self.model).__name__} ({text})" for text in autocast_changes(fwd[0], bwd[0])]
        return out

    def changed_attributes(self) -> list[str]:
        """Attributes of recomputed modules (``training`` included) whose value at the first
        recomputation differs from the first forward call, e.g. ``"attribute block.temperature
        (1.0 in the forward, 2.0 when recomputed)"``."""
        out = []
        for name in sorted(self.backward_calls):
            fwd, bwd = self._states.get((name, False)), self._states.get((name, True))
            if fwd and bwd:
                out += attribute_changes(name or type(self.model).__name__, fwd[0], bwd[0])
        return out


def autocast_changes(forward: _Call, recompute: _Call) -> list[str]:
    """``"autocast bfloat16 in the forward, float16 when recomputed"`` per device type."""
    out = []
    for device, dtype in forward.autocast.items():
        again = recompute.autocast.get(device)
        if dtype != again:
            def say(d: torch.dtype | None) -> str:
                return "no autocast" if d is None else f"autocast {str(d).removeprefix('torch.')}"

            out.append(f"{device}: {say(dtype)} in the forward, {say(again)} when recomputed")
    return out


def _say(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)}"
    return short_repr(value)


def attribute_changes(where: str, forward: _Call, recompute: _Call) -> list[str]:
    """The attributes that differ between two noted calls of one module."""
    out = []
    for key in forward.attributes.keys() | recompute.attributes.keys():
        a, b = forward.attributes.get(key), recompute.attributes.get(key)
        if not values_equal(a, b) or (a is None) != (b is None):
            out.append(f"attribute {where}.{key} ({_say(a)} in the forward, {_say(b)} when recomputed)")
    return sorted(out)


class BackwardRandomOps(TorchDispatchMode):
    """Notes every random op (ATen ops tagged ``nondeterministic_seeded``) with the CPU RNG
    state before it and whether it ran while backward ran: autograd's own backward formulas draw
    no random numbers, so a random op in backward is a recomputation, even of a region without
    submodules that no hook sees.

    Attributes:
        forward, backward: ``[(op name, shape, CPU RNG state before the op)]``.
    """

    def __init__(self) -> None:
        super().__init__()
        self.forward: list[tuple[str, tuple, torch.Tensor]] = []
        self.backward: list[tuple[str, tuple, torch.Tensor]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if torch.Tag.nondeterministic_seeded in getattr(func, "tags", ()):
            first = next((a for a in args if isinstance(a, torch.Tensor)), None)
            shape = tuple(first.shape) if first is not None else ()
            (self.backward if in_backward() else self.forward).append((str(func), shape, torch.get_rng_state()))
        return func(*args, **(kwargs or {}))

    def not_restored(self) -> list[str]:
        """Random ops re-run in backward from another RNG state than the same op (name and
        shape) had in the forward."""
        out = []
        for op, shape, state in self.backward:
            same = [s for o, sh, s in self.forward if (o, sh) == (op, shape)]
            if same and not any(torch.equal(s, state) for s in same) and op not in out:
                out.append(op)
        return out


def call_regions(calls: list[CheckpointCall]) -> dict[str, int]:
    """``{name: recomputations}`` of checkpointed functions that re-ran without running any
    submodule (plain tensor code on parameters): regions no forward pre-hook sees."""
    out: dict[str, int] = {}
    for c in calls:
        if c.recomputations and not c.hooked:
            out[c.name] = max(out.get(c.name, 0), c.recomputations)
    return out


def call_differences(calls: list[CheckpointCall]) -> tuple[list[str], list[str], list[str]]:
    """What changed between the forward and the first recomputation of each checkpointed
    function: ``(names recomputed from another CPU RNG state, autocast changes, attribute
    changes of the function's module)``."""
    rng: list[str] = []
    autocast: list[str] = []
    attrs: list[str] = []
    for c in calls:
        if c.forward is None or c.recompute is None:
            continue
        if not torch.equal(c.forward.rng, c.recompute.rng) and c.name not in rng:
            rng.append(c.name)
        autocast += [f"{c.name} ({t})" for t in autocast_changes(c.forward, c.recompute) if f"{c.name} ({t})" not in autocast]
        attrs += [a for a in attribute_changes(c.owner_name, c.forward, c.recompute) if a not in attrs]
    return rng, autocast, attrs


def attribute_snapshot(modules: dict[str, nn.Module]) -> dict[str, _Call]:
    """``{module name: noted state}`` of every submodule of ``modules`` (``{prefix: module}``):
    its state attributes and ``training`` (no RNG or autocast)."""
    out: dict[str, _Call] = {}
    for prefix, module in modules.items():
        for name, sub in module.named_modules():
            where = ".".join(p for p in (prefix, unwrap_name(name)) if p) or type(module).__name__
            out[where] = _Call(torch.empty(0), {}, _attributes(sub))
    return out


def snapshot_changes(forward: dict[str, _Call], recompute: dict[str, _Call]) -> list[str]:
    """The attributes that differ between two :func:`attribute_snapshot` of the same modules."""
    return [c for where in forward if where in recompute for c in attribute_changes(where, forward[where], recompute[where])]

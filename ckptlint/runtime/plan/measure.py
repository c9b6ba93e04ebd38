"""Measure each candidate block: bytes it saves for backward, bytes of its inputs, forward time.

Two training steps run on the model (parameter gradients allocated beforehand, so they are not
counted as step memory):

* the timed step: module hooks on the candidates time each block's forward (the first sample);
* the counted step, whose peak is the step's peak (CUDA: ``max_memory_allocated`` above the
  memory allocated before it; CPU and other devices: :func:`ckptlint.runtime.measure`, which
  runs it under its op-level peak tracker): forward pre/post hooks keep a stack of the
  running candidates, and a ``torch.autograd.graph.saved_tensors_hooks`` pack hook gives each
  tensor autograd saves to the innermost running block. Storages are counted once
  (``untyped_storage()``, keyed by device and ``data_ptr``); parameters, buffers, the caller's
  inputs and grad-requiring leaves are left out (they exist without the step). A block's input
  bytes are the storages of the tensors among its positional and keyword arguments (what a
  non-reentrant checkpoint keeps: ``_NoopSaveInputs`` and the recompute closure, torch 2.13
  ``torch/utils/checkpoint.py``). A storage met in two or more blocks (rotary tables, a mask
  every layer gets) is not any one block's: it goes to the shared bytes, counted whatever the
  plan. The same hooks see whether a block changes a buffer (``_version`` or identity) or a
  plain attribute of its modules (numbers, strings, lengths of lists and dicts) in its forward.

Then ``repeats - 1`` forwards (grad mode on, no backward) give the other time samples; the
forward time is their median. Module hooks cost a few microseconds per block call; the
measured per-call cost is reported as ``hook_overhead_s`` (for the whole measurement).

Gradients, buffers and every global RNG are put back afterwards; plain Python attributes a
forward changes are not.
"""

from __future__ import annotations

import contextlib
import hashlib
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.utils._pytree import tree_leaves, tree_map

from ..memory import measure
from ..states import capture_rng, restore_rng

__all__ = ["BlockMeasurement", "Measurement", "measure_blocks"]

_PLAIN = (int, float, str, bool, type(None))


@dataclass
class BlockMeasurement:
    """What one candidate block costs.

    Attributes:
        name: as ``model.named_modules()`` names it; kind: its class name.
        signature: a short hash equal for blocks of identical structure (classes,
            ``extra_repr()`` of every submodule, parameter shapes and dtypes).
        calls: forward calls in one step (0: the forward never ran it).
        saved_bytes: bytes of the storages it saves for backward, not shared with another block.
        input_bytes: bytes of its input storages (what a checkpoint keeps), not shared.
        forward_s: median forward time over the samples, seconds; forward_runs_s: the samples.
        training_norms: submodules with running statistics that update them (BatchNorm-like in
            training mode with ``track_running_stats``).
        changed_buffers: buffers its forward changed; changed_attributes: plain attributes
            its forward changed.
    """

    name: str
    kind: str
    signature: str
    calls: int = 0
    saved_bytes: int = 0
    input_bytes: int = 0
    forward_s: float = 0.0
    forward_runs_s: list[float] = field(default_factory=list)
    training_norms: list[str] = field(default_factory=list)
    changed_buffers: list[str] = field(default_factory=list)
    changed_attributes: list[str] = field(default_factory=list)


@dataclass
class Measurement:
    """The blocks and the step they are part of.

    Attributes:
        blocks: one :class:`BlockMeasurement` per candidate, in candidate order.
        step_peak_bytes: peak memory of the plain step above parameters and their gradients,
            bytes (CPU: the op-level peak of :func:`ckptlint.runtime.measure`; CUDA and other
            accelerators: ``max_memory_allocated`` minus the memory allocated before the step).
        peak_method: which of the two it is.
        shared_bytes: storages met in two or more blocks, bytes (in ``rest_bytes``).
        rest_bytes: ``step_peak_bytes`` minus every block's ``saved_bytes``, plus shared inputs
            no block saves: what the step holds besides the blocks' own activations, bytes.
        step_s: the timed step (with the timing hooks), seconds.
        counted_step_s: the counted step (saved-tensor hooks; on the CPU also the op-level peak
            tracker, whose per-op Python dispatch is most of the measurement's overhead), seconds.
        measure_s: wall time of the whole measurement, seconds.
        hook_overhead_s: the hooks' own time within it (calls x measured cost per call), seconds.
        inputs: sample block inputs for the RNG audit: ``{name: (args, kwargs)}`` (detached).
    """

    blocks: list[BlockMeasurement]
    step_peak_bytes: int
    peak_method: str
    shared_bytes: int
    rest_bytes: int
    step_s: float
    measure_s: float
    hook_overhead_s: float
    device: str
    inputs: dict[str, tuple[tuple, dict]] = field(default_factory=dict)
    counted_step_s: float = 0.0


def signature(module: nn.Module) -> str:
    """A short hash of the module's structure (see :class:`BlockMeasurement`)."""
    parts = [f"{n}:{type(m).__qualname__}({m.extra_repr()})" for n, m in module.named_modules()]
    parts += [f"{n}:{tuple(p.shape)}:{p.dtype}:{p.requires_grad}" for n, p in module.named_parameters()]
    return hashlib.sha1("\n".join(parts).encode()).hexdigest()[:12]


def _storage(t: torch.Tensor) -> tuple[tuple[str, int], int] | None:
    try:
        s = t.untyped_storage()
    except Exception:  # noqa: BLE001 - tensors without a storage (some subclasses)
        return None
    if s.data_ptr() == 0:
        return None
    return (str(t.device), s.data_ptr()), s.nbytes()


def _in_backward() -> bool:
    task_id = getattr(torch._C, "_current_graph_task_id", None)
    return task_id is not None and task_id() != -1


def _norms_updating(block: nn.Module) -> list[str]:
    return [
        n or type(block).__name__
        for n, m in block.named_modules()
        if isinstance(m, nn.modules.batchnorm._NormBase) and m.training and m.track_running_stats and m.running_mean is not None
    ]


def _buffer_state(block: nn.Module) -> dict[str, tuple[int, int]]:
    return {n: (id(b), b._version) for n, b in block.named_buffers()}


def _attr_state(block: nn.Module) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for prefix, m in block.named_modules():
        for k, v in vars(m).items():
            if k.startswith("_") or k == "training":
                continue
            key = f"{prefix}.{k}" if prefix else k
            if isinstance(v, _PLAIN):
                out[key] = v
            elif isinstance(v, (list, dict, set)):
                out[key] = ("len", len(v))
    return out


class _Recorder:
    """Hooks on the candidates; ``mode`` is ``"time"``, ``"count"`` or ``"capture"``."""

    def __init__(self, model: nn.Module, names: list[str], external: set[Any], sync: Callable[[], None]) -> None:
        self.names = names
        self.blocks = {n: model.get_submodule(n) for n in names}
        self.external = external
        self.sync = sync
        self.mode = "time"
        self.stack: list[str] = []
        self.started: dict[str, float] = {}
        self.elapsed: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.saved: dict[str, dict[Any, int]] = {n: {} for n in names}
        self.inputs: dict[str, dict[Any, int]] = {n: {} for n in names}
        self.before: dict[str, tuple[dict, dict]] = {}
        self.changed_buffers: dict[str, set[str]] = {n: set() for n in names}
        self.changed_attrs: dict[str, set[str]] = {n: set() for n in names}
        self.capture: set[str] = set()
        self.captured: dict[str, tuple[tuple, dict]] = {}
        self.hook_calls = 0
        self.handles = [
            h
            for n, m in self.blocks.items()
            for h in (
                m.register_forward_pre_hook(self._pre(n), with_kwargs=True),
                m.register_forward_hook(self._post(n), with_kwargs=True),
            )
        ]

    def reset(self, mode: str) -> None:
        self.mode = mode
        self.elapsed = dict.fromkeys(self.names, 0.0)
        self.calls = dict.fromkeys(self.names, 0)

    def _pre(self, name: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: tuple, kwargs: dict) -> None:
            self.hook_calls += 1
            self.stack.append(name)
            self.calls[name] = self.calls.get(name, 0) + 1
            if self.mode == "count":
                for t in tree_leaves((args, kwargs)):
                    if isinstance(t, torch.Tensor) and (found := _storage(t)) is not None and found[0] not in self.external:
                        self.inputs[name][found[0]] = found[1]
                self.before[name] = (_buffer_state(module), _attr_state(module))
            elif self.mode == "capture" and name in self.capture and name not in self.captured:
                detach = lambda t: t.detach().requires_grad_(t.requires_grad) if isinstance(t, torch.Tensor) else t  # noqa: E731
                self.captured[name] = (tree_map(detach, args), tree_map(detach, kwargs))
            self.sync()
            self.started[name] = time.perf_counter()

        return hook

    def _post(self, name: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: tuple, kwargs: dict, output: Any) -> None:
            self.sync()
            self.elapsed[name] = self.elapsed.get(name, 0.0) + time.perf_counter() - self.started.pop(name, time.perf_counter())
            self.hook_calls += 1
            if self.stack and self.stack[-1] == name:
                self.stack.pop()
            if self.mode == "count" and name in self.before:
                buffers, attrs = self.before.pop(name)
                now_buffers, now_attrs = _buffer_state(module), _attr_state(module)
                self.changed_buffers[name].update(k for k in buffers.keys() | now_buffers.keys() if buffers.get(k) != now_buffers.get(k))
                self.changed_attrs[name].update(k for k in attrs.keys() | now_attrs.keys() if attrs.get(k) != now_attrs.get(k))

        return hook

    def pack(self, t: torch.Tensor) -> torch.Tensor:
        if not self.stack or _in_backward():
            return t
        base = t._base if t._base is not None else t
        if base.is_leaf and base.requires_grad:
            return t
        found = _storage(t)
        if found is not None and found[0] not in self.external:
            self.saved[self.stack[-1]][found[0]] = found[1]
        return t

    def remove(self) -> None:
        for h in self.handles:
            h.remove()


def _hook_cost() -> float:
    """Seconds one pre/post hook pair costs, timed on a tiny module (median of 5 x 200 calls)."""
    probe = nn.Identity()
    rec = _Recorder(nn.Sequential(probe), ["0"], set(), lambda: None)
    rec.reset("time")
    x = torch.zeros(1)
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(200):
            rec.blocks["0"](x)
        runs.append((time.perf_counter() - t0) / 200)
    rec.remove()
    t0 = time.perf_counter()
    for _ in range(200):
        probe(x)
    bare = (time.perf_counter() - t0) / 200
    return max(0.0, statistics.median(runs) - bare)


def _sync_for(device: torch.device) -> Callable[[], None]:
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


def measure_blocks(
    model: nn.Module,
    inputs: tuple,
    forward_kwargs: dict[str, Any],
    loss_fn: Callable[[Any], torch.Tensor | None],
    names: list[str],
    *,
    repeats: int = 3,
    audit: set[str] | None = None,
) -> Measurement:
    """Measure the candidate blocks ``names`` of ``model`` (module docstring).

    ``audit``: names whose inputs to keep (detached) for an RNG audit. ``repeats`` >= 1 time
    samples per block. Raises what the model's step raises.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    started = time.perf_counter()
    param = next(iter(model.parameters()), None)
    device = param.device if param is not None else torch.device("cpu")
    external: set[Any] = set()
    for t in [*model.parameters(), *model.buffers(), *tree_leaves((inputs, forward_kwargs))]:
        if isinstance(t, torch.Tensor) and (found := _storage(t)) is not None:
            external.add(found[0])
    grads = {p: p.grad for p in model.parameters() if p.requires_grad}
    buffers = {n: b.detach().clone() for n, b in model.named_buffers()}
    rng = capture_rng()
    rec = _Recorder(model, names, external, _sync_for(device))
    calls = {"n": 0}

    def step() -> None:
        rec.reset("time" if calls["n"] == 0 else "count")
        calls["n"] += 1
        rec.sync()
        t0 = time.perf_counter()
        model.zero_grad(set_to_none=False)
        with torch.autograd.graph.saved_tensors_hooks(rec.pack, lambda t: t) if rec.mode == "count" else contextlib.nullcontext():
            out = model(*inputs, **forward_kwargs)
            loss = loss_fn(out)
        if loss is not None and loss.requires_grad:
            loss.backward()
        rec.sync()
        step_times.append(time.perf_counter() - t0)
        if rec.mode == "time":
            samples.append(dict(rec.elapsed))
            step_calls.update(rec.calls)

    samples: list[dict[str, float]] = []
    step_calls: dict[str, int] = {}
    step_times: list[float] = []
    try:
        for p in grads:
            p.grad = torch.zeros_like(p)
        peak, method = _peak_of_steps(step, device)
        rec.capture = set(audit or ())
        for i in range(repeats - 1):
            rec.reset("capture" if i == 0 else "time")
            with torch.enable_grad():
                model(*inputs, **forward_kwargs)
            samples.append(dict(rec.elapsed))
    finally:
        rec.remove()
        for p, g in grads.items():
            p.grad = g
        with torch.no_grad():
            for n, b in model.named_buffers():
                if n in buffers and b.shape == buffers[n].shape:
                    b.copy_(buffers[n])
        restore_rng(rng)
    measured = _summarise(model, names, rec, samples, step_calls, peak, method, step_times[0], started, device)
    measured.counted_step_s = step_times[-1]
    return measured


def _peak_of_steps(step: Callable[[], None], device: torch.device) -> tuple[int, str]:
    """Run ``step`` twice (timed, then counted); return the counted step's peak and its method.

    CUDA: the second step's ``torch.cuda.max_memory_allocated`` above ``memory_allocated``
    before it (the first step warms up the allocator and libraries). Elsewhere
    :func:`ckptlint.runtime.measure`: its op-level peak (CPU), or its peak-memory figure on
    other accelerators.
    """
    if device.type == "cuda":
        step()
        torch.cuda.synchronize(device)
        before = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        step()
        torch.cuda.synchronize(device)
        return int(torch.cuda.max_memory_allocated(device)) - before, "max_memory_allocated above the start of the step"
    stats = measure(step, device=device, warmup=0, iters=1)
    if device.type != "cpu" and stats.peak_step_bytes is not None:
        return stats.peak_step_bytes, "peak memory above the start of the step (ckptlint.runtime.measure)"
    if stats.op_peak_bytes is not None:
        return stats.op_peak_bytes, "op-level peak (ckptlint.runtime.measure)"
    return stats.saved_activation_bytes, "saved activations (the step cannot run under a dispatch mode)"


def _summarise(
    model: nn.Module, names: list[str], rec: _Recorder, samples: list[dict[str, float]], step_calls: dict[str, int],
    peak: int, method: str, step_s: float, started: float, device: torch.device,
) -> Measurement:
    owners: dict[Any, set[str]] = {}
    for n in names:
        for key in rec.saved[n].keys() | rec.inputs[n].keys():
            owners.setdefault(key, set()).add(n)
    shared = {k for k, who in owners.items() if len(who) > 1}
    sizes = {k: v for n in names for d in (rec.saved[n], rec.inputs[n]) for k, v in d.items()}
    saved_anywhere = {k for n in names for k in rec.saved[n]}
    blocks = []
    for n in names:
        module = rec.blocks[n]
        runs = [s.get(n, 0.0) for s in samples]
        blocks.append(
            BlockMeasurement(
                name=n, kind=type(module).__name__, signature=signature(module), calls=step_calls.get(n, 0),
                saved_bytes=sum(v for k, v in rec.saved[n].items() if k not in shared),
                input_bytes=sum(v for k, v in rec.inputs[n].items() if k not in shared),
                forward_s=statistics.median(runs) if runs else 0.0, forward_runs_s=runs,
                training_norms=_norms_updating(module),
                changed_buffers=sorted(rec.changed_buffers[n]), changed_attributes=sorted(rec.changed_attrs[n]),
            )
        )
    shared_bytes = sum(sizes[k] for k in shared)
    shared_inputs_only = sum(sizes[k] for k in shared if k not in saved_anywhere)
    rest = max(0, peak - sum(b.saved_bytes for b in blocks)) + shared_inputs_only
    hook_s = rec.hook_calls / 2 * _hook_cost()
    return Measurement(
        blocks, peak, method, shared_bytes, rest, step_s, time.perf_counter() - started, hook_s, str(device), dict(rec.captured),
    )

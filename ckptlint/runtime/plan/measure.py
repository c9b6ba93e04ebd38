"""Measure each candidate block: bytes it saves for backward, bytes of its inputs, forward time,
and what would make checkpointing it wrong -- from one counted training step (parameter
gradients allocated beforehand, so they are not step memory), plus lone reruns of blocks whose
structure is met fewer than ``repeats`` times.

In the counted step's forward, pre/post hooks on the candidates keep a stack of the running
blocks, and no dispatch mode runs, so the forward runs at its own speed:

* **saved bytes**: a ``torch.autograd.graph.saved_tensors_hooks`` pack hook gives each tensor
  autograd saves to the innermost running block. Storages are counted once (``untyped_storage()``,
  keyed by device and ``data_ptr``); parameters, buffers, the caller's inputs and grad-requiring
  leaves are left out (they exist without the step). A storage met in two or more blocks
  (rotary tables, a mask every layer gets) is not any one block's: it goes to the shared bytes,
  counted whatever the plan.
* **input bytes**: the storages of the tensors among a block's positional and keyword arguments
  (what a non-reentrant checkpoint keeps: ``_NoopSaveInputs`` and the recompute closure, torch
  2.13 ``torch/utils/checkpoint.py``).
* **forward time**: each block call is timed between its hooks, less the time spent in the
  measurement's own hooks meanwhile (the pack hook, nested blocks' hooks). Blocks of identical
  structure (:func:`signature`) called as often, with inputs of the same shapes and dtypes, do
  the same work: they form a timing group and pool their samples. A group with fewer than
  ``repeats`` samples has its first block run alone again after the step, on copies of the
  inputs it received (grad mode on, as a checkpoint's recomputation), until it has ``repeats``
  (a block called k times per step counts k times its time). A block's forward time is the
  median of its group's samples.
* **state writes**: whether a block changes a buffer (``_version`` or identity) or a plain
  attribute of its modules (numbers, strings, lengths of lists and dicts).
* **random draws**: the state of every generator a block can draw from whose draws checkpoint
  might not replay is compared before and after each call: the default generators of an
  initialised accelerator, ``torch.Generator`` objects among its arguments, in its modules'
  attributes (through lists, tuples and dicts) and in the globals and closures its modules'
  ``forward`` names, Python's ``random`` and NumPy's global generator. A draw is judged as
  :func:`ckptlint.runtime.audit_rng` judges an op on that generator
  (:func:`~ckptlint.runtime.rng_audit.classify_random_op` with the
  :func:`~ckptlint.runtime.rng_audit.stash_plan` of the block's positional inputs). A generator
  made inside the forward and reached by none of these paths is not seen; torch's default CPU
  generator is not looked at (checkpoint always stashes it).

**The step's peak**: on CUDA and accelerators with memory statistics, ``max_memory_allocated``
above the memory allocated before the counted step, after one plain warm-up step (first-use
allocations such as cuBLAS workspaces are not step memory; that step also copies the inputs
for the reruns). On the CPU, :class:`~ckptlint.runtime.plan.watch.LiveBytes`: the storages the
forward leaves for backward (every saved tensor's, the output's and the loss's), then each
gradient an autograd node of the backward returns (node hooks, no dispatch mode), each
counted until its storage is freed; the peak is taken at the end of each node (its saved
tensors and its incoming and outgoing gradients still held). On the evaluation models this
equals the op-level peak of :func:`ckptlint.runtime.measure`, except where a temporary the
forward frees before backward outgrows the backward's peak; tensors a forward keeps elsewhere
(module attributes, attributes of a custom ``autograd.Function``'s ``ctx``) and temporaries
inside a node are not in it either. :meth:`~ckptlint.runtime.plan.CheckpointPlan.verify`
measures the op-level peak.

The measurement's own cost is reported: its wall time, the counted step's and the reruns'
seconds, and the time spent inside its hooks. Gradients, buffers, every global RNG and the
generators the blocks reach are put back afterwards; plain Python attributes a forward changes
are not.
"""

from __future__ import annotations

import contextlib
import hashlib
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.utils._pytree import tree_leaves, tree_map

from ..memory import has_memory_stats, step_memory_rise
from ..rng_audit import NUMPY_RANDOM_RECORD, PYTHON_RANDOM_RECORD, RngRecord, classify_random_op, stash_plan
from ..states import capture_rng, numpy_states_equal, restore_rng
from .watch import (
    LiveBytes,
    attr_state,
    block_generators,
    buffer_state,
    default_generators,
    norms_updating,
    numpy_state,
    storage_of,
    tensors_in,
)

__all__ = ["BlockMeasurement", "Measurement", "measure_blocks", "signature"]


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
        forward_s: median forward time over its timing group's samples, seconds;
            forward_runs_s: those samples.
        training_norms: submodules with running statistics that update them (BatchNorm-like in
            training mode with ``track_running_stats``).
        changed_buffers: buffers its forward changed; changed_attributes: plain attributes
            its forward changed.
        random_ops: the generators its forward drew from, one record each, saying whether
            checkpoint replays the draws.
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
    random_ops: list[RngRecord] = field(default_factory=list)


@dataclass
class Measurement:
    """The blocks and the step they are part of.

    Attributes:
        blocks: one :class:`BlockMeasurement` per candidate, in candidate order.
        step_peak_bytes: peak memory of the plain step above parameters and their gradients,
            bytes (CPU: the op-level peak of the backward, the forward's leftovers included;
            CUDA and other accelerators: ``max_memory_allocated`` minus the memory allocated
            before the step).
        peak_method: which of the two it is.
        shared_bytes: storages met in two or more blocks, bytes (in ``rest_bytes``).
        rest_bytes: ``step_peak_bytes`` minus every block's ``saved_bytes``, plus shared inputs
            no block saves: what the step holds besides the blocks' own activations, bytes.
        counted_step_s: the counted step, with the planner's hooks, seconds.
        rerun_s: the lone reruns of blocks of small timing groups, seconds; reruns: how many.
        warmup_s: the plain warm-up step before the counted one (devices with memory statistics), seconds.
        measure_s: wall time of the whole measurement, seconds.
        hook_overhead_s: time spent inside the measurement's hooks, seconds.
    """

    blocks: list[BlockMeasurement]
    step_peak_bytes: int
    peak_method: str
    shared_bytes: int
    rest_bytes: int
    counted_step_s: float
    rerun_s: float
    measure_s: float
    hook_overhead_s: float
    device: str
    reruns: int = 0
    warmup_s: float = 0.0


def signature(module: nn.Module) -> str:
    """A short hash of the module's structure (see :class:`BlockMeasurement`)."""
    parts = [f"{n}:{type(m).__qualname__}({m.extra_repr()})" for n, m in module.named_modules()]
    parts += [f"{n}:{tuple(p.shape)}:{p.dtype}:{p.requires_grad}" for n, p in module.named_parameters()]
    return hashlib.sha1("\n".join(parts).encode()).hexdigest()[:12]


@dataclass
class _Frame:
    """One running block call of the counted step."""

    name: str
    args: tuple
    buffers: dict[str, tuple[int, int]]
    attrs: dict[tuple[str, str], Any]
    python_rng: Any
    numpy_rng: Any
    generators: list[tuple[str, str | None, torch.Generator, torch.Tensor]]
    own_at_start: float = 0.0
    started: float = 0.0


class _Counter:
    """Hooks of a step: saved and input storages, times, state writes, random draws, input copies."""

    def __init__(
        self, blocks: dict[str, nn.Module], sigs: dict[str, str], external: set[Any], sync: Callable[[], None],
        generators: dict[str, dict[int, tuple[str, torch.Generator]]], *, capture: bool, tracker: LiveBytes | None = None,
    ) -> None:
        self.blocks, self.sigs, self.external, self.sync = blocks, sigs, external, sync
        self.capture, self.tracker = capture, tracker
        self.stack: list[_Frame] = []
        self.calls = dict.fromkeys(blocks, 0)
        self.elapsed = dict.fromkeys(blocks, 0.0)
        self.shapes: dict[str, tuple] = {}
        self.captured: dict[tuple, tuple[str, tuple, dict]] = {}
        self.saved: dict[str, dict[Any, int]] = {n: {} for n in blocks}
        self.inputs: dict[str, dict[Any, int]] = {n: {} for n in blocks}
        self.changed_buffers: dict[str, set[str]] = {n: set() for n in blocks}
        self.changed_attrs: dict[str, set[str]] = {n: set() for n in blocks}
        self.random_ops: dict[str, dict[tuple, RngRecord]] = {n: {} for n in blocks}
        self.generators = generators
        self.defaults = default_generators()
        self.graph_task: Callable[[], int] = getattr(torch._C, "_current_graph_task_id", lambda: -1)
        self.own_s = 0.0
        self.handles = [
            h
            for n, m in blocks.items()
            for h in (
                m.register_forward_pre_hook(self._pre(n), with_kwargs=True),
                m.register_forward_hook(self._post(n), with_kwargs=True),
            )
        ]

    def _pre(self, name: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: tuple, kwargs: dict) -> None:
            t0 = time.perf_counter()
            self.calls[name] += 1
            leaves = tree_leaves((args, kwargs))
            for t in leaves:
                if isinstance(t, torch.Tensor) and (found := storage_of(t)) is not None and found[0] not in self.external:
                    self.inputs[name][found[0]] = found[1].nbytes()
            if name not in self.shapes:
                self.shapes[name] = tuple((tuple(t.shape), t.dtype) for t in leaves if isinstance(t, torch.Tensor))
                key = (self.sigs[name], self.shapes[name])
                if self.capture and key not in self.captured:  # copies: the step's memory is not held longer
                    copy = lambda t: t.detach().clone().requires_grad_(t.requires_grad) if isinstance(t, torch.Tensor) else t  # noqa: E731
                    self.captured[key] = (name, tree_map(copy, args), tree_map(copy, kwargs))
            gens: list[tuple[str, str | None, torch.Generator]] = [
                (f"torch.Generator {path}", None, g) for path, g in self.generators[name].values()
            ]
            gens += [(f"torch.Generator argument {i}", None, g) for i, g in enumerate(t for t in leaves if isinstance(t, torch.Generator))]
            gens += [("the default generator", device, g) for device, g in self.defaults]
            states = [(where, device, g, g.get_state()) for where, device, g in gens]
            frame = _Frame(name, args, buffer_state(module), attr_state(module), random.getstate(), numpy_state(), states)
            self.stack.append(frame)
            self.sync()
            frame.own_at_start = self.own_s = self.own_s + time.perf_counter() - t0
            frame.started = time.perf_counter()

        return hook

    def _post(self, name: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: tuple, kwargs: dict, output: Any) -> None:
            self.sync()
            t0 = time.perf_counter()
            if self.stack and self.stack[-1].name == name:
                frame = self.stack.pop()
                self.elapsed[name] += t0 - frame.started - (self.own_s - frame.own_at_start)
                self._judge(frame, module)
            self.own_s += time.perf_counter() - t0

        return hook

    def _judge(self, frame: _Frame, module: nn.Module) -> None:
        name = frame.name
        buffers, attrs = buffer_state(module), attr_state(module)
        self.changed_buffers[name].update(k for k in frame.buffers.keys() | buffers.keys() if frame.buffers.get(k) != buffers.get(k))
        self.changed_attrs[name].update(
            f"{p}.{k}" if p else k for p, k in frame.attrs.keys() | attrs.keys() if frame.attrs.get((p, k)) != attrs.get((p, k))
        )
        stash = None
        for where, device, g, state in frame.generators:
            if torch.equal(g.get_state(), state):
                continue
            stash = stash or stash_plan(*frame.args)
            self._add(name, classify_random_op(f"random draws from {where}", device or str(g.device), None if device else g, stash))
        if random.getstate() != frame.python_rng:
            self._add(name, PYTHON_RANDOM_RECORD)
        if not numpy_states_equal(frame.numpy_rng, numpy_state()):
            self._add(name, NUMPY_RANDOM_RECORD)

    def _add(self, name: str, record: RngRecord) -> None:
        self.random_ops[name].setdefault((record.op, record.device), record)

    def pack(self, t: torch.Tensor) -> torch.Tensor:
        if self.graph_task() != -1:  # saved while backward runs (a recomputation)
            return t
        t0 = time.perf_counter()
        base = t._base if t._base is not None else t
        if not (base.requires_grad and base.is_leaf) and (found := storage_of(t)) is not None and found[0] not in self.external:
            key, storage = found
            if self.stack:
                self.saved[self.stack[-1].name][key] = storage.nbytes()
            if self.tracker is not None:
                self.tracker.hold(key, storage)
        self.own_s += time.perf_counter() - t0
        return t

    def remove(self) -> None:
        for h in self.handles:
            h.remove()


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
) -> Measurement:
    """Measure the candidate blocks ``names`` of ``model`` (module docstring). ``repeats`` >= 1:
    time samples per timing group. Raises what the model's step raises."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    started = time.perf_counter()
    param = next(iter(model.parameters()), None)
    device = param.device if param is not None else torch.device("cpu")
    external: set[Any] = set()
    for t in [*model.parameters(), *model.buffers(), *tree_leaves((inputs, forward_kwargs))]:
        if isinstance(t, torch.Tensor) and (found := storage_of(t)) is not None:
            external.add(found[0])
    blocks = {n: model.get_submodule(n) for n in names}
    sigs = {n: signature(m) for n, m in blocks.items()}
    by_forward: dict[Any, dict[str, torch.Generator]] = {}
    generators = {n: block_generators(m, by_forward) for n, m in blocks.items()}
    generator_states = {id(g): (g, g.get_state()) for found in generators.values() for _, g in found.values()}
    grads = {p: p.grad for p in model.parameters() if p.requires_grad}
    buffers = {n: b.detach().clone() for n, b in model.named_buffers()}
    rng = capture_rng()
    device_peak = has_memory_stats(device)
    sync = _sync_for(device)
    tracker = None if device_peak else LiveBytes()
    hooks: list[_Counter] = []
    warmup_s = 0.0

    def step(counter: _Counter | None) -> None:
        model.zero_grad(set_to_none=False)
        saving = torch.autograd.graph.saved_tensors_hooks(counter.pack, lambda t: t) if counter else contextlib.nullcontext()
        with saving:
            out = model(*inputs, **forward_kwargs)
            loss = loss_fn(out)
        if loss is None or not loss.requires_grad:
            return
        if counter is None or tracker is None:
            loss.backward()
            return
        for t in tensors_in((out, loss)):  # what the forward leaves for backward besides saved tensors
            if (found := storage_of(t)) is not None and found[0] not in external:
                tracker.hold(*found)
        tracker.watch(loss)
        try:
            loss.backward()
        finally:
            tracker.remove()

    try:
        for p in grads:
            p.grad = torch.zeros_like(p)
        if device_peak:  # first-use allocations (cuBLAS workspaces ...) are not step memory
            t0 = time.perf_counter()
            hooks.append(_Counter(blocks, sigs, external, sync, generators, capture=True))
            step(hooks[-1])
            hooks[-1].remove()
            sync()
            warmup_s = time.perf_counter() - t0
        counter = _Counter(blocks, sigs, external, sync, generators, capture=not device_peak, tracker=tracker)
        hooks.append(counter)
        if tracker is None:
            counted_s, rise = step_memory_rise(lambda: step(counter), device)
            peak, method = int(rise or 0), "max_memory_allocated above the start of the step"
        else:
            t0 = time.perf_counter()
            step(counter)
            counted_s = time.perf_counter() - t0
            peak, method = tracker.peak, "what the forward leaves for backward and the gradients of each backward node"
        counter.remove()
        t0 = time.perf_counter()
        samples, reruns = _timing_samples(blocks, counter, hooks[0].captured, repeats, sync)
        rerun_s = time.perf_counter() - t0
    finally:
        for h in hooks:
            h.remove()
        for p, g in grads.items():
            p.grad = g
        with torch.no_grad():
            for n, b in model.named_buffers():
                if n in buffers and b.shape == buffers[n].shape:
                    b.copy_(buffers[n])
        restore_rng(rng)
        for gen, state in generator_states.values():
            gen.set_state(state)
    times = {
        "counted_step_s": counted_s, "rerun_s": rerun_s, "hook_overhead_s": sum(h.own_s for h in hooks),
        "reruns": reruns, "warmup_s": warmup_s,
    }
    return _summarise(names, blocks, counter, samples, peak, method, times, started, device)


def _timing_samples(
    blocks: dict[str, nn.Module], counter: _Counter, captured: dict[tuple, tuple[str, tuple, dict]], repeats: int,
    sync: Callable[[], None],
) -> tuple[dict[str, list[float]], int]:
    """Each block's timing group's samples (module docstring), and how many lone reruns it took."""
    groups: dict[tuple, list[str]] = {}
    for n in blocks:
        if counter.calls[n]:
            groups.setdefault((counter.sigs[n], counter.shapes[n], counter.calls[n]), []).append(n)
    out: dict[str, list[float]] = {}
    reruns = 0
    for (sig, shapes, calls), members in groups.items():
        runs = [counter.elapsed[n] for n in members]
        if len(runs) < repeats and (sig, shapes) in captured:
            first, args, kwargs = captured[(sig, shapes)]
            for _ in range(repeats - len(runs)):
                with torch.enable_grad():  # non-leaf copies: a block may work in place on its input
                    run_args, run_kwargs = _fresh(args), {k: _fresh((v,))[0] for k, v in kwargs.items()}
                sync()
                t0 = time.perf_counter()
                with torch.enable_grad():
                    blocks[first](*run_args, **run_kwargs)
                sync()
                runs.append((time.perf_counter() - t0) * calls)
                reruns += 1
        for n in members:
            out[n] = runs
    captured.clear()
    return out, reruns


def _fresh(values: tuple) -> tuple:
    """``values`` with each tensor cloned (a non-leaf copy when it requires grad, so an in-place
    first op of the block, ``nn.ReLU(inplace=True)``, neither fails on a leaf nor changes the
    captured input)."""
    return tuple(v.clone() if isinstance(v, torch.Tensor) else v for v in values)


def _summarise(
    names: list[str], modules: dict[str, nn.Module], counter: _Counter, samples: dict[str, list[float]], peak: int,
    method: str, times: dict[str, Any], started: float, device: torch.device,
) -> Measurement:
    owners: dict[Any, set[str]] = {}
    for n in names:
        for key in counter.saved[n].keys() | counter.inputs[n].keys():
            owners.setdefault(key, set()).add(n)
    shared = {k for k, who in owners.items() if len(who) > 1}
    sizes = {k: v for n in names for d in (counter.saved[n], counter.inputs[n]) for k, v in d.items()}
    saved_anywhere = {k for n in names for k in counter.saved[n]}
    blocks = []
    for n in names:
        module = modules[n]
        runs = samples.get(n, [])
        blocks.append(
            BlockMeasurement(
                name=n, kind=type(module).__name__, signature=counter.sigs[n], calls=counter.calls[n],
                saved_bytes=sum(v for k, v in counter.saved[n].items() if k not in shared),
                input_bytes=sum(v for k, v in counter.inputs[n].items() if k not in shared),
                forward_s=statistics.median(runs) if runs else 0.0, forward_runs_s=list(runs),
                training_norms=norms_updating(module),
                changed_buffers=sorted(counter.changed_buffers[n]), changed_attributes=sorted(counter.changed_attrs[n]),
                random_ops=list(counter.random_ops[n].values()),
            )
        )
    shared_bytes = sum(sizes[k] for k in shared)
    shared_inputs_only = sum(sizes[k] for k in shared if k not in saved_anywhere)
    rest = max(0, peak - sum(b.saved_bytes for b in blocks)) + shared_inputs_only
    return Measurement(
        blocks, peak, method, shared_bytes, rest, measure_s=time.perf_counter() - started, device=str(device), **times,
    )

"""Measure what checkpointing saves (memory) and costs (time) for one training step.

Two memory figures:

* **saved-for-backward bytes** (every device): while one extra, untimed step runs, a
  ``torch.autograd.graph.saved_tensors_hooks`` pack hook sees every tensor autograd saves.
  Each saved tensor's storage is counted once (``untyped_storage().nbytes()``, deduplicated by
  the storage's ``data_ptr``). Tensors saved while backward runs (the reentrant variant's
  recomputation) are counted apart, using ``torch._C._current_graph_task_id()`` (-1 outside
  backward; torch.utils.checkpoint uses the same call). The non-reentrant variant installs
  its own saved-tensor hooks inside the region (torch/utils/checkpoint.py, 2.9.1,
  ``_checkpoint_hook`` / ``_recomputation_hook``); hooks nest, the innermost wins, so the
  tensors saved inside a checkpointed region reach checkpoint's hooks and not ours -- what we
  count is what stays alive between forward and backward: the region inputs that checkpoint
  saves and whatever runs outside the regions. Storages of leaf tensors that require grad
  (parameters, grad-requiring inputs; for views, their base) exist regardless of
  checkpointing and are excluded from ``saved_activation_bytes``.
* **op peak** (every device, the CPU included): during the same untimed step a
  ``TorchDispatchMode`` sees every ATen op's outputs; each new storage adds its ``nbytes`` to a
  running total and a ``weakref.finalize`` on the storage subtracts it when the storage is
  freed (storages keep their Python object alive while C++ holds them: PyObject preservation,
  torch >= 2.1, checked on 2.13). The largest total is the peak of memory held by tensors the
  step created (an output that shares an input's storage -- a view, an in-place op, ``w.t()`` of
  a parameter -- is not new memory and is skipped). Unlike the saved-tensor count it also sees what selective activation
  checkpointing caches (``create_selective_checkpoint_contexts`` keeps op outputs in its own
  dispatch mode, outside ``saved_tensors_hooks``: torch/utils/checkpoint.py,
  ``_CachingTorchDispatchMode``, 2.13). Kernel-internal scratch buffers are not seen.
* **peak memory** (CUDA and other accelerators with a memory API): ``reset_peak_memory_stats``
  before each timed step, ``max_memory_allocated`` after it, minus ``memory_allocated`` before it.

Time is the median over ``iters`` steps, with the fastest and slowest step beside it: CUDA
events on CUDA, ``time.perf_counter`` elsewhere (after a device synchronise on other
accelerators).
"""

from __future__ import annotations

import math
import statistics
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

if TYPE_CHECKING:
    from collections.abc import Collection

    from torch._ops import OpOverload

from .states import accelerator_type, capture_rng, restore_rng

__all__ = [
    "MemoryReport",
    "StepMeasurement",
    "compare_memory",
    "default_device",
    "format_bytes",
    "has_memory_stats",
    "measure",
    "step_memory_rise",
]


def default_device() -> torch.device:
    """``cuda`` when CUDA is available, else the current accelerator, else ``cpu``."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    acc = accelerator_type()
    return torch.device(acc) if acc else torch.device("cpu")


def _storage_key(t: torch.Tensor) -> tuple[Any, int]:
    try:
        storage = t.untyped_storage()
        ptr = storage.data_ptr()
        nbytes = storage.nbytes()
        if ptr == 0:  # meta tensors, empty storages
            return ("id", id(t)), nbytes
        return (str(t.device), ptr), nbytes
    except Exception:  # noqa: BLE001 - tensors without a storage (some subclasses)
        return ("id", id(t)), t.numel() * t.element_size()


def _in_backward() -> bool:
    task_id = getattr(torch._C, "_current_graph_task_id", None)
    return task_id is not None and task_id() != -1


class _SavedTensorCounter:
    """Pack/unpack hooks that record saved storages without changing what autograd keeps."""

    def __init__(self) -> None:
        self.forward: dict[Any, int] = {}
        self.backward: dict[Any, int] = {}
        self.leaf_keys: set[Any] = set()
        self.count = 0
        self.op_peak: int | None = None

    def pack(self, t: torch.Tensor) -> torch.Tensor:
        key, nbytes = _storage_key(t)
        if _in_backward():
            self.backward[key] = nbytes
            return t
        self.forward[key] = nbytes
        self.count += 1
        base = t._base if t._base is not None else t
        if base.is_leaf and base.requires_grad:
            self.leaf_keys.add(key)
        return t

    @staticmethod
    def unpack(t: torch.Tensor) -> torch.Tensor:
        return t


def _tensors(value: Any) -> list[torch.Tensor]:
    """The tensors of an op's argument or result: a tensor, or (nested) tuples and lists of them."""
    if isinstance(value, torch.Tensor):
        return [value]
    out: list[torch.Tensor] = []
    if isinstance(value, (tuple, list)):
        for v in value:
            if isinstance(v, torch.Tensor):
                out.append(v)
            elif isinstance(v, (tuple, list)):
                out += _tensors(v)
    return out


class _OpPeakTracker(TorchDispatchMode):
    """Running total of bytes held by storages that ops create; its maximum is the op peak."""

    def __init__(self) -> None:
        super().__init__()
        self.live: dict[Any, int] = {}
        self.current = 0
        self.peak = 0

    def _freed(self, key: Any) -> None:
        self.current -= self.live.pop(key, 0)

    def __torch_dispatch__(
        self, func: OpOverload, types: Collection[type], args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        out = func(*args, **(kwargs or {}))
        inputs: set[Any] | None = None
        for t in _tensors(out):
            try:
                storage = t.untyped_storage()
                ptr = storage.data_ptr()
            except Exception:  # noqa: BLE001 - tensors without a storage (some subclasses)
                continue
            key = (t.device, ptr)
            if ptr == 0 or key in self.live:
                continue
            if inputs is None:  # views and in-place results share an input's storage: nothing new was allocated
                inputs = set()
                for a in _tensors(args) + (_tensors(list(kwargs.values())) if kwargs else []):
                    try:
                        inputs.add((a.device, a.untyped_storage().data_ptr()))
                    except Exception:  # noqa: BLE001 - tensors without a storage (some subclasses)
                        continue
            if key in inputs:
                continue
            nbytes = storage.nbytes()
            self.live[key] = nbytes
            self.current += nbytes
            self.peak = max(self.peak, self.current)
            weakref.finalize(storage, self._freed, key)
        return out


@dataclass
class StepMeasurement:
    """Cost of one training step.

    Attributes:
        device: the device the figures are for (``"cpu"``, ``"cuda:0"`` ...).
        times_s: wall time of each timed step, seconds.
        median_time_s: median of ``times_s``, seconds.
        saved_bytes: bytes of all distinct storages saved for backward during the forward.
        saved_activation_bytes: ``saved_bytes`` minus storages of grad-requiring leaves
            (parameters and inputs), bytes: the activations kept alive until backward.
        saved_tensors: number of tensors packed during the forward (not deduplicated).
        recompute_saved_bytes: bytes of distinct storages saved while backward ran (reentrant
            recomputation), bytes; transient.
        peak_memory_bytes: largest ``max_memory_allocated`` over the timed steps (CUDA /
            accelerators), bytes; None on CPU.
        peak_step_bytes: largest rise of allocated memory above the level before the step,
            bytes; None on CPU.
        op_peak_bytes: peak of the bytes held by storages the step's ops created (every
            device; see the module docstring), bytes; measured in the untimed counted step;
            None when the step cannot run under a Python dispatch mode.
        min_time_s, max_time_s: fastest and slowest timed step, seconds.
    """

    device: str
    times_s: list[float]
    median_time_s: float
    saved_bytes: int
    saved_activation_bytes: int
    saved_tensors: int
    recompute_saved_bytes: int
    peak_memory_bytes: int | None = None
    peak_step_bytes: int | None = None
    op_peak_bytes: int | None = None
    min_time_s: float = math.nan
    max_time_s: float = math.nan


def _memory_api(dev: torch.device) -> Any:
    if dev.type == "cpu":
        return None
    if dev.type == "cuda":
        return torch.cuda
    acc = getattr(torch, "accelerator", None)
    return acc if acc is not None and hasattr(acc, "max_memory_allocated") else None


def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    elif dev.type != "cpu":
        acc = getattr(torch, "accelerator", None)
        if acc is not None and hasattr(acc, "synchronize"):
            acc.synchronize()


class _Runner:
    """Times one step and tracks its peak memory on one device."""

    def __init__(self, device: str | torch.device | None) -> None:
        dev = torch.device(device) if device is not None else default_device()
        if dev.type == "cuda" and dev.index is None:
            dev = torch.device("cuda", torch.cuda.current_device())
        self.device = dev
        self.mem = _memory_api(dev)

    def timed(self, step_fn: Callable[[], Any]) -> tuple[float, int | None, int | None]:
        """Run once; return (seconds, max_memory_allocated, rise above the start) -- bytes or None."""
        dev, mem = self.device, self.mem
        before = 0
        if mem is not None:
            _sync(dev)
            before = int(mem.memory_allocated(dev))
            mem.reset_peak_memory_stats(dev)
        if dev.type == "cuda":
            with torch.cuda.device(dev):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                step_fn()
                end.record()
                end.synchronize()
            seconds = start.elapsed_time(end) / 1000.0
        else:
            _sync(dev)
            t0 = time.perf_counter()
            step_fn()
            _sync(dev)
            seconds = time.perf_counter() - t0
        if mem is None:
            return seconds, None, None
        top = int(mem.max_memory_allocated(dev))
        return seconds, top, top - before

    @staticmethod
    def counted(step_fn: Callable[[], Any]) -> _SavedTensorCounter:
        """Run once under saved-tensor hooks and the op peak tracker; return the counter."""
        counter = _SavedTensorCounter()
        tracker = _OpPeakTracker()
        try:
            with tracker, torch.autograd.graph.saved_tensors_hooks(counter.pack, counter.unpack):
                step_fn()
        except Exception:  # noqa: BLE001 - retried below without the dispatch mode
            # a step that cannot run under a Python dispatch mode (some tensor subclasses):
            # count saved tensors without the op peak; a step that fails anyway raises here
            counter = _SavedTensorCounter()
            with torch.autograd.graph.saved_tensors_hooks(counter.pack, counter.unpack):
                step_fn()
            return counter
        counter.op_peak = tracker.peak
        return counter


def has_memory_stats(device: str | torch.device) -> bool:
    """Whether ``device`` reports allocated memory (CUDA, accelerators with a memory API; not the CPU)."""
    return _memory_api(torch.device(device)) is not None


def step_memory_rise(step_fn: Callable[[], Any], device: str | torch.device) -> tuple[float, int | None]:
    """Run ``step_fn`` once on ``device``: its seconds, and how far allocated memory rose above
    the level before it (``max_memory_allocated`` after ``reset_peak_memory_stats``, minus
    ``memory_allocated`` before), bytes; None where the device has no memory statistics."""
    seconds, _, rise = _Runner(device).timed(step_fn)
    return seconds, rise


def _result(device: torch.device, runs: list[tuple[float, int | None, int | None]], counter: _SavedTensorCounter) -> StepMeasurement:
    times = [r[0] for r in runs]
    peaks = [r[1] for r in runs if r[1] is not None]
    rises = [r[2] for r in runs if r[2] is not None]
    saved = sum(counter.forward.values())
    leaf = sum(n for k, n in counter.forward.items() if k in counter.leaf_keys)
    return StepMeasurement(
        device=str(device),
        times_s=times,
        median_time_s=statistics.median(times),
        saved_bytes=saved,
        saved_activation_bytes=saved - leaf,
        saved_tensors=counter.count,
        recompute_saved_bytes=sum(counter.backward.values()),
        peak_memory_bytes=max(peaks) if peaks else None,
        peak_step_bytes=max(rises) if rises else None,
        op_peak_bytes=counter.op_peak,
        min_time_s=min(times),
        max_time_s=max(times),
    )


def _check_counts(warmup: int, iters: int) -> None:
    if iters < 1 or warmup < 0:
        raise ValueError(f"need iters >= 1 and warmup >= 0, got iters={iters}, warmup={warmup}")


def measure(
    step_fn: Callable[[], Any],
    *,
    device: str | torch.device | None = None,
    warmup: int = 1,
    iters: int = 5,
) -> StepMeasurement:
    """Time ``step_fn`` and count the memory its forward keeps for backward.

    ``step_fn`` takes no argument and runs one forward and backward (it may also step an
    optimizer). It runs ``warmup`` untimed times, ``iters`` timed times, then once more under
    saved-tensor hooks to count saved bytes (hooks add Python overhead, so that run is not
    timed). Global RNG states are restored afterwards.

    Args:
        step_fn: the step, a callable with no arguments.
        device: where the step runs; selects CUDA events and peak-memory statistics.
            Default: :func:`default_device`.
        warmup: untimed steps first (>= 0).
        iters: timed steps (>= 1).

    Returns:
        a :class:`StepMeasurement` (times in seconds, sizes in bytes).

    Raises:
        ValueError: ``iters < 1`` or ``warmup < 0``.
        Whatever ``step_fn`` raises.
    """
    _check_counts(warmup, iters)
    runner = _Runner(device)
    rng = capture_rng()
    try:
        for _ in range(warmup):
            step_fn()
        runs = [runner.timed(step_fn) for _ in range(iters)]
        counter = runner.counted(step_fn)
    finally:
        restore_rng(rng)
    return _result(runner.device, runs, counter)


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None:
        return None
    if b == 0:
        return math.nan if a == 0 else math.inf
    return a / b


@dataclass
class MemoryReport:
    """A plain and a checkpointed step side by side.

    Attributes:
        plain, checkpointed: the two :class:`StepMeasurement` objects.
        memory_ratio: ``checkpointed.saved_activation_bytes / plain.saved_activation_bytes``;
            below 1 means checkpointing keeps fewer activations alive (available on every device).
        time_ratio: ``checkpointed.median_time_s / plain.median_time_s``; above 1 is the
            recomputation cost.
        peak_memory_ratio: ratio of ``peak_step_bytes`` (CUDA / accelerators), else None.
        op_peak_ratio: ratio of ``op_peak_bytes`` (every device, the CPU included); under
            selective activation checkpointing this one, not ``memory_ratio``, shows what the
            policy keeps.
    """

    plain: StepMeasurement
    checkpointed: StepMeasurement
    memory_ratio: float | None
    time_ratio: float | None
    peak_memory_ratio: float | None
    op_peak_ratio: float | None = None

    def __str__(self) -> str:
        def row(label: str, a: Any, b: Any, ratio: float | None, unit: str) -> str:
            r = "n/a" if ratio is None else f"{ratio:.3f}"
            return f"  {label:<26}{_fmt(a, unit):>14}{_fmt(b, unit):>14}   ratio {r}"

        p, c = self.plain, self.checkpointed
        lines = [
            f"compare_memory on {p.device}: plain vs checkpointed step",
            f"  {'':<26}{'plain':>14}{'checkpointed':>14}",
            row("saved activations", p.saved_activation_bytes, c.saved_activation_bytes, self.memory_ratio, "B"),
            row("saved for backward (all)", p.saved_bytes, c.saved_bytes, _ratio(c.saved_bytes, p.saved_bytes), "B"),
            row("saved during backward", p.recompute_saved_bytes, c.recompute_saved_bytes, None, "B"),
            row("op peak (all devices)", p.op_peak_bytes, c.op_peak_bytes, self.op_peak_ratio, "B"),
            row("median step time", p.median_time_s, c.median_time_s, self.time_ratio, "s"),
            row("  fastest step (min)", p.min_time_s, c.min_time_s, None, "s"),
            row("  slowest step (max)", p.max_time_s, c.max_time_s, None, "s"),
        ]
        if p.peak_step_bytes is not None and c.peak_step_bytes is not None:
            lines.append(row("peak memory above start", p.peak_step_bytes, c.peak_step_bytes, self.peak_memory_ratio, "B"))
        return "\n".join(lines)


def format_bytes(n: float) -> str:
    """``"1.50 GiB"``, ``"12.00 MiB"``, ``"512 B"`` (binary units)."""
    for div, suffix in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if abs(n) >= div:
            return f"{n / div:.2f} {suffix}"
    return f"{int(n)} B"


def _fmt(value: Any, unit: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if unit == "s":
        return f"{value * 1e3:.3f} ms"
    return format_bytes(value)


def compare_memory(
    plain_step: Callable[[], Any],
    checkpointed_step: Callable[[], Any],
    *,
    device: str | torch.device | None = None,
    warmup: int = 1,
    iters: int = 5,
) -> MemoryReport:
    """Measure a plain and a checkpointed step like :func:`measure` and compare them.

    Both callables take no argument and run one forward and backward of the same model, one
    without and one with checkpointing. Warm-up and timed steps alternate between the two
    (plain, checkpointed, plain, ...) so that drift affects both alike; then each runs once
    under saved-tensor hooks. Returns a :class:`MemoryReport` whose
    ``memory_ratio`` (checkpointed / plain saved-activation bytes; < 1 means memory saved) and
    ``time_ratio`` (checkpointed / plain median step time) summarise the trade-off; ``str()``
    gives a small table. Raises what :func:`measure` raises.
    """
    _check_counts(warmup, iters)
    runner = _Runner(device)
    rng = capture_rng()
    try:
        for _ in range(warmup):
            plain_step()
            checkpointed_step()
        plain_runs, ckpt_runs = [], []
        for _ in range(iters):  # interleaved, so drift (clock, cache, allocator) hits both alike
            plain_runs.append(runner.timed(plain_step))
            ckpt_runs.append(runner.timed(checkpointed_step))
        plain = _result(runner.device, plain_runs, runner.counted(plain_step))
        ckpt = _result(runner.device, ckpt_runs, runner.counted(checkpointed_step))
    finally:
        restore_rng(rng)
    return MemoryReport(
        plain=plain,
        checkpointed=ckpt,
        memory_ratio=_ratio(ckpt.saved_activation_bytes, plain.saved_activation_bytes),
        time_ratio=_ratio(ckpt.median_time_s, plain.median_time_s),
        peak_memory_ratio=_ratio(ckpt.peak_step_bytes, plain.peak_step_bytes),
        op_peak_ratio=_ratio(ckpt.op_peak_bytes, plain.op_peak_bytes),
    )

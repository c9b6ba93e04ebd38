"""What the planner's counted step watches besides saved tensors: the state a block may write,
the generators it may draw from, and the bytes the step holds for backward (see
:mod:`ckptlint.runtime.plan.measure`)."""

from __future__ import annotations

import sys
import weakref
from typing import Any

import torch
from torch import nn

from ..states import accelerator_type
from ..targets import find_reachable

__all__ = [
    "LiveBytes",
    "attr_state",
    "block_generators",
    "buffer_state",
    "default_generators",
    "norms_updating",
    "numpy_state",
    "storage_of",
    "tensors_in",
]

_PLAIN = (int, float, str, bool, type(None))
#: what every nn.Module holds (parameters, buffers, submodules, hooks): no generator is there
_MODULE_INTERNALS = frozenset(vars(nn.Module()))


def storage_of(t: torch.Tensor) -> tuple[tuple[torch.device, int], Any] | None:
    """``((device, data_ptr), storage)`` of a tensor, or None (no storage, or an empty one)."""
    try:
        s = t.untyped_storage()
        ptr = s.data_ptr()
    except Exception:  # noqa: BLE001 - tensors without a storage (some subclasses)
        return None
    return None if ptr == 0 else ((t.device, ptr), s)


def norms_updating(block: nn.Module) -> list[str]:
    """Submodules with running statistics their forward updates (BatchNorm-like, training mode)."""
    return [
        n or type(block).__name__
        for n, m in block.named_modules()
        if isinstance(m, nn.modules.batchnorm._NormBase) and m.training and m.track_running_stats and m.running_mean is not None
    ]


def buffer_state(block: nn.Module) -> dict[str, tuple[int, int]]:
    """``{buffer name: (id, _version)}``: changes when a forward writes a buffer or replaces it."""
    return {n: (id(b), b._version) for n, b in block.named_buffers()}


def attr_state(block: nn.Module) -> dict[tuple[str, str], Any]:
    """``{(module prefix, attribute): value}`` for plain attributes (numbers, strings; lengths of
    lists, dicts and sets) of a block's modules."""
    out: dict[tuple[str, str], Any] = {}
    for prefix, m in block.named_modules():
        for k, v in vars(m).items():
            kind = type(v)  # not isinstance: it would ask objects such as configurations for __class__
            if k[0] == "_" or k == "training":
                continue
            if issubclass(kind, _PLAIN):
                out[prefix, k] = v
            elif issubclass(kind, (list, dict, set)):
                out[prefix, k] = ("len", len(v))
    return out


def numpy_state() -> Any:
    """NumPy's global generator state, or None when NumPy was not imported."""
    numpy = sys.modules.get("numpy")  # a forward that draws from NumPy has imported it
    return None if numpy is None else numpy.random.get_state()


def default_generators() -> list[tuple[str, torch.Generator]]:
    """``(device, generator)`` for the default generators of an initialised accelerator (the CPU
    one is left out: checkpoint always stashes it, so its draws are replayed)."""
    out: list[tuple[str, torch.Generator]] = []
    acc = accelerator_type()
    module = getattr(torch, acc, None) if acc else None
    initialised = getattr(module, "is_initialized", None)
    if module is not None and callable(initialised) and initialised():
        out += [(f"{acc}:{i}", g) for i, g in enumerate(getattr(module, "default_generators", ()))]
    return out


def _generators_in(value: Any, path: str, depth: int, out: dict[int, tuple[str, torch.Generator]]) -> None:
    if isinstance(value, torch.Generator):
        out.setdefault(id(value), (path, value))
    elif depth < 2 and isinstance(value, (list, tuple)):
        for i, v in enumerate(value[:100]):
            _generators_in(v, f"{path}[{i}]", depth + 1, out)
    elif depth < 2 and isinstance(value, dict):
        for k, v in list(value.items())[:100]:
            _generators_in(v, f"{path}[{k!r}]", depth + 1, out)


def block_generators(block: nn.Module, by_forward: dict[Any, dict[str, torch.Generator]]) -> dict[int, tuple[str, torch.Generator]]:
    """``{id: (where, generator)}`` for the ``torch.Generator`` objects a block's modules hold
    (attributes, through lists, tuples and dicts) or their ``forward`` code names (closures,
    globals: :func:`ckptlint.runtime.targets.find_reachable`). ``by_forward`` caches the latter
    per ``forward`` function."""
    out: dict[int, tuple[str, torch.Generator]] = {}
    for prefix, m in block.named_modules():
        for k, v in vars(m).items():
            if k not in _MODULE_INTERNALS:
                _generators_in(v, f"{prefix}.{k}" if prefix else k, 0, out)
        code = getattr(type(m), "forward", None)
        if code not in by_forward:
            by_forward[code] = find_reachable(m.forward, (torch.Generator,))
        for path, g in by_forward[code].items():
            out.setdefault(id(g), (f"{path} (named in {type(m).__name__}.forward)", g))
    return out


class LiveBytes:
    """Bytes held by the storages the step made, as far as the planner sees them: what the
    forward leaves for backward (:meth:`hold`), then each gradient an autograd node of the
    backward returns (:meth:`watch`); each is dropped when its storage is freed. ``peak`` is
    the largest total, reached at a node's end: the node's saved tensors, incoming and
    outgoing gradients, and everything else still held."""

    def __init__(self) -> None:
        self.live: dict[Any, int] = {}
        self.current = 0
        self.peak = 0
        self.handles: list[Any] = []

    def _freed(self, key: Any) -> None:
        self.current -= self.live.pop(key, 0)

    def hold(self, key: Any, storage: Any) -> None:
        """Count ``storage`` (keyed ``(device, data_ptr)``) until it is freed; once."""
        if key in self.live:
            return
        nbytes = storage.nbytes()
        self.live[key] = nbytes
        self.current += nbytes
        if self.current > self.peak:
            self.peak = self.current
        weakref.finalize(storage, self._freed, key)

    def _node_done(self, grad_inputs: tuple, grad_outputs: tuple) -> None:
        for g in grad_inputs:
            if g is not None and (found := storage_of(g)) is not None:
                self.hold(*found)

    def watch(self, loss: torch.Tensor) -> None:
        """Hook every node of ``loss``'s graph (not the leaves' gradient accumulators, which add in place)."""
        seen: set[Any] = set()
        todo = [loss.grad_fn]
        while todo:
            node = todo.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            following = node.next_functions
            if following:
                self.handles.append(node.register_hook(self._node_done))
                todo += [n for n, _ in following]

    def remove(self) -> None:
        for h in self.handles:
            h.remove()
        self.handles = []


def tensors_in(value: Any, depth: int = 0) -> list[torch.Tensor]:
    """Tensors in a model output: in dicts (``ModelOutput``), lists, tuples and plain objects' attributes."""
    if isinstance(value, torch.Tensor):
        return [value]
    if depth >= 4 or isinstance(value, (str, bytes, nn.Module, type)):
        return []
    if isinstance(value, dict):
        items = list(value.values())
    elif isinstance(value, (list, tuple)):
        items = list(value)
    elif hasattr(value, "__dict__"):
        items = list(vars(value).values())
    else:
        return []
    return [t for v in items for t in tensors_in(v, depth + 1)]

"""Which Python values count as state a step can change, and how to save, restore and copy them.

*State* is data: None, bools, numbers, strings, bytes, ``torch.dtype``/``device``/``Size``,
tensors (detached copies are taken) and lists, tuples, dicts, sets and deques of state, nested
to any depth (at most :data:`MAX_ITEMS` values in all). Modules, functions, classes and other
objects are not state: they are neither saved nor compared.

A value is saved with its identity (:func:`save`): :func:`restore` puts the original object
back and its content too, in place, so that a global the step rebound (``STEPS = STEPS + 1``)
and a list it appended to (``FEATURES.append(x)``) both end as they started, and every other
reference to the object sees the restored content.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["MAX_ITEMS", "Saved", "is_state", "restore", "save", "state_copy"]

#: how many values (container items included) one state value may hold
MAX_ITEMS = 10_000

_ATOMS = (type(None), bool, int, float, complex, str, bytes, torch.dtype, torch.device, torch.Size)
_SEQUENCES = (list, tuple, collections.deque)
_MAPPINGS = (dict, collections.OrderedDict, collections.defaultdict, collections.Counter)
_SETS = (set, frozenset)


def is_state(value: Any, budget: list[int] | None = None) -> bool:
    """True when ``value`` is state (see the module docstring) within :data:`MAX_ITEMS` values."""
    budget = [MAX_ITEMS] if budget is None else budget
    budget[0] -= 1
    if budget[0] < 0:
        return False
    if isinstance(value, _ATOMS + (torch.Tensor,)):
        return True
    kind = type(value)
    if kind in _SEQUENCES or kind in _SETS:
        return all(is_state(v, budget) for v in value)
    if kind in _MAPPINGS:
        return all(is_state(k, budget) and is_state(v, budget) for k, v in value.items())
    return False


@dataclass
class Saved:
    """One saved value: the object itself and a copy of its content (``items`` for containers)."""

    obj: Any
    kind: str
    content: Any = None


def save(value: Any) -> Saved:
    """Record ``value`` and its content (tensors cloned, containers item by item)."""
    if isinstance(value, torch.Tensor):
        return Saved(value, "tensor", value.detach().clone())
    kind = type(value)
    if kind in _SEQUENCES:
        return Saved(value, "sequence", [save(v) for v in value])
    if kind in _MAPPINGS:
        return Saved(value, "mapping", [(k, save(v)) for k, v in value.items()])
    if kind is set:
        return Saved(value, "set", set(value))
    return Saved(value, "atom")


def restore(saved: Saved) -> Any:
    """Put the content recorded by :func:`save` back into the saved object; return the object."""
    obj = saved.obj
    if saved.kind == "tensor":
        with torch.no_grad():
            if obj.shape != saved.content.shape or obj.dtype != saved.content.dtype:
                obj.data = saved.content.clone()
            elif not torch.equal(obj.detach(), saved.content):
                obj.copy_(saved.content)
    elif saved.kind == "sequence":
        items = [restore(s) for s in saved.content]
        if type(obj) is list:
            obj[:] = items
        elif type(obj) is collections.deque:
            obj.clear()
            obj.extend(items)
    elif saved.kind == "mapping":
        items = [(k, restore(s)) for k, s in saved.content]
        obj.clear()
        obj.update(items)
    elif saved.kind == "set":
        obj.clear()
        obj.update(saved.content)
    return obj


def state_copy(value: Any) -> Any:
    """A copy of ``value`` to compare later: tensors detached and cloned, containers rebuilt as
    lists, tuples and dicts; anything else as it is."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    kind = type(value)
    if kind is tuple:
        return tuple(state_copy(v) for v in value)
    if kind in _SEQUENCES:
        return [state_copy(v) for v in value]
    if kind in _MAPPINGS:
        return {k: state_copy(v) for k, v in value.items()}
    if kind is set:
        return set(value)
    return value

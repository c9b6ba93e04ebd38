"""Watch the plain Python state a checkpointed function reads: globals and closure cells.

Checkpointing runs the function again during backward. If the function changes a global or a
nonlocal it also reads (a flag it flips, a counter it increments, a list it appends to), the
recomputation sees the changed value (CKP201) and the write itself happens twice (CKP202).

This module finds the module-level globals and closure cells named in the code of the function
(for an ``nn.Module``: its class's ``forward``; one level deep, no call-graph walk), keeps those
whose value is *plain data* (None, bool, int, float, complex, str, bytes and tuples, lists,
dicts and sets of plain data), and lets the equivalence helper

* record their values before a step and report which ones the step changed, and
* put the values back so that every step starts from the same state.

Objects that are not plain data (modules, tensors, functions, class instances) are ignored.
"""

from __future__ import annotations

import copy
import functools
import inspect
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["WatchedState", "watch_state"]

_ATOMS = (type(None), bool, int, float, complex, str, bytes)
_MAX_ITEMS = 10_000


def _is_plain(value: Any, budget: list[int] | None = None) -> bool:
    budget = [_MAX_ITEMS] if budget is None else budget
    budget[0] -= 1
    if budget[0] < 0:
        return False
    if isinstance(value, _ATOMS):
        return True
    if type(value) in (tuple, list, set, frozenset):
        return all(_is_plain(v, budget) for v in value)
    if type(value) is dict:
        return all(_is_plain(k, budget) and _is_plain(v, budget) for k, v in value.items())
    return False


def _code_of(fn: Callable) -> types.FunctionType | None:
    """Return the Python function whose code ``fn`` runs (function, method, partial or module)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if isinstance(fn, types.MethodType):
        fn = fn.__func__
    if isinstance(fn, types.FunctionType):
        return fn
    for attr in ("forward", "__call__"):  # nn.Module and other callable objects
        method = getattr(type(fn), attr, None)
        if isinstance(method, types.FunctionType):
            return method
    return None


def _names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:  # nested functions, comprehensions (Python < 3.12)
        if inspect.iscode(const):
            names |= _names(const)
    return names


@dataclass
class _Slot:
    label: str
    get: Callable[[], Any]
    set: Callable[[Any], None]


class WatchedState:
    """The plain-data globals and closure cells that one function refers to.

    Use :meth:`snapshot` to record the current values, :meth:`changes` to list the names whose
    value differs from a snapshot, and :meth:`restore` to put a snapshot back (mutable
    containers are restored in place so that other references see the restored content).
    """

    def __init__(self, slots: list[_Slot]) -> None:
        self._slots = slots

    @property
    def names(self) -> list[str]:
        """Labels of the watched slots, e.g. ``["global CALLS", "nonlocal seen"]``."""
        return [s.label for s in self._slots]

    def snapshot(self) -> dict[str, Any]:
        """Return ``{label: deep copy of the value}`` for every watched slot."""
        out = {}
        for s in self._slots:
            try:
                out[s.label] = copy.deepcopy(s.get())
            except Exception:  # noqa: BLE001 - a slot that vanished or cannot be copied is skipped
                continue
        return out

    def changes(self, before: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
        """Return ``{label: (value in before, current value)}`` for slots that changed."""
        now = self.snapshot()
        out = {}
        for label, old in before.items():
            new = now.get(label, old)
            try:
                same = bool(old == new) and type(old) is type(new)
            except Exception:  # noqa: BLE001 - a value's __eq__ or __bool__ may raise anything: changed
                same = False
            if not same:
                out[label] = (old, new)
        return out

    def restore(self, before: dict[str, Any]) -> None:
        """Put every slot recorded in ``before`` back to its recorded value."""
        for s in self._slots:
            if s.label not in before:
                continue
            value = copy.deepcopy(before[s.label])
            current = s.get()
            if type(current) is list and type(value) is list:
                current[:] = value
            elif type(current) is dict and type(value) is dict:
                current.clear()
                current.update(value)
            elif type(current) is set and type(value) is set:
                current.clear()
                current.update(value)
            else:
                s.set(value)


def _cell_value(cell: types.CellType) -> Any:
    return cell.cell_contents


def _set_cell(cell: types.CellType, value: Any) -> None:
    cell.cell_contents = value


def watch_state(fn: Callable) -> WatchedState:
    """Build a :class:`WatchedState` for the globals and closure cells named in ``fn``'s code.

    ``fn`` may be a function, a bound method, a ``functools.partial`` or an ``nn.Module``
    (its class's ``forward`` is inspected). Never raises; an uninspectable callable gives an
    empty watch.
    """
    func = _code_of(fn)
    if func is None:
        return WatchedState([])
    slots: list[_Slot] = []
    g = func.__globals__
    for name in sorted(_names(func.__code__)):
        if name in g and _is_plain(g[name]):
            slots.append(
                _Slot(
                    f"global {name}",
                    functools.partial(g.__getitem__, name),
                    functools.partial(g.__setitem__, name),
                )
            )
    for name, cell in zip(func.__code__.co_freevars, func.__closure__ or (), strict=True):
        try:
            value = cell.cell_contents
        except ValueError:  # empty cell
            continue
        if _is_plain(value):
            slots.append(_Slot(f"nonlocal {name}", functools.partial(_cell_value, cell), functools.partial(_set_cell, cell)))
    return WatchedState(slots)

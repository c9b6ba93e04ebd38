"""The process-wide state a step can touch: globals and closure cells, and the global RNGs.

:func:`watch_process` finds the module-level globals and closure cells named by every function a
step runs (:func:`ckptlint.runtime.step_code.step_functions`: the ``forward`` of every submodule
class, every registered hook, ``loss_fn``) whose value is state
(:func:`ckptlint.runtime.state_values.is_state`: numbers, strings, tensors and containers of
them). The chosen slots are fixed before the first step; then

* :meth:`ProcessState.restore` puts every slot and every global RNG (torch CPU and devices,
  Python ``random``, NumPy) back to the saved values, the objects themselves included (a list
  the step appended to is emptied again in place);
* :meth:`ProcessState.capture` copies the slots' values after a step, for comparison by value.

Globals of torch's own modules are not watched.
"""

from __future__ import annotations

import functools
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch import nn

from .state_values import Saved, is_state, restore, save, state_copy
from .states import RngSnapshot, capture_rng, restore_rng
from .step_code import code_names, step_functions

__all__ = ["ProcessState", "Slot", "watch_process"]


@dataclass
class Slot:
    """One watched binding: ``global NAME`` or ``nonlocal NAME`` (a closure cell)."""

    label: str
    get: Callable[[], Any]
    set: Callable[[Any], None]


def _cell_value(cell: types.CellType) -> Any:
    return cell.cell_contents


def _set_cell(cell: types.CellType, value: Any) -> None:
    cell.cell_contents = value


#: how many attributes of one object are watched at most
MAX_OBJECT_ATTRIBUTES = 64


def _is_user_object(value: Any) -> bool:
    """An instance of a class of the program or a third-party library (not the standard
    library's, not torch's) that keeps its attributes in ``__dict__``: a ``CONFIG`` object."""
    kind = type(value)
    module = (getattr(kind, "__module__", "") or "").split(".")[0]
    if module in sys.stdlib_module_names or module in ("torch", "builtins", "numpy"):
        return False
    if isinstance(value, (type, types.ModuleType, types.FunctionType, types.MethodType, functools.partial, nn.Module)):
        return False
    return isinstance(getattr(value, "__dict__", None), dict)


def _attribute_slots(obj: Any, label: str) -> list[Slot]:
    """One slot per state attribute of a user object (``global CONFIG.scale``)."""
    return [
        Slot(f"{label}.{k}", functools.partial(getattr, obj, k), functools.partial(setattr, obj, k))
        for k, v in list(vars(obj).items())[:MAX_OBJECT_ATTRIBUTES]
        if is_state(v)
    ]


def _slots(functions: list[types.FunctionType]) -> list[Slot]:
    found: dict[tuple[int, str], tuple[str, str, Slot]] = {}
    for fn in functions:
        g = fn.__globals__
        module = g.get("__name__", "?")
        if module == "torch" or str(module).startswith("torch."):
            continue
        for name in sorted(code_names(fn.__code__)):
            key = (id(g), name)
            if key in found or name not in g:
                continue
            if _is_user_object(g[name]):
                for slot in _attribute_slots(g[name], f"global {name}"):
                    found[(id(g[name]), slot.label)] = (name, f"global {module}.{slot.label.removeprefix('global ')}", slot)
                continue
            if not is_state(g[name]):
                continue
            slot = Slot(f"global {name}", functools.partial(g.__getitem__, name), functools.partial(g.__setitem__, name))
            found[key] = (name, f"global {module}.{name}", slot)
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True):
            key = (id(cell), name)
            try:
                value = cell.cell_contents
            except ValueError:  # empty cell
                continue
            if key in found:
                continue
            if _is_user_object(value):
                for slot in _attribute_slots(value, f"nonlocal {name}"):
                    found[(id(value), slot.label)] = (name, f"nonlocal {slot.label.removeprefix('nonlocal ')} of {fn.__qualname__}", slot)
                continue
            if not is_state(value):
                continue
            slot = Slot(f"nonlocal {name}", functools.partial(_cell_value, cell), functools.partial(_set_cell, cell))
            found[key] = (name, f"nonlocal {name} of {fn.__qualname__}", slot)
    counts: dict[str, int] = {}
    for _, _, slot in found.values():
        counts[slot.label] = counts.get(slot.label, 0) + 1
    out = []
    for _, long_label, slot in found.values():
        if counts[slot.label] > 1:  # two globals or cells of one name: say whose
            slot.label = long_label
        out.append(slot)
    return sorted(out, key=lambda s: s.label)


class ProcessState:
    """Saved globals, closure cells and RNG states; see the module docstring.

    Attributes:
        slots: the watched bindings, fixed when the object is made.
        rng: the RNG states when the object was made.
    """

    def __init__(self, slots: list[Slot]) -> None:
        self.slots = slots
        self._saved: dict[str, Saved] = {}
        for s in slots:
            try:
                self._saved[s.label] = save(s.get())
            except Exception:  # noqa: BLE001 - a binding that vanished is not watched
                continue
        self.rng: RngSnapshot = capture_rng()

    @property
    def names(self) -> list[str]:
        """Labels of the watched slots, e.g. ``["global STATS", "nonlocal log"]``."""
        return [s.label for s in self.slots if s.label in self._saved]

    def restore(self) -> None:
        """Put every watched binding and every global RNG back to its saved state."""
        for s in self.slots:
            saved = self._saved.get(s.label)
            if saved is not None:
                s.set(restore(saved))
        restore_rng(self.rng)

    def capture(self) -> dict[str, Any]:
        """``{label: copy of the value now}`` for every watched binding (see ``state_copy``)."""
        out = {}
        for s in self.slots:
            if s.label not in self._saved:
                continue
            try:
                out[s.label] = state_copy(s.get())
            except Exception:  # noqa: BLE001 - deleted since: compared as missing
                continue
        return out

    def initial(self) -> dict[str, Any]:
        """``{label: copy of the saved value}``: the state every step starts from."""
        return {label: state_copy(saved.obj) if saved.kind == "atom" else _saved_copy(saved) for label, saved in self._saved.items()}


def _saved_copy(saved: Saved) -> Any:
    if saved.kind == "tensor":
        return saved.content.clone()
    if saved.kind == "sequence":
        items = [_saved_copy(s) for s in saved.content]
        return tuple(items) if type(saved.obj) is tuple else items
    if saved.kind == "mapping":
        return {k: _saved_copy(s) for k, s in saved.content}
    if saved.kind == "set":
        return set(saved.content)
    return saved.obj


def watch_process(models: list[nn.Module], callables: list[Any]) -> ProcessState:
    """A :class:`ProcessState` for a step of ``models`` with ``callables`` (``loss_fn`` ...).

    Saves the values now; call :meth:`ProcessState.restore` before each step and at the end.
    """
    return ProcessState(_slots(step_functions(models, callables)))

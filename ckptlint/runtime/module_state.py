"""The state a module keeps outside its parameters and buffers, copied for comparison.

Every instance attribute that is state (:func:`ckptlint.runtime.state_values.is_state`: numbers,
strings, tensors that are not registered buffers, lists, dicts and nested containers of them)
counts, private ones (``self._step``) included; ``nn.Module``'s own bookkeeping (``training``,
``_parameters``, ``_forward_hooks`` ...: the attributes of a fresh ``nn.Module()``) and the
library switches themselves (``gradient_checkpointing``, ``grad_checkpointing``) do not. The state
held by a registered hook that is a ``functools.partial`` (its arguments) or a bound method or
callable object that is not a module (its attributes) counts too.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Iterator
from typing import Any

from torch import nn

from .state_values import is_state, state_copy
from .step_code import hooks_of
from .switches import unwrap_name

__all__ = ["SWITCH_ATTRIBUTES", "capture_module_state", "module_attributes"]

#: the flags libraries set to turn checkpointing on (see :mod:`ckptlint.runtime.switches`)
SWITCH_ATTRIBUTES = frozenset({"gradient_checkpointing", "grad_checkpointing"})

_TORCH_ATTRIBUTES = frozenset(vars(nn.Module()))


def module_attributes(module: nn.Module) -> dict[str, Any]:
    """``{name: value}`` of ``module``'s own attributes that are state (values not copied)."""
    return {k: v for k, v in vars(module).items() if k not in _TORCH_ATTRIBUTES and is_state(v)}


def _hook_state(hook: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(hook, functools.partial):
        for i, a in enumerate(hook.args):
            if is_state(a):
                yield f"argument {i}", a
        for k, v in hook.keywords.items():
            if is_state(v):
                yield f"argument {k}", v
        return
    owner = hook.__self__ if isinstance(hook, types.MethodType) else None if isinstance(hook, types.FunctionType) else hook
    if owner is None or isinstance(owner, (nn.Module, type)) or not hasattr(owner, "__dict__"):
        return
    for k, v in vars(owner).items():
        if is_state(v):
            yield f"attribute {k}", v


def _hook_name(hook: Any) -> str:
    inner = hook.func if isinstance(hook, functools.partial) else hook
    return getattr(inner, "__qualname__", None) or type(inner).__qualname__


def capture_module_state(model: nn.Module, root: str) -> dict[str, Any]:
    """Copies of the state of every submodule of ``model`` (see the module docstring).

    Keys: ``"attribute <module>.<name>"`` with module names as in the plain model (no
    ``_checkpoint_wrapped_module``; the root is called ``root``) and ``"hook <qualname> on
    <module>: argument 0"`` for hook-held state.
    """
    out: dict[str, Any] = {}
    for sub_name, sub in model.named_modules():
        where = unwrap_name(sub_name) or root
        for _, hook in hooks_of(sub):
            for what, value in _hook_state(hook):
                out[f"hook {_hook_name(hook)} on {where}: {what}"] = state_copy(value)
        if hasattr(sub, "_checkpoint_wrapped_module"):
            continue  # the wrapper's own attributes exist only in the checkpointed model
        for k, v in module_attributes(sub).items():
            if k not in SWITCH_ATTRIBUTES:
                out[f"attribute {where}.{k}"] = state_copy(v)
    return out

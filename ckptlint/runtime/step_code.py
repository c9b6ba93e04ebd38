"""The Python functions a training step runs: submodule classes, registered hooks, ``loss_fn``.

The helpers watch the globals and closure cells these functions name (see
:mod:`ckptlint.runtime.process_state`). Starting points:

* the ``forward`` (and an own ``__call__``) of every class in the MRO of every submodule, except
  torch's own classes (``torch.nn.Linear`` ...), whose code keeps no state of this kind;
* functions stored as attributes of a submodule (``self.tick = make_counter()``: a deep copy of
  the module shares them and their closure cells with the caller's);
* every hook registered on a submodule (forward, forward pre-, backward, full backward and
  backward pre-hooks, state-dict and load-state-dict hooks; torch 2.13
  ``torch/nn/modules/module.py`` keeps them in ``_forward_hooks`` ... ``_load_state_dict_post_hooks``)
  and the global module hooks (``register_module_forward_hook`` ...);
* any other callable given (``loss_fn``, the function under test).

From each function the search follows, up to :data:`DEPTH` steps: functions held in closure cells
and ``__wrapped__`` (decorators such as transformers' ``forward_with_checkpointing``), methods of
the same class named in the code (``self._attn(...)``), and functions of the same module called by
name. Functions of torch itself are not entered.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable, Iterator
from typing import Any

from torch import nn
from torch.nn.modules import module as torch_module

__all__ = ["DEPTH", "HOOK_DICTS", "code_names", "hooks_of", "reached_functions", "step_functions"]

#: how many calls deep the search follows functions
DEPTH = 3

#: the dicts in which ``nn.Module`` keeps its hooks (torch 2.13 ``nn.Module.__init__``)
HOOK_DICTS = (
    "_forward_hooks",
    "_forward_pre_hooks",
    "_backward_hooks",
    "_backward_pre_hooks",
    "_state_dict_hooks",
    "_state_dict_pre_hooks",
    "_load_state_dict_pre_hooks",
    "_load_state_dict_post_hooks",
)

_GLOBAL_HOOKS = (
    "_global_forward_hooks",
    "_global_forward_pre_hooks",
    "_global_backward_hooks",
    "_global_backward_pre_hooks",
)


def _is_torch(obj: Any) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module == "torch" or module.startswith("torch.")


def code_names(code: types.CodeType) -> set[str]:
    """Names a code object (and the functions and comprehensions nested in it) looks up."""
    names = set(code.co_names)
    for const in code.co_consts:
        if inspect.iscode(const):
            names |= code_names(const)
    return names


def _function_of(fn: Any) -> types.FunctionType | None:
    """The Python function ``fn`` runs: itself, a partial's or bound method's function, or a
    callable object's ``forward``/``__call__``."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if isinstance(fn, types.MethodType):
        fn = fn.__func__
    if isinstance(fn, types.FunctionType):
        return fn
    for attr in ("forward", "__call__"):
        method = getattr(type(fn), attr, None)
        if isinstance(method, types.FunctionType):
            return method
    return None


def hooks_of(module: nn.Module) -> Iterator[tuple[str, Callable]]:
    """``(kind, hook)`` for every hook registered on ``module`` itself (not its children)."""
    for attr in HOOK_DICTS:
        for hook in list(getattr(module, attr, {}).values()):
            hook = hook[0] if isinstance(hook, tuple) else hook  # state-dict pre-hooks may be wrapped
            if callable(hook):
                yield attr.strip("_").replace("_", " ").removesuffix("s"), hook


def _global_hooks() -> Iterator[Callable]:
    for attr in _GLOBAL_HOOKS:
        yield from list(getattr(torch_module, attr, {}).values())


def _class_functions(model: nn.Module) -> Iterator[tuple[type, types.FunctionType]]:
    seen: set[type] = set()
    for module in model.modules():
        for cls in type(module).__mro__:
            if cls in seen or cls is object or _is_torch(cls):
                continue
            seen.add(cls)
            for attr in ("forward", "__call__"):
                fn = cls.__dict__.get(attr)
                if isinstance(fn, types.FunctionType):
                    yield cls, fn


def _next_functions(fn: types.FunctionType, cls: type | None) -> Iterator[types.FunctionType]:
    for cell in fn.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if isinstance(value, types.FunctionType):
            yield value
    wrapped = getattr(fn, "__wrapped__", None)
    if isinstance(wrapped, types.FunctionType):
        yield wrapped
    for name in code_names(fn.__code__):
        if cls is not None:
            method = inspect.getattr_static(cls, name, None)
            method = getattr(method, "__func__", method)  # staticmethod / classmethod
            if isinstance(method, types.FunctionType):
                yield method
        value = fn.__globals__.get(name)
        if isinstance(value, types.FunctionType) and value.__globals__ is fn.__globals__:
            yield value


def reached_functions(starts: list[tuple[type | None, types.FunctionType]]) -> list[types.FunctionType]:
    """The functions ``starts`` run, following closures, methods and module functions (see the
    module docstring) up to :data:`DEPTH` calls deep; torch's own functions are left out."""
    out: dict[int, types.FunctionType] = {}
    frontier = [(cls, fn) for cls, fn in starts if not _is_torch(fn)]
    for _ in range(DEPTH + 1):
        nxt = []
        for cls, fn in frontier:
            if id(fn) in out or _is_torch(fn):
                continue
            out[id(fn)] = fn
            nxt += [(cls, f) for f in _next_functions(fn, cls)]
        frontier = nxt
    return list(out.values())


def step_functions(models: list[nn.Module], callables: list[Any]) -> list[types.FunctionType]:
    """Every function a step of ``models`` with ``callables`` (loss_fn ...) may run.

    See the module docstring for what is searched. Never raises on objects it cannot inspect.
    """
    starts: list[tuple[type | None, types.FunctionType]] = []
    for model in models:
        starts += list(_class_functions(model))
        for module in model.modules():
            for value in vars(module).values():  # functions stored on the module: self.tick = make_counter()
                if isinstance(value, (types.FunctionType, functools.partial)) or (
                    isinstance(value, types.MethodType) and not isinstance(value.__self__, nn.Module)
                ):
                    fn = _function_of(value)
                    if fn is not None:
                        starts.append((None, fn))
            for _, hook in hooks_of(module):
                fn = _function_of(hook)
                if fn is not None:
                    starts.append((None, fn))
    for hook in _global_hooks():
        fn = _function_of(hook)
        if fn is not None:
            starts.append((None, fn))
    for c in callables:
        if isinstance(c, nn.Module):
            continue  # covered through its classes
        fn = _function_of(c) if c is not None else None
        if fn is not None:
            owner = c.__self__ if isinstance(c, types.MethodType) else None
            starts.append((type(owner) if owner is not None else None, fn))
    return reached_functions(starts)

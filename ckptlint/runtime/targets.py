"""Give every run its own copy of the module under test.

* An ``nn.Module``, a bound method of a module, or a ``functools.partial`` (whose arguments
  may hold modules) is deep-copied for each run, so parameters, gradients, buffers and plain
  attributes start from the caller's values and the caller's objects are never touched.
* A plain function cannot be deep-copied (Python copies functions by reference). The modules
  it reaches through its closure cells or the globals its code names are found, their
  parameters, gradients and buffers are saved, reset before every run and put back at the end.
"""

from __future__ import annotations

import copy
import functools
import types
from typing import Any, Callable

import torch
from torch import nn

from .pyglobals import _code_of, _is_plain, _names

__all__ = ["Isolated", "find_modules", "plain_attributes"]


def plain_attributes(module: nn.Module) -> dict[str, Any]:
    """Deep copies of a module's public plain-data attributes (``self.calls``, ``self.p`` ...).

    ``training`` and names starting with ``_`` (PyTorch's own bookkeeping) are left out.
    """
    return {
        k: copy.deepcopy(v)
        for k, v in vars(module).items()
        if not k.startswith("_") and k != "training" and _is_plain(v)
    }


def find_modules(obj: Any) -> dict[str, nn.Module]:
    """Return ``{prefix: module}`` for the modules a callable runs.

    ``""`` for a module itself or the ``self`` of a bound method; ``"args[0]"`` /
    ``"keywords['m']"`` for modules bound in a ``functools.partial``; ``"model"`` for a module
    named ``model`` in a plain function's closure or globals.
    """
    if isinstance(obj, nn.Module):
        return {"": obj}
    if isinstance(obj, types.MethodType):
        return {"": obj.__self__} if isinstance(obj.__self__, nn.Module) else find_modules(obj.__func__)
    if isinstance(obj, functools.partial):
        out = dict(find_modules(obj.func))
        for i, a in enumerate(obj.args):
            if isinstance(a, nn.Module):
                out[f"args[{i}]"] = a
        for k, v in obj.keywords.items():
            if isinstance(v, nn.Module):
                out[f"keywords[{k!r}]"] = v
        return out
    func = _code_of(obj)
    if func is None:
        return {}
    out: dict[str, nn.Module] = {}
    for name, cell in zip(func.__code__.co_freevars, func.__closure__ or ()):
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if isinstance(value, nn.Module):
            out[name] = value
    for name in sorted(_names(func.__code__)):
        value = func.__globals__.get(name)
        if isinstance(value, nn.Module) and name not in out:
            out[name] = value
    return out


def _unique_modules(modules: dict[str, nn.Module]) -> dict[str, nn.Module]:
    """Drop modules that are submodules of another entry (their tensors are covered)."""
    seen: set[int] = set()
    out = {}
    for prefix, m in modules.items():
        if id(m) in seen:
            continue
        out[prefix] = m
        seen.update(id(sub) for sub in m.modules())
    return out


class _SavedState:
    """Parameters (data, grad, requires_grad) and buffers of some modules, saved by value."""

    def __init__(self, modules: dict[str, nn.Module]):
        self.params = []
        self.buffers = []
        for m in modules.values():
            for p in m.parameters():
                self.params.append((p, p.detach().clone(), None if p.grad is None else p.grad.clone(), p.requires_grad))
            for b in m.buffers():
                self.buffers.append((b, b.detach().clone()))
        self.attrs = [(sub, plain_attributes(sub)) for m in modules.values() for sub in m.modules()]

    def restore(self, *, keep_grads: bool) -> None:
        with torch.no_grad():
            for p, data, grad, req in self.params:
                p.copy_(data)
                p.requires_grad_(req)
                p.grad = (None if grad is None else grad.clone()) if keep_grads else None
            for b, data in self.buffers:
                b.copy_(data)
        for sub, attrs in self.attrs:
            for k, v in attrs.items():
                setattr(sub, k, copy.deepcopy(v))


class Isolated:
    """Hands out a fresh, isolated callable for each run of ``module_or_fn``.

    Use as a context manager; :meth:`fresh` returns ``(callable, {prefix: module})`` with all
    parameter gradients set to None. On exit, modules shared with the caller get their
    parameters, gradients and buffers back.
    """

    def __init__(self, module_or_fn: Callable):
        if not callable(module_or_fn):
            raise TypeError(f"expected an nn.Module or a callable, got {type(module_or_fn).__name__}")
        self.original = module_or_fn
        self.copyable = isinstance(module_or_fn, (nn.Module, functools.partial)) or (
            isinstance(module_or_fn, types.MethodType) and isinstance(module_or_fn.__self__, nn.Module)
        )
        self._shared: dict[str, nn.Module] = {}
        self._saved: _SavedState | None = None
        if not self.copyable:
            self._shared = _unique_modules(find_modules(module_or_fn))
            self._saved = _SavedState(self._shared)

    def fresh(self) -> tuple[Callable, dict[str, nn.Module]]:
        """Return ``(callable, modules)`` ready for one run (gradients None)."""
        if self.copyable:
            target = copy.deepcopy(self.original)
            modules = _unique_modules(find_modules(target))
            for m in modules.values():
                for p in m.parameters():
                    p.grad = None
            return target, modules
        assert self._saved is not None
        self._saved.restore(keep_grads=False)
        return self.original, self._shared

    def close(self) -> None:
        """Give shared modules their saved parameters, gradients and buffers back."""
        if self._saved is not None:
            self._saved.restore(keep_grads=True)

    def __enter__(self) -> "Isolated":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

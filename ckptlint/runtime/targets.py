"""Give every run its own copy of the module under test.

* An ``nn.Module``, a bound method of a module, or a ``functools.partial`` (whose arguments
  may hold modules) is deep-copied for each run, so parameters, gradients, buffers and plain
  attributes start from the caller's values and the caller's objects are never touched.
* A plain function cannot be deep-copied (Python copies functions by reference). The modules
  and ``torch.Generator`` objects it reaches through its closure cells or the globals its code
  names (and up to three levels of lists, dicts and plain objects below them) are found; their
  parameters, gradients, buffers and generator states are saved, reset before every run and
  put back at the end. ``modules=`` names modules the search cannot find.
"""

from __future__ import annotations

import copy
import functools
import types
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from .module_state import module_attributes
from .pyglobals import _code_of, _names
from .state_values import restore, save, state_copy

__all__ = ["Isolated", "find_modules", "find_reachable", "plain_attributes"]


def plain_attributes(module: nn.Module) -> dict[str, Any]:
    """Copies of a module's attributes that are state (``self.calls``, ``self.cache``, a tensor
    that is not a buffer ...; see :func:`ckptlint.runtime.module_state.module_attributes`)."""
    return {k: state_copy(v) for k, v in module_attributes(module).items()}


#: how many containers or plain objects deep :func:`find_modules` looks below a name
SEARCH_DEPTH = 3


def _reachable(value: Any, prefix: str, depth: int, seen: set[int], out: dict[str, Any], kinds: tuple) -> None:
    """Add ``{path: obj}`` for objects of ``kinds`` in ``value``, through containers and plain objects."""
    if id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, kinds):
        out.setdefault(prefix, value)
        return
    if depth >= SEARCH_DEPTH or isinstance(value, (nn.Module, torch.Tensor, type, types.ModuleType)):
        return
    if isinstance(value, dict):
        items = [(f"{prefix}[{k!r}]", v) for k, v in list(value.items())[:1000]]
    elif isinstance(value, (list, tuple)):
        items = [(f"{prefix}[{i}]", v) for i, v in enumerate(value[:1000])]
    elif isinstance(value, (types.FunctionType, types.MethodType, functools.partial)) or callable(value) and not hasattr(value, "__dict__"):
        return
    elif hasattr(value, "__dict__") and not isinstance(value, (str, bytes)):
        try:
            items = [(f"{prefix}.{k}", v) for k, v in vars(value).items()]
        except TypeError:
            return
    else:
        return
    for path, v in items:
        _reachable(v, path, depth + 1, seen, out, kinds)


def _named_roots(obj: Any) -> list[tuple[str, Any]]:
    """``(name, value)`` for what a callable holds: partial arguments, bound self, closure, globals."""
    if isinstance(obj, functools.partial):
        roots: list[tuple[str, Any]] = _named_roots(obj.func)
        roots += [(f"args[{i}]", a) for i, a in enumerate(obj.args)]
        roots += [(f"keywords[{k!r}]", v) for k, v in obj.keywords.items()]
        return roots
    if isinstance(obj, types.MethodType):
        return [("self", obj.__self__)] + _named_roots(obj.__func__)
    func = _code_of(obj)
    if func is None:
        return []
    roots = []
    if not isinstance(obj, (types.FunctionType, types.MethodType)):
        roots.append(("self", obj))  # a callable object: its attributes
    for name, cell in zip(func.__code__.co_freevars, func.__closure__ or (), strict=True):
        try:
            roots.append((name, cell.cell_contents))
        except ValueError:
            continue
    for name in sorted(_names(func.__code__)):
        if name in func.__globals__:
            roots.append((name, func.__globals__[name]))
    return roots


def find_reachable(obj: Any, kinds: tuple) -> dict[str, Any]:
    """Return ``{path: object}`` for objects of ``kinds`` a callable reaches.

    Looks at a ``functools.partial``'s arguments, a bound method's ``self``, a function's
    closure cells and the globals its code names, and below each of them up to
    :data:`SEARCH_DEPTH` levels of lists, tuples, dicts and plain objects' attributes
    (``layers[0]``, ``holder.model``). Paths are ``"model"``, ``"layers[0]"``, ``"args[0]"``.
    """
    out: dict[str, Any] = {}
    seen: set[int] = set()
    for name, value in _named_roots(obj):
        _reachable(value, name, 0, seen, out, kinds)
    return out


def find_modules(obj: Any) -> dict[str, nn.Module]:
    """Return ``{prefix: module}`` for the modules a callable runs.

    ``""`` for a module itself or the ``self`` of a bound method of a module; ``"args[0]"`` /
    ``"keywords['m']"`` for modules bound in a ``functools.partial``; ``"model"``,
    ``"layers[0]"``, ``"holder.model"`` for modules reached from a plain function's closure or
    globals (see :func:`find_reachable`).
    """
    if isinstance(obj, nn.Module):
        return {"": obj}
    if isinstance(obj, types.MethodType) and isinstance(obj.__self__, nn.Module):
        return {"": obj.__self__}
    found = find_reachable(obj, (nn.Module,))
    return {("" if k == "self" else k): v for k, v in found.items()}


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
    """Parameters (data, grad, requires_grad), buffers of some modules and generator states."""

    def __init__(self, modules: dict[str, nn.Module], generators: dict[str, torch.Generator] | None = None) -> None:
        self.generators = [(g, g.get_state()) for g in (generators or {}).values()]
        self.params = []
        self.buffers = []
        for m in modules.values():
            for p in m.parameters():
                self.params.append((p, p.detach().clone(), None if p.grad is None else p.grad.clone(), p.requires_grad))
            for b in m.buffers():
                self.buffers.append((b, b.detach().clone()))
        self.attrs = [
            (sub, {k: save(v) for k, v in module_attributes(sub).items()}) for m in modules.values() for sub in m.modules()
        ]

    def restore(self, *, keep_grads: bool) -> None:
        with torch.no_grad():
            for p, data, grad, req in self.params:
                p.copy_(data)
                p.requires_grad_(req)
                p.grad = (None if grad is None else grad.clone()) if keep_grads else None
            for b, data in self.buffers:
                b.copy_(data)
        for sub, attrs in self.attrs:
            for k, saved in attrs.items():
                setattr(sub, k, restore(saved))
        for g, state in self.generators:
            g.set_state(state)


class Isolated:
    """Hands out a fresh, isolated callable for each run of ``module_or_fn``.

    Use as a context manager; :meth:`fresh` returns ``(callable, {prefix: module})`` with all
    parameter gradients set to None. On exit, modules shared with the caller get their
    parameters, gradients and buffers back, and ``torch.Generator`` objects the function reaches
    (closure, globals) their state: every run starts from the same generator state.

    ``modules`` (``{name: module}``) adds modules the search does not find; they are saved and
    reset like found ones.
    """

    def __init__(self, module_or_fn: Callable, modules: dict[str, nn.Module] | None = None) -> None:
        if not callable(module_or_fn):
            raise TypeError(f"expected an nn.Module or a callable, got {type(module_or_fn).__name__}")
        self.original = module_or_fn
        self.copyable = isinstance(module_or_fn, (nn.Module, functools.partial)) or (
            isinstance(module_or_fn, types.MethodType) and isinstance(module_or_fn.__self__, nn.Module)
        )
        self._shared: dict[str, nn.Module] = {}
        self._saved: _SavedState | None = None
        if modules:
            bad = [k for k, v in modules.items() if not isinstance(v, nn.Module)]
            if bad:
                raise TypeError(f"modules= must map names to nn.Module objects; not modules: {bad}")
            self.copyable = False
        if not self.copyable:
            found = {} if modules else find_modules(module_or_fn)
            self._shared = _unique_modules({**found, **dict(modules or {})})
            generators = find_reachable(module_or_fn, (torch.Generator,))
            self._saved = _SavedState(self._shared, generators)
            self.generators = generators
        else:
            self.generators = {}

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

    def __enter__(self) -> Isolated:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

"""The blocks a plan chooses from, named as ``model.named_modules()`` names them.

Default (:func:`default_candidates`), first that applies:

1. the repeated layers a library switch checkpoints: transformers'
   ``GradientCheckpointingLayer`` instances (``modeling_layers.py``, 5.24: the modules
   ``activation_checkpointing_enable(every_n_layers=...)`` counts), else the outermost modules
   below the root carrying a ``gradient_checkpointing`` flag (diffusers 0.42.1 blocks, older
   transformers layers) or timm's ``grad_checkpointing`` (stages);
2. else the children of the deepest ``nn.ModuleList`` objects (lists that hold no other list);
3. else the model's direct children.

Given candidates are names, module classes, or a predicate ``(name, module) -> bool``. Nested
matches keep the outermost one, so no block is inside another.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any

from torch import nn

__all__ = ["default_candidates", "resolve_candidates", "switch_layers"]

Candidates = Iterable[str] | type | tuple[type, ...] | Callable[[str, nn.Module], bool] | None


def _outermost(names: Iterable[str]) -> list[str]:
    kept: list[str] = []
    for name in names:  # named_modules order: a parent comes before its children
        if not any(name == k or name.startswith(k + ".") for k in kept):
            kept.append(name)
    return kept


def switch_layers(model: nn.Module) -> tuple[str, list[str]] | None:
    """``(library, names)`` of the layers a library switch checkpoints, or None."""
    layers = sys.modules.get("transformers.modeling_layers")
    layer_cls = getattr(layers, "GradientCheckpointingLayer", None)
    if layer_cls is not None:
        names = [n for n, m in model.named_modules() if n and isinstance(m, layer_cls)]
        if names:
            return "transformers", _outermost(names)
    for flag in ("gradient_checkpointing", "grad_checkpointing"):
        names = [n for n, m in model.named_modules() if n and isinstance(getattr(m, flag, None), bool)]
        if names:
            library = "timm" if flag == "grad_checkpointing" else _library_of(model)
            return library, _outermost(names)
    return None


def _library_of(model: nn.Module) -> str:
    module = type(model).__module__.split(".")[0]
    return module if module in ("transformers", "diffusers") else "flag"


def _deepest_list_children(model: nn.Module) -> list[str]:
    lists = [n for n, m in model.named_modules() if isinstance(m, nn.ModuleList) and len(m) > 0]
    deepest = [n for n in lists if not any(o != n and o.startswith(n + ".") for o in lists)]
    prefix = {n: (n + ".") if n else "" for n in deepest}
    return [f"{prefix[n]}{child}" for n in deepest for child, _ in model.get_submodule(n).named_children()]


def default_candidates(model: nn.Module) -> list[str]:
    """Names of the default candidate blocks (module docstring); ``[]`` for a model with no children."""
    found = switch_layers(model)
    if found is not None:
        return found[1]
    names = _deepest_list_children(model)
    if names:
        return _outermost(names)
    return [n for n, _ in model.named_children()]


def resolve_candidates(model: nn.Module, candidates: Candidates) -> list[str]:
    """Names for ``candidates`` (None: :func:`default_candidates`), outermost first-seen order,
    less the modules the model holds in more than one place (:func:`_shared_modules`).

    Raises:
        ValueError: a given name is not a submodule, or nothing matched.
        TypeError: ``candidates`` is of none of the accepted kinds.
    """
    if candidates is None:
        names = default_candidates(model)
    else:
        modules = dict(model.named_modules())
        match: Callable[[str, nn.Module], Any]
        if isinstance(candidates, type) or (isinstance(candidates, tuple) and all(isinstance(c, type) for c in candidates)):
            classes = candidates
            match = lambda name, module: isinstance(module, classes)  # noqa: E731
        elif callable(candidates):
            match = candidates
        elif isinstance(candidates, Iterable) and not isinstance(candidates, (str, bytes)):
            wanted = list(candidates)
            missing = [n for n in wanted if n not in modules or n == ""]
            if missing:
                raise ValueError(f"not submodules of {type(model).__name__}: {', '.join(map(repr, missing))}")
            chosen = set(wanted)
            match = lambda name, module: name in chosen  # noqa: E731
        else:
            raise TypeError("candidates must be names, module classes or a predicate (name, module) -> bool, got " + repr(candidates))
        names = _outermost(n for n, m in modules.items() if n and match(n, m))
    shared = _shared_modules(model)
    names = [n for n in names if n not in shared]
    if not names:
        raise ValueError(f"{type(model).__name__}: no candidate block to checkpoint")
    return names


def _shared_modules(model: nn.Module) -> set[str]:
    """Names (as ``named_modules()`` gives them) of modules the model holds in more than one
    place (``nn.ModuleList([b, b, b])``): wrapping one slot would leave the others' activations,
    and ``named_modules()`` names only the first, so such a block is never a candidate."""
    seen: dict[int, int] = {}
    for _, module in model.named_modules(remove_duplicate=False):
        seen[id(module)] = seen.get(id(module), 0) + 1
    return {n for n, m in model.named_modules() if seen[id(m)] > 1}

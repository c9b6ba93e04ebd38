"""Evidence about a failed checkpointed step gathered after the comparison: inputs the step
changed in place, random ops re-run inside backward, and the code of the checkpointed regions."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from .compare import compare_tensors, flatten
from .recompute import BackwardRandomOps, CheckpointCall
from .step_code import code_names, step_functions
from .switches import unwrap_name

__all__ = ["backward_random_ops", "mutated_inputs", "region_code_names"]


def mutated_inputs(inputs: tuple, kwargs: dict[str, Any], after: list[tuple[str, Any]]) -> list[str]:
    """Names (``input[1]``, ``kwargs['mask']``) of the tensor inputs whose values after the
    reference step (``after``: ``_Step.input_state``) differ from the values passed: the step
    changed them in place."""
    given = dict(flatten(tuple(inputs), "input")) | dict(flatten(kwargs, "kwargs"))
    out = []
    for name, value in after:
        start = given.get(name)
        if isinstance(start, torch.Tensor) and isinstance(value, torch.Tensor):
            if compare_tensors("input_state", name, start.detach(), value, rtol=0, atol=0) is not None:
                out.append(name)
    return out


def backward_random_ops(run: Callable[[], Any]) -> BackwardRandomOps:
    """Run ``run()`` (a checkpointed step) under :class:`BackwardRandomOps` and return it; an
    exception of the step is swallowed (what ran before it is kept)."""
    mode = BackwardRandomOps()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with mode:
                run()
        except Exception:  # noqa: BLE001 - the step's own failure is reported elsewhere
            pass
    return mode


def _modules_of(function: Any) -> list[nn.Module]:
    """The modules a checkpointed function runs: itself, a bound method's ``self``, the
    modules among a partial's arguments."""
    out: list[nn.Module] = []
    while isinstance(function, functools.partial):
        out += [a for a in (*function.args, *function.keywords.values()) if isinstance(a, nn.Module)]
        function = function.func
    if isinstance(function, nn.Module):
        out.append(function)
    owner = getattr(function, "__self__", None)
    if isinstance(owner, nn.Module):
        out.append(owner)
    return out


def region_code_names(calls: list[CheckpointCall], model: nn.Module, regions: dict[str, int]) -> set[str]:
    """Names looked up by the code inside the checkpointed regions (``is_grad_enabled`` ...).

    With torch.utils.checkpoint calls seen: the code of each checkpointed function and of the
    modules it runs, never the code that calls checkpoint (a diffusers block's
    ``if torch.is_grad_enabled() and self.gradient_checkpointing`` sits outside its regions).
    Without (a home-made recompute): the code of the recomputed modules.
    """
    functions = [c.function for c in calls if c.function is not None and c.recomputations]
    if functions:
        modules = [m for f in functions for m in _modules_of(f)]
        plain = [f for f in functions if not isinstance(f, nn.Module)]
        return {n for fn in step_functions(modules, plain) for n in code_names(fn.__code__)}
    named = {unwrap_name(n): m for n, m in model.named_modules()}
    chosen = [named[r] for r in regions if r in named]
    return {name for fn in step_functions(chosen, []) for name in code_names(fn.__code__)}

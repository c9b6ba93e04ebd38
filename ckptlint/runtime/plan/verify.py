"""Check a plan on its model: on/off equivalence, and the real peak against prediction and budget.

* equivalence: :func:`ckptlint.runtime.check_checkpointing_equivalent` with ``enable`` = the
  plan's wrappers (one training step with and without them, compared by value);
* memory: :func:`ckptlint.runtime.compare_memory` on a plain and a planned copy of the model,
  parameter gradients allocated before the steps (so they are not step memory, as in the
  plan's measurement). The peak is measured independently of the saved-tensor accounting the
  prediction is built from: on CUDA ``max_memory_allocated`` above the start of the step, on
  the CPU and other devices the op-level peak (every storage an ATen op creates, until it is
  freed; see :mod:`ckptlint.runtime.memory`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from ..memory import StepMeasurement, compare_memory
from ..onoff import check_checkpointing_equivalent
from ..outputs import default_loss
from .result import PlanData, Verification
from .wrap import WRAPPED, wrap

__all__ = ["Verification", "verify_plan"]


def _peak(m: StepMeasurement) -> tuple[int, str]:
    if m.peak_step_bytes is not None:
        return m.peak_step_bytes, "max_memory_allocated above the start of the step"
    if m.op_peak_bytes is not None:
        return m.op_peak_bytes, "op-level peak (ckptlint.runtime.compare_memory)"
    return m.saved_activation_bytes, "saved activations (no op-level peak: the step cannot run under a dispatch mode)"


def _copy(model: nn.Module) -> nn.Module:
    clone = copy.deepcopy(model)
    for parent in list(clone.modules()):  # a plan applied to the model passed: start from the plain tree
        for name, child in list(parent.named_children()):
            inner = getattr(child, WRAPPED, None)
            if isinstance(inner, nn.Module):
                setattr(parent, name, inner)
    for p in clone.parameters():
        if p.requires_grad:
            p.grad = torch.zeros_like(p)
    return clone


def verify_plan(
    plan: PlanData,
    model: nn.Module,
    inputs: tuple,
    forward_kwargs: dict[str, Any],
    loss_fn: Callable[[Any], torch.Tensor | None] | None,
    *,
    iters: int = 3,
    tolerance: float = 0.05,
    equivalence: bool = True,
    **options: Any,
) -> Verification:
    """Run the checks of the module docstring. ``options`` go to the equivalence check
    (``rtol``, ``atol``, ``ignore_outputs`` ...). Raises what the model's step raises."""
    loss = loss_fn if loss_fn is not None else default_loss
    chosen = plan.chosen
    report = None
    if equivalence and chosen:
        report = check_checkpointing_equivalent(
            model, *inputs, enable=lambda m: wrap(m, chosen), loss_fn=loss_fn, forward_kwargs=forward_kwargs, **options
        )
    plain, planned = _copy(model), _copy(model)
    wrap(planned, chosen)

    def step(m: nn.Module) -> Callable[[], None]:
        def run() -> None:
            m.zero_grad(set_to_none=False)
            value = loss(m(*inputs, **forward_kwargs))
            if value is not None and value.requires_grad:
                value.backward()

        return run

    param = next(iter(model.parameters()), None)
    device = param.device if param is not None else None
    memory = compare_memory(step(plain), step(planned), device=device, warmup=1, iters=iters)
    measured, method = _peak(memory.checkpointed)
    plain_peak, _ = _peak(memory.plain)
    return Verification(
        equivalent=None if report is None else report.ok, report=report, budget_bytes=plan.budget_bytes,
        predicted_peak_bytes=plan.predicted_peak_bytes, measured_peak_bytes=measured, plain_peak_bytes=plain_peak,
        peak_method=method, plain_step_s=memory.plain.median_time_s, planned_step_s=memory.checkpointed.median_time_s,
        tolerance=tolerance, within_budget=measured <= plan.budget_bytes * (1 + tolerance),
    )

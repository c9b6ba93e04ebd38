"""Parameter values after a step: which a step wrote in place, and which differ between the
reference and the checkpointed step (a weight updated inside ``forward`` runs again on
recomputation)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .compare import Difference, compare_tensors
from .switches import unwrap_name

__all__ = ["_changed_parameters", "_parameter_differences"]


def _changed_parameters(modules: dict[str, nn.Module], initial: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``{"parameter NAME": copy}`` of the parameters whose value after a step differs from
    ``initial`` (the value every step starts from): a step writes to them in place."""
    out = {}
    for prefix, module in modules.items():
        dot = f"{prefix}." if prefix else ""
        for name, p in module.named_parameters():
            key = f"parameter {dot}{unwrap_name(name)}"
            start = initial.get(key)
            if start is not None and (start.shape != p.shape or not torch.equal(start.detach(), p.detach())):
                out[key] = p.detach().clone()
    return out


def _parameter_differences(ref: Any, var: Any, rtol: float | None, atol: float | None) -> list[Difference]:
    """Parameters left with other values by the checkpointed step than by the reference
    (``ref``/``var``: the two steps' records, ``param_values`` and ``param_initial``)."""
    diffs = []
    for name in list(ref.param_values) + [k for k in var.param_values if k not in ref.param_values]:
        start = ref.param_initial.get(name)
        a, b = ref.param_values.get(name, start), var.param_values.get(name, start)
        d = compare_tensors("param_value", name, a, b, rtol=rtol, atol=atol)
        if d is not None:
            d.detail = "; ".join(x for x in (d.detail, "value after the step (written in place)") if x)
            diffs.append(d)
    return diffs

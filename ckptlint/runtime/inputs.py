"""Fresh copies of step inputs, so every run starts from the same leaves."""

from __future__ import annotations

import copy
from typing import Any

import torch

__all__ = ["clone_inputs"]


def clone_inputs(value: Any) -> Any:
    """Return a copy of ``value`` in which every tensor is a fresh leaf.

    Tuples, lists and dicts are rebuilt; each tensor becomes ``t.detach().clone()`` with the
    same ``requires_grad`` (so a non-leaf input becomes a leaf and receives ``.grad``); other
    objects are deep-copied when possible and shared otherwise.
    """
    if isinstance(value, torch.Tensor):
        out = value.detach().clone()
        if value.requires_grad:
            out.requires_grad_(True)
        return out
    if type(value) in (tuple, list):
        return type(value)(clone_inputs(v) for v in value)
    if type(value) is dict:
        return {k: clone_inputs(v) for k, v in value.items()}
    try:
        return copy.deepcopy(value)
    except Exception:  # noqa: BLE001 - a value that cannot be copied (any __deepcopy__) is shared
        return value

"""The process-state check the model tests wrap around every runtime check: after the call the
torch, Python and NumPy RNGs and the named globals of the calling test module are as before."""

from __future__ import annotations

import copy
import functools
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import torch


def process_state(watched: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    state = {"torch RNG": torch.get_rng_state(), "Python random": random.getstate(), "NumPy RNG": np.random.get_state()[1].copy()}
    state.update({k: copy.deepcopy(v) for k, v in watched().items()})
    return state


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (torch.Tensor, np.ndarray)):
        return bool((a == b).all())
    return a == b


def keeps_process_state(check: Callable, watched: Callable[[], dict[str, Any]], changed: list[str]) -> Callable:
    """``check`` that appends to ``changed`` the name of every part of the process state
    (RNGs, the values ``watched()`` returns) that differs between just before and just after
    the call."""

    @functools.wraps(check)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        before = process_state(watched)
        try:
            return check(*args, **kwargs)
        finally:
            after = process_state(watched)
            changed.extend(k for k in before if not _same(before[k], after[k]))

    return wrapper

"""Runtime checks for activation checkpointing (needs torch: ``pip install 'ckptlint[runtime]'``).

* :func:`assert_checkpointing_equivalent` -- is my model the same with checkpointing on and
  off? Turns checkpointing on with the library's switch (transformers, diffusers, timm) or a
  callable, runs one training step on a plain and a checkpointed copy and compares by value;
  :func:`compare_checkpointing_memory` measures the same pair.
* :func:`assert_checkpoint_equivalent` -- run a step with and without
  ``torch.utils.checkpoint.checkpoint`` from identical states and compare outputs, gradients,
  buffers, RNG states, Python state and warnings by value.
* :func:`audit_rng` -- list the random ops a function runs and whether checkpoint would
  restore their generator.
* :func:`measure` / :func:`compare_memory` -- step time, saved-activation bytes and (CUDA) peak
  memory of a plain and a checkpointed step.
* :func:`plan_checkpointing` -- which blocks to checkpoint so a step fits a memory budget, at
  the least recompute (:mod:`ckptlint.runtime.plan`).

The static linter (``ckptlint``) never imports this package, so it works without torch.
"""

from __future__ import annotations

try:
    import torch  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without torch
    raise ImportError(
        "ckptlint.runtime needs PyTorch, which is not installed. Install the runtime extra: "
        "pip install 'ckptlint[runtime]' (the linter itself works without torch)."
    ) from exc

from .compare import Difference
from .equivalence import (
    DEFAULT_VARIANTS,
    assert_checkpoint_equivalent,
    check_checkpoint_equivalent,
    default_loss,
)
from .memory import MemoryReport, StepMeasurement, compare_memory, measure
from .onoff import (
    assert_checkpointing_equivalent,
    check_checkpointing_equivalent,
    compare_checkpointing_memory,
)
from .plan import CheckpointPlan, plan_checkpointing
from .report import (
    CheckpointingWarning,
    CheckpointMismatch,
    EquivalenceReport,
    Suggestion,
    VariantResult,
)
from .rng_audit import RngRecord, StashPlan, audit_rng, stash_plan
from .states import RngSnapshot, capture_rng, restore_rng
from .switches import SWITCHES, Switch
from .warning_keys import WARNING_KEYS, classify_warning

__all__ = [
    "DEFAULT_VARIANTS",
    "WARNING_KEYS",
    "CheckpointMismatch",
    "CheckpointPlan",
    "CheckpointingWarning",
    "Difference",
    "EquivalenceReport",
    "MemoryReport",
    "RngRecord",
    "RngSnapshot",
    "SWITCHES",
    "StashPlan",
    "Switch",
    "StepMeasurement",
    "Suggestion",
    "VariantResult",
    "assert_checkpoint_equivalent",
    "assert_checkpointing_equivalent",
    "audit_rng",
    "capture_rng",
    "check_checkpoint_equivalent",
    "check_checkpointing_equivalent",
    "compare_checkpointing_memory",
    "classify_warning",
    "compare_memory",
    "default_loss",
    "measure",
    "plan_checkpointing",
    "restore_rng",
    "stash_plan",
]

"""What a passing check could not prove: the notes of an :class:`EquivalenceReport`."""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch import nn

from .report import CheckpointingWarning, EquivalenceReport, VariantResult
from .states import RngSnapshot, rng_differences

__all__ = ["EVAL_MODE_CHECKPOINTING"]


def _vacuity_notes(
    *, isolated_modules: list[nn.Module], start_rng: RngSnapshot, ref: Any, results: list[VariantResult],
    recomputed: bool | None = None, library: str | None = None,
) -> list[str]:
    """Say what a passing check could not prove (see :class:`EquivalenceReport` ``notes``);
    ``library``: the library whose switch was used, for the eval-mode note
    (:data:`EVAL_MODE_CHECKPOINTING`)."""
    notes = []
    if isolated_modules and not any(m.training for m in isolated_modules):
        notes.append(
            "eval mode: every module ran with training=False, so dropout and BatchNorm updates were "
            "not exercised" + EVAL_MODE_CHECKPOINTING.get(library or "", "")
            + "; call model.train() to test a training step"
        )
    assert ref.rng is not None
    if not rng_differences(start_rng, ref.rng) and not any(n.startswith("generator ") for n, _ in ref.input_state) and not ref.generators:
        notes.append(
            "no random op drew from a global generator in the reference step (torch CPU/device, "
            "Python random, NumPy): the RNG handling of checkpoint was not tested"
        )
    nan = _nan_values(ref)
    if nan:
        total = len(list(_compared_tensors(ref)))
        notes.append(
            f"NaN in the reference step: {len(nan)} of {total} output and gradient tensors hold NaN ("
            + ", ".join(nan[:4]) + (", ..." if len(nan) > 4 else "")
            + "); NaN is taken as equal to NaN in the comparison, so those values proved nothing about "
            "checkpointing: fix the NaN (learning rate, inputs, an overflow) and check again"
        )
    ran = [r for r in results if r.not_applicable is None and r.error is None]
    never = recomputed is False if recomputed is not None else bool(ran) and all(r.calls <= r.reference_calls for r in ran)
    if never:
        notes.append(
            "the checkpointed step never recomputed (no backward reached a checkpointed region): "
            "the comparison shows nothing about recomputation; check that the loss depends on the "
            "region's output and that the model is in training mode"
        )
    return notes


def _compared_tensors(ref: Any) -> list[tuple[str, torch.Tensor]]:
    grads = list(ref.input_grads.items()) + list(ref.param_grads.items())
    return [(n, t) for n, t in list(ref.outputs) + grads if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())]


def _nan_values(ref: Any) -> list[str]:
    """Names of the reference step's output and gradient tensors that hold a NaN."""
    return [n for n, t in _compared_tensors(ref) if bool(torch.isnan(t).any())]


def _warn_vacuous(report: EquivalenceReport) -> None:
    """Warn (:class:`CheckpointingWarning`) when a passing check proves nothing."""
    if not report.ok:
        return
    for note in report.notes:
        if note.startswith(("eval mode", "the checkpointed step never recomputed", "NaN in the reference step")):
            warnings.warn(f"the checkpoint check passed but proves little: {note}", CheckpointingWarning, stacklevel=4)


#: what each library's switch does in eval mode, read in its source
EVAL_MODE_CHECKPOINTING = {
    # transformers 5.24.0 modeling_layers.py GradientCheckpointingLayer: checkpoints only when
    # `self.gradient_checkpointing and self.training and torch.is_grad_enabled()`
    "transformers": (
        "; transformers checkpoints only in training (GradientCheckpointingLayer checks self.training), so nothing was recomputed"
    ),
    # diffusers 0.42.1 unets/unet_2d_blocks.py: `if torch.is_grad_enabled() and self.gradient_checkpointing:`
    "diffusers": "; diffusers checkpoints in eval mode too (its blocks check torch.is_grad_enabled() and the flag)",
    # timm 1.0.31 models/vision_transformer.py, resnet.py, convnext.py:
    # `if self.grad_checkpointing and not torch.jit.is_scripting():`
    "timm": "; timm checkpoints in eval mode too (its models check only grad_checkpointing)",
}


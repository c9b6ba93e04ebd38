"""Context managers and decorators that switch autograd recording (CKP304)."""

from __future__ import annotations

from enum import Enum

__all__ = ["GRAD_MODE_CONTEXTS", "GradModeEffect"]


class GradModeEffect(str, Enum):
    """What a context manager or decorator does to autograd recording."""

    DISABLES = "disables"  # torch.no_grad(), torch.inference_mode()
    ENABLES = "enables"  # torch.enable_grad()
    SETS = "sets"  # torch.set_grad_enabled(mode): decided by its argument


#: Grad-mode context managers / decorators (torch/autograd/grad_mode.py, 2.9/2.13).
GRAD_MODE_CONTEXTS: dict[str, GradModeEffect] = {
    **{
        f"{prefix}.no_grad": GradModeEffect.DISABLES
        for prefix in ("torch", "torch.autograd", "torch.autograd.grad_mode")
    },
    **{
        f"{prefix}.inference_mode": GradModeEffect.DISABLES
        for prefix in ("torch", "torch.autograd", "torch.autograd.grad_mode")
    },
    **{
        f"{prefix}.enable_grad": GradModeEffect.ENABLES
        for prefix in ("torch", "torch.autograd", "torch.autograd.grad_mode")
    },
    **{
        f"{prefix}.set_grad_enabled": GradModeEffect.SETS
        for prefix in ("torch", "torch.autograd", "torch.autograd.grad_mode")
    },
}

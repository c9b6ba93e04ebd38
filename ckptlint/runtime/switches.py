"""The checkpointing switches that libraries put on their models, as data.

Each :class:`Switch` says how a library turns activation checkpointing on and off on a model
and which source it was read from. ``enable="auto"`` in
:func:`ckptlint.runtime.check_checkpointing_equivalent` takes the first switch in
:data:`SWITCHES` that the model offers.

Verified against the installed sources:

* transformers 5.24.0, ``modeling_utils.PreTrainedModel``: ``activation_checkpointing_enable(
  activation_checkpointing_kwargs=None, every_n_layers=1, offload=False)`` builds
  ``functools.partial(torch.utils.checkpoint.checkpoint, **kwargs)`` (kwargs default
  ``{"use_reentrant": False}``) and ``_set_gradient_checkpointing`` stores it as
  ``_gradient_checkpointing_func`` on every module with a ``gradient_checkpointing``
  attribute, setting that flag; ``GradientCheckpointingLayer`` (``modeling_layers.py``) then
  calls ``self._gradient_checkpointing_func(partial(forward, self, **kwargs), *args)`` only
  when ``self.gradient_checkpointing and self.training and torch.is_grad_enabled()``.
  ``gradient_checkpointing_enable(gradient_checkpointing_kwargs=None)`` is the same, kept as a
  deprecated alias (FutureWarning) in 5.x; it is the only name before 5.0. Under checkpointing
  in training, ``use_cache`` is forced to False (``utils/generic.py``, "`use_cache=True` is
  incompatible with gradient checkpointing").
* diffusers 0.42.1, ``models/modeling_utils.ModelMixin.enable_gradient_checkpointing(
  gradient_checkpointing_func=None)``: the default function calls
  ``torch.utils.checkpoint.checkpoint(module.__call__, *args, use_reentrant=False)`` and
  ``_set_gradient_checkpointing`` stores it on every module with ``gradient_checkpointing``;
  ``disable_gradient_checkpointing()`` turns the flags off.
* timm 1.0 (``VisionTransformer.set_grad_checkpointing(
  enable=True)``): sets ``self.grad_checkpointing``; ``forward_features`` then runs the blocks
  through ``checkpoint_seq`` in training.
* torch 2.13 ``torch.distributed.algorithms._checkpoint.checkpoint_wrapper``:
  ``apply_activation_checkpointing(model, checkpoint_wrapper_fn=checkpoint_wrapper,
  check_fn=..., auto_wrap_policy=None)`` replaces each selected child with a
  ``CheckpointWrapper`` whose ``_checkpoint_wrapped_module`` is the original (parameter names
  gain ``_checkpoint_wrapped_module.``; :data:`WRAPPED_PREFIX`); it needs a ``check_fn``, so
  it is not an automatic switch: pass ``enable=lambda m: apply_activation_checkpointing(m,
  check_fn=...)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch import nn

__all__ = ["SWITCHES", "WRAPPED_PREFIX", "Switch", "find_switch", "is_checkpointing_on", "turn_off", "unwrap_name"]

#: torch.distributed.algorithms._checkpoint.checkpoint_wrapper._CHECKPOINT_PREFIX (torch 2.13)
WRAPPED_PREFIX = "_checkpoint_wrapped_module."


@dataclass(frozen=True)
class Switch:
    """How one library turns checkpointing on and off.

    Attributes:
        library: ``"transformers"``, ``"diffusers"``, ``"timm"``.
        method: the method on the model, e.g. ``"gradient_checkpointing_enable"``.
        on_args: positional arguments for turning it on (``(True,)`` for timm).
        off_method: the method that turns it off, and ``off_args`` its arguments.
        guard: an attribute that must be truthy on the model for the switch to apply
            (``"supports_gradient_checkpointing"``), or None.
    """

    library: str
    method: str
    on_args: tuple = ()
    off_method: str = ""
    off_args: tuple = ()
    guard: str | None = None

    @property
    def label(self) -> str:
        """``"model.gradient_checkpointing_enable()"``, ``"model.set_grad_checkpointing(True)"``."""
        return f"model.{self.method}({', '.join(map(repr, self.on_args))})"

    def offered_by(self, model: nn.Module) -> bool:
        """True when ``model`` has the method (and the guard attribute is truthy)."""
        if not callable(getattr(model, self.method, None)):
            return False
        return self.guard is None or bool(getattr(model, self.guard, False))

    def enable(self, model: nn.Module) -> None:
        getattr(model, self.method)(*self.on_args)

    def disable(self, model: nn.Module) -> None:
        getattr(model, self.off_method)(*self.off_args)


#: Known switches, in the order ``enable="auto"`` tries them.
SWITCHES: tuple[Switch, ...] = (
    Switch(
        "transformers", "activation_checkpointing_enable", (), "activation_checkpointing_disable", (), "supports_gradient_checkpointing"
    ),
    Switch("transformers", "gradient_checkpointing_enable", (), "gradient_checkpointing_disable", (), "supports_gradient_checkpointing"),
    Switch("diffusers", "enable_gradient_checkpointing", (), "disable_gradient_checkpointing", (), "_supports_gradient_checkpointing"),
    Switch("timm", "set_grad_checkpointing", (True,), "set_grad_checkpointing", (False,)),
)


def find_switch(model: nn.Module) -> Switch | None:
    """The first :class:`Switch` in :data:`SWITCHES` that ``model`` offers, or None."""
    for switch in SWITCHES:
        if switch.offered_by(model):
            return switch
    return None


def _is_wrapper(module: nn.Module) -> bool:
    return hasattr(module, "_checkpoint_wrapped_module") and isinstance(module._checkpoint_wrapped_module, nn.Module)


def is_checkpointing_on(model: nn.Module) -> bool:
    """True when a module has ``gradient_checkpointing`` (transformers, diffusers) or
    ``grad_checkpointing`` (timm) set, or is a ``CheckpointWrapper``."""
    for m in model.modules():
        if getattr(m, "gradient_checkpointing", False) is True or getattr(m, "grad_checkpointing", False) is True:
            return True
        if _is_wrapper(m):
            return True
    return False


def turn_off(model: nn.Module) -> None:
    """Turn checkpointing off in place: the library's off switch, flags set to False, and every
    ``CheckpointWrapper`` replaced by the module it wraps."""
    switch = find_switch(model)
    if switch is not None:
        try:
            switch.disable(model)
        except Exception:  # noqa: BLE001 - a library's own switch may fail: the flags below
            pass
    for m in model.modules():
        for flag in ("gradient_checkpointing", "grad_checkpointing"):  # transformers/diffusers, timm
            if getattr(m, flag, None) is True:
                setattr(m, flag, False)
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if _is_wrapper(child):
                setattr(parent, name, child._checkpoint_wrapped_module)


def unwrap_name(name: str) -> str:
    """Drop ``_checkpoint_wrapped_module.`` parts so names match the unwrapped model."""
    name = name.replace(WRAPPED_PREFIX, "")
    if name.endswith("._checkpoint_wrapped_module"):
        name = name[: -len("._checkpoint_wrapped_module")]
    return "" if name == "_checkpoint_wrapped_module" else name


def resolve_enable(model: nn.Module, enable: Any) -> tuple[Callable[[nn.Module], Any], str, Switch | None]:
    """Return ``(enable_fn, label, switch)`` for ``enable`` (``"auto"`` or a callable).

    Raises:
        ValueError: ``"auto"`` and the model offers no known switch.
        TypeError: ``enable`` is neither ``"auto"`` nor callable.
    """
    if enable == "auto":
        switch = find_switch(model)
        if switch is None:
            known = ", ".join(f"{s.method}() ({s.library})" for s in SWITCHES)
            raise ValueError(
                f"{type(model).__name__} offers no known checkpointing switch ({known}); pass "
                "enable=a callable that turns checkpointing on, e.g. enable=lambda m: "
                "apply_activation_checkpointing(m, check_fn=lambda sub: isinstance(sub, Block))"
            )
        return switch.enable, switch.label, switch
    if callable(enable):
        name = getattr(enable, "__name__", type(enable).__name__)
        return enable, f"enable={name}", None
    raise TypeError(f"enable must be 'auto' or a callable taking the model, got {enable!r}")

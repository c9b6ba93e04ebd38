"""Forward arguments versus the helpers' own options, and the check of ``loss_fn``'s result.

The on/off check takes the model's keyword arguments either as ``forward_kwargs={...}`` or,
for short, as extra keyword arguments. A name that is both one of the check's options and a
parameter of the model's ``forward`` (``atol``, ``enable`` ...) is ambiguous when passed as an
extra keyword: :func:`forward_arguments` raises ``TypeError`` then, and the same when a name is
given both ways.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

__all__ = ["LossTypeError", "check_loss", "forward_arguments"]


class LossTypeError(TypeError):
    """``loss_fn`` returned something other than a tensor or None."""


def check_loss(loss: Any) -> None:
    """Raise :class:`LossTypeError` unless ``loss`` is a tensor or None."""
    if loss is not None and not isinstance(loss, torch.Tensor):
        raise LossTypeError(
            f"loss_fn must return a tensor (or None to skip backward), got {type(loss).__name__} "
            f"{loss!r:.60}; return e.g. out.loss or out.logits.float().pow(2).mean(), not .item()"
        )


def _forward_parameters(model: Any) -> set[str]:
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError, AttributeError):
        return set()
    return {n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def forward_arguments(
    model: Any, forward_kwargs: dict[str, Any] | None, extra: dict[str, Any], given_options: list[str]
) -> dict[str, Any]:
    """The keyword arguments for ``model(...)``: ``forward_kwargs`` and ``extra`` merged.

    ``given_options`` are the names of the check's options the caller passed (not defaults).

    Raises:
        TypeError: ``forward_kwargs`` is not a dict; a name is in both ``forward_kwargs`` and
            ``extra``; or, without ``forward_kwargs``, an option the caller passed is also a
            parameter of ``model.forward`` (the call cannot tell which one was meant).
    """
    if forward_kwargs is not None and not isinstance(forward_kwargs, dict):
        raise TypeError(f"forward_kwargs must be a dict of keyword arguments for the model, got {type(forward_kwargs).__name__}")
    twice = sorted(set(forward_kwargs or {}) & set(extra))
    if twice:
        raise TypeError(f"forward argument(s) {', '.join(twice)} given both in forward_kwargs and as keyword arguments")
    if forward_kwargs is None:
        clash = sorted(set(given_options) & _forward_parameters(model))
        if clash:
            names = ", ".join(clash)
            raise TypeError(
                f"{names}: both an option of this check and a parameter of {type(model).__name__}.forward; "
                f"pass the model's argument as forward_kwargs={{{clash[0]!r}: ...}} (with forward_kwargs "
                f"given, {names} is the check's option)"
            )
    return {**(forward_kwargs or {}), **extra}

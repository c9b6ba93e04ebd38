"""The autograd grad mode a statement runs under, as far as its lexical context says.

``with torch.no_grad():`` / ``with torch.inference_mode():`` and the same used as
decorators turn recording off; ``torch.enable_grad()`` turns it back on;
``torch.set_grad_enabled(mode)`` does what its literal argument says (torch/autograd/
grad_mode.py, 2.9/2.13). Names are resolved through the semantic model, so every import
spelling (``from torch import no_grad``, ``import torch.autograd as ag``) counts.

Only the code of the innermost function counts: a ``with torch.no_grad():`` around a
nested ``def`` does not apply to the def's body (it runs when called), and the decorators of
that innermost function are the last context considered.

This module holds the modes (:class:`GradMode`), the record of a context
(:class:`GradModeContext`) and :func:`context_mode`; the analysis is :mod:`ckptlint.checkpoint.analyses.ast_grad_mode`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Generic, TypeVar

from ckptlint.facts.grad_mode import GradModeEffect

# The node a context holds (``ast`` nodes in :mod:`ckptlint.checkpoint.analyses.ast_grad_mode`).
N = TypeVar("N")


__all__ = ["GradMode", "GradModeContext", "context_mode"]


class GradMode(str, Enum):
    ENABLED = "enabled"  # no grad-mode context (the caller's mode), or enable_grad()
    DISABLED = "disabled"  # no_grad() / inference_mode() / set_grad_enabled(False)
    UNKNOWN = "unknown"  # set_grad_enabled(expr), inference_mode(expr)


@dataclass(frozen=True)
class GradModeContext(Generic[N]):
    """The innermost grad-mode context around a node.

    Attributes:
        mode: the mode it sets.
        node: the ``Call`` of the context manager or decorator (``None`` when there is none).
        name: the qualified name of what was called (``"torch.no_grad"``), or ``""``.
        decorator: whether it is a decorator of the enclosing function.
    """

    mode: GradMode
    node: N | None = None
    name: str = ""
    decorator: bool = False


def context_mode(effect: GradModeEffect, name: str, value: object, passed: bool) -> GradMode:
    """The mode a grad-mode context of qualified name ``name`` sets, given the literal value
    of its ``mode`` argument (``NOT_LITERAL`` when it is not a literal; ``passed``: whether
    the argument is written at all). Used by :mod:`ckptlint.checkpoint.analyses.ast_grad_mode`."""
    if effect is GradModeEffect.ENABLES:
        return GradMode.ENABLED
    if effect is GradModeEffect.SETS:
        if value is True:
            return GradMode.ENABLED
        if value is False:
            return GradMode.DISABLED
        return GradMode.UNKNOWN
    if name.endswith("inference_mode") and passed:
        if value is True:
            return GradMode.DISABLED
        return GradMode.UNKNOWN  # inference_mode(False) leaves grad mode to the caller
    return GradMode.DISABLED



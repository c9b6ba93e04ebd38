"""The autograd grad mode a statement runs under, as far as its lexical context says.

``with torch.no_grad():`` / ``with torch.inference_mode():`` and the same used as
decorators turn recording off; ``torch.enable_grad()`` turns it back on;
``torch.set_grad_enabled(mode)`` does what its literal argument says (torch/autograd/
grad_mode.py, 2.9/2.13). Names are resolved through the semantic model, so every import
spelling (``from torch import no_grad``, ``import torch.autograd as ag``) counts.

Only the code of the innermost function counts: a ``with torch.no_grad():`` around a
nested ``def`` does not apply to the def's body (it runs when called), and the decorators of
that innermost function are the last context considered.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Generic

import libcst as cst

from ckptlint.checkpoint.sites.options import literal_value
from ckptlint.facts.grad_mode import GRAD_MODE_CONTEXTS, GradModeEffect
from ckptlint.semantic.model import SemanticModel

if TYPE_CHECKING:
    from typing_extensions import TypeVar

    # The node a context holds: libcst's unless parametrised (``ast`` nodes in
    # :mod:`ckptlint.checkpoint.analyses.ast_grad_mode`).
    N = TypeVar("N", default=cst.CSTNode)
else:
    from typing import TypeVar

    N = TypeVar("N")

__all__ = ["GradMode", "GradModeContext", "context_mode", "grad_mode_at"]


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


_NONE = GradModeContext(GradMode.ENABLED)


def grad_mode_at(node: cst.CSTNode, model: SemanticModel) -> GradModeContext:
    """The grad mode ``node`` runs under as far as its own function's code says.

    ``ENABLED`` with ``node=None`` means no grad-mode context at all (the caller decides).
    """
    child = node
    for ancestor in model.ancestors(node):
        inside_body = getattr(ancestor, "body", None) is child
        if isinstance(ancestor, cst.With) and inside_body:
            for item in reversed(ancestor.items):
                found = _context_of(item.item, model, decorator=False)
                if found is not None:
                    return found
        elif isinstance(ancestor, cst.FunctionDef) and inside_body:
            for decorator in reversed(ancestor.decorators):
                found = _context_of(decorator.decorator, model, decorator=True)
                if found is not None:
                    return found
            return _NONE
        elif isinstance(ancestor, (cst.Lambda, cst.ClassDef)) and inside_body:
            return _NONE
        child = ancestor
    return _NONE


def _context_of(expr: cst.BaseExpression, model: SemanticModel, decorator: bool) -> GradModeContext | None:
    call = expr if isinstance(expr, cst.Call) else None
    target = call.func if call is not None else expr
    if call is None and not decorator:
        return None  # `with torch.no_grad:` is not a context manager
    names = model.qualified_names(target)
    for name in sorted(names):
        effect = GRAD_MODE_CONTEXTS.get(name)
        if effect is None:
            continue
        mode = _mode(effect, name, call, model)
        return GradModeContext(mode, expr, name, decorator)
    return None


def _mode(effect: GradModeEffect, name: str, call: cst.Call | None, model: SemanticModel) -> GradMode:
    argument = _mode_argument(call)
    value = literal_value(argument, model) if argument is not None else None
    return context_mode(effect, name, value, passed=argument is not None)


def context_mode(effect: GradModeEffect, name: str, value: object, passed: bool) -> GradMode:
    """The mode a grad-mode context of qualified name ``name`` sets, given the literal value
    of its ``mode`` argument (``NOT_LITERAL`` when it is not a literal; ``passed``: whether
    the argument is written at all). Shared by the ``ast`` twin."""
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


def _mode_argument(call: cst.Call | None) -> cst.BaseExpression | None:
    if call is None:
        return None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "mode":
            return arg.value
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    return positional[0].value if positional else None

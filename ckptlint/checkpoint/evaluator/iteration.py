"""What a ``for`` target iterates over: the container expression an element of a loop comes
from, through ``list``/``tuple``, ``enumerate`` and ``zip`` and a name assigned once."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.semantic.bindings import BindingKind

if TYPE_CHECKING:
    from ckptlint.semantic.model import SemanticModel

__all__ = ["iterated_container"]

#: Wrappers (``list(...)``, ``enumerate(...)``, ``zip(...)``, a name) followed at most.
_MAX_UNWRAPS = 4


def iterated_container(iterable: cst.BaseExpression, steps: tuple[int | str, ...], model: SemanticModel) -> cst.BaseExpression | None:
    """The expression whose elements a ``for`` target at ``steps`` into an element of
    ``iterable`` takes (:attr:`~ckptlint.semantic.bindings.Assigned.path` less its first
    step): ``for i, (resnet, attn) in enumerate(zip(self.resnets, self.attentions))`` gives
    ``self.attentions`` for ``attn``, also through ``blocks = list(zip(...))`` then
    ``enumerate(blocks)`` (diffusers' UNet blocks). ``None`` when it is not known: a step
    that is not a position, or another call."""
    path = [step for step in steps if isinstance(step, int)]
    if len(path) != len(steps):
        return None
    for _ in range(_MAX_UNWRAPS):
        if not path:
            break
        if isinstance(iterable, cst.Name) and iterable in model.scopes:
            bindings = model.lookup(iterable.value, model.scope_of(iterable))
            if len(bindings) != 1 or bindings[0].kind is not BindingKind.ASSIGNMENT or bindings[0].value is None:
                return None
            iterable = bindings[0].value
        if not isinstance(iterable, cst.Call):
            return None
        names = model.qualified_names(iterable.func)
        positional = [a for a in iterable.args if a.keyword is None and not a.star]
        if names & {"builtins.list", "builtins.tuple"} and len(positional) == 1:
            iterable = positional[0].value
        elif "builtins.enumerate" in names and path[0] == 1 and positional:
            iterable, path = positional[0].value, path[1:]
        elif "builtins.zip" in names and path[0] < len(positional):
            iterable, path = positional[path[0]].value, path[1:]
        else:
            return None
    return None if path else iterable

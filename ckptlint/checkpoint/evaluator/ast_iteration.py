"""What a ``for`` target iterates over, on CPython's ``ast``: the container expression an
element of a loop comes from, through ``list``/``tuple``, ``enumerate`` and ``zip`` and a name
assigned once."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ckptlint.semantic.bindings import BindingKind

if TYPE_CHECKING:
    from ckptlint.semantic.ast_model import AstModel

__all__ = ["iterated_container"]

#: Wrappers (``list(...)``, ``enumerate(...)``, ``zip(...)``, a name) followed at most.
_MAX_UNWRAPS = 4


def iterated_container(iterable: ast.expr, steps: tuple[int | str, ...], model: AstModel) -> ast.expr | None:
    """The expression whose elements a ``for`` target at ``steps`` into an element of
    ``iterable`` takes; ``None`` when it is not known."""
    path = [step for step in steps if isinstance(step, int)]
    if len(path) != len(steps):
        return None
    for _ in range(_MAX_UNWRAPS):
        if not path:
            break
        if isinstance(iterable, ast.Name) and iterable in model.parents:
            bindings = model.lookup(iterable.id, model.scope_of(iterable))
            if len(bindings) != 1 or bindings[0].kind is not BindingKind.ASSIGNMENT or bindings[0].value is None:
                return None
            iterable = bindings[0].value
        if not isinstance(iterable, ast.Call):
            return None
        names = model.qualified_names(iterable.func)
        positional = [a for a in iterable.args if not isinstance(a, ast.Starred)]
        if names & {"builtins.list", "builtins.tuple"} and len(positional) == 1:
            iterable = positional[0]
        elif "builtins.enumerate" in names and path[0] == 1 and positional:
            iterable, path = positional[0], path[1:]
        elif "builtins.zip" in names and path[0] < len(positional):
            iterable, path = positional[path[0]], path[1:]
        else:
            return None
    return None if path else iterable

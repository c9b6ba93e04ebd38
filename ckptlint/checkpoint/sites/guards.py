"""The conditions that guard a checkpoint site, read from the function and class around it.

mm-style backbones checkpoint only ``if self.with_cp``, ``self.with_cp`` being a constructor
parameter that defaults to ``False``; Hugging Face models only ``if self.gradient_checkpointing
and self.training``; others under a config key (``if self.use_checkpoint and i <
self.checkpoint_num[0]``). The code is wrong whenever the guard holds (users turn such switches
on from configs and command lines exactly when memory runs short), so region rules report it and
say the condition in the message (:mod:`ckptlint.checkpoint.sites.ast_guards` reads it). Only the linted module is read:
whether any file turns the switch on is not asked (a file's findings depend on its own text and
the modules it imports, never on other text of the project).

Holds the node-free parts (:data:`Condition`, :func:`format_condition`, :func:`joined`,
:func:`common`, the limits ``MAX_CONDITION`` and ``MAX_CALLER_DEPTH``), used by
:mod:`ckptlint.checkpoint.sites.ast_guards`, which reads the conditions.
"""

from __future__ import annotations

__all__ = ["Condition", "format_condition", "common", "joined"]


#: Longest condition text shown (longer ones end with an ellipsis).
MAX_CONDITION = 80


#: How many calls up the conditions of a function's callers are read.
MAX_CALLER_DEPTH = 3


#: A condition: its conjuncts, each a text in backquotes (a switch followed by its default).
Condition = tuple[str, ...]


class Stated(str):
    """A conjunct's text already written as it is shown, its backquotes included (an ``import``
    statement that "raises `ImportError`"), rather than an expression to show in backquotes."""


def format_condition(parts: Condition) -> str:
    """``parts`` as a message suffix."""
    return "; this code runs only when " + " and ".join(parts) if parts else ""


def joined(*conditions: Condition) -> Condition:
    """The parts of all of ``conditions``, in order, each once."""
    parts: list[str] = []
    for condition in conditions:
        parts += [part for part in condition if part not in parts]
    return tuple(parts)


def common(conditions: list[Condition]) -> Condition:
    """The parts every one of ``conditions`` holds, in the first one's order (none when
    ``conditions`` is empty): what holds whichever of several ways the code is reached."""
    if not conditions:
        return ()
    first, *rest = conditions
    return tuple(part for part in first if all(part in other for other in rest))



"""Whether the switch of a random or stateful op is off (dropout's ``p`` is 0, BatchNorm's
``track_running_stats`` is ``False``), following its argument through the bindings the region
evaluator made.

:func:`~ckptlint.checkpoint.analyses.ast_layer_switches.switched_on` reads a literal written at the constructor call
(``nn.Dropout(0.0)``). Most models pass the rate down instead: ``self.proj_drop =
nn.Dropout(proj_drop)`` in a class that another class of the tree builds with
``WindowedAttention(..., proj_drop=0.)`` (ViT-Adapter's Uni-Perceiver), or without passing it,
so that ``__init__``'s default ``proj_drop=0.`` holds. The value is followed:

- a parameter bound by the call the evaluator followed (the ``env`` of the context) to the
  argument passed, evaluated where it was written;
- a parameter that call did not pass, to its default, only when the call was seen whole: a
  constructor call without ``*``/``**`` arguments (:class:`~ckptlint.checkpoint.evaluator.denotations.ConstructorEnv`), or the function
  call that bound the context (``ctx.bound``, not ``ctx.open_call``). The ``__init__`` of the
  class a site is in was called by code not seen (a config, another module): its defaults
  say nothing about the rate used, and the op stays undecided;
- a local assigned once, ``self.attr`` assigned once in ``__init__`` of the class (or a base
  class of the tree) and nowhere else in its module, and a conditional expression whose
  branches are equal.

Anything else is not known (``None``): the op may draw.

This module holds :func:`switch_is_on`; the analysis is :mod:`ckptlint.checkpoint.analyses.ast_layer_switches`.
"""

from __future__ import annotations

from ckptlint.checkpoint.sites.options import NOT_LITERAL

__all__ = ["switch_is_on"]


def switch_is_on(value: object, off_when: object) -> bool | None:
    """Whether a switch of value ``value`` leaves the behaviour on (``None``: not known)."""
    if value is NOT_LITERAL:
        return None
    if isinstance(value, bool) or isinstance(off_when, bool):
        return value != off_when
    try:
        return float(value) != float(off_when)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None



"""Activation checkpointing mistaken for saving training state.

``torch.utils.checkpoint.checkpoint(fn, *args)`` *recomputes* ``fn`` during backward to save
memory; it stores nothing on disk. Code that calls it with a state dict, a path or an
optimizer wanted ``torch.save`` (or ``torch.distributed.checkpoint.save``). This module
decides, once for every site, whether a checkpoint call is such a save in disguise
(:attr:`~ckptlint.checkpoint.sites.site.CheckpointSite.save_misuse`); CKP301 reports it and the
reentrancy rules (CKP001, CKP002) leave such calls alone.

Evidence, strongest first:

1. the callable argument is built as something that cannot be a computation: a
   ``state_dict()`` call, a dict, a string or path, an optimizer or scheduler
   (``torch.optim.*``), ``torch.save``/``torch.load`` (see :mod:`ckptlint.checkpoint.sites.argument_kinds`), or
   its name says optimizer / scheduler (``self.optimizer``; an ``nn.Module`` is never called
   that);
2. an input is a state dict or a file path (``os.path.join(...)``, ``Path(...)``, a string
   with a ``/`` or a ``.pt`` suffix);
3. the callable's *name* says state or path (``state``, ``ckpt_path``) and the call has no
   inputs, discards its result or also passes a path-named input;
4. the call sits in a save/resume routine (``save_checkpoint``, ``resume``,
   ``on_save_checkpoint``) and discards its result (a real checkpoint's output is always
   used: nothing would flow back through it) or passes arguments named like paths or
   optimizers. A routine named ``save_*`` that checkpoints a real block and uses the result
   is not flagged, nor one that passes a tensor called ``state``.

Holds the name patterns and phrases of that evidence, used by :mod:`ckptlint.checkpoint.sites.ast_misuse`,
which reads the calls.
"""

from __future__ import annotations

import re

from ckptlint.checkpoint.sites.argument_kinds import ValueKind

__all__ = []


_TRAINING_STATE = frozenset(
    {ValueKind.STATE_DICT, ValueKind.DICT, ValueKind.OPTIMIZER, ValueKind.SCHEDULER}
)


_ROUTINE_HINTS = frozenset({ValueKind.PATH, ValueKind.OPTIMIZER, ValueKind.SCHEDULER})


_SAVE_ROUTINE = re.compile(r"(?:^|_)(?:save|saving|resume|resuming|restore|persist)(?:_|$)")


_LOAD_ROUTINE = re.compile(r"(?:^|_)load(?:_|$)")


_LOAD_OBJECT = re.compile(r"(?:^|_)(?:checkpoint|ckpt|state|weights)(?:_|s?$)")


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"



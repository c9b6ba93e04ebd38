"""Activation checkpointing mistaken for saving training state.

``torch.utils.checkpoint.checkpoint(fn, *args)`` *recomputes* ``fn`` during backward to save
memory; it stores nothing on disk. Code that calls it with a state dict, a path or an
optimizer wanted ``torch.save`` (or ``torch.distributed.checkpoint.save``). This module
decides, once for every site, whether a checkpoint call is such a save in disguise
(:attr:`~ckptlint.checkpoint.sites.sites.CheckpointSite.save_misuse`); CKP301 reports it and the
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
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import libcst as cst

from ckptlint.checkpoint.sites.argument_kinds import (
    ValueKind,
    classify_value,
    name_hint,
    path_literal,
)
from ckptlint.checkpoint.sites.site import CheckpointSite, SaveForm, SaveMisuse
from ckptlint.facts.apis import ApiKind
from ckptlint.semantic.model import SemanticModel, dotted_name

__all__ = ["SaveForm", "SaveMisuse", "find_save_misuse", "save_misuse_of_arguments"]

_TRAINING_STATE = frozenset(
    {ValueKind.STATE_DICT, ValueKind.DICT, ValueKind.OPTIMIZER, ValueKind.SCHEDULER}
)
_ROUTINE_HINTS = frozenset({ValueKind.PATH, ValueKind.OPTIMIZER, ValueKind.SCHEDULER})
_SAVE_ROUTINE = re.compile(r"(?:^|_)(?:save|saving|resume|resuming|restore|persist)(?:_|$)")
_LOAD_ROUTINE = re.compile(r"(?:^|_)load(?:_|$)")
_LOAD_OBJECT = re.compile(r"(?:^|_)(?:checkpoint|ckpt|state|weights)(?:_|s?$)")


def find_save_misuse(site: CheckpointSite, model: SemanticModel) -> SaveMisuse | None:
    """The :class:`SaveMisuse` of a ``torch.utils.checkpoint.checkpoint`` site, or ``None``
    when it checkpoints a computation (or nothing can be said). Other APIs are never
    classified."""
    if site.api.kind is not ApiKind.FUNCTION or site.function is None:
        return None
    return save_misuse_of_arguments(site.function, site.inputs, site.function_keywords, site.call, model)


def save_misuse_of_arguments(
    function: cst.BaseExpression,
    inputs: Sequence[cst.Arg],
    keywords: Sequence[cst.Arg],
    call: cst.Call,
    model: SemanticModel,
) -> SaveMisuse | None:
    """Classify a call ``checkpoint(function, *inputs, **keywords)`` (also used for calls of
    the ``torch.utils.checkpoint`` module itself, CKP302)."""
    positional = [arg for arg in inputs if arg.star == ""]
    guess = classify_value(function, model)
    if guess is not None:
        if guess.kind is ValueKind.SAVE_FUNCTION:
            return SaveMisuse("its callable is `torch.save`", SaveForm.SAVE_CALL, arguments=tuple(inputs) + tuple(keywords))
        if guess.kind is ValueKind.LOAD_FUNCTION:
            return SaveMisuse("its callable is `torch.load`", SaveForm.LOAD_CALL, arguments=tuple(inputs) + tuple(keywords))
        if guess.kind in _TRAINING_STATE:
            return _save(f"its callable is {guess.evidence}, not a computation", guess.kind, function, positional, model)
        if guess.kind is ValueKind.PATH:
            return _save_to(f"its callable is {guess.evidence} (a path), not a computation", function, positional, model)
    hint = name_hint(function)
    if hint in (ValueKind.OPTIMIZER, ValueKind.SCHEDULER) and guess is None:
        reason = f"its callable `{_text(function)}` is named like {_a(hint.value)}, not a computation"
        return _save(reason, hint, function, positional, model)
    for arg in positional:
        found = _strong_input(arg.value, model)
        if found is not None:
            if guess is not None:
                saved_kind = guess.kind
            else:
                saved_kind = hint if hint in _TRAINING_STATE else ValueKind.MODULE
            return _save(f"it is given {found}", saved_kind, function, positional, model)
    discarded = isinstance(_parent(call, model), cst.Expr)
    if guess is None and hint in (ValueKind.STATE_DICT, ValueKind.PATH):
        path_input = any(name_hint(arg.value) is ValueKind.PATH for arg in positional)
        if not positional or discarded or path_input:
            why = f"its callable `{_text(function)}` is named like a {'path' if hint is ValueKind.PATH else 'training state'}"
            if hint is ValueKind.PATH:
                return _save_to(why, function, positional, model)
            return _save(why, ValueKind.STATE_DICT, function, positional, model)
    routine = _save_routine(call, model)
    if routine is not None:
        # `state` alone is no evidence here: recurrent code checkpoints cells on a `state` tensor
        named = [arg for arg in [cst.Arg(function), *positional] if name_hint(arg.value) in _ROUTINE_HINTS]
        if discarded or named:
            why = f"it is called in `{routine}()`, a save/resume routine"
            if discarded:
                why += ", and its result is discarded"
            return _save(why, hint or ValueKind.MODULE, function, positional, model)
    return None


def _strong_input(expr: cst.BaseExpression, model: SemanticModel) -> str | None:
    """Evidence that an input of the call is a state dict or a file path (a string only
    when its text looks like a path: a bare string may be a mode such as ``"causal"``)."""
    guess = classify_value(expr, model)
    if guess is None:
        return None
    if guess.kind is ValueKind.STATE_DICT:
        return guess.evidence
    if guess.kind is ValueKind.PATH:
        if isinstance(guess.node, cst.Call):
            return guess.evidence
        if path_literal(guess.node):
            return f"a file path ({guess.evidence})"
    return None


def _save(
    reason: str, kind: ValueKind | None, saved: cst.BaseExpression, positional: list[cst.Arg], model: SemanticModel
) -> SaveMisuse:
    """``checkpoint(saved, destination)`` maps to ``torch.save`` when the one input is a path."""
    if len(positional) != 1 or not _pathish(positional[0].value, model):
        return SaveMisuse(reason, SaveForm.UNKNOWN)
    form = SaveForm.SAVE_OBJECT if kind in (ValueKind.STATE_DICT, ValueKind.DICT) else SaveForm.SAVE_STATE_OF
    return SaveMisuse(reason, form, saved=saved, destination=positional[0].value)


def _pathish(expr: cst.BaseExpression, model: SemanticModel) -> bool:
    guess = classify_value(expr, model)
    if guess is not None:
        return guess.kind is ValueKind.PATH
    return name_hint(expr) is ValueKind.PATH


def _save_to(reason: str, path: cst.BaseExpression, positional: list[cst.Arg], model: SemanticModel) -> SaveMisuse:
    """The callable is a path: ``checkpoint(path, obj)`` maps to ``torch.save(obj, path)``
    when the one input is training state."""
    if len(positional) == 1:
        obj = positional[0].value
        guess = classify_value(obj, model)
        kind = guess.kind if guess is not None else name_hint(obj)
        if kind in _TRAINING_STATE or kind is ValueKind.MODULE:
            form = SaveForm.SAVE_OBJECT if kind in (ValueKind.STATE_DICT, ValueKind.DICT) else SaveForm.SAVE_STATE_OF
            return SaveMisuse(reason, form, saved=obj, destination=path)
    return SaveMisuse(reason, SaveForm.UNKNOWN)


def _save_routine(call: cst.Call, model: SemanticModel) -> str | None:
    """The name of the innermost function around ``call`` when it is a save/resume routine."""
    for ancestor in model.ancestors(call):
        if isinstance(ancestor, cst.FunctionDef):
            name = _snake(ancestor.name.value)
            if _SAVE_ROUTINE.search(name) or (_LOAD_ROUTINE.search(name) and _LOAD_OBJECT.search(name)):
                return ancestor.name.value
            return None
        if isinstance(ancestor, (cst.ClassDef, cst.Lambda)):
            return None
    return None


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _parent(node: cst.CSTNode, model: SemanticModel) -> cst.CSTNode | None:
    return model.parent(node)


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"


def _text(expr: cst.BaseExpression) -> str:
    return dotted_name(expr) or "..."

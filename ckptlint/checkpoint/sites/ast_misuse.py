"""Activation checkpointing mistaken for saving training state, read on CPython's ``ast``: the
:class:`~ckptlint.checkpoint.sites.site.SaveMisuse` of a site (the evidence, strongest first,
and the reasons are described in :mod:`ckptlint.checkpoint.sites.misuse`), for the sites of
:mod:`ckptlint.checkpoint.sites.ast_sites`, parametrised for ``ast`` (:data:`AstSaveMisuse`:
``saved``/``destination`` are expressions, ``arguments`` are call arguments: expressions,
``ast.Starred`` or ``ast.keyword``).

What an argument holds is read by :mod:`ckptlint.checkpoint.sites.ast_argument_kinds`; a
positional input is a positional argument without ``*``; a save routine is the innermost
``def`` or ``async def`` around the call, unless a class or lambda comes first.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from ckptlint.checkpoint.sites.ast_argument_kinds import ValueKind, classify_value, name_hint, path_literal
from ckptlint.checkpoint.sites.ast_options import AstArg
from ckptlint.checkpoint.sites.ast_site_builders import AstSite
from ckptlint.checkpoint.sites.misuse import (
    _LOAD_OBJECT,
    _LOAD_ROUTINE,
    _ROUTINE_HINTS,
    _SAVE_ROUTINE,
    _TRAINING_STATE,
    _a,
    _snake,
)
from ckptlint.checkpoint.sites.site import SaveForm, SaveMisuse
from ckptlint.facts.apis import ApiKind
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.ast_walk import dotted_name

__all__ = ["AstSaveMisuse", "find_save_misuse", "save_misuse_of_arguments"]

#: A save misuse found on ``ast``.
AstSaveMisuse = SaveMisuse[ast.expr, AstArg]


def find_save_misuse(site: AstSite, model: AstModel) -> AstSaveMisuse | None:
    """The save misuse of a ``torch.utils.checkpoint.checkpoint`` site (``ApiKind.FUNCTION``
    with a callable), or ``None`` when it checkpoints a computation or nothing can be said;
    other APIs are never classified."""
    if site.api.kind is not ApiKind.FUNCTION or site.function is None:
        return None
    return save_misuse_of_arguments(site.function, site.inputs, site.function_keywords, site.call, model)


def save_misuse_of_arguments(
    function: ast.expr,
    inputs: Sequence[AstArg],
    keywords: Sequence[AstArg],
    call: ast.Call,
    model: AstModel,
) -> AstSaveMisuse | None:
    """The save misuse of a call ``checkpoint(function, *inputs, **keywords)``, or ``None``
    (the evidence of :mod:`ckptlint.checkpoint.sites.misuse`, strongest first)."""
    positional = [arg for arg in inputs if not isinstance(arg, (ast.Starred, ast.keyword))]
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
        found = _strong_input(arg, model)
        if found is not None:
            if guess is not None:
                saved_kind = guess.kind
            else:
                saved_kind = hint if hint in _TRAINING_STATE else ValueKind.MODULE
            return _save(f"it is given {found}", saved_kind, function, positional, model)
    discarded = isinstance(model.parent(call), ast.Expr)
    if guess is None and hint in (ValueKind.STATE_DICT, ValueKind.PATH):
        path_input = any(name_hint(arg) is ValueKind.PATH for arg in positional)
        if not positional or discarded or path_input:
            why = f"its callable `{_text(function)}` is named like a {'path' if hint is ValueKind.PATH else 'training state'}"
            if hint is ValueKind.PATH:
                return _save_to(why, function, positional, model)
            return _save(why, ValueKind.STATE_DICT, function, positional, model)
    routine = _save_routine(call, model)
    if routine is not None:
        # `state` alone is no evidence here: recurrent code checkpoints cells on a `state` tensor
        named = [arg for arg in [function, *positional] if name_hint(arg) in _ROUTINE_HINTS]
        if discarded or named:
            why = f"it is called in `{routine}()`, a save/resume routine"
            if discarded:
                why += ", and its result is discarded"
            return _save(why, hint or ValueKind.MODULE, function, positional, model)
    return None


def _strong_input(expr: ast.expr, model: AstModel) -> str | None:
    """The evidence that an input is a state dict or a file path (a string only when its text
    looks like a path), or ``None`` (see ``misuse._strong_input``)."""
    guess = classify_value(expr, model)
    if guess is None:
        return None
    if guess.kind is ValueKind.STATE_DICT:
        return guess.evidence
    if guess.kind is ValueKind.PATH:
        node: ast.AST = guess.node  # the record's ``node`` is typed ``ast.expr``
        if isinstance(node, ast.Call):
            return guess.evidence
        if path_literal(node):
            return f"a file path ({guess.evidence})"
    return None


def _save(reason: str, kind: ValueKind | None, saved: ast.expr, positional: list[ast.expr], model: AstModel) -> AstSaveMisuse:
    """``checkpoint(saved, destination)``: ``torch.save`` of ``saved`` (or its state) to the one
    input when it is a path, else the form is unknown (see ``misuse._save``)."""
    if len(positional) != 1 or not _pathish(positional[0], model):
        return SaveMisuse(reason, SaveForm.UNKNOWN)
    form = SaveForm.SAVE_OBJECT if kind in (ValueKind.STATE_DICT, ValueKind.DICT) else SaveForm.SAVE_STATE_OF
    return SaveMisuse(reason, form, saved=saved, destination=positional[0])


def _pathish(expr: ast.expr, model: AstModel) -> bool:
    """Whether ``expr`` is built as a path, or, when nothing says what it is built as, named like one."""
    guess = classify_value(expr, model)
    if guess is not None:
        return guess.kind is ValueKind.PATH
    return name_hint(expr) is ValueKind.PATH


def _save_to(reason: str, path: ast.expr, positional: list[ast.expr], model: AstModel) -> AstSaveMisuse:
    """The callable is a path: ``torch.save(obj, path)`` when the one input is training state
    or a module, else the form is unknown (see ``misuse._save_to``)."""
    if len(positional) == 1:
        obj = positional[0]
        guess = classify_value(obj, model)
        kind = guess.kind if guess is not None else name_hint(obj)
        if kind in _TRAINING_STATE or kind is ValueKind.MODULE:
            form = SaveForm.SAVE_OBJECT if kind in (ValueKind.STATE_DICT, ValueKind.DICT) else SaveForm.SAVE_STATE_OF
            return SaveMisuse(reason, form, saved=obj, destination=path)
    return SaveMisuse(reason, SaveForm.UNKNOWN)


def _save_routine(call: ast.Call, model: AstModel) -> str | None:
    """The name of the innermost function around ``call`` when it is a save/resume routine
    (see ``misuse._save_routine``), else ``None``."""
    for ancestor in model.ancestors(call):
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = _snake(ancestor.name)
            if _SAVE_ROUTINE.search(name) or (_LOAD_ROUTINE.search(name) and _LOAD_OBJECT.search(name)):
                return ancestor.name
            return None
        if isinstance(ancestor, (ast.ClassDef, ast.Lambda)):
            return None
    return None


def _text(expr: ast.expr) -> str:
    return dotted_name(expr) or "..."

"""What CKP301 and CKP302 say and offer when a checkpoint call is a save or load in
disguise: the message, the advice and the display-only ``torch.save``/``torch.load`` fix, for
a misuse found on ``ast`` (:data:`~ckptlint.checkpoint.sites.ast_misuse.AstSaveMisuse`).
A helper module of the rules package, not a rule, so that no rule imports another."""

from __future__ import annotations

import ast
from typing import Any

from ckptlint.checkpoint.sites.ast_misuse import AstSaveMisuse
from ckptlint.checkpoint.sites.ast_options import AstArg
from ckptlint.checkpoint.sites.site import SaveForm, SaveMisuse
from ckptlint.facts.apis import CHECKPOINT_OPTIONS
from ckptlint.rules.base import RuleContext
from ckptlint.rules.edits import replace_node
from ckptlint.semantic.ast_analysis import AstAnalysis
from ckptlint.text.diagnostics import Applicability, Fix

__all__ = ["save_advice", "save_message", "torch_save_fix"]


def save_message(what: str, misuse: SaveMisuse[Any, Any]) -> str:
    """The message for a checkpoint call that is a save in disguise (node-free: it reads the
    misuse's records)."""
    verb = "loading" if misuse.form is SaveForm.LOAD_CALL else "saving"
    return f"{what} is activation checkpointing, not {verb} training state: {misuse.reason}. {save_advice(misuse)}"


def save_advice(misuse: SaveMisuse[Any, Any]) -> str:
    """What to call instead (shared with CKP302)."""
    if misuse.form is SaveForm.LOAD_CALL:
        return "Recomputation stores nothing to load; use `torch.load`"
    return "Recomputation stores nothing; use `torch.save` or `torch.distributed.checkpoint.save`"


def torch_save_fix(ctx: RuleContext, analysis: AstAnalysis, call: ast.Call, misuse: AstSaveMisuse) -> Fix | None:
    """A display-only fix showing the ``torch.save(...)`` / ``torch.load(...)`` call the
    arguments map to; ``None`` when they do not map (a fix whose statement libcst
    refuses is dropped when its edits are built, :meth:`RuleContext.fix_from`)."""
    text = _replacement(analysis, misuse)
    if text is None:
        return None
    return ctx.fix_from(Applicability.DISPLAY_ONLY, f"Use `{text}`", lambda: replace_node(analysis, call, text))


def _replacement(analysis: AstAnalysis, misuse: AstSaveMisuse) -> str | None:
    if misuse.form in (SaveForm.SAVE_CALL, SaveForm.LOAD_CALL):
        name = "torch.save" if misuse.form is SaveForm.SAVE_CALL else "torch.load"
        args = [arg for arg in misuse.arguments if not isinstance(arg, ast.keyword) or arg.arg not in CHECKPOINT_OPTIONS]
        return f"{name}({', '.join(_arg_text(analysis, arg) for arg in args)})"
    if misuse.saved is None or misuse.destination is None:
        return None
    saved = analysis.text_of(misuse.saved)
    if misuse.form is SaveForm.SAVE_STATE_OF:
        saved = f"{saved}.state_dict()"
    return f"torch.save({saved}, {analysis.text_of(misuse.destination)})"


def _arg_text(analysis: AstAnalysis, arg: AstArg) -> str:
    """The argument's text: ``name=value``, ``*value``, ``**value``, ``value``."""
    if isinstance(arg, ast.keyword):
        value = analysis.text_of(arg.value)
        return f"**{value}" if arg.arg is None else f"{arg.arg}={value}"
    if isinstance(arg, ast.Starred):
        return f"*{analysis.text_of(arg.value)}"
    return analysis.text_of(arg)

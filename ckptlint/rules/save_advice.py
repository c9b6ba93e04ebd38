"""What CKP301 and CKP302 say and offer when a checkpoint call is a save or load in
disguise: the message, the advice and the display-only ``torch.save``/``torch.load`` fix.
A helper module of the rules package, not a rule, so that no rule imports another."""

from __future__ import annotations

from typing import Any

import libcst as cst

from ckptlint.checkpoint.sites.site import SaveForm, SaveMisuse
from ckptlint.facts.apis import CHECKPOINT_OPTIONS
from ckptlint.rules.base import RuleContext
from ckptlint.rules.edits import replace_node
from ckptlint.semantic.analysis import ModuleAnalysis
from ckptlint.text.diagnostics import Applicability, Fix

__all__ = ["save_advice", "save_message", "torch_save_fix"]


def save_message(what: str, misuse: SaveMisuse[Any, Any]) -> str:
    """The message for a checkpoint call that is a save in disguise (node-free: a misuse
    found on libcst or on ``ast``)."""
    verb = "loading" if misuse.form is SaveForm.LOAD_CALL else "saving"
    return f"{what} is activation checkpointing, not {verb} training state: {misuse.reason}. {save_advice(misuse)}"


def save_advice(misuse: SaveMisuse[Any, Any]) -> str:
    """What to call instead (shared with CKP302)."""
    if misuse.form is SaveForm.LOAD_CALL:
        return "Recomputation stores nothing to load; use `torch.load`"
    return "Recomputation stores nothing; use `torch.save` or `torch.distributed.checkpoint.save`"


def torch_save_fix(ctx: RuleContext, analysis: ModuleAnalysis, call: cst.Call, misuse: SaveMisuse) -> Fix | None:
    """A display-only fix showing the ``torch.save(...)`` / ``torch.load(...)`` call the
    arguments map to; ``None`` when they do not map."""
    text = _replacement(analysis, misuse)
    if text is None:
        return None
    return ctx.fix(Applicability.DISPLAY_ONLY, f"Use `{text}`", replace_node(analysis, call, text))


def _replacement(analysis: ModuleAnalysis, misuse: SaveMisuse) -> str | None:
    if misuse.form in (SaveForm.SAVE_CALL, SaveForm.LOAD_CALL):
        name = "torch.save" if misuse.form is SaveForm.SAVE_CALL else "torch.load"
        args = [arg for arg in misuse.arguments if arg.keyword is None or arg.keyword.value not in CHECKPOINT_OPTIONS]
        return f"{name}({', '.join(_arg_text(analysis, arg) for arg in args)})"
    if misuse.saved is None or misuse.destination is None:
        return None
    saved = analysis.text_of(misuse.saved)
    if misuse.form is SaveForm.SAVE_STATE_OF:
        saved = f"{saved}.state_dict()"
    return f"torch.save({saved}, {analysis.text_of(misuse.destination)})"


def _arg_text(analysis: ModuleAnalysis, arg: cst.Arg) -> str:
    value = analysis.text_of(arg.value)
    if arg.keyword is not None:
        return f"{arg.keyword.value}={value}"
    return f"{arg.star}{value}"

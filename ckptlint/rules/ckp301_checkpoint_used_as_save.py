"""CKP301 checkpoint-used-as-save."""

from __future__ import annotations

import libcst as cst

from ckptlint.analysis import ModuleAnalysis
from ckptlint.apis import CHECKPOINT_OPTIONS
from ckptlint.diagnostics import Applicability, Fix
from ckptlint.edits import replace_node
from ckptlint.model.misuse import SaveForm, SaveMisuse
from ckptlint.rules.base import FixAvailability, Invalid, Rule, RuleContext, Severity


class CheckpointUsedAsSave(Rule):
    """Flags activation-checkpoint calls that try to save (or load) training state.

    ``torch.utils.checkpoint.checkpoint`` recomputes a function during backward; it writes
    nothing anywhere. Called with a state dict it fails (``'collections.OrderedDict' object
    is not callable``); "fixed" by wrapping a callable, it runs silently and saves nothing.
    How calls are classified: :mod:`ckptlint.model.misuse`.
    """

    code = "CKP301"
    name = "checkpoint-used-as-save"
    summary = "Activation checkpoint called to save training state: recomputation stores nothing"
    severity = Severity.ERROR
    fix_availability = FixAvailability.SOMETIMES

    VALID = (
        "from torch.utils.checkpoint import checkpoint\ny = checkpoint(block, x, use_reentrant=False)\n",
        "from torch.utils.checkpoint import checkpoint\ny = checkpoint(self.attn, x, 'causal', use_reentrant=False)\n",
        "from torch.utils.checkpoint import checkpoint\n"
        "def save_memory_forward(self, x):\n    return checkpoint(self.block, x, use_reentrant=False)\n",
        "import torch\ndef checkpoint(state, path):\n    torch.save(state, path)\ncheckpoint(model.state_dict(), 'm.pt')\n",
        "from torch.utils.checkpoint import checkpoint\n"
        "for path in self.paths:\n    x = checkpoint(path, x, use_reentrant=False)\n",
    )
    INVALID = (
        Invalid("import torch.utils.checkpoint\ntorch.utils.checkpoint.checkpoint(model.state_dict(), 'model.pt')\n"),
        Invalid("from torch.utils.checkpoint import checkpoint\ncheckpoint({'model': m, 'epoch': e}, path)\n"),
        Invalid("from torch.utils.checkpoint import checkpoint\ncheckpoint(optimizer, 'opt.pt')\n"),
        Invalid("import torch\nfrom torch.utils.checkpoint import checkpoint\ncheckpoint(torch.save, state, path)\n"),
        Invalid(
            "from torch.utils.checkpoint import checkpoint\n"
            "def save_checkpoint(model, path):\n    checkpoint(model, path)\n"
        ),
    )

    def check(self, ctx: RuleContext) -> None:
        for site in ctx.analysis.sites.sites:
            misuse = site.save_misuse
            if misuse is None:
                continue
            short = site.api.name.rsplit(".", 1)[-1]
            ctx.report(site.call, save_message(f"`{short}()`", misuse), fix=torch_save_fix(ctx, ctx.analysis, site.call, misuse))


def save_message(what: str, misuse: SaveMisuse) -> str:
    """The message for a checkpoint call that is a save in disguise."""
    verb = "loading" if misuse.form is SaveForm.LOAD_CALL else "saving"
    return f"{what} is activation checkpointing, not {verb} training state: {misuse.reason}. {save_advice(misuse)}"


def save_advice(misuse: SaveMisuse) -> str:
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

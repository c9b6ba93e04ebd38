"""CKP302 checkpoint-module-called, on CPython's ``ast`` (the twin of
:mod:`ckptlint.rules.ckp302_checkpoint_module_called`: same findings, messages and fixes)."""

from __future__ import annotations

import ast
from functools import partial

from ckptlint.checkpoint.sites.ast_misuse import AstSaveMisuse, save_misuse_of_arguments
from ckptlint.checkpoint.sites.ast_options import ordered_arguments
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.rules.ast_base import AstRule, AstRuleContext
from ckptlint.rules.ast_edits import replace_node
from ckptlint.rules.ast_save_advice import torch_save_fix
from ckptlint.rules.save_advice import save_advice
from ckptlint.text.diagnostics import Applicability


class AstCheckpointModuleCalled(AstRule):
    """Flags calls of the ``torch.utils.checkpoint`` *module* (see
    :class:`ckptlint.rules.ckp302_checkpoint_module_called.CheckpointModuleCalled`)."""

    code = "CKP302"

    def check(self, ctx: AstRuleContext) -> None:
        analysis = ctx.analysis
        for call in ast_site_index(analysis).module_calls:
            callee = analysis.text_of(call.func)
            what = f"`{callee}` is the `torch.utils.checkpoint` module"
            misuse = _save_misuse(call, ctx)
            if misuse is not None:
                ctx.report(
                    call,
                    f"{what}, not a function (TypeError: 'module' object is not callable), and "
                    f"activation checkpointing does not save training state either: {misuse.reason}. "
                    + save_advice(misuse),
                    fix=torch_save_fix(ctx, analysis, call, misuse),
                    guarded=call,
                )
                continue
            fix = ctx.fix_from(
                Applicability.SAFE,
                f"Call `{callee}.checkpoint(...)`",
                partial(replace_node, analysis, call.func, f"{callee}.checkpoint"),
            )
            ctx.report(
                call,
                f"{what}, not a function: calling it raises TypeError ('module' object is not "
                f"callable); call `{callee}.checkpoint(...)`",
                fix=fix,
                guarded=call,
            )


def _save_misuse(call: ast.Call, ctx: AstRuleContext) -> AstSaveMisuse | None:
    """libcst's reading: the arguments without a name (``*``/``**`` ones included, in source
    order), the first a plain expression, the rest its inputs; the named ones its keywords."""
    arguments = ordered_arguments(call)
    args = [arg for arg in arguments if not (isinstance(arg, ast.keyword) and arg.arg is not None)]
    if not args or isinstance(args[0], (ast.Starred, ast.keyword)):
        return None
    keywords = [arg for arg in arguments if isinstance(arg, ast.keyword) and arg.arg is not None]
    return save_misuse_of_arguments(args[0], args[1:], keywords, call, ctx.analysis.model)

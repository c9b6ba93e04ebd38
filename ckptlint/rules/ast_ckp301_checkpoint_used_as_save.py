"""CKP301 checkpoint-used-as-save, on CPython's ``ast`` (the twin of
:mod:`ckptlint.rules.ckp301_checkpoint_used_as_save`: same findings, messages and fixes)."""

from __future__ import annotations

from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.rules.ast_base import AstRule, AstRuleContext
from ckptlint.rules.ast_save_advice import torch_save_fix
from ckptlint.rules.save_advice import save_message


class AstCheckpointUsedAsSave(AstRule):
    """Flags activation-checkpoint calls that try to save (or load) training state (see
    :class:`ckptlint.rules.ckp301_checkpoint_used_as_save.CheckpointUsedAsSave`)."""

    code = "CKP301"

    def check(self, ctx: AstRuleContext) -> None:
        for site in ast_site_index(ctx.analysis).sites:
            misuse = site.save_misuse
            if misuse is None:
                continue
            short = site.api.name.rsplit(".", 1)[-1]
            ctx.report(
                site.call, save_message(f"`{short}()`", misuse), fix=torch_save_fix(ctx, ctx.analysis, site.call, misuse), site=site
            )

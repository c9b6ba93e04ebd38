"""CKP304 checkpoint-without-grad, on CPython's ``ast`` (the twin of
:mod:`ckptlint.rules.ckp304_checkpoint_without_grad`: same findings and messages), over the
grad modes of :mod:`ckptlint.checkpoint.analyses.ast_grad_mode`."""

from __future__ import annotations

from ckptlint.checkpoint.analyses.ast_grad_mode import GradMode, grad_mode_at
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.checkpoint.sites.site import SiteForm
from ckptlint.facts.apis import ApiKind
from ckptlint.rules.ast_base import AstRule, AstRuleContext


class AstCheckpointWithoutGrad(AstRule):
    """Flags checkpoint calls that run with autograd recording off (see
    :class:`ckptlint.rules.ckp304_checkpoint_without_grad.CheckpointWithoutGrad`)."""

    code = "CKP304"

    def check(self, ctx: AstRuleContext) -> None:
        analysis = ctx.analysis
        model = analysis.model
        for site in ast_site_index(analysis).sites:
            if site.api.kind not in (ApiKind.FUNCTION, ApiKind.SEQUENTIAL) or site.form is SiteForm.PARTIAL:
                continue
            if site.save_misuse is not None:
                continue
            context = grad_mode_at(site.call, model)
            if context.mode is not GradMode.DISABLED or context.node is None:
                continue
            row = analysis.range(context.node)[0][0]
            how = "decorated with" if context.decorator else "inside"
            spelled = analysis.text_of(context.node)
            short = site.api.name.rsplit(".", 1)[-1]
            ctx.report(
                site.call,
                f"`{short}()` runs {how} `{spelled}` (line {row}): autograd records nothing, so nothing "
                "is saved for backward or recomputed and the checkpoint only adds overhead; call the "
                "function directly here, or enable grad if this code is meant to train",
                site=site,
            )

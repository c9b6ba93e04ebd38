"""CKP202 side-effect-in-recompute, on CPython's ``ast`` (the twin of
:mod:`ckptlint.rules.ckp202_side_effect_in_recompute`: same findings and messages, the
region's conditions through ``site=``), over the writes of
:mod:`ckptlint.checkpoint.analyses.ast_outer_writes`."""

from __future__ import annotations

from ckptlint.checkpoint.analyses.ast_outer_writes import outer_writes
from ckptlint.checkpoint.evaluator.ast_region import site_label
from ckptlint.rules.ast_base import AstRule, AstRuleContext


class AstSideEffectInRecompute(AstRule):
    """The region writes state outside itself; recomputation writes it again (see
    :class:`ckptlint.rules.ckp202_side_effect_in_recompute.SideEffectInRecompute`)."""

    code = "CKP202"
    reads_regions = True

    def check(self, ctx: AstRuleContext) -> None:
        for site, region in ctx.site_regions():
            for write in outer_writes(region):
                ctx.report(
                    write.node,
                    f"Side effect in the region recomputed by the checkpoint at "
                    f"{site_label(site, ctx.analysis, write.analysis)}: it {write.what}, which runs again "
                    "during backward; move it outside the checkpointed function",
                    analysis=write.analysis,
                    once=True,
                    site=site,
                )

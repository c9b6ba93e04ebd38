"""CKP201 recompute-reads-mutable-global, on CPython's ``ast`` (the twin of
:mod:`ckptlint.rules.ckp201_recompute_reads_mutable_global`: same findings and messages, the
region's conditions through ``site=``), over the reads of
:mod:`ckptlint.checkpoint.analyses.ast_outer_reads`."""

from __future__ import annotations

from ckptlint.checkpoint.analyses.ast_outer_reads import mutable_reads
from ckptlint.checkpoint.evaluator.ast_region import site_label
from ckptlint.rules.ast_base import AstRule, AstRuleContext


class AstRecomputeReadsMutableGlobal(AstRule):
    """The region reads module-level or closure state that is rebound or mutated elsewhere
    (see :class:`ckptlint.rules.ckp201_recompute_reads_mutable_global.RecomputeReadsMutableGlobal`)."""

    code = "CKP201"
    reads_regions = True

    def check(self, ctx: AstRuleContext) -> None:
        for site, region in ctx.site_regions():
            for read in mutable_reads(region, ctx.analysis):
                where = site_label(site, ctx.analysis, read.analysis)
                if read.late_binding:
                    consequence = (
                        "gradients are silently wrong"
                        if read.loop_variable
                        else "gradients are silently wrong whenever it differs between iterations"
                    )
                    message = (
                        f"`{read.name}` ({read.why}) is read in the region recomputed by the checkpoint at {where}: "
                        "recomputation runs in backward, after the loop, so it sees the last iteration's value "
                        f"and {consequence}; bind it when the function is defined "
                        f"(`{read.name}={read.name}` as a default argument) or pass it in as an argument"
                    )
                else:
                    message = (
                        f"`{read.name}` ({read.why}) is read in the region recomputed by the checkpoint at {where}: "
                        "if it changes between forward and backward, recomputation computes different values "
                        "and gradients are silently wrong (determinism_check compares only shapes); pass the "
                        "value in as an argument"
                    )
                ctx.report(read.node, message, analysis=read.analysis, once=True, site=site)

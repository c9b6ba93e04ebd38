"""CKP202 side-effect-in-recompute, on CPython's ``ast``, over the writes of
:mod:`ckptlint.checkpoint.analyses.ast_outer_writes`."""

from __future__ import annotations

from ckptlint.checkpoint.analyses.ast_outer_writes import outer_writes
from ckptlint.checkpoint.evaluator.ast_region import site_label
from ckptlint.rules.base import Invalid, Rule, RuleContext


class SideEffectInRecompute(Rule):
    """The region writes state outside itself; recomputation writes it again.

    The reentrant variant reruns the whole function during backward; the non-reentrant
    variant reruns it up to the last saved tensor (``early_stop``, torch.utils.checkpoint
    2.9), so counters advance twice, caches grow twice (pytorch/pytorch#155171), logs repeat.
    """

    code = "CKP202"

    VALID = (
        """\
        from torch.utils.checkpoint import checkpoint
        def f(x):
            out = []
            out.append(x * 2)
            return out[0]
        checkpoint(f, x, use_reentrant=False)
        """,
    )
    INVALID = (
        Invalid(
            """\
            from torch.utils.checkpoint import checkpoint
            CALLS = 0
            def f(x):
                global CALLS
                CALLS += 1
                return x * 2
            checkpoint(f, x, use_reentrant=False)
            """,
            at=(5, 5),
            message="Side effect in the region recomputed by the checkpoint at <string>.py:7",
        ),
        Invalid(
            """\
            from torch.utils.checkpoint import checkpoint
            LOG = []
            def f(x):
                LOG.append(x.sum())
                return x * 2
            checkpoint(f, x, use_reentrant=False)
            """,
            at=(4, 5),
            message="Side effect in the region recomputed by the checkpoint at <string>.py:6",
        ),
    )
    reads_regions = True

    def check(self, ctx: RuleContext) -> None:
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

"""CKP201 recompute-reads-mutable-global, on CPython's ``ast``, over the reads of
:mod:`ckptlint.checkpoint.analyses.ast_outer_reads`."""

from __future__ import annotations

from ckptlint.checkpoint.analyses.ast_outer_reads import mutable_reads
from ckptlint.checkpoint.evaluator.ast_region import site_label
from ckptlint.rules.base import Invalid, Rule, RuleContext


class RecomputeReadsMutableGlobal(Rule):
    """The region reads module-level or closure state that is rebound or mutated elsewhere.

    Recomputation runs during backward, after the training loop may have changed that state;
    the recomputed values then differ from the forward's. ``determinism_check`` compares only
    metadata (shape, dtype, device) of saved tensors (torch.utils.checkpoint 2.9), so the
    difference is silent.
    """

    code = "CKP201"

    VALID = (
        """\
        from torch.utils.checkpoint import checkpoint
        SCALE = 2.0
        def f(x):
            return x * SCALE
        checkpoint(f, x, use_reentrant=False)
        """,
        # a configuration setter runs at start-up, not between a forward and its backward
        """\
        from torch.utils.checkpoint import checkpoint
        SCALE = 2.0
        def set_scale(s):
            global SCALE
            SCALE = s
        def f(x):
            return x * SCALE
        checkpoint(f, x, use_reentrant=False)
        """,
        # written before the call: the forward and the recomputation read the same value
        """\
        from torch.utils.checkpoint import checkpoint
        STATE = {'scale': 1.0}
        def f(x):
            return x * STATE['scale']
        def train(x):
            STATE['scale'] = 0.5
            return checkpoint(f, x, use_reentrant=False)
        """,
    )
    INVALID = (
        Invalid(
            """\
            from torch.utils.checkpoint import checkpoint
            SCALE = 2.0
            def f(x):
                return x * SCALE
            def step(x):
                global SCALE
                y = checkpoint(f, x, use_reentrant=False)
                SCALE = SCALE * 0.5
                return y
            """,
            at=(4, 16),
            message="`SCALE` (rebound through `global` at line 8, after the checkpoint call) is read in the region",
        ),
        Invalid(
            """\
            from torch.utils.checkpoint import checkpoint
            STATE = {'scale': 1.0}
            def f(x):
                return x * STATE['scale']
            def train(xs):
                for x in xs:
                    y = checkpoint(f, x, use_reentrant=False)
                    STATE['scale'] = 0.5
            """,
            at=(4, 16),
            message="`STATE` (mutated at line 8 in the loop that also runs the checkpoint) is read in the region",
        ),
    )
    reads_regions = True

    def check(self, ctx: RuleContext) -> None:
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

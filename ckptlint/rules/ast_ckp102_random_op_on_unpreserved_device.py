"""CKP102 random-op-on-unpreserved-device, on CPython's ``ast`` (the twin of
:mod:`ckptlint.rules.ckp102_random_op_on_unpreserved_device`: same findings and messages),
over the device-moved random ops of :mod:`ckptlint.checkpoint.analyses.ast_randomness`."""

from __future__ import annotations

from ckptlint.checkpoint.analyses.ast_randomness import device_moved_ops
from ckptlint.checkpoint.evaluator.ast_region import site_label
from ckptlint.rules.ast_base import AstRule, AstRuleContext


class AstRandomOpOnUnpreservedDevice(AstRule):
    """A random op in the region draws on a device whose RNG state checkpoint does not stash
    (see :class:`ckptlint.rules.ckp102_random_op_on_unpreserved_device.RandomOpOnUnpreservedDevice`)."""

    code = "CKP102"
    reads_regions = True

    def check(self, ctx: AstRuleContext) -> None:
        for site, region in ctx.site_regions():
            if site.option("preserve_rng_state").is_false:
                continue  # CKP101 covers regions whose RNG state is not preserved at all
            for op, reason in device_moved_ops(region):
                ctx.report(
                    op.node,
                    f"{op.name} in the region recomputed by the checkpoint at "
                    f"{site_label(site, ctx.analysis, op.analysis)}: {reason}, and checkpoint stashes RNG "
                    "state only for CPU and the device of its positional tensor arguments, so recomputation "
                    "draws different values; move the tensor to its device before the checkpoint, or draw "
                    "the randomness outside and pass it in",
                    analysis=op.analysis,
                    once=True,
                    site=site,
                )

"""CKP202 side-effect-in-recompute."""

from __future__ import annotations

from ckptlint.model.regions import site_label
from ckptlint.model.state import outer_writes
from ckptlint.rules.base import Invalid, Rule, RuleContext


class SideEffectInRecompute(Rule):
    """The region writes state outside itself; recomputation writes it again.

    The reentrant variant reruns the whole function during backward; the non-reentrant
    variant reruns it up to the last saved tensor (``early_stop``, torch.utils.checkpoint
    2.9), so counters advance twice, caches grow twice (pytorch/pytorch#155171), logs repeat.
    """

    code = "CKP202"

    VALID = (
        "from torch.utils.checkpoint import checkpoint\n"
        "def f(x):\n    out = []\n    out.append(x * 2)\n    return out[0]\n"
        "checkpoint(f, x, use_reentrant=False)\n",
    )
    INVALID = (
        Invalid(
            "from torch.utils.checkpoint import checkpoint\nCALLS = 0\n"
            "def f(x):\n    global CALLS\n    CALLS += 1\n    return x * 2\n"
            "checkpoint(f, x, use_reentrant=False)\n",
        ),
        Invalid(
            "from torch.utils.checkpoint import checkpoint\nLOG = []\n"
            "def f(x):\n    LOG.append(x.sum())\n    return x * 2\n"
            "checkpoint(f, x, use_reentrant=False)\n",
        ),
    )

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
                )

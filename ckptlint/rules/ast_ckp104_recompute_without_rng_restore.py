"""CKP104 recompute-without-rng-restore, on CPython's ``ast`` (the twin of
:mod:`ckptlint.rules.ckp104_recompute_without_rng_restore`: same findings and messages), over
the home-made implementations of :mod:`ckptlint.checkpoint.sites.ast_homemade`."""

from __future__ import annotations

from ckptlint.checkpoint.sites.ast_homemade import home_made
from ckptlint.rules.ast_base import AstRule, AstRuleContext


class AstRecomputeWithoutRngRestore(AstRule):
    """A home-made recompute function re-runs its callable without restoring the RNG state
    (see :class:`ckptlint.rules.ckp104_recompute_without_rng_restore.RecomputeWithoutRngRestore`)."""

    code = "CKP104"

    def check(self, ctx: AstRuleContext) -> None:
        found = home_made(ctx.analysis.model, ctx.analysis.project)
        for implementation in found.implementations.values():
            if implementation.restores_rng:
                continue
            for call in implementation.reruns:
                ctx.report(
                    call,
                    f"`{implementation.node.name}.backward` re-runs {implementation.rerun_label} without "
                    "restoring the RNG state of forward: whenever the recomputed code draws random numbers "
                    "in training (a dropout with p > 0, LoRA or attention dropout, `torch.rand*`), the "
                    "re-run draws other ones than forward did, so the gradients belong to another network; "
                    "save `torch.get_rng_state()` (and the device's) in forward and restore them around the "
                    "re-run under `torch.random.fork_rng()`, or use `torch.utils.checkpoint.checkpoint`",
                    guarded=call,
                )

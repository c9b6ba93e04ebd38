"""CKP105 recompute-without-autocast-restore, on CPython's ``ast`` (the twin of
:mod:`ckptlint.rules.ckp105_recompute_without_autocast_restore`: same findings and messages),
over the home-made implementations of :mod:`ckptlint.checkpoint.sites.ast_homemade` and the
gradient hooks of :mod:`ckptlint.checkpoint.sites.ast_hook_recompute`."""

from __future__ import annotations

from ckptlint.checkpoint.sites.ast_homemade import home_made
from ckptlint.checkpoint.sites.ast_hook_recompute import hook_recomputes
from ckptlint.rules.ast_base import AstRule, AstRuleContext


class AstRecomputeWithoutAutocastRestore(AstRule):
    """A home-made recompute function re-runs its callable outside the autocast state of
    ``forward`` (see
    :class:`ckptlint.rules.ckp105_recompute_without_autocast_restore.RecomputeWithoutAutocastRestore`)."""

    code = "CKP105"

    def check(self, ctx: AstRuleContext) -> None:
        found = home_made(ctx.analysis.model, ctx.analysis.project)
        for implementation in found.implementations.values():
            if implementation.restores_autocast:
                continue
            for call in implementation.reruns:
                ctx.report(
                    call,
                    f"`{implementation.node.name}.backward` re-runs {implementation.rerun_label} outside the "
                    "autocast state of forward: when forward runs under `torch.autocast` with float32 parameters "
                    "(mixed precision), the recompute runs in float32 and produces other activations than forward; "
                    "capture `torch.is_autocast_enabled()` / "
                    "`torch.get_autocast_dtype()` in forward and re-enter `torch.autocast(...)` around the "
                    "re-run (or use `torch.amp.custom_fwd`/`custom_bwd`)",
                    guarded=call,
                )
        for hook in hook_recomputes(ctx.analysis.model):
            if hook.restores_autocast:
                continue
            row = ctx.analysis.range(hook.registration)[0][0]
            for call in hook.reruns:
                ctx.report(
                    call,
                    f"`{hook.hook.name}`, a gradient hook (registered at line {row}), re-runs the model in "
                    "backward outside the autocast state of forward: when forward runs under `torch.autocast` "
                    "with float32 parameters (mixed precision) and backward is called outside it, as PyTorch's recipe does, the recompute "
                    "runs in float32, so the cached gradients are applied to "
                    "other activations than those they were computed for; capture `torch.is_autocast_enabled()` / "
                    "`torch.get_autocast_dtype()` in forward and re-enter `torch.autocast(...)` around the "
                    "re-run",
                    guarded=call,
                )

"""CKP105 recompute-without-autocast-restore, on CPython's ``ast``,
over the home-made implementations of :mod:`ckptlint.checkpoint.sites.ast_homemade` and the
gradient hooks of :mod:`ckptlint.checkpoint.sites.ast_hook_recompute`."""

from __future__ import annotations

from ckptlint.checkpoint.sites.ast_homemade import home_made
from ckptlint.checkpoint.sites.ast_hook_recompute import hook_recomputes
from ckptlint.rules.base import Invalid, Rule, RuleContext
from ckptlint.rules.recompute_examples import RECOMPUTE_FUNCTION as _FUNCTION

_RNG = dict(
    save="        ctx.cpu_state = torch.get_rng_state()\n",
    restore="        torch.set_rng_state(ctx.cpu_state)\n",
)


class RecomputeWithoutAutocastRestore(Rule):
    """A home-made recompute function re-runs its callable outside the autocast state of
    ``forward``.

    ``backward`` runs outside the ``torch.autocast`` block of the training step, so a
    re-run there computes in float32 unless the implementation captured the autocast state
    in ``forward`` (``torch.is_autocast_enabled``, ``torch.get_autocast_dtype``) and re-enters
    it around the re-run, or decorates ``forward``/``backward`` with
    ``torch.amp.custom_fwd``/``custom_bwd``. torch.utils.checkpoint does this (2.9, 2.13:
    ``device_autocast_ctx``/``cpu_autocast_ctx`` in both variants); under AMP a recompute in
    another precision produces other activations, and the gradients belong to another graph.

    Reported whether or not the project enters autocast today (only the module's own text is
    read): the implementation is wrong whenever its forward runs under ``torch.autocast``, and
    the message says so; a code base that never uses autocast silences it with ``# noqa``.
    """

    code = "CKP105"

    VALID = (
        _FUNCTION.format(
            save=_RNG["save"] + "        ctx.amp = torch.is_autocast_enabled('cuda')\n",
            restore=_RNG["restore"],
        ).replace(
            "        with torch.enable_grad():\n",
            "        with torch.enable_grad(), torch.autocast('cuda', enabled=ctx.amp):\n",
        ),
        _FUNCTION.format(**_RNG).replace(
            "    @staticmethod\n    def backward", "    @staticmethod\n    @torch.amp.custom_bwd(device_type='cuda')\n    def backward"
        ),
    )
    INVALID = (
        Invalid(
            _FUNCTION.format(**_RNG),
            at=(16, 19),
            message="`Recompute.backward` re-runs the stored callable outside the autocast state of forward",
        ),
    )

    def check(self, ctx: RuleContext) -> None:
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

"""CKP105 recompute-without-autocast-restore."""

from __future__ import annotations

from ckptlint.checkpoint.autocast_reach import autocast_may_run
from ckptlint.checkpoint.homemade import home_made
from ckptlint.checkpoint.implementation_use import implementation_used
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

    Reported only where autocast can be on: the module or its package mentions it
    (:mod:`ckptlint.checkpoint.autocast_reach`); a code base that gets half precision by
    converting its weights recomputes in the precision forward used.
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
        autocast: bool | None = None
        found = home_made(ctx.analysis.model)
        for implementation in found.implementations.values():
            if implementation.restores_autocast or not implementation_used(ctx.analysis, ctx.project, found, implementation):
                continue
            if autocast is None:
                autocast = autocast_may_run(ctx.analysis, ctx.project)
            if not autocast:
                continue  # a code base that never enters autocast: the re-run computes as forward did
            for call in implementation.reruns:
                ctx.report(
                    call,
                    f"`{implementation.node.name.value}.backward` re-runs {implementation.rerun_label} outside the "
                    "autocast state of forward: under `torch.autocast` the recompute runs in float32 and "
                    "produces other activations than forward; capture `torch.is_autocast_enabled()` / "
                    "`torch.get_autocast_dtype()` in forward and re-enter `torch.autocast(...)` around the "
                    "re-run (or use `torch.amp.custom_fwd`/`custom_bwd`)",
                )

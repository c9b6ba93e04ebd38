"""CKP104 recompute-without-rng-restore, on CPython's ``ast``, over
the home-made implementations of :mod:`ckptlint.checkpoint.sites.ast_homemade`."""

from __future__ import annotations

from ckptlint.checkpoint.sites.ast_homemade import home_made
from ckptlint.rules.base import Invalid, Rule, RuleContext
from ckptlint.rules.recompute_examples import RECOMPUTE_FUNCTION as _FUNCTION
from ckptlint.rules.recompute_examples import REVERSIBLE_FUNCTION as _REVERSIBLE


class RecomputeWithoutRngRestore(Rule):
    """A home-made recompute function re-runs its callable without restoring the RNG state.

    A ``torch.autograd.Function`` that stores a callable in ``forward`` and calls it again in
    ``backward`` (the pattern of torch's own ``CheckpointFunction``, copied into many code
    bases) must save the RNG state in ``forward`` and restore it around the re-run, as
    torch.utils.checkpoint does with ``preserve_rng_state=True`` (CPU plus the device of the
    inputs, under ``torch.random.fork_rng``), Megatron with its RNG tracker, DeepSpeed with
    CPU, device and tracker states. Without it every dropout in the recomputed code draws a
    new mask during backward: the gradients belong to another network, silently.
    """

    code = "CKP104"

    VALID = (
        _FUNCTION.format(
            save="        ctx.cpu_state = torch.get_rng_state()\n",
            restore="        torch.set_rng_state(ctx.cpu_state)\n",
        ),
        _FUNCTION.format(save="", restore="").replace(
            "        with torch.enable_grad():\n            out = ctx.fn(x)\n",
            "        with torch.random.fork_rng(), torch.enable_grad():\n"
            "            torch.set_rng_state(ctx.state)\n            out = ctx.fn(x)\n",
        ),
        # a reversible network whose blocks reseed with the seed drawn in forward (RevViT)
        _REVERSIBLE.format(restore="            torch.manual_seed(self.seed)\n"),
        # not a recompute: nothing stored is called again in backward
        """\
        import torch
        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, k):
                ctx.k = k
                return x * k
            @staticmethod
            def backward(ctx, g):
                return g * ctx.k, None
        """,
        # not a recompute: backward calls a backward_op that forward never ran
        """\
        import torch
        class Ring(torch.autograd.Function):
            @staticmethod
            def forward(ctx, q, forward_op, backward_op):
                ctx.backward_op = backward_op
                return forward_op(q)
            @staticmethod
            def backward(ctx, g):
                return ctx.backward_op(g), None, None
        """,
    )
    INVALID = (
        Invalid(
            _FUNCTION.format(save="", restore=""),
            at=(14, 19),
            message="`Recompute.backward` re-runs the stored callable without restoring the RNG state of forward",
        ),
        Invalid(
            _FUNCTION.format(save="", restore="").replace(
                "            out = ctx.fn(x)\n", "            run = ctx.fn\n            out = run(x)\n"
            ),
            at=(15, 19),
            message="`Recompute.backward` re-runs the stored callable without restoring the RNG state of forward",
        ),
        Invalid(
            _REVERSIBLE.format(restore=""),
            at=(31, 30),
            message="`RevBackProp.backward` re-runs the stored blocks (their `backward_pass`) without restoring",
        ),
    )

    def check(self, ctx: RuleContext) -> None:
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

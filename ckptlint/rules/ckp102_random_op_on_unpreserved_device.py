"""CKP102 random-op-on-unpreserved-device, on CPython's ``ast``,
over the device-moved random ops of :mod:`ckptlint.checkpoint.analyses.ast_randomness`."""

from __future__ import annotations

from ckptlint.checkpoint.analyses.ast_randomness import device_moved_ops
from ckptlint.checkpoint.evaluator.ast_region import site_label
from ckptlint.rules.base import Invalid, Rule, RuleContext


class RandomOpOnUnpreservedDevice(Rule):
    """A random op in the region draws on a device whose RNG state checkpoint does not stash.

    torch.utils.checkpoint (2.9, unchanged in 2.13) stashes the CPU RNG state and that of the
    one device type inferred from the *positional* tensor arguments (``_infer_device_type``,
    ``get_device_states``). A tensor moved to another device inside the region, or reaching
    the checkpoint only as a keyword argument, draws fresh random numbers on recomputation.
    """

    code = "CKP102"

    VALID = (
        """\
        import torch
        import torch.nn.functional as F
        from torch.utils.checkpoint import checkpoint
        def f(x):
            noise = torch.randn_like(x)
            return F.dropout(x + noise, p=0.1)
        checkpoint(f, x, use_reentrant=False)
        """,
        """\
        import torch.nn.functional as F
        from torch.utils.checkpoint import checkpoint
        def f(x):
            h = x.to(torch.float16)
            return F.dropout(h, p=0.1)
        checkpoint(f, x, use_reentrant=False)
        """,
    )
    INVALID = (
        Invalid(
            """\
            import torch.nn.functional as F
            from torch.utils.checkpoint import checkpoint
            def f(x_cpu):
                h = x_cpu.cuda()
                return F.dropout(h, p=0.1)
            checkpoint(f, x_cpu, use_reentrant=False)
            """,
            at=(5, 12),
            message="F.dropout in the region recomputed by the checkpoint at <string>.py:6",
        ),
        Invalid(
            """\
            import torch
            from torch.utils.checkpoint import checkpoint
            def f(x):
                return x + torch.randn(x.shape, device='cuda')
            checkpoint(f, x, use_reentrant=False)
            """,
            at=(4, 16),
            message="torch.randn in the region recomputed by the checkpoint at <string>.py:5",
        ),
    )
    reads_regions = True

    def check(self, ctx: RuleContext) -> None:
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

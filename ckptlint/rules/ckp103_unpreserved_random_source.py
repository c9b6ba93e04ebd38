"""CKP103 unpreserved-random-source, on CPython's ``ast``, over the
random sources of :mod:`ckptlint.checkpoint.analyses.ast_randomness`.

A ``generator=`` argument is an ``ast.keyword``: its finding covers the whole argument
(``RuleContext.report(..., whole=True)``)."""

from __future__ import annotations

from ckptlint.checkpoint.analyses.ast_randomness import unpreserved_sources
from ckptlint.checkpoint.evaluator.ast_region import site_label
from ckptlint.rules.base import Invalid, Rule, RuleContext


class UnpreservedRandomSource(Rule):
    """The region uses a random source checkpoint never restores.

    torch.utils.checkpoint (2.9, unchanged in 2.13) restores only torch's default generators
    (CPU and one device type) via ``torch.random.fork_rng``; Python ``random``,
    ``numpy.random`` and explicit ``torch.Generator`` objects draw new values on
    recomputation.
    """

    code = "CKP103"

    VALID = (
        """\
        import random
        from torch.utils.checkpoint import checkpoint
        def f(x, skip):
            return x if skip else x * 2
        checkpoint(f, x, random.random() < 0.1, use_reentrant=False)
        """,
    )
    INVALID = (
        Invalid(
            """\
            import random
            from torch.utils.checkpoint import checkpoint
            def f(x):
                return x if random.random() < 0.1 else x * 2
            checkpoint(f, x, use_reentrant=False)
            """,
            at=(4, 17),
            message="Python's `random` (`random.random`) in the region recomputed by the checkpoint at",
        ),
        Invalid(
            """\
            import numpy as np, torch
            from torch.utils.checkpoint import checkpoint
            def f(x):
                return x + torch.from_numpy(np.random.normal(size=3))
            checkpoint(f, x, use_reentrant=False)
            """,
            at=(4, 33),
            message="NumPy's RNG (`numpy.random.normal`) in the region recomputed by the checkpoint at",
        ),
        Invalid(
            """\
            import torch
            from torch.utils.checkpoint import checkpoint
            def f(x, g):
                return x + torch.rand(3, generator=g)
            checkpoint(f, x, g, use_reentrant=False)
            """,
            at=(4, 30),
            message="an explicit `generator=` argument in the region recomputed by the checkpoint at",
        ),
    )
    reads_regions = True

    def check(self, ctx: RuleContext) -> None:
        for site, region in ctx.site_regions():
            for source in unpreserved_sources(region):
                ctx.report(
                    source.node,
                    f"{source.what} in the region recomputed by the checkpoint at "
                    f"{site_label(site, ctx.analysis, source.analysis)}: checkpoint never restores it, so "
                    "recomputation draws different values; draw outside the checkpoint and pass the result "
                    "in, or use torch's default generator",
                    analysis=source.analysis,
                    once=True,
                    site=site,
                    whole=True,
                )

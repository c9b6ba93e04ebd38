"""CKP103 unpreserved-random-source."""

from __future__ import annotations

from ckptlint.model.randomness import unpreserved_sources
from ckptlint.model.regions import site_label
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
        "import random\nfrom torch.utils.checkpoint import checkpoint\n"
        "def f(x, skip):\n    return x if skip else x * 2\n"
        "checkpoint(f, x, random.random() < 0.1, use_reentrant=False)\n",
    )
    INVALID = (
        Invalid(
            "import random\nfrom torch.utils.checkpoint import checkpoint\n"
            "def f(x):\n    return x if random.random() < 0.1 else x * 2\n"
            "checkpoint(f, x, use_reentrant=False)\n",
        ),
        Invalid(
            "import numpy as np, torch\nfrom torch.utils.checkpoint import checkpoint\n"
            "def f(x):\n    return x + torch.from_numpy(np.random.normal(size=3))\n"
            "checkpoint(f, x, use_reentrant=False)\n",
        ),
        Invalid(
            "import torch\nfrom torch.utils.checkpoint import checkpoint\n"
            "def f(x, g):\n    return x + torch.rand(3, generator=g)\n"
            "checkpoint(f, x, g, use_reentrant=False)\n",
        ),
    )

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
                )

"""CKP103 unpreserved-random-source, on CPython's ``ast`` (the twin of
:mod:`ckptlint.rules.ckp103_unpreserved_random_source`: same findings and messages), over the
random sources of :mod:`ckptlint.checkpoint.analyses.ast_randomness`.

A ``generator=`` argument is an ``ast.keyword``: its finding covers the whole argument, as
libcst's ``Arg`` (``AstRuleContext.report(..., whole=True)``)."""

from __future__ import annotations

from ckptlint.checkpoint.analyses.ast_randomness import unpreserved_sources
from ckptlint.checkpoint.evaluator.ast_region import site_label
from ckptlint.rules.ast_base import AstRule, AstRuleContext


class AstUnpreservedRandomSource(AstRule):
    """The region uses a random source checkpoint never restores (see
    :class:`ckptlint.rules.ckp103_unpreserved_random_source.UnpreservedRandomSource`)."""

    code = "CKP103"
    reads_regions = True

    def check(self, ctx: AstRuleContext) -> None:
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

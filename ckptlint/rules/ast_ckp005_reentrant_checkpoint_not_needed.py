"""CKP005 reentrant-checkpoint-not-needed (opt-in), on CPython's ``ast`` (the twin of
:mod:`ckptlint.rules.ckp005_reentrant_checkpoint_not_needed`: same findings, messages and
fix, byte for byte through :mod:`ckptlint.rules.ast_edits`), over the reads and writes of
:mod:`ckptlint.checkpoint.analyses.ast_outer_reads` and ``ast_outer_writes``.

What ``ast`` lacks is read from what it keeps: libcst's ``Name`` ``True`` is a constant
``True`` (its range, and so the fix's, leaves out parentheses on both sides); an attribute's
name is a string."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ckptlint.checkpoint.analyses.ast_outer_reads import mutable_reads
from ckptlint.checkpoint.analyses.ast_outer_writes import outer_writes
from ckptlint.checkpoint.sites.options import OptionOrigin, OptionState
from ckptlint.checkpoint.sites.site import SiteForm
from ckptlint.facts.apis import ApiKind
from ckptlint.rules.ast_base import AstRule, AstRuleContext
from ckptlint.rules.ast_edits import replace_node
from ckptlint.rules.ckp005_reentrant_checkpoint_not_needed import GRAD_SENSITIVE
from ckptlint.text.diagnostics import Applicability, Fix

if TYPE_CHECKING:
    from ckptlint.checkpoint.evaluator.ast_region import AstRegion
    from ckptlint.checkpoint.sites.ast_site_builders import AstSite


class AstReentrantCheckpointNotNeeded(AstRule):
    """An explicit ``use_reentrant=True`` where nothing in the recomputed region needs the
    legacy reentrant variant (see
    :class:`ckptlint.rules.ckp005_reentrant_checkpoint_not_needed.ReentrantCheckpointNotNeeded`)."""

    code = "CKP005"
    reads_regions = True

    def check(self, ctx: AstRuleContext) -> None:
        for site, region in ctx.site_regions():
            passed = _explicit_true(site)
            if passed is None or not site.reported_here:
                continue
            if site.function_keywords or site.option("context_fn").is_passed:
                continue  # the reentrant variant raises here: CKP002's
            if not _nothing_needs_reentrant(ctx, region):
                continue
            short = site.api.name.rsplit(".", 1)[-1]
            ctx.report(
                site.call,
                f"`{short}()` passes `use_reentrant=True`, but nothing in the region it recomputes needs "
                "the legacy reentrant variant (it neither reads nor sets grad mode, runs no backward, and "
                "reads and writes no outer state that could change); consider `use_reentrant=False`, the "
                "variant PyTorch recommends, which also gives gradients when no positional input requires "
                "grad and works with `torch.autograd.grad`",
                fix=_fix(ctx, passed),
                site=site,
            )


def _explicit_true(site: AstSite) -> ast.Constant | None:
    """The literal ``True`` this call itself writes for ``use_reentrant`` (keyword, or
    ``checkpoint_sequential``'s fourth positional argument), else ``None``."""
    if site.api.kind not in (ApiKind.FUNCTION, ApiKind.SEQUENTIAL) or not site.api.name.startswith("torch.utils.checkpoint."):
        return None
    if site.form not in (SiteForm.CALL, SiteForm.BOUND_CALL):
        return None
    value = site.use_reentrant
    if value.state is not OptionState.LITERAL or value.value is not True or value.arg is None:
        return None
    if value.origin not in (OptionOrigin.KEYWORD, OptionOrigin.POSITIONAL):
        return None
    arg = value.arg
    expression = arg.value if isinstance(arg, (ast.keyword, ast.Starred)) else arg
    return expression if isinstance(expression, ast.Constant) and expression.value is True else None


def _nothing_needs_reentrant(ctx: AstRuleContext, region: AstRegion) -> bool:
    """The region is fully seen and nothing in it tells the variants apart (the libcst
    rule's class docstring)."""
    if not region.resolved or region.partial or region.cut_calls:
        return False
    if outer_writes(region) or mutable_reads(region, ctx.analysis):
        return False
    for frame in region.frames:
        model = frame.analysis.model
        for node in frame.nodes():
            if isinstance(node, ast.Call):
                if model.qualified_names(node.func) & GRAD_SENSITIVE:
                    return False
                if isinstance(node.func, ast.Attribute) and node.func.attr in ("backward", "requires_grad_"):
                    return False
            elif isinstance(node, (ast.Name, ast.Attribute)) and model.qualified_names(node) & GRAD_SENSITIVE:
                return False
    return True


def _fix(ctx: AstRuleContext, passed: ast.Constant) -> Fix | None:
    """``use_reentrant=False``: unsafe, the variant changes (``rules/CKP005.md``, "Fix
    safety"); ``None`` where libcst refuses the statement (:meth:`AstRuleContext.fix_from`)."""
    return ctx.fix_from(Applicability.UNSAFE, "Pass `use_reentrant=False`", lambda: replace_node(ctx.analysis, passed, "False"))

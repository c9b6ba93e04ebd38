"""CKP005 reentrant-checkpoint-not-needed (opt-in), on CPython's ``ast``, over the reads and writes of
:mod:`ckptlint.checkpoint.analyses.ast_outer_reads` and ``ast_outer_writes``.

What ``ast`` lacks is read from what it keeps: ``True`` is a constant (its range, and so
the fix's, leaves out parentheses on both sides); an attribute's name is a string."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ckptlint.checkpoint.analyses.ast_outer_reads import mutable_reads
from ckptlint.checkpoint.analyses.ast_outer_writes import outer_writes
from ckptlint.checkpoint.sites.options import OptionOrigin, OptionState
from ckptlint.checkpoint.sites.site import SiteForm
from ckptlint.facts.apis import ApiKind
from ckptlint.rules.base import Invalid, Rule, RuleContext
from ckptlint.rules.edits import replace_node
from ckptlint.text.diagnostics import Applicability, Fix

#: Calls in a region whose result or effect differs between the variants: the reentrant
#: variant runs the forward under ``no_grad`` (torch/utils/checkpoint.py 2.13,
#: ``CheckpointFunction.forward``), so code that reads or sets grad mode takes another branch
#: under the other variant; a backward inside the region is re-entered differently.
GRAD_SENSITIVE = frozenset(
    {
        "torch.is_grad_enabled",
        "torch.set_grad_enabled",
        "torch.enable_grad",
        "torch.no_grad",
        "torch.inference_mode",
        "torch.is_inference_mode_enabled",
        "torch.autograd.grad",
        "torch.autograd.backward",
        "torch.autograd.set_grad_enabled",
        "torch.autograd.enable_grad",
        "torch.autograd.no_grad",
        "torch.autograd.grad_mode.set_grad_enabled",
        "torch.autograd.grad_mode.no_grad",
        "torch.autograd.grad_mode.enable_grad",
    }
)


if TYPE_CHECKING:
    from ckptlint.checkpoint.evaluator.ast_region import AstRegion
    from ckptlint.checkpoint.sites.ast_site_builders import AstSite


class ReentrantCheckpointNotNeeded(Rule):
    """Flags an explicit ``use_reentrant=True`` where nothing in the recomputed region needs
    the legacy reentrant variant (opt-in: the choice was written on purpose, or by the
    ``use_reentrant=True`` fix older releases of ckptlint applied to silence the warning).

    Reported only where the region is fully resolved (no call into code ckptlint cannot see,
    none cut at the depth limit) and none of these, which tell the variants apart inside the
    region, occurs: a read or change of grad mode, a ``backward``/``torch.autograd.grad``, a
    write to outer state (the non-reentrant variant stops recomputing early, so a side effect
    after the last saved tensor runs once instead of twice), a read of outer state that may
    change before backward (the non-reentrant variant checks the recomputed tensors' metadata
    and raises ``CheckpointError``). The fix, ``use_reentrant=False``, is unsafe: what the
    inputs and the code around the call do (which inputs require grad, ``torch.autograd.grad``
    elsewhere, DDP) still differs between the variants.
    """

    code = "CKP005"

    VALID = (
        # the region reads grad mode: the variants take different branches
        """\
        import torch
        from torch.utils.checkpoint import checkpoint
        def f(x):
            if torch.is_grad_enabled():
                return x * 2
            return x
        checkpoint(f, x, use_reentrant=True)
        """,
        # an unknown callable: what it needs is not known
        """\
        from torch.utils.checkpoint import checkpoint
        def run(block, x):
            return checkpoint(block, x, use_reentrant=True)
        """,
        # the omitted keyword is CKP001's
        """\
        from torch.utils.checkpoint import checkpoint
        def f(x):
            return x.sin()
        checkpoint(f, x)
        """,
    )
    INVALID = (
        Invalid(
            """\
            from torch.utils.checkpoint import checkpoint
            def f(x):
                return x.sin() * 2
            y = checkpoint(f, x, use_reentrant=True)
            """,
            at=(4, 5),
            message="`checkpoint()` passes `use_reentrant=True`, but nothing in the region it recomputes needs",
            fixed="""\
            from torch.utils.checkpoint import checkpoint
            def f(x):
                return x.sin() * 2
            y = checkpoint(f, x, use_reentrant=False)
            """,
        ),
        Invalid(
            """\
            from torch import nn
            from torch.utils.checkpoint import checkpoint_sequential
            layers = nn.Sequential(nn.Linear(4, 4), nn.GELU())
            y = checkpoint_sequential(layers, 2, x, True)
            """,
            at=(4, 5),
            message="`checkpoint_sequential()` passes `use_reentrant=True`",
            fixed="""\
            from torch import nn
            from torch.utils.checkpoint import checkpoint_sequential
            layers = nn.Sequential(nn.Linear(4, 4), nn.GELU())
            y = checkpoint_sequential(layers, 2, x, False)
            """,
        ),
    )
    reads_regions = True

    def check(self, ctx: RuleContext) -> None:
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


def _nothing_needs_reentrant(ctx: RuleContext, region: AstRegion) -> bool:
    """The region is fully seen and nothing in it tells the variants apart (the rule's
    class docstring)."""
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


def _fix(ctx: RuleContext, passed: ast.Constant) -> Fix | None:
    """``use_reentrant=False``: unsafe, the variant changes (``rules/CKP005.md``, "Fix
    safety"); dropped where libcst refuses the statement
    (:meth:`RuleContext.fix_from`)."""
    return ctx.fix_from(Applicability.UNSAFE, "Pass `use_reentrant=False`", lambda: replace_node(ctx.analysis, passed, "False"))

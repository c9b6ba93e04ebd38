"""CKP101 rng-state-not-preserved, on CPython's ``ast``, over
the random ops of :mod:`ckptlint.checkpoint.analyses.ast_randomness`.

The option's argument is an ``ast.keyword`` (or a positional expression); the finding covers
the whole argument (``RuleContext.report(..., whole=True)``). The call a message quotes is
its callee's source code, with its own parentheses
(:func:`~ckptlint.checkpoint.analyses.ast_outer_state.node_code`)."""

from __future__ import annotations

import ast
from dataclasses import replace
from functools import partial

from ckptlint.checkpoint.analyses.ast_outer_state import node_code
from ckptlint.checkpoint.analyses.ast_randomness import AstRandomOp, random_ops
from ckptlint.checkpoint.evaluator.ast_region import AstFrame, site_label
from ckptlint.checkpoint.evaluator.region import MAX_DEPTH
from ckptlint.checkpoint.sites.ast_site_builders import AstSite
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.checkpoint.sites.site import SiteForm
from ckptlint.rules.base import Invalid, Rule, RuleContext
from ckptlint.rules.edits import remove_argument
from ckptlint.semantic.ast_analysis import AstAnalysis
from ckptlint.text.diagnostics import Applicability


class RngStateNotPreserved(Rule):
    """``preserve_rng_state=False`` on a checkpoint whose region draws random numbers.

    torch.utils.checkpoint (2.9, unchanged in 2.13) forks and restores the RNG state around
    recomputation only when ``preserve_rng_state`` is true; with ``False`` the recomputed
    dropout masks differ from the forward's and gradients are silently wrong.
    """

    code = "CKP101"

    VALID = (
        """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(4, 4)
            def f(self, x):
                return self.lin(x)
            def forward(self, x):
                return checkpoint(self.f, x, use_reentrant=False, preserve_rng_state=False)
        """,
        """\
        import torch.nn.functional as F
        from torch.utils.checkpoint import checkpoint
        def f(x):
            return F.dropout(x, p=0.1)
        checkpoint(f, x, use_reentrant=False)
        """,
        """\
        import torch.nn.functional as F
        from torch.utils.checkpoint import checkpoint
        def f(x):
            return F.dropout(x, p=0.0)
        checkpoint(f, x, use_reentrant=False, preserve_rng_state=False)
        """,
    )
    INVALID = (
        Invalid(
            """\
            import torch.nn.functional as F
            from torch.utils.checkpoint import checkpoint
            def f(x):
                return F.dropout(x, p=0.1)
            checkpoint(f, x, use_reentrant=False, preserve_rng_state=False)
            """,
            at=(5, 39),
            message="recomputed by the checkpoint at <string>.py:5 draws random numbers (F.dropout at line 4)",
            fixed="""\
            import torch.nn.functional as F
            from torch.utils.checkpoint import checkpoint
            def f(x):
                return F.dropout(x, p=0.1)
            checkpoint(f, x, use_reentrant=False)
            """,
        ),
        Invalid(
            """\
            from torch.utils.checkpoint import checkpoint
            def run(fn, x):
                return checkpoint(fn, x, use_reentrant=False, preserve_rng_state=False)
            """,
            at=(3, 51),
            message="`preserve_rng_state=False` on the checkpoint at <string>.py:3",
            fixed="""\
            from torch.utils.checkpoint import checkpoint
            def run(fn, x):
                return checkpoint(fn, x, use_reentrant=False, preserve_rng_state=False)
            """,
        ),
        # the option comes from a `**` dictionary: no argument to remove, no fix
        Invalid(
            """\
            import torch.nn.functional as F
            from torch.utils.checkpoint import checkpoint
            def f(x):
                return F.dropout(x, 0.1)
            opts = {'preserve_rng_state': False}
            y = checkpoint(f, x, use_reentrant=False, **opts)
            """,
            at=(6, 5),
            message="`preserve_rng_state=False` but the region recomputed by the checkpoint at <string>.py:6 draws random numbers",
        ),
    )
    reads_regions = True

    def check(self, ctx: RuleContext) -> None:
        analysis = ctx.analysis
        groups: dict[int, list[AstSite]] = {}
        owners: dict[int, AstSite] = {}
        for site in ast_site_index(analysis).sites:
            option = site.option("preserve_rng_state")
            if not option.is_false or ctx.recomputes_nothing(site):
                continue  # a call that always raises recomputes nothing (CKP002 reports it)
            owner: ast.AST = option.arg if option.arg is not None else site.call
            if site.form is SiteForm.BOUND_CALL and site.binding is not None and option.arg is None:
                owner = site.binding.call
            groups.setdefault(id(owner), []).append(site)
            owners.setdefault(id(owner), site)
        for key, sites in groups.items():
            judged = [s for s in sites if s.function is not None] or sites
            strong: tuple[AstSite, AstRandomOp] | None = None
            maybe: tuple[AstSite, AstRandomOp] | None = None  # a random op whose switch is not known
            unresolved = False
            unseen: tuple[AstSite, tuple[ast.Call, AstFrame]] | None = None
            deep = False
            for site in judged:
                region = ctx.regions.region(site, analysis)
                ops = [op for op in random_ops(region) if op.active is not False]
                sure = [op for op in ops if op.active]
                if sure:
                    strong = (site, sure[0])
                    break
                if ops and maybe is None:
                    maybe = (site, ops[0])
                if not region.resolved:
                    unresolved = True
                elif (region.partial or region.cut_calls) and unseen is None:
                    unseen = (site, (region.unknown_calls or region.cut_calls)[0])
                    deep = not region.unknown_calls
            first = owners[key]
            option = first.option("preserve_rng_state")
            node: ast.AST = option.arg if option.arg is not None else first.call
            call = first.call
            fix = None
            if option.arg is not None and any(a is option.arg for a in (*call.args, *call.keywords)):
                fix = ctx.fix_from(
                    Applicability.UNSAFE,
                    "Remove `preserve_rng_state=False`",
                    partial(remove_argument, analysis, call, option.arg),
                )
            shown = strong or maybe
            if shown is not None:
                site, op = shown
                where = site_label(site, analysis, analysis)
                at = f"{_short(op.analysis, analysis)}{op.analysis.range(op.node)[0][0]}"
                draws = (
                    f"draws random numbers ({op.name} at {at}): recomputation draws"
                    if strong is not None
                    else f"may draw random numbers ({op.name} at {at}, whose dropout probability or training "
                    "switch ckptlint cannot read): when it does, recomputation draws"
                )
                ctx.report(
                    node,
                    f"`preserve_rng_state=False` but the region recomputed by the checkpoint at {where} "
                    f"{draws} different values and gradients are silently wrong; keep the default "
                    "`preserve_rng_state=True`",
                    fix=fix,
                    site=first,
                    whole=True,
                )
            elif (unresolved or unseen is not None) and not _fixed_by_helper(first):
                where = site_label(first, analysis, analysis)
                if fix is not None:  # not known to be wrong: show the change, never apply it
                    fix = replace(fix, applicability=Applicability.DISPLAY_ONLY)
                what = "what it recomputes"
                if not unresolved and unseen is not None:
                    unseen_call, frame = unseen[1]
                    text = node_code(frame.analysis, unseen_call.func).strip()
                    at = f"{_short(frame.analysis, analysis)}{frame.analysis.range(unseen_call)[0][0]}"
                    why = f"below the {MAX_DEPTH} levels of calls ckptlint follows" if deep else "which is not resolved"
                    what = f"all of what it recomputes (the region calls `{text}(...)` at {at}, {why})"
                ctx.report(
                    node,
                    f"`preserve_rng_state=False` on the checkpoint at {where}: ckptlint cannot see {what}; "
                    "if that code draws random numbers in training (a dropout with p > 0, LoRA or attention "
                    "dropout, `torch.rand*`), recomputation draws different values and gradients are silently wrong",
                    fix=fix,
                    site=first,
                    whole=True,
                )


def _fixed_by_helper(site: AstSite) -> bool:
    """A call of a helper that passes ``preserve_rng_state=False`` itself: without a region
    that draws random numbers, the doubt is the helper's, reported at its own call."""
    return site.form is SiteForm.HELPER_CALL and "preserve_rng_state" not in site.caller_options


def _short(where: AstAnalysis, here: AstAnalysis) -> str:
    """``""`` for the same file, else ``"layers.py:"``-style prefix."""
    if where is here:
        return "line "
    from pathlib import Path

    return f"{Path(where.source.path).name}:"

"""CKP304 checkpoint-without-grad, on CPython's ``ast``, over the
grad modes of :mod:`ckptlint.checkpoint.analyses.ast_grad_mode`."""

from __future__ import annotations

from ckptlint.checkpoint.analyses.ast_grad_mode import GradMode, grad_mode_at
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.checkpoint.sites.site import SiteForm
from ckptlint.facts.apis import ApiKind
from ckptlint.rules.base import Invalid, Rule, RuleContext


class CheckpointWithoutGrad(Rule):
    """Flags checkpoint calls that run with autograd recording off.

    Under ``torch.no_grad()`` / ``torch.inference_mode()`` nothing is recorded, so there is
    no backward and nothing to recompute: the non-reentrant variant runs the function once
    and installs no hooks, the reentrant one runs it once inside its autograd Function and
    may warn "None of the inputs have requires_grad=True" (torch/utils/checkpoint.py 2.9,
    verified on 2.13: one call, output without grad). The checkpoint only adds overhead —
    or the code meant to train and the context is a mistake. A nested
    ``torch.enable_grad()`` / ``torch.set_grad_enabled(True)`` turns recording back on and
    is not reported; so is anything decided at run time (``set_grad_enabled(flag)``).
    Only the lexical context of the call's own function counts (see
    :mod:`ckptlint.checkpoint.analyses.grad_mode`).
    """

    code = "CKP304"

    VALID = (
        """\
        import torch
        from torch.utils.checkpoint import checkpoint
        with torch.no_grad():
            with torch.enable_grad():
                y = checkpoint(f, x, use_reentrant=False)
        """,
        """\
        import torch
        from torch.utils.checkpoint import checkpoint
        with torch.no_grad():
            def run(x):
                return checkpoint(f, x, use_reentrant=False)
        """,
        """\
        import torch
        from torch.utils.checkpoint import checkpoint
        with torch.set_grad_enabled(training):
            y = checkpoint(f, x, use_reentrant=False)
        """,
        """\
        import torch
        from torch.utils.checkpoint import checkpoint
        with torch.inference_mode(False):
            y = checkpoint(f, x, use_reentrant=False)
        """,
        """\
        import torch
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
        with torch.no_grad():
            block = checkpoint_wrapper(block)
        """,
    )
    INVALID = (
        Invalid(
            """\
            import torch
            from torch.utils.checkpoint import checkpoint
            with torch.no_grad():
                y = checkpoint(f, x, use_reentrant=False)
            """,
            at=(4, 9),
            message="`checkpoint()` runs inside `torch.no_grad()` (line 3)",
        ),
        Invalid(
            """\
            from torch import inference_mode
            from torch.utils.checkpoint import checkpoint_sequential
            @inference_mode()
            def predict(m, x):
                return checkpoint_sequential(m, 2, x, use_reentrant=False)
            """,
            at=(5, 12),
            message="`checkpoint_sequential()` runs decorated with `inference_mode()` (line 3)",
        ),
        Invalid(
            """\
            import torch
            from torch.utils.checkpoint import checkpoint
            @torch.no_grad
            def predict(x):
                return checkpoint(f, x, use_reentrant=False)
            """,
            at=(5, 12),
            message="`checkpoint()` runs decorated with `torch.no_grad` (line 3)",
        ),
        Invalid(
            """\
            import torch
            from torch.utils.checkpoint import checkpoint
            with torch.enable_grad():
                with torch.set_grad_enabled(False):
                    y = checkpoint(f, x, use_reentrant=False)
            """,
            at=(5, 13),
            message="`checkpoint()` runs inside `torch.set_grad_enabled(False)` (line 4)",
        ),
    )

    def check(self, ctx: RuleContext) -> None:
        analysis = ctx.analysis
        model = analysis.model
        for site in ast_site_index(analysis).sites:
            if site.api.kind not in (ApiKind.FUNCTION, ApiKind.SEQUENTIAL) or site.form is SiteForm.PARTIAL:
                continue
            if site.save_misuse is not None:
                continue
            context = grad_mode_at(site.call, model)
            if context.mode is not GradMode.DISABLED or context.node is None:
                continue
            row = analysis.range(context.node)[0][0]
            how = "decorated with" if context.decorator else "inside"
            spelled = analysis.text_of(context.node)
            short = site.api.name.rsplit(".", 1)[-1]
            ctx.report(
                site.call,
                f"`{short}()` runs {how} `{spelled}` (line {row}): autograd records nothing, so nothing "
                "is saved for backward or recomputed and the checkpoint only adds overhead; call the "
                "function directly here, or enable grad if this code is meant to train",
                site=site,
            )

"""CKP301 checkpoint-used-as-save, on CPython's ``ast``."""

from __future__ import annotations

from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.rules.base import Invalid, Rule, RuleContext
from ckptlint.rules.save_advice import save_message, torch_save_fix


class CheckpointUsedAsSave(Rule):
    """Flags activation-checkpoint calls that try to save (or load) training state.

    ``torch.utils.checkpoint.checkpoint`` recomputes a function during backward; it writes
    nothing anywhere. Called with a state dict it fails (``'collections.OrderedDict' object
    is not callable``); "fixed" by wrapping a callable, it runs silently and saves nothing.
    How calls are classified: :mod:`ckptlint.checkpoint.sites.misuse`.
    """

    code = "CKP301"

    VALID = (
        """\
        from torch.utils.checkpoint import checkpoint
        y = checkpoint(block, x, use_reentrant=False)
        """,
        """\
        from torch.utils.checkpoint import checkpoint
        y = checkpoint(self.attn, x, 'causal', use_reentrant=False)
        """,
        """\
        from torch.utils.checkpoint import checkpoint
        def save_memory_forward(self, x):
            return checkpoint(self.block, x, use_reentrant=False)
        """,
        """\
        import torch
        def checkpoint(state, path):
            torch.save(state, path)
        checkpoint(model.state_dict(), 'm.pt')
        """,
        """\
        from torch.utils.checkpoint import checkpoint
        for path in self.paths:
            x = checkpoint(path, x, use_reentrant=False)
        """,
    )
    INVALID = (
        Invalid(
            """\
            import torch.utils.checkpoint
            torch.utils.checkpoint.checkpoint(model.state_dict(), 'model.pt')
            """,
            at=(2, 1),
            message="`checkpoint()` is activation checkpointing, not saving training state",
            fixed="""\
            import torch.utils.checkpoint
            torch.utils.checkpoint.checkpoint(model.state_dict(), 'model.pt')
            """,
        ),
        Invalid(
            """\
            from torch.utils.checkpoint import checkpoint
            checkpoint({'model': m, 'epoch': e}, path)
            """,
            at=(2, 1),
            message="`checkpoint()` is activation checkpointing, not saving training state",
            fixed="""\
            from torch.utils.checkpoint import checkpoint
            checkpoint({'model': m, 'epoch': e}, path)
            """,
        ),
        Invalid(
            """\
            from torch.utils.checkpoint import checkpoint
            checkpoint(optimizer, 'opt.pt')
            """,
            at=(2, 1),
            message="`checkpoint()` is activation checkpointing, not saving training state",
            fixed="""\
            from torch.utils.checkpoint import checkpoint
            checkpoint(optimizer, 'opt.pt')
            """,
        ),
        Invalid(
            """\
            import torch
            from torch.utils.checkpoint import checkpoint
            checkpoint(torch.save, state, path)
            """,
            at=(3, 1),
            message="`checkpoint()` is activation checkpointing, not saving training state",
            fixed="""\
            import torch
            from torch.utils.checkpoint import checkpoint
            checkpoint(torch.save, state, path)
            """,
        ),
        Invalid(
            """\
            from torch.utils.checkpoint import checkpoint
            def save_checkpoint(model, path):
                checkpoint(model, path)
            """,
            at=(3, 5),
            message="`checkpoint()` is activation checkpointing, not saving training state",
            fixed="""\
            from torch.utils.checkpoint import checkpoint
            def save_checkpoint(model, path):
                checkpoint(model, path)
            """,
        ),
        # no destination: there is no `torch.save(...)` call to suggest
        Invalid(
            """\
            from torch.utils.checkpoint import checkpoint
            checkpoint(model.state_dict())
            """,
            at=(2, 1),
            message="`checkpoint()` is activation checkpointing, not saving training state",
        ),
    )

    def check(self, ctx: RuleContext) -> None:
        for site in ast_site_index(ctx.analysis).sites:
            misuse = site.save_misuse
            if misuse is None:
                continue
            short = site.api.name.rsplit(".", 1)[-1]
            ctx.report(
                site.call, save_message(f"`{short}()`", misuse), fix=torch_save_fix(ctx, ctx.analysis, site.call, misuse), site=site
            )

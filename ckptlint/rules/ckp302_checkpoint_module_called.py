"""CKP302 checkpoint-module-called, on CPython's ``ast``."""

from __future__ import annotations

import ast
from functools import partial

from ckptlint.checkpoint.sites.ast_misuse import AstSaveMisuse, save_misuse_of_arguments
from ckptlint.checkpoint.sites.ast_options import ordered_arguments
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.rules.base import Invalid, Rule, RuleContext
from ckptlint.rules.edits import replace_node
from ckptlint.rules.save_advice import save_advice, torch_save_fix
from ckptlint.text.diagnostics import Applicability


class CheckpointModuleCalled(Rule):
    """Flags calls of the ``torch.utils.checkpoint`` *module*.

    ``from torch.utils import checkpoint`` (or ``import torch.utils.checkpoint as
    checkpoint``) binds the module, and ``checkpoint(fn, x)`` raises
    ``TypeError: 'module' object is not callable``. The function is
    ``checkpoint.checkpoint``. When the arguments look like saving training state (a state
    dict, a path...), the call was never meant as activation checkpointing: the message says
    so and only a display-only ``torch.save`` form is offered.
    """

    code = "CKP302"

    VALID = (
        """\
        from torch.utils import checkpoint
        y = checkpoint.checkpoint(f, x, use_reentrant=False)
        """,
        """\
        from torch.utils.checkpoint import checkpoint
        y = checkpoint(f, x, use_reentrant=False)
        """,
        """\
        import torch.utils.checkpoint
        def checkpoint(step):
            pass
        checkpoint(3)
        """,
    )
    INVALID = (
        Invalid(
            """\
            from torch.utils import checkpoint
            y = checkpoint(f, x, use_reentrant=False)
            """,
            at=(2, 5),
            message="`checkpoint` is the `torch.utils.checkpoint` module, not a function",
            fixed="""\
            from torch.utils import checkpoint
            y = checkpoint.checkpoint(f, x, use_reentrant=False)
            """,
        ),
        Invalid(
            """\
            import torch
            y = torch.utils.checkpoint(f, x, use_reentrant=False)
            """,
            at=(2, 5),
            message="`torch.utils.checkpoint` is the `torch.utils.checkpoint` module, not a function",
            fixed="""\
            import torch
            y = torch.utils.checkpoint.checkpoint(f, x, use_reentrant=False)
            """,
        ),
        Invalid(
            """\
            from torch.utils import checkpoint
            checkpoint(model.state_dict(), 'model.pt')
            """,
            at=(2, 1),
            message="and activation checkpointing does not save training state either: its callable is a `state_dict()` call",
            fixed="""\
            from torch.utils import checkpoint
            checkpoint(model.state_dict(), 'model.pt')
            """,
        ),
        # a save without a destination: no `torch.save(...)` to suggest
        Invalid(
            """\
            from torch.utils import checkpoint
            checkpoint(model.state_dict())
            """,
            at=(2, 1),
            message="`checkpoint` is the `torch.utils.checkpoint` module, not a function",
        ),
    )

    def check(self, ctx: RuleContext) -> None:
        analysis = ctx.analysis
        for call in ast_site_index(analysis).module_calls:
            callee = analysis.text_of(call.func)
            what = f"`{callee}` is the `torch.utils.checkpoint` module"
            misuse = _save_misuse(call, ctx)
            if misuse is not None:
                ctx.report(
                    call,
                    f"{what}, not a function (TypeError: 'module' object is not callable), and "
                    f"activation checkpointing does not save training state either: {misuse.reason}. "
                    + save_advice(misuse),
                    fix=torch_save_fix(ctx, analysis, call, misuse),
                    guarded=call,
                )
                continue
            fix = ctx.fix_from(
                Applicability.SAFE,
                f"Call `{callee}.checkpoint(...)`",
                partial(replace_node, analysis, call.func, f"{callee}.checkpoint"),
            )
            ctx.report(
                call,
                f"{what}, not a function: calling it raises TypeError ('module' object is not "
                f"callable); call `{callee}.checkpoint(...)`",
                fix=fix,
                guarded=call,
            )


def _save_misuse(call: ast.Call, ctx: RuleContext) -> AstSaveMisuse | None:
    """The save misuse of ``call`` read from its arguments: those without a name (``*``/``**`` ones included, in source
    order), the first a plain expression, the rest its inputs; the named ones its keywords."""
    arguments = ordered_arguments(call)
    args = [arg for arg in arguments if not (isinstance(arg, ast.keyword) and arg.arg is not None)]
    if not args or isinstance(args[0], (ast.Starred, ast.keyword)):
        return None
    keywords = [arg for arg in arguments if isinstance(arg, ast.keyword) and arg.arg is not None]
    return save_misuse_of_arguments(args[0], args[1:], keywords, call, ctx.analysis.model)

"""Corners of the reentrancy rules ported to CPython's ``ast`` (CKP002's twin, and CKP001's
when ported): hand-written programs for the branches the rule examples and the suite leave
thin, each compared by ``benchmarks/ast_rules_parity.py`` (diagnostics in order, messages,
ranges, fixes byte for byte) and each reported on both sides."""

from __future__ import annotations

import textwrap

import pytest
from test_ast_rules import parity

CORNERS = {
    "CKP002: a ** dictionary that surely passes function keywords": """
        from torch.utils.checkpoint import checkpoint
        def f(block, x, c, kwargs, flag):
            extra = {"cu_seqlens": c, **kwargs}
            checkpoint(block, x, **extra)
            other = {"mask": c} if flag else {"bias": c, **kwargs}
            checkpoint(block, x, **other)
            checkpoint(block, x, **{"mask": c, "use_reentrant": flag, **kwargs})
            checkpoint(block, x, **(kwargs if flag else {}))
    """,
    "CKP002: a partial, a call through it, ignored options": """
        import functools
        from torch.utils.checkpoint import checkpoint
        ckpt = functools.partial(checkpoint, preserve_rng_state=False)
        def f(block, x, m):
            ckpt(block, x, mask=m)
            checkpoint(block, x, early_stop=True, determinism_check="default")
            checkpoint(block, x, determinism_check="none", debug=None)
            checkpoint(block, x, use_reentrant=True, determinism_check=mode)
            part = functools.partial(checkpoint, block, mask=m)
    """,
    "CKP002: keywords the function refuses, and a variable use_reentrant": """
        from torch.utils.checkpoint import checkpoint
        def block(x, scale=1.0):
            return x * scale
        def f(x, m, flag=None):
            checkpoint(block, x, mask=m)
            checkpoint(block, x, scale=m)
            checkpoint(block, x, scale=m, use_reentrant=None)
            checkpoint(
                block,
                x,
                scale=m,  # the scale
            )
            reentrant = True
            checkpoint(block, x, scale=m, use_reentrant=reentrant)
    """,
    "CKP002: checkpoint_sequential and composable checkpoint": """
        import torch.utils.checkpoint as cp
        from torch.distributed._composable import checkpoint
        def f(m, x, y, flag, kw):
            cp.checkpoint_sequential(m, 2, x, y, True)
            cp.checkpoint_sequential(m, 2, x, use_reentrant_flag)
            cp.checkpoint_sequential(m, 2, x, None, mask=y, bias=y)
            cp.checkpoint_sequential(m, 2, *x, mask=y)
            checkpoint(m, use_reentrant=True, mask=y)
            checkpoint(m, use_reentrant=flag, **kw)
    """,
    "CKP002: checkpoint_wrapper with the reentrant implementation": """
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl, checkpoint_wrapper
        def wrap(block, ctx):
            a = checkpoint_wrapper(block, CheckpointImpl.REENTRANT, context_fn=ctx, debug=True)
            b = checkpoint_wrapper(block, checkpoint_impl=CheckpointImpl.REENTRANT, mask=ctx)
            return a, b
    """,
}


@pytest.mark.parametrize("label", sorted(CORNERS))
def test_corners(label: str) -> None:
    found = parity.compare(textwrap.dedent(CORNERS[label]), "pkg.mod", (label[:6],))
    assert found.mismatches == []
    assert found.diagnostics[label[:6]] >= 1

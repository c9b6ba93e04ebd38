"""Corners of the reentrancy rules ported to CPython's ``ast`` (CKP002's twin, and CKP001's
when ported): hand-written programs for the branches the rule examples and the suite leave
thin, each compared by ``benchmarks/ast_rules_parity.py`` (diagnostics in order, messages,
ranges, fixes byte for byte) and each reported on both sides."""

from __future__ import annotations

import textwrap

import pytest
from test_ast_rules import parity

from ckptlint.config.declarations import parse_target_version_option

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


CKP001_CORNERS = {
    "CKP001: Hugging Face switches, dictionaries and receivers": """
        from transformers import AutoModel, TrainingArguments
        class Old:
            def _set_gradient_checkpointing(self, module, value=False):
                module.gradient_checkpointing = value
        class Own:
            def gradient_checkpointing_enable(self):
                pass
        def train(flag, kw, name):
            model = AutoModel.from_pretrained(name, trust_remote_code=True)
            model.gradient_checkpointing_enable()
            other = AutoModel.from_pretrained(name, trust_remote_code=flag)
            other.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": None})
            third = AutoModel.from_pretrained(name)
            third.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"preserve_rng_state": True})
            third.gradient_checkpointing_enable(gradient_checkpointing_kwargs=None)
            third.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrnt": False})
            third.gradient_checkpointing_enable(**kw)
            Old().gradient_checkpointing_enable()
            Own().gradient_checkpointing_enable()
            args = TrainingArguments("out", gradient_checkpointing=True)
            args = TrainingArguments("out", gradient_checkpointing=True, gradient_checkpointing_kwargs=kw)
            args = TrainingArguments(
                "out",
                gradient_checkpointing=True,
                gradient_checkpointing_kwargs={
                    "debug": False,  # keep
                },
            )
    """,
    "CKP001: direct calls, None, grad mode, partials and helpers": """
        import functools
        import torch
        from torch.utils.checkpoint import checkpoint, checkpoint_sequential
        ckpt = functools.partial(checkpoint, preserve_rng_state=False)
        both = functools.partial(checkpoint)
        def helper(fn, *args, reentrant=None, **kwargs):
            return checkpoint(fn, *args, use_reentrant=reentrant, **kwargs)
        def through(fn, *args, **kwargs):
            fn(*args, **kwargs)
            return checkpoint(fn, *args, **kwargs)
        def block(x, scale=1.0):
            return x
        def f(x, m, kw):
            checkpoint(block, x)
            checkpoint(block, x, use_reentrant=None)
            checkpoint(block, x, scale=m)
            checkpoint(block, x, mask=m)
            checkpoint(block, x, **kw)
            checkpoint(block, x, **{"scale": m})
            checkpoint_sequential(block, 2, x, None)
            with torch.no_grad():
                checkpoint(block, x)
            ckpt(block, x)
            both(block, x, use_reentrant=False)
            helper(block, x)
            through(block, x)
            checkpoint(block, x, context_fn=m)
            checkpoint(
                block,
                x,  # the input
            )
    """,
}

_VERSIONS = {
    "old transformers and peft": ("transformers>=4.30,<4.40", "peft<0.6"),
    "timm before 1.0.13": ("timm<1.0.13",),
}

PEFT_AND_TIMM = """
    from peft import prepare_model_for_kbit_training
    from timm.models import checkpoint_seq
    from transformers import AutoModel
    def f(model, x, blocks, flag):
        model = prepare_model_for_kbit_training(model)
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=flag)
        model = prepare_model_for_kbit_training(model, gradient_checkpointing_kwargs={"debug": False})
        m = AutoModel.from_pretrained("x")
        m.gradient_checkpointing_enable()
        return checkpoint_seq(blocks, x)
"""


@pytest.mark.parametrize("label", sorted(CKP001_CORNERS))
def test_ckp001_corners(label: str) -> None:
    found = parity.compare(textwrap.dedent(CKP001_CORNERS[label]), "pkg.mod", ("CKP001",))
    assert found.mismatches == []
    assert found.diagnostics["CKP001"] >= 5 and found.fixes >= 3


@pytest.mark.parametrize("versions", [(), *_VERSIONS.values()], ids=["undeclared", *_VERSIONS])
def test_ckp001_with_declared_versions(versions: tuple[str, ...]) -> None:
    targets = tuple(parse_target_version_option(version) for version in versions)
    found = parity.compare(textwrap.dedent(PEFT_AND_TIMM), "pkg.mod", ("CKP001",), target_versions=targets)
    assert found.mismatches == []
    assert found.diagnostics["CKP001"] >= 2

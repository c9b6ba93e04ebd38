"""Hand-written corners of the rules on reentrancy (CKP001, CKP002): the findings of each (code, range, and the
applicability of its fix), with transformers 5.24 or later declared where that changes them.
They were checked finding for finding against the libcst rules before those were removed
(the port to ``ast``); these records hold what both reported."""

from __future__ import annotations

import pytest

from ckptlint.testing import lint
from ckptlint.text.diagnostics import Diagnostic

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

EXPECTED = {'CKP002: a ** dictionary that surely passes function keywords': {'plain': [('CKP002', (5, 5), (5, 34), None),
                                                                            ('CKP002',
                                                                             (7, 5),
                                                                             (7, 34),
                                                                             None)]},
 'CKP002: a partial, a call through it, ignored options': {'plain': [('CKP001', (4, 8), (4, 63), 'unsafe'),
                                                                     ('CKP101',
                                                                      (4, 38),
                                                                      (4, 62),
                                                                      'display-only'),
                                                                     ('CKP002', (6, 5), (6, 27), None),
                                                                     ('CKP001', (7, 5), (7, 71), 'unsafe'),
                                                                     ('CKP002', (7, 5), (7, 71), 'unsafe'),
                                                                     ('CKP001', (8, 5), (8, 63), 'safe'),
                                                                     ('CKP002', (8, 5), (8, 63), 'safe'),
                                                                     ('CKP002', (9, 5), (9, 69), None),
                                                                     ('CKP001', (10, 12), (10, 56), 'safe'),
                                                                     ('CKP002', (10, 12), (10, 56), 'safe')]},
 'CKP002: keywords the function refuses, and a variable use_reentrant': {'plain': [('CKP002',
                                                                                    (6, 5),
                                                                                    (6, 33),
                                                                                    None),
                                                                                   ('CKP001',
                                                                                    (7, 5),
                                                                                    (7, 34),
                                                                                    'safe'),
                                                                                   ('CKP002',
                                                                                    (7, 5),
                                                                                    (7, 34),
                                                                                    'safe'),
                                                                                   ('CKP001',
                                                                                    (8, 5),
                                                                                    (8, 54),
                                                                                    'safe'),
                                                                                   ('CKP002',
                                                                                    (8, 5),
                                                                                    (8, 54),
                                                                                    'safe'),
                                                                                   ('CKP001',
                                                                                    (9, 5),
                                                                                    (13, 6),
                                                                                    'safe'),
                                                                                   ('CKP002',
                                                                                    (9, 5),
                                                                                    (13, 6),
                                                                                    'safe'),
                                                                                   ('CKP002',
                                                                                    (15, 5),
                                                                                    (15, 59),
                                                                                    None)]},
 'CKP002: checkpoint_sequential and composable checkpoint': {'plain': [('CKP002', (5, 5), (5, 47), None),
                                                                       ('CKP001', (7, 5), (7, 60), 'safe'),
                                                                       ('CKP002', (7, 5), (7, 60), None),
                                                                       ('CKP002', (8, 5), (8, 47), None),
                                                                       ('CKP002', (9, 5), (9, 46), None)]},
 'CKP002: checkpoint_wrapper with the reentrant implementation': {'plain': [('CKP002', (4, 9), (4, 88), None),
                                                                            ('CKP002',
                                                                             (5, 9),
                                                                             (5, 86),
                                                                             None)]},
 'CKP001: Hugging Face switches, dictionaries and receivers': {'plain': [('CKP001',
                                                                          (11, 5),
                                                                          (11, 42),
                                                                          'unsafe'),
                                                                         ('CKP001',
                                                                          (13, 5),
                                                                          (13, 95),
                                                                          'unsafe'),
                                                                         ('CKP001',
                                                                          (15, 5),
                                                                          (15, 100),
                                                                          'unsafe'),
                                                                         ('CKP001',
                                                                          (16, 5),
                                                                          (16, 76),
                                                                          'unsafe'),
                                                                         ('CKP001', (17, 5), (17, 95), None),
                                                                         ('CKP003',
                                                                          (17, 72),
                                                                          (17, 86),
                                                                          'unsafe'),
                                                                         ('CKP001',
                                                                          (21, 12),
                                                                          (21, 65),
                                                                          'unsafe'),
                                                                         ('CKP001',
                                                                          (23, 12),
                                                                          (29, 6),
                                                                          'unsafe')],
                                                               'new transformers': [('CKP004',
                                                                                     (11, 5),
                                                                                     (11, 42),
                                                                                     'safe'),
                                                                                    ('CKP001',
                                                                                     (13, 5),
                                                                                     (13, 95),
                                                                                     'unsafe'),
                                                                                    ('CKP004',
                                                                                     (13, 5),
                                                                                     (13, 95),
                                                                                     'safe'),
                                                                                    ('CKP001',
                                                                                     (15, 5),
                                                                                     (15, 100),
                                                                                     'unsafe'),
                                                                                    ('CKP004',
                                                                                     (15, 5),
                                                                                     (15, 100),
                                                                                     'safe'),
                                                                                    ('CKP004',
                                                                                     (16, 5),
                                                                                     (16, 76),
                                                                                     'safe'),
                                                                                    ('CKP001',
                                                                                     (17, 5),
                                                                                     (17, 95),
                                                                                     None),
                                                                                    ('CKP004',
                                                                                     (17, 5),
                                                                                     (17, 95),
                                                                                     'safe'),
                                                                                    ('CKP003',
                                                                                     (17, 72),
                                                                                     (17, 86),
                                                                                     'unsafe'),
                                                                                    ('CKP004',
                                                                                     (18, 5),
                                                                                     (18, 46),
                                                                                     'safe'),
                                                                                    ('CKP004',
                                                                                     (19, 5),
                                                                                     (19, 42),
                                                                                     'safe'),
                                                                                    ('CKP004',
                                                                                     (21, 12),
                                                                                     (21, 65),
                                                                                     'safe'),
                                                                                    ('CKP004',
                                                                                     (22, 12),
                                                                                     (22, 99),
                                                                                     'safe'),
                                                                                    ('CKP001',
                                                                                     (23, 12),
                                                                                     (29, 6),
                                                                                     'unsafe'),
                                                                                    ('CKP004',
                                                                                     (23, 12),
                                                                                     (29, 6),
                                                                                     'safe')]},
 'CKP001: direct calls, None, grad mode, partials and helpers': {'plain': [('CKP001',
                                                                            (5, 8),
                                                                            (5, 63),
                                                                            'unsafe'),
                                                                           ('CKP001',
                                                                            (15, 5),
                                                                            (15, 25),
                                                                            'unsafe'),
                                                                           ('CKP001',
                                                                            (16, 5),
                                                                            (16, 45),
                                                                            'unsafe'),
                                                                           ('CKP001',
                                                                            (17, 5),
                                                                            (17, 34),
                                                                            'safe'),
                                                                           ('CKP002',
                                                                            (17, 5),
                                                                            (17, 34),
                                                                            'safe'),
                                                                           ('CKP002',
                                                                            (18, 5),
                                                                            (18, 33),
                                                                            None),
                                                                           ('CKP001',
                                                                            (20, 5),
                                                                            (20, 41),
                                                                            None),
                                                                           ('CKP001',
                                                                            (21, 5),
                                                                            (21, 45),
                                                                            'unsafe'),
                                                                           ('CKP001',
                                                                            (23, 9),
                                                                            (23, 29),
                                                                            'safe'),
                                                                           ('CKP304',
                                                                            (23, 9),
                                                                            (23, 29),
                                                                            None),
                                                                           ('CKP001',
                                                                            (26, 5),
                                                                            (26, 21),
                                                                            'unsafe'),
                                                                           ('CKP001',
                                                                            (27, 5),
                                                                            (27, 22),
                                                                            None),
                                                                           ('CKP001',
                                                                            (28, 5),
                                                                            (28, 39),
                                                                            'safe'),
                                                                           ('CKP002',
                                                                            (28, 5),
                                                                            (28, 39),
                                                                            'safe'),
                                                                           ('CKP001',
                                                                            (29, 5),
                                                                            (32, 6),
                                                                            'unsafe')]}}

EXPECTED_WITH_VERSIONS = {'undeclared': [('CKP001', (6, 13), (6, 51), 'unsafe'),
                ('CKP001', (7, 13), (7, 84), 'unsafe'),
                ('CKP001', (8, 13), (8, 99), 'unsafe'),
                ('CKP001', (10, 5), (10, 38), 'unsafe')],
 'old transformers and peft': [('CKP001', (6, 13), (6, 51), None),
                               ('CKP001', (7, 13), (7, 84), None),
                               ('CKP001', (8, 13), (8, 99), 'unsafe'),
                               ('CKP001', (10, 5), (10, 38), None)],
 'timm before 1.0.13': [('CKP001', (6, 13), (6, 51), 'unsafe'),
                        ('CKP001', (7, 13), (7, 84), 'unsafe'),
                        ('CKP001', (8, 13), (8, 99), 'unsafe'),
                        ('CKP001', (10, 5), (10, 38), 'unsafe'),
                        ('CKP001', (11, 12), (11, 37), None)]}


def _shape(found: list[Diagnostic]) -> list[tuple]:
    return [(d.code, d.start, d.end, None if d.fix is None else d.fix.applicability.value) for d in found]


@pytest.mark.parametrize("label", sorted({**CORNERS, **CKP001_CORNERS}))
def test_corners(label: str) -> None:
    expected = EXPECTED[label]
    assert _shape(lint({**CORNERS, **CKP001_CORNERS}[label], "ALL")) == expected["plain"]
    newer = expected.get("new transformers", expected["plain"])
    assert _shape(lint({**CORNERS, **CKP001_CORNERS}[label], "ALL", versions={"transformers": ">=5.24"})) == newer


@pytest.mark.parametrize("label", ["undeclared", *_VERSIONS])
def test_ckp001_with_declared_versions(label: str) -> None:
    versions = dict(_split(spec) for spec in _VERSIONS.get(label, ()))
    assert _shape(lint(PEFT_AND_TIMM, "ALL", versions=versions)) == EXPECTED_WITH_VERSIONS[label]


def _split(spec: str) -> tuple[str, str]:
    """``("peft", "<0.6")`` of ``"peft<0.6"``."""
    at = min(i for i, c in enumerate(spec) if c in "<>=!~")
    return spec[:at], spec[at:]

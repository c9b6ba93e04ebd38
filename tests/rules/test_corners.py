"""Hand-written corners of the rules: the findings of each (code, range, and the
applicability of its fix), with transformers 5.24 or later declared where that changes them.
They were checked finding for finding against the libcst rules before those were removed
(the port to ``ast``); these records hold what both reported."""

from __future__ import annotations

import pytest

from ckptlint.testing import lint
from ckptlint.text.diagnostics import Diagnostic

CORNERS = {
    "save misuse under a guard, a helper's site": """
        from torch.utils.checkpoint import checkpoint
        class M:
            def save(self, path):
                if self.rank == 0 and not self.dry:
                    checkpoint(self.model.state_dict(), path)
            def save_all(self, path, model):
                checkpoint({'m': model, 'step': 1}, path, use_reentrant=False)
                checkpoint(torch.save, model.state_dict(), path, use_reentrant=False, debug=True)
                checkpoint(torch.load, path, *rest, **more, use_reentrant=True)
    """,
    "the module called, with stars, keywords and a save": """
        import torch.utils.checkpoint as ckpt
        from torch.utils import checkpoint
        def f(x, args, kw):
            if x.requires_grad:
                y = ckpt(block, x, use_reentrant=False)
            checkpoint(*args)
            checkpoint(block, *args, **kw)
            checkpoint(model.state_dict(), path=p)
            checkpoint(optimizer, f"ckpt/{step}.pt", **kw)
            return (checkpoint)(f, x)
    """,
    "distributed checkpoint: annotations, awaits, lambdas, keywords": """
        import torch.distributed.checkpoint as dcp
        from torch import nn
        async def save(model: (nn.Module), net: "MyModel", sd: dict, path):
            dcp.save(model, checkpoint_id=path)
            dcp.save(net, path)
            dcp.save(sd, storage_writer=path)
            x = await dcp.async_save(model, checkpoint_id=path)
            await dcp.load(sd, checkpoint_id=path)
            cb = lambda: dcp.load(sd, checkpoint_id=path)
            out = dcp.load_state_dict(self.model, "out/ckpt")
            dcp.save(*both)
            dcp.save(sd, **kw)
            dcp.save_state_dict(state_dict=ddp_model, storage_writer=os.path.join(root, "x"))
    """,
    "home-made recompute in a guarded class method, and a gradient hook": """
        import torch
        class Recompute(torch.autograd.Function):
            @staticmethod
            def forward(ctx, run, *args):
                ctx.run = run
                ctx.save_for_backward(*args)
                with torch.no_grad():
                    return run(*args)
            @staticmethod
            def backward(ctx, *grads):
                inputs = ctx.saved_tensors
                if ctx.needs_input_grad[1]:
                    with torch.enable_grad():
                        out = ctx.run(*inputs)
                    torch.autograd.backward(out, grads)
                return (None,) + tuple(i.grad for i in inputs)
        def run(f, x):
            return Recompute.apply(f, x)
        class Cache:
            def step(self, model, batch):
                reps = model(batch)
                def hook(grad):
                    with torch.enable_grad():
                        again = model(batch)
                    again.backward(grad)
                reps.register_hook(hook)
    """,
    "rng state not preserved: partial, helper, unresolved and deep regions, unknown callees": """
        import functools
        import torch.nn.functional as F
        from torch.utils.checkpoint import checkpoint
        from mylib import unknown

        def a(x): return b(x)
        def b(x): return c(x)
        def c(x): return d(x)
        def d(x): return e(x)
        def e(x): return F.dropout(x, 0.1)

        def g(x): return unknown.thing(x)
        def g2(x, fn): return fn(x)
        def g3(x, fn): return (fn)(x)
        def g4(x, fn): return ( # c
          fn .
          run )(x)

        ck = functools.partial(checkpoint, use_reentrant=False, preserve_rng_state=False)

        def helper(fn, *args):
            return checkpoint(fn, *args, use_reentrant=False, preserve_rng_state=False)

        class M:
            def run(self, fn, x, p):
                y = checkpoint(a, x, use_reentrant=False, preserve_rng_state=False)
                z = checkpoint(g, x, use_reentrant=False, preserve_rng_state=False)
                w = ck(lambda t: F.dropout(t, p), x)
                v = ck(a, x)
                q = helper(lambda t: F.dropout(t, 0.2), x)
                q2 = helper(g, x)
                q3 = checkpoint(g2, x, t, use_reentrant=False, preserve_rng_state=False)
                q5 = checkpoint(g4, x, t, use_reentrant=False, preserve_rng_state=False)
                q4 = checkpoint(g3, x, t, use_reentrant=False, preserve_rng_state=False)
                if x.requires_grad:
                    u = checkpoint(fn, x, use_reentrant=False, preserve_rng_state=False)
                return checkpoint(
                    lambda t: F.dropout(t, p, training=self.training),  # comment
                    x,
                    use_reentrant=False,
                    preserve_rng_state=(False),
                )
    """,
    "random ops on devices moved inside the region, keyword-only inputs": """
        import torch
        import torch.nn.functional as F
        from torch.utils.checkpoint import checkpoint

        def inner(h, dev):
            return torch.rand(3, device=dev) + torch.randn_like(h.to("cuda:1"))

        def f(x, *, y=None, dev="cpu"):
            h = x.to(device=torch.device("cuda"))
            k = y + 1
            a, b = h, k
            return F.dropout(a, p=0.5) + F.dropout(k, 0.1) + inner(b, dev) + torch.randn(3, device=x.device) + h.bernoulli_()

        def run(x, y):
            checkpoint(f, x=x, y=y, use_reentrant=False)
            checkpoint(f, x, y=y, use_reentrant=False)
            checkpoint(f, x, use_reentrant=False, preserve_rng_state=False)
    """,
    "random sources: Python, NumPy, generators stored, passed and None by default": """
        import random
        import numpy as np
        import torch
        from torch.utils.checkpoint import checkpoint

        class Block(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.rng = np.random.default_rng(0)
                self.g = torch.Generator()
            def forward(self, x, generator=None):
                random.seed(0)
                rng = random.Random(1)
                n = rng.random() + self.rng.normal() + np.random.rand()
                t = torch.randn(3, generator=generator) + torch.rand(3, generator=self.g)
                t2 = torch.rand(3, generator=None) + torch.randint(0, 3, (2,), generator = self.g)
                return self.inner(x, generator) * n + t + t2
            def inner(self, x, gen=None):
                return x + torch.randn(x.shape, generator=gen)
            def outer(self, x, g):
                checkpoint(self.forward, x, use_reentrant=False)
                checkpoint(self.forward, x, g, use_reentrant=False)
                checkpoint(self.inner, x, gen=g, use_reentrant=False)
    """,
    "grad mode: async with, several items, parentheses, decorators, lambdas and classes": """
        import torch
        from torch import no_grad, inference_mode as im
        from torch.utils.checkpoint import checkpoint, checkpoint_sequential
        import functools
        ck = functools.partial(checkpoint, use_reentrant=False)
        class M:
            @functools.cache
            @(torch.no_grad())
            def a(self, x):
                return checkpoint(self.f, x, use_reentrant=False)
            async def b(self, x, flag):
                async with lock, (no_grad()):
                    y = ck(self.f, x)
                    z = (lambda t: checkpoint(self.f, t, use_reentrant=False))(x)
                with torch.set_grad_enabled(mode=False), ctx:
                    if flag:
                        checkpoint_sequential(self.seq, 2, x, use_reentrant=False)
                with torch.autograd.grad_mode.no_grad():
                    checkpoint(torch.save, self.state_dict(), "p")
                    class Inner:
                        y = checkpoint(f, x, use_reentrant=False)
            @im(mode=True)
            def c(self, x):
                return checkpoint(self.f, x, use_reentrant=False)
    """,
    "batchnorm handed down by backbones: a module function, SyncBN, a frozen backbone": """
        import torch.nn as nn
        import torch.utils.checkpoint as cp
        from mmcv.cnn import ConvModule, build_norm_layer


        class Block(nn.Module):
            expansion = 4

            def __init__(self, inplanes, planes, norm_cfg=None, with_cp=False):
                super().__init__()
                self.norm_cfg = norm_cfg
                self.with_cp = with_cp
                self.conv1 = ConvModule(inplanes, planes, 1, norm_cfg=self.norm_cfg, bias=False)
                self.conv2 = ConvModule(planes, planes * 4, 1, norm_cfg=self.norm_cfg, act_cfg=None)
                self.norm_name, norm = build_norm_layer(norm_cfg, planes)
                self.add_module(self.norm_name, norm)

            def forward(self, x):
                def _inner_forward(x):
                    return getattr(self, self.norm_name)(self.conv2(self.conv1(x))) + x

                if self.with_cp and x.requires_grad:
                    return cp.checkpoint(_inner_forward, x, use_reentrant=False)
                return _inner_forward(x)


        def make_layer(block, inplanes, planes, blocks, norm_cfg=None, with_cp=False):
            return nn.Sequential(*[block(inplanes, planes, norm_cfg=norm_cfg, with_cp=with_cp) for _ in range(blocks)])


        class Backbone(nn.Module):
            def __init__(self, norm_cfg=dict(type="BN2d", requires_grad=True), norm_eval=False, with_cp=False):
                super().__init__()
                self.norm_cfg = norm_cfg
                self.norm_eval = norm_eval
                self.layer1 = make_layer(Block, 64, 16, 2, norm_cfg=self.norm_cfg, with_cp=with_cp)

            def train(self, mode=True):
                super().train(mode)
                if mode and self.norm_eval:
                    for m in self.modules():
                        if isinstance(m, nn.BatchNorm2d):
                            m.eval()


        class SyncBackbone(nn.Module):
            def __init__(self, norm_cfg=dict(type="SyncBN"), with_cp=True):
                super().__init__()
                self.layer1 = make_layer(Block, 64, 16, 2, norm_cfg=norm_cfg, with_cp=with_cp)


        class FrozenBackbone(nn.Module):
            def __init__(self, norm_cfg=dict(type="BN"), norm_eval=True):
                super().__init__()
                self.norm_eval = norm_eval
                self.layer1 = make_layer(Block, 64, 16, 2, norm_cfg=norm_cfg)

            def train(self, mode=True):
                super().train(mode)
                if mode and self.norm_eval:
                    for m in self.modules():
                        if isinstance(m, nn.BatchNorm2d):
                            m.eval()
    """,
    "batchnorm: switched off, made inside the region, sequences, a guarded site": """
        import torch
        from torch import nn
        from torch.utils.checkpoint import checkpoint, checkpoint_sequential


        class Net(nn.Module):
            def __init__(self, rate, stats=True):
                super().__init__()
                self.bn = nn.BatchNorm2d(8)
                self.bn2 = nn.BatchNorm1d(8, track_running_stats=False)
                self.bn3 = nn.BatchNorm1d(8, track_running_stats=stats)
                self.seq = nn.Sequential(nn.Conv2d(8, 8, 3), nn.SyncBatchNorm(8), nn.InstanceNorm2d(8, track_running_stats=True))

            def block(self, x):
                fresh = nn.BatchNorm2d(8)
                return self.bn3(self.bn2(fresh(self.bn(x))))

            def forward(self, x):
                if self.training:
                    x = checkpoint(self.block, x, use_reentrant=False)
                x = checkpoint_sequential(self.seq, 2, x, use_reentrant=False)
                x = checkpoint(lambda t: self.bn2(t), x, use_reentrant=False)
                return checkpoint(self.seq, x, use_reentrant=False)
    """,
    "region rules: conditions of the site, the way and the node, across functions": """
        import torch
        from torch.utils.checkpoint import checkpoint
        STATS = []
        SCALE = 2.0
        def helper(x, deep, verbose):
            if deep and x.dim() > 2:
                if verbose:
                    STATS.append(x.mean())
                return x * SCALE
            return x
        def f(x, deep, verbose):
            if x.shape[0] > 1:
                return helper(x, deep, verbose)
            return x
        class Block(torch.nn.Module):
            def inner(self, x):
                if self.log_calls:
                    self.calls += 1
                return x
            def body(self, x):
                return self.inner(x) * 2
            def forward(self, x, verbose):
                global SCALE
                if self.training and self.grad_ckpt:
                    y = checkpoint(f, x, True, verbose, use_reentrant=False)
                    z = checkpoint(self.body, x, use_reentrant=False)
                    SCALE = SCALE * 0.5
                    return y + z
                return f(x, False, verbose)
    """,
    "late binding in a loop, a lambda and a nested function": """
        from torch.utils.checkpoint import checkpoint
        def run(blocks, x, flag):
            outs = []
            for i, block in enumerate(blocks):
                def f(h):
                    if flag:
                        return block(h) * i
                    return h
                if i % 2 == 0:
                    outs.append(checkpoint(f, x, use_reentrant=False))
                outs.append(checkpoint(lambda h: block(h) + i, x, use_reentrant=False))
            return outs
    """,
    "use_reentrant=True where nothing needs it, and where something does": """
        import functools
        import torch
        from torch import nn
        from torch.utils.checkpoint import checkpoint, checkpoint_sequential
        def f(x):
            return x.sin() * 2
        def g(x):
            with torch.no_grad():
                return x * 2
        def h(x):
            x.requires_grad_()
            return x
        def k(x):
            y = x * 2
            y.sum().backward()
            return y
        layers = nn.Sequential(nn.Linear(4, 4), nn.GELU())
        def run(x, flag, cf):
            if flag:
                a = checkpoint(f, x, use_reentrant=(True))
            b = checkpoint(f, x, use_reentrant=True, context_fn=cf)
            c = checkpoint(f, x, use_reentrant=True, preserve_rng_state=False)
            d = checkpoint_sequential(layers, 2, x, True)
            e = checkpoint_sequential(layers, 2, x, use_reentrant=True)
            g1 = checkpoint(g, x, use_reentrant=True)
            h1 = checkpoint(h, x, use_reentrant=True)
            k1 = checkpoint(k, x, use_reentrant=True)
            m = checkpoint(unknown, x, use_reentrant=True)
            n = checkpoint(f, x, use_reentrant=1)
            o = checkpoint(f, x, flag=True, use_reentrant=True)
            part = functools.partial(checkpoint, use_reentrant=True)
            p = part(f, x)
            q = torch.utils.checkpoint.checkpoint(f, x,
                use_reentrant=True,
            )
            return a, b, c, d, e, g1, h1, k1, m, n, o, p, q
    """,
}

EXPECTED = {"save misuse under a guard, a helper's site": {'plain': [('CKP301', (6, 13), (6, 54), 'display-only'),
                                                          ('CKP301', (8, 9), (8, 71), 'display-only'),
                                                          ('CKP301', (9, 9), (9, 90), None),
                                                          ('CKP301', (10, 9), (10, 72), 'display-only')]},
 'the module called, with stars, keywords and a save': {'plain': [('CKP302', (6, 13), (6, 48), 'safe'),
                                                                  ('CKP302', (7, 5), (7, 22), 'safe'),
                                                                  ('CKP302', (8, 5), (8, 35), 'safe'),
                                                                  ('CKP302', (9, 5), (9, 43), None),
                                                                  ('CKP302',
                                                                   (10, 5),
                                                                   (10, 51),
                                                                   'display-only'),
                                                                  ('CKP302', (11, 12), (11, 30), 'safe')]},
 'distributed checkpoint: annotations, awaits, lambdas, keywords': {'plain': [('CKP303',
                                                                               (5, 14),
                                                                               (5, 19),
                                                                               None),
                                                                              ('CKP303',
                                                                               (6, 14),
                                                                               (6, 17),
                                                                               None),
                                                                              ('CKP303',
                                                                               (6, 19),
                                                                               (6, 23),
                                                                               None),
                                                                              ('CKP303',
                                                                               (7, 33),
                                                                               (7, 37),
                                                                               None),
                                                                              ('CKP303',
                                                                               (8, 30),
                                                                               (8, 35),
                                                                               None),
                                                                              ('CKP303',
                                                                               (11, 11),
                                                                               (11, 54),
                                                                               None),
                                                                              ('CKP303',
                                                                               (11, 31),
                                                                               (11, 41),
                                                                               None),
                                                                              ('CKP303',
                                                                               (11, 43),
                                                                               (11, 53),
                                                                               None),
                                                                              ('CKP303',
                                                                               (14, 36),
                                                                               (14, 45),
                                                                               None)]},
 'home-made recompute in a guarded class method, and a gradient hook': {'plain': [('CKP104',
                                                                                   (15, 23),
                                                                                   (15, 39),
                                                                                   None),
                                                                                  ('CKP105',
                                                                                   (15, 23),
                                                                                   (15, 39),
                                                                                   None),
                                                                                  ('CKP105',
                                                                                   (25, 25),
                                                                                   (25, 37),
                                                                                   None)]},
 'rng state not preserved: partial, helper, unresolved and deep regions, unknown callees': {'plain': [('CKP101',
                                                                                                       (20,
                                                                                                        57),
                                                                                                       (20,
                                                                                                        81),
                                                                                                       'unsafe'),
                                                                                                      ('CKP101',
                                                                                                       (23,
                                                                                                        55),
                                                                                                       (23,
                                                                                                        79),
                                                                                                       'display-only'),
                                                                                                      ('CKP101',
                                                                                                       (27,
                                                                                                        51),
                                                                                                       (27,
                                                                                                        75),
                                                                                                       'display-only'),
                                                                                                      ('CKP101',
                                                                                                       (31,
                                                                                                        13),
                                                                                                       (31,
                                                                                                        51),
                                                                                                       None),
                                                                                                      ('CKP101',
                                                                                                       (33,
                                                                                                        56),
                                                                                                       (33,
                                                                                                        80),
                                                                                                       'display-only'),
                                                                                                      ('CKP101',
                                                                                                       (35,
                                                                                                        56),
                                                                                                       (35,
                                                                                                        80),
                                                                                                       'display-only'),
                                                                                                      ('CKP101',
                                                                                                       (37,
                                                                                                        56),
                                                                                                       (37,
                                                                                                        80),
                                                                                                       'display-only'),
                                                                                                      ('CKP101',
                                                                                                       (42,
                                                                                                        13),
                                                                                                       (42,
                                                                                                        39),
                                                                                                       'unsafe')]},
 'random ops on devices moved inside the region, keyword-only inputs': {'plain': [('CKP102',
                                                                                   (7, 40),
                                                                                   (7, 72),
                                                                                   None),
                                                                                  ('CKP102',
                                                                                   (13, 12),
                                                                                   (13, 31),
                                                                                   None),
                                                                                  ('CKP102',
                                                                                   (13, 34),
                                                                                   (13, 51),
                                                                                   None),
                                                                                  ('CKP102',
                                                                                   (13, 104),
                                                                                   (13, 118),
                                                                                   None),
                                                                                  ('CKP101',
                                                                                   (18, 43),
                                                                                   (18, 67),
                                                                                   'unsafe')]},
 'random sources: Python, NumPy, generators stored, passed and None by default': {'plain': [('CKP103',
                                                                                             (14, 15),
                                                                                             (14, 31),
                                                                                             None),
                                                                                            ('CKP103',
                                                                                             (15, 13),
                                                                                             (15, 25),
                                                                                             None),
                                                                                            ('CKP103',
                                                                                             (15, 28),
                                                                                             (15, 45),
                                                                                             None),
                                                                                            ('CKP103',
                                                                                             (15, 48),
                                                                                             (15, 64),
                                                                                             None),
                                                                                            ('CKP103',
                                                                                             (16, 28),
                                                                                             (16, 47),
                                                                                             None),
                                                                                            ('CKP103',
                                                                                             (16, 65),
                                                                                             (16, 81),
                                                                                             None),
                                                                                            ('CKP103',
                                                                                             (17, 72),
                                                                                             (17, 90),
                                                                                             None),
                                                                                            ('CKP103',
                                                                                             (20, 41),
                                                                                             (20, 54),
                                                                                             None)]},
 'grad mode: async with, several items, parentheses, decorators, lambdas and classes': {'plain': [('CKP304',
                                                                                                   (11, 16),
                                                                                                   (11, 58),
                                                                                                   None),
                                                                                                  ('CKP304',
                                                                                                   (14, 17),
                                                                                                   (14, 30),
                                                                                                   None),
                                                                                                  ('CKP304',
                                                                                                   (18, 17),
                                                                                                   (18, 75),
                                                                                                   None),
                                                                                                  ('CKP301',
                                                                                                   (20, 13),
                                                                                                   (20, 59),
                                                                                                   'display-only'),
                                                                                                  ('CKP304',
                                                                                                   (25, 16),
                                                                                                   (25, 58),
                                                                                                   None)]},
 'batchnorm handed down by backbones: a module function, SyncBN, a frozen backbone': {'plain': [('CKP203',
                                                                                                 (24, 20),
                                                                                                 (24, 73),
                                                                                                 None)]},
 'batchnorm: switched off, made inside the region, sequences, a guarded site': {'plain': [('CKP203',
                                                                                           (21, 17),
                                                                                           (21, 63),
                                                                                           None),
                                                                                          ('CKP203',
                                                                                           (24, 16),
                                                                                           (24, 60),
                                                                                           None)]},
 'region rules: conditions of the site, the way and the node, across functions': {'plain': [('CKP202',
                                                                                             (9, 13),
                                                                                             (9, 35),
                                                                                             None),
                                                                                            ('CKP201',
                                                                                             (10, 20),
                                                                                             (10, 25),
                                                                                             None),
                                                                                            ('CKP202',
                                                                                             (19, 13),
                                                                                             (19, 28),
                                                                                             None)]},
 'late binding in a loop, a lambda and a nested function': {'plain': [('CKP201', (8, 24), (8, 29), None),
                                                                      ('CKP201', (8, 35), (8, 36), None),
                                                                      ('CKP201', (12, 42), (12, 47), None),
                                                                      ('CKP201', (12, 53), (12, 54), None)]},
 'use_reentrant=True where nothing needs it, and where something does': {'plain': [('CKP005',
                                                                                    (21, 13),
                                                                                    (21, 51),
                                                                                    'unsafe'),
                                                                                   ('CKP002',
                                                                                    (22, 9),
                                                                                    (22, 60),
                                                                                    None),
                                                                                   ('CKP005',
                                                                                    (23, 9),
                                                                                    (23, 71),
                                                                                    'unsafe'),
                                                                                   ('CKP005',
                                                                                    (24, 9),
                                                                                    (24, 50),
                                                                                    'unsafe'),
                                                                                   ('CKP005',
                                                                                    (25, 9),
                                                                                    (25, 64),
                                                                                    'unsafe'),
                                                                                   ('CKP002',
                                                                                    (31, 9),
                                                                                    (31, 56),
                                                                                    None),
                                                                                   ('CKP005',
                                                                                    (34, 9),
                                                                                    (36, 6),
                                                                                    'unsafe')]}}


def _shape(found: list[Diagnostic]) -> list[tuple]:
    return [(d.code, d.start, d.end, None if d.fix is None else d.fix.applicability.value) for d in found]


@pytest.mark.parametrize("label", sorted(CORNERS))
def test_corners(label: str) -> None:
    expected = EXPECTED[label]
    assert _shape(lint(CORNERS[label], "ALL")) == expected["plain"]
    newer = expected.get("new transformers", expected["plain"])
    assert _shape(lint(CORNERS[label], "ALL", versions={"transformers": ">=5.24"})) == newer


def test_the_region_corners_hold_conditions_across_functions() -> None:
    """The region rules' corners are reported with the site's condition, the tests on the
    region's way into helpers and methods, and those around the node."""
    found = lint(CORNERS["region rules: conditions of the site, the way and the node, across functions"], ["CKP201", "CKP202"])
    conditions = [d.message.partition("; this code runs only when ")[2] for d in sorted(found, key=lambda d: d.code)]
    assert conditions == [
        "`self.training` and `self.grad_ckpt` and `x.shape[0] > 1` and `deep` and `x.dim() > 2`",
        "`self.training` and `self.grad_ckpt` and `x.shape[0] > 1` and `deep` and `x.dim() > 2` and `verbose`",
        "`self.training` and `self.grad_ckpt` and `self.log_calls`",
    ]

"""The randomness, grad-mode, layer-switch and reentrant-backward analyses on CPython's ``ast``
(``ast_randomness``, ``ast_grad_mode``, ``ast_layer_switches``, ``ast_reentrant_backward`` of
ckptlint.checkpoint.analyses), their answers recorded while they were libcst's: the grad mode
of every call, the random ops, device moves and unpreserved sources of a region around every
function, the switches of the layers those call, and whether backward reaches each site.
Inputs: the rule examples, the test cases, the shared cases as recorded, the programs of the
test suite and hand-written corners (golden answers: ``__snapshots__/test_ast_randomness.ambr``
and ``__digests__/randomness_suite.json``; the readings are ``randomness_readings.py``'s)."""

from __future__ import annotations

import ast
import functools
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from goldens import case_params, check_suite, example_params, read_case, render
from randomness_readings import randomness_answers
from test_ast_evaluator_leaves import _SUITE

from ckptlint.checkpoint.analyses.ast_grad_mode import GradMode, grad_mode_at
from ckptlint.checkpoint.analyses.ast_layer_switches import SwitchReader, switched_on
from ckptlint.checkpoint.evaluator.ast_regions import AstRegionBuilder
from ckptlint.checkpoint.evaluator.denotations import Context, LayerUse
from ckptlint.facts.torch_facts import layer_fact
from ckptlint.semantic.ast_analysis import parse_ast
from ckptlint.text.source import SourceFile


@functools.cache
def _answers(text: str, module_name: str = "pkg.mod") -> tuple[list[tuple], Counter[str]]:
    """The answers for ``text`` (made once: the counts reuse them)."""
    return randomness_answers(text, module_name)


def _golden(found: list[tuple]) -> str:
    """How many answers of each kind, then those that find something, one line each (an empty
    answer that changes shows as a line more)."""
    kinds = Counter(answer[0] for answer in found)
    stated = [answer for answer in found if answer[-1] not in (None, [], (), False)]
    return render([dict(sorted(kinds.items())), *stated])


@pytest.mark.parametrize(("label", "text"), example_params())
def test_rule_examples(label: str, text: str, snapshot) -> None:
    assert _golden(_answers(text)[0]) == snapshot


@pytest.mark.parametrize("path", case_params())
def test_cases(path: Path, snapshot) -> None:
    assert _golden(_answers(read_case(path), "pkg.cases." + path.stem)[0]) == snapshot


def test_programs_of_the_test_suite(request: pytest.FixtureRequest) -> None:
    """One test for them all (a few hundred small programs), every answer digested."""
    assert check_suite(request, "randomness_suite", _SUITE, lambda text: render(_answers(text)[0])) >= 100


PROGRAMS = {
    "dropout with literal and expression rates, training flags": """
        import torch
        import torch.nn.functional as F
        from torch import nn

        class Attention(nn.Module):
            def __init__(self, dim, attn_drop=0.0, proj_drop=0.1, flag=False):
                super().__init__()
                self.attn_drop = nn.Dropout(attn_drop)
                self.proj_drop = nn.Dropout(p=proj_drop)
                self.off = nn.Dropout(0.0)
                self.on = nn.Dropout(0.1 if flag else 0.1)
                self.rate = attn_drop
                self.inplace = nn.Dropout(0, inplace=True)
                self.alpha = nn.AlphaDropout(p=0.)
                self.conf = nn.Dropout(*[0.1])

            def forward(self, x, p=0.0, training=False):
                x = self.attn_drop(x)
                x = self.proj_drop(x)
                x = self.off(x) + self.on(x) + self.inplace(x) + self.alpha(x) + self.conf(x)
                x = F.dropout(x, self.rate, self.training)
                x = F.dropout(x, p=p, training=training)
                x = F.dropout(x, 0.0)
                x = F.dropout(x, 0.1, False)
                x = F.dropout(x, p, True)
                x = F.dropout(x, **{"p": 0.1})
                x = F.dropout(*[x, 0.1])
                x = F.dropout2d(x, p=0.2 if training else 0.2, training=self.training)
                x = nn.Dropout(0.3)(x)
                x = torch.dropout(x, 0.1, train=self.training)
                x = x.bernoulli_(0.5).uniform_().normal_()
                return F.alpha_dropout(x, p=self.rate)
        """,
    "generators, Python random, NumPy, seeding": """
        import random
        import numpy as np
        import torch
        from numpy.random import default_rng
        from random import Random

        RNG = np.random.default_rng(0)

        class Noise(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.gen = torch.Generator()
                self.rng = default_rng(1)
                self.py = Random(2)
                self.other = object()
                self.pair = (torch.Generator(), 1)

            def forward(self, x, generator=None, gen=torch.Generator()):
                random.seed(0)
                np.random.seed(0)
                torch.manual_seed(0)
                a = random.random() + random.uniform(0, 1)
                b = np.random.rand(3) + np.random.normal(size=3)
                c = self.gen.seed() + self.rng.normal() + self.py.random() + self.other.normal()
                d = RNG.normal() + local_rng().normal()
                rng = np.random.default_rng(3)
                e = rng.integers(5)
                f = torch.randn(3, generator=generator) + torch.randn(3, generator=gen)
                g = torch.rand(3, generator=self.gen) + torch.rand(3, generator=None)
                h = torch.Generator().manual_seed(1)
                return x.normal_(generator=self.gen) + torch.randperm(4, generator=torch.Generator())

        def local_rng():
            return np.random.default_rng()

        def passes(x, generator=None):
            return inner(x, generator=generator)

        def inner(x, generator=None):
            return torch.randn_like(x) + torch.randn(3, generator=generator)
        """,
    "device moves": """
        import torch
        from torch import nn

        def moved(x, device, dev="cuda:0", dtype=None):
            y = x.cuda()
            z = x.to("cuda")
            w = x.to(device)
            v = x.to(device=torch.device("cuda", 0))
            u = x.to(x.device)
            t = x.to(dtype)
            s = x.to(*[device])
            r = x.to(**{"device": device})
            q = x.to(torch.float16, device="xpu")
            p = x.to(non_blocking=True, device=dev)
            m = torch.cuda(x)
            a, (b, c) = y.cpu(), [z, w]
            k: torch.Tensor = v.npu()
            k += u.mps()
            o = torch.rand_like(y) + torch.rand_like(z) + torch.rand_like(a) + torch.rand_like(b)
            o = o + torch.randn(3, device=device) + torch.randn(3, device="cuda") + torch.randn(3, device=x.device)
            o = o + torch.randn(3, device=dev) + torch.randn(3, device=torch.device("cuda"))
            o = o + torch.rand_like(x.cuda()) + torch.rand_like(k) + torch.rand_like(s.half())
            o = o + torch.randn(3, device=gpu_id) + torch.randn(3, device=self_dev(x, dim=1))
            o = o + torch.rand_like((lambda cuda: cuda)(x)) + torch.rand_like(q if p else t)
            device = "cuda"
            return o + torch.randn(3, device=device) + torch.bernoulli(r) + torch.rand_like(m)

        gpu_id = 0
        """,
    "torch.no_grad forms": """
        import torch
        import torch.autograd as ag
        from torch import no_grad, enable_grad, inference_mode, set_grad_enabled
        from torch.utils.checkpoint import checkpoint

        @torch.no_grad()
        def a(f, x):
            return checkpoint(f, x, use_reentrant=True)

        @no_grad
        def b(f, x):
            with enable_grad():
                y = checkpoint(f, x)
            with torch.no_grad:
                z = checkpoint(f, x)
            return y, z

        def c(f, x, mode):
            with set_grad_enabled(False), torch.set_grad_enabled(mode=True):
                y = checkpoint(f, x)
            with set_grad_enabled(mode):
                z = checkpoint(f, x)
            with inference_mode(), open("f"):
                w = checkpoint(f, x)
            with inference_mode(False):
                v = checkpoint(f, x)
            with inference_mode(mode=True):
                u = checkpoint(f, x)
            with ag.no_grad():
                def later(t):
                    return checkpoint(f, t)
                g = lambda t: checkpoint(f, t)
                class Inner:
                    h = checkpoint(f, x)
            with torch.set_grad_enabled(*[False]):
                s = checkpoint(f, x)
            return y, z, w, v, u, later, g, Inner, s

        class M(torch.nn.Module):
            @torch.inference_mode()
            @staticmethod
            def forward(f, x):
                return checkpoint(f, x)

            async def run(self, f, x):
                async with torch.no_grad():
                    return checkpoint(f, x)
        """,
    "reentrant sites without backward": """
        import torch
        from torch.utils.checkpoint import checkpoint
        from torch import nn

        def branches(xs):
            return [b(x) for b, x in zip(BRANCHES, xs)]

        def nothing(x):
            x.add_(1)

        def sometimes(x, flag):
            if flag:
                return None
            return x

        def texts(x):
            out = {"a": x}
            out = [x]
            return f"{x}" if x else "none"

        def tuples(x):
            return (x, x)

        def gen(x):
            yield x

        @torch.compile
        def wrapped(x):
            return [x]

        class Listy(nn.Module):
            def forward(self, x):
                return [x], {"x": x}

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.listy = Listy()
                self.lin = nn.Linear(2, 2)

            def forward(self, x, xs):
                a = checkpoint(branches, xs, use_reentrant=True)
                b = checkpoint(nothing, x, use_reentrant=True)
                c = checkpoint(sometimes, x, True, use_reentrant=True)
                d = checkpoint(texts, x, use_reentrant=True)
                e = checkpoint(tuples, x, use_reentrant=True)
                f = checkpoint(gen, x, use_reentrant=True)
                g = checkpoint(wrapped, x, use_reentrant=True)
                h = checkpoint(self.listy, x, use_reentrant=True)
                i = checkpoint(self.lin, x, use_reentrant=True)
                j = checkpoint(lambda t: [t], x, use_reentrant=True)
                k = checkpoint(lambda t: (t,), x, use_reentrant=True)
                n = checkpoint(self.lin, [x], (1, 2), None, "s", 3.0, -1, ..., use_reentrant=True)
                m = checkpoint(self.lin, *xs, use_reentrant=True)
                o = checkpoint(self.lin, [x], use_reentrant=False)
                p = checkpoint(self.lin, [x], **opts)
                q = torch.utils.checkpoint.checkpoint(branches, xs)
                return a, b, c, d, e, f, g, h, i, j, k, n, m, o, p, q

        BRANCHES = [nn.Identity()]
        opts = {}
        """,
    "rates followed through constructor calls and self attributes": """
        import torch.nn.functional as F
        from torch import nn
        from torch.utils.checkpoint import checkpoint

        class Mlp(nn.Module):
            def __init__(self, dim, drop=0.1, act=None):
                super().__init__()
                self.drop = nn.Dropout(drop)
                self.rate = drop
                self.keep = 0.0 if act else 0.0

            def forward(self, x):
                x = self.drop(x)
                x = F.dropout(x, self.rate, training=self.training)
                return F.dropout(x, p=self.keep)

        class Changed(Mlp):
            def reset(self):
                self.rate = 0.5

        class Block(nn.Module):
            def __init__(self, dim, proj_drop=0.0, **kwargs):
                super().__init__()
                self.mlp = Mlp(dim, drop=proj_drop)
                self.mlp2 = Mlp(dim, 0.0)
                self.mlp3 = Mlp(dim, **kwargs)
                self.changed = Changed(dim, drop=0.0)
                self.drop = nn.Dropout(0.0)
                self.live = nn.Dropout(proj_drop)

            def forward(self, x):
                x = checkpoint(self.mlp, x, use_reentrant=False)
                x = checkpoint(self.mlp2, x, use_reentrant=False)
                x = checkpoint(self.mlp3, x, use_reentrant=False)
                x = checkpoint(self.changed, x, use_reentrant=False)
                x = checkpoint(self.drop, x, use_reentrant=False)
                x = checkpoint(self.live, x, use_reentrant=False)
                return checkpoint(Mlp(4, drop=0.0), x, use_reentrant=False)
        """,
    "checkpointed functions that move, draw and take generators": """
        import random
        import torch
        from torch.utils.checkpoint import checkpoint

        def body(x, device="cuda"):
            y = x.cuda()
            return torch.rand_like(y) + torch.randn(3, device=device) + torch.rand_like(x) + random.random()

        def kw_only(x=None, noise=None):
            return torch.rand_like(x) + noise.bernoulli_()

        def gen_body(x, generator=None):
            return torch.randn(3, generator=generator) + torch.randn(3, generator=torch.Generator())

        def outer(x, generator=None):
            return gen_body(x, generator=generator)

        def run(x, g):
            a = checkpoint(body, x, use_reentrant=False)
            b = checkpoint(kw_only, x=x, noise=x, use_reentrant=False)
            c = checkpoint(gen_body, x, use_reentrant=False)
            d = checkpoint(gen_body, x, generator=g, use_reentrant=False)
            e = checkpoint(outer, x, use_reentrant=False)
            f = checkpoint(lambda t: body(t, "cuda:1"), x, use_reentrant=False)
            return a, b, c, d, e, f
        """,
    "names through assignments and reaching bindings": """
        from torch.utils.checkpoint import checkpoint

        def run(f, x, flag):
            items = [x]
            if flag:
                items = {"x": x}
            none = None
            one = 1
            chained = items
            cond = items if flag else none
            checkpoint(f, items, none, one, chained, cond, use_reentrant=True)
            checkpoint(f, items, x, use_reentrant=True)
            a = b = c = d = e = [x]
            checkpoint(f, e, use_reentrant=True)
            t = (x,)
            checkpoint(f, t, use_reentrant=True)
            return checkpoint(f, x, use_reentrant=True)
        """,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs(name: str, snapshot) -> None:
    assert render(_answers(textwrap.dedent(PROGRAMS[name]))[0]) == snapshot


def test_the_inputs_hold_what_is_compared() -> None:
    """The examples and programs are not empty of what is recorded."""
    items: Counter[str] = Counter()
    for text in [p.values[1] for p in example_params()] + _SUITE + [textwrap.dedent(p) for p in PROGRAMS.values()]:
        items.update(_answers(text)[1])
    least_items = {"grad mode": 2500, "region": 2000, "random op": 250, "device move": 100, "source": 80, "layer": 100, "site": 500}
    least_items |= {"real site": 500, "real random op": 50, "real device move": 5, "real source": 10, "real layer": 100}
    for kind, least in least_items.items():
        assert items[kind] >= least, (kind, items[kind])


def test_grad_mode_answers() -> None:
    text = textwrap.dedent(PROGRAMS["torch.no_grad forms"])
    analysis = parse_ast(SourceFile(path="m.py", text=text), "m")
    assert analysis is not None
    modes = {
        analysis.start(node)[0]: grad_mode_at(node, analysis.model)
        for node in ast.walk(analysis.tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "checkpoint"
    }
    assert modes[9].mode is GradMode.DISABLED and modes[9].decorator and modes[9].name == "torch.no_grad"
    assert modes[14].mode is GradMode.ENABLED and modes[14].name == "torch.enable_grad"
    assert modes[16].decorator  # `with torch.no_grad:` is no context: the decorator `@no_grad` is
    assert modes[21].mode is GradMode.ENABLED and modes[23].mode is GradMode.UNKNOWN
    assert modes[25].mode is GradMode.DISABLED and modes[27].mode is GradMode.UNKNOWN
    assert all(modes[row].node is None for row in (32, 33, 35))  # a nested def, a lambda, a class body
    assert modes[44].name == "torch.inference_mode" and modes[48].name == "torch.no_grad"


def test_switched_on_reads_an_ast_constructor_call() -> None:
    text = "from torch import nn\na = nn.Dropout(0.0)\nb = nn.Dropout(p=rate)\nc = nn.Dropout()\n"
    analysis = parse_ast(SourceFile(path="m.py", text=text), "m")
    assert analysis is not None
    fact = layer_fact({"torch.nn.Dropout"})
    assert fact is not None
    calls = [node.value for node in analysis.tree.body[1:]]
    answers = [switched_on(LayerUse(fact[0], fact[1], call, Context(analysis))) for call in calls]  # type: ignore[arg-type]
    assert answers == [False, None, True]


def test_the_region_builder_answers_what_switches_ask() -> None:
    """The frames of real regions hold the ``ast`` region builder: it must be a
    :class:`SwitchReader`, or rates in ``self`` attributes would go unread."""
    assert isinstance(AstRegionBuilder(None), SwitchReader)

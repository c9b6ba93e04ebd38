"""The rules ported to CPython's ``ast`` (ckptlint.rules.ast_ckp*, over
ckptlint.rules.ast_base.AstRuleContext) report what their libcst rules report: the same
diagnostics in the same order (code, message, path, range, noqa row, fix with its edits byte
for byte) on the examples of every ported rule (``VALID``/``INVALID``, and the
``rules/CKPxxx.md`` pages' blocks), on every rule example, the test cases, the shared cases
when present, the programs of the test suite and hand-written corners; and what the contexts
answer per site (``condition``, ``recomputes_nothing``) and per call a region runs
(``region_condition``). The comparison is ``benchmarks/ast_rules_parity.py``'s, which runs it
over real trees."""

from __future__ import annotations

import ast
import functools
import textwrap
from pathlib import Path

import pytest
from parity_scripts import load_parity
from test_ast_evaluator_leaves import _SUITE
from test_ast_model import _case_files, _parses, _rule_examples

from ckptlint.config.declarations import parse_target_version
from ckptlint.rules import ALL_RULES, RuleContext
from ckptlint.rules.ast_base import AstRule, AstRuleContext
from ckptlint.semantic.ast_analysis import parse_ast
from ckptlint.testing import example_versions
from ckptlint.text.diagnostics import Applicability
from ckptlint.text.source import SourceFile

parity = load_parity("ast_rules_parity")

_EXAMPLES = [(label, text) for label, text in _rule_examples() if _parses(text)]


#: A project on transformers 5.24 or later, where the rules that decide on versions speak
#: (CKP004's ``EXAMPLE_VERSIONS``).
_NEW_TRANSFORMERS = (parse_target_version("transformers", ">=5.24", "test"),)
#: The rules whose findings depend on the declared versions.
_VERSIONED = tuple(code for code in parity.PORTED if example_versions(ALL_RULES[code]))


@functools.cache
def _compared(text: str, module_name: str = "pkg.mod"):
    """The comparison of every ported rule on ``text`` (made once: the counts reuse it), and
    of those that decide on versions with transformers 5.24 or later declared."""
    found = parity.compare(text, module_name)
    if _VERSIONED:
        found.add(parity.compare(text, module_name, _VERSIONED, target_versions=_NEW_TRANSFORMERS))
        found.files -= 1
    return found


def test_the_ported_rules() -> None:
    regions = (
        ("CKP001", "CKP002", "CKP003", "CKP004", "CKP005", "CKP101", "CKP102", "CKP103", "CKP201", "CKP202", "CKP203")
        if parity.REGIONS
        else ()
    )
    assert parity.PORTED == tuple(sorted((*regions, "CKP104", "CKP105", "CKP301", "CKP302", "CKP303", "CKP304")))
    assert set(parity.AST_RULES) == {
        "CKP001", "CKP002", "CKP003", "CKP004", "CKP005", "CKP101", "CKP102", "CKP103", "CKP104", "CKP105",
        "CKP201", "CKP202", "CKP203", "CKP301", "CKP302", "CKP303", "CKP304",
    }
    for code, twin in parity.AST_RULES.items():
        rule = ALL_RULES[code]
        assert issubclass(twin, AstRule) and twin.code == code
        assert (twin.name, twin.severity, twin.fix_availability) == (rule.name, rule.severity, rule.fix_availability)
        assert twin.VALID is rule.VALID and twin.INVALID is rule.INVALID  # the same examples, not copies


def _own_examples() -> list[tuple[str, str]]:
    ported = {f"{code}-" for code in parity.PORTED}
    return [(label, text) for label, text in _EXAMPLES if label[:7] in ported]


@pytest.mark.parametrize(("label", "text"), [pytest.param(t, x, id=t) for t, x in _own_examples()])
def test_examples_of_the_ported_rules(label: str, text: str) -> None:
    found = _compared(text)
    assert found.mismatches == []
    code = label[:6]
    if "-invalid-" in label:
        assert found.diagnostics[code] >= 1  # the example is reported on both sides
    elif "-valid-" in label:
        assert found.diagnostics[code] == 0


def test_every_rule_example() -> None:
    """One test for the examples of the rules not ported yet (each a few lines)."""
    ported = {f"{code}-" for code in parity.PORTED}
    found = [(label, m) for label, text in _EXAMPLES if label[:7] not in ported for m in _compared(text).mismatches]
    assert found == []


@pytest.mark.parametrize("path", _case_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_cases(path: Path) -> None:
    assert _compared(path.read_text(encoding="utf-8"), "pkg.cases." + path.stem).mismatches == []


def test_programs_of_the_test_suite() -> None:
    """One test for them all (a few hundred small programs): every mismatch listed."""
    found = [(index, m) for index, text in enumerate(_SUITE) for m in _compared(text).mismatches]
    assert found == []


def test_the_inputs_hold_what_is_compared() -> None:
    """The inputs hold findings of every ported rule, and fixes."""
    total = parity.RulesComparison()
    for text in [text for _, text in _EXAMPLES] + _SUITE:
        total.add(_compared(text))
    for code in parity.PORTED:
        assert total.diagnostics[code] >= 3, code
    assert total.fixes >= 10


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


@pytest.mark.parametrize("label", sorted(CORNERS))
def test_corners(label: str) -> None:
    found = _compared(textwrap.dedent(CORNERS[label]))
    assert found.mismatches == []
    assert sum(found.diagnostics.values()) >= 1


def test_the_region_corners_hold_conditions_across_functions() -> None:
    """The region rules' corners are reported with the site's condition, the tests on the
    region's way into helpers and methods, and those around the node (compared in full)."""
    from ckptlint.semantic.analysis import ModuleAnalysis
    from ckptlint.semantic.parse import parse_module_unvalidated

    text = textwrap.dedent(CORNERS["region rules: conditions of the site, the way and the node, across functions"])
    analysis = ModuleAnalysis(SourceFile("m.py", text), parse_module_unvalidated(text), "pkg.mod", False)
    found: list = []
    ctx = RuleContext(analysis, None, found.append)
    for code in ("CKP201", "CKP202"):
        ctx.code = code
        ALL_RULES[code]().check(ctx)
    conditions = [d.message.partition("; this code runs only when ")[2] for d in found]
    assert conditions == [
        "`self.training` and `self.grad_ckpt` and `x.shape[0] > 1` and `deep` and `x.dim() > 2`",
        "`self.training` and `self.grad_ckpt` and `x.shape[0] > 1` and `deep` and `x.dim() > 2` and `verbose`",
        "`self.training` and `self.grad_ckpt` and `self.log_calls`",
    ]
    assert _compared(text).mismatches == []


def test_a_fix_is_left_out_where_libcst_refuses_the_statement(monkeypatch: pytest.MonkeyPatch) -> None:
    """``fix_from`` answers ``None`` when ``ast_edits`` finds no libcst node; the finding stays."""
    from ckptlint.rules import ast_edits

    def refuse(*args: object) -> object:
        raise ast_edits.NoCstNode("refused")

    text = "from torch.utils import checkpoint\ny = checkpoint(f, x, use_reentrant=False)\n"
    twin = parse_ast(SourceFile("m.py", text), "m")
    assert twin is not None
    found = []
    ctx = AstRuleContext(twin, None, found.append)
    ctx.code = "CKP302"
    monkeypatch.setattr("ckptlint.rules.ast_ckp302_checkpoint_module_called.replace_node", refuse)
    parity.AST_RULES["CKP302"]().check(ctx)
    assert [(d.code, d.start, d.fix) for d in found] == [("CKP302", (2, 5), None)]
    assert ctx.fix_from(Applicability.SAFE, "m", lambda: ()) is not None


def test_once_and_the_code_given() -> None:
    """``report(once=True)`` skips a node this rule reported; ``code=`` names another code."""
    text = "import torch\nx = torch.ones(1)\n"
    twin = parse_ast(SourceFile("m.py", text), "m")
    assert twin is not None
    found = []
    ctx = AstRuleContext(twin, None, found.append)
    ctx.code = "CKP202"
    node = twin.tree.body[1]
    assert isinstance(node, ast.Assign)
    ctx.report(node.value, "a", once=True)
    ctx.report(node.value, "b", once=True)
    ctx.report(node.value, "c", once=True, code="CKP201")
    assert [(d.code, d.message, d.start, d.end, d.noqa_row) for d in found] == [
        ("CKP202", "a", (2, 5), (2, 18), 2),
        ("CKP201", "c", (2, 5), (2, 18), 2),
    ]


def test_a_keyword_is_reported_at_its_name() -> None:
    """``ast`` has no node for a keyword's name: a report at an ``ast.keyword`` covers the name,
    as libcst's rules report the keyword's ``Name`` (``**kw`` covers the whole argument)."""
    text = "f(x, use_reentrent=False, **kw)\n"
    twin = parse_ast(SourceFile("m.py", text), "m")
    assert twin is not None
    found = []
    ctx = AstRuleContext(twin, None, found.append)
    call = twin.tree.body[0].value
    assert isinstance(call, ast.Call)
    for keyword in call.keywords:
        ctx.report(keyword, "m")
    assert [(d.start, d.end) for d in found] == [((1, 6), (1, 19)), ((1, 27), (1, 31))]


def test_a_tree_read_through_both_loaders(tmp_path: Path) -> None:
    """The tree mode: each file linted with its project (``Project`` / ``AstProject``), the
    rules reaching re-exports and a home-made implementation's base in other modules."""
    package = tmp_path / "pkg"
    package.mkdir()
    files = {
        "__init__.py": "",
        "ckpt.py": "from torch.utils.checkpoint import checkpoint\n",
        "base.py": (
            "import torch\n"
            "class Base(torch.autograd.Function):\n"
            "    @staticmethod\n"
            "    def forward(ctx, fn, x):\n"
            "        ctx.fn = fn\n"
            "        ctx.save_for_backward(x)\n"
            "        return fn(x)\n"
        ),
        "train.py": (
            "from torch.utils import checkpoint as ckpt_module\n"
            "from .ckpt import checkpoint\n"
            "from .base import Base\n"
            "class Recompute(Base):\n"
            "    @staticmethod\n"
            "    def backward(ctx, grad):\n"
            "        (x,) = ctx.saved_tensors\n"
            "        with torch.enable_grad():\n"
            "            out = ctx.fn(x)\n"
            "        torch.autograd.backward(out, grad)\n"
            "        return None, x.grad\n"
            "def run(block, x):\n"
            "    return Recompute.apply(block, x)\n"
            "def save(model, path, step):\n"
            "    if step % 100 == 0:\n"
            "        checkpoint(model.state_dict(), path)\n"
            "    ckpt_module(model.block, path, use_reentrant=False)\n"
        ),
    }
    for name, text in files.items():
        (package / name).write_text(text, encoding="utf-8")
    cst_project, ast_project = parity.tree_projects()
    total = parity.RulesComparison()
    for name in sorted(files):
        path = package / name
        parity.compare_in_tree(path, path.read_text(encoding="utf-8"), cst_project, ast_project, total)
    assert total.mismatches == []
    assert total.files == 4 and total.diagnostics["CKP301"] == 1 and total.diagnostics["CKP302"] == 1, total.diagnostics


def test_region_rules_across_modules_of_a_tree(tmp_path: Path) -> None:
    """The tree mode for the region rules: a region that runs into another module is
    reported there (its site labelled relative to that file), with the site's condition and
    the tests on the way (CKP201, CKP202), and CKP005 sees through it."""
    package = tmp_path / "pkg"
    (package / "layers").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "layers/__init__.py": "",
        "layers/cfg.py": "SCALE = 2.0\n",
        "layers/ops.py": (
            "from . import cfg\n"
            "CALLS = []\n"
            "def scaled(x, flag):\n"
            "    if flag:\n"
            "        CALLS.append(1)\n"
            "        return x * cfg.SCALE\n"
            "    return x\n"
            "def plain(x):\n"
            "    return x.sin()\n"
            "def set_scale(s):\n"
            "    global SCALE\n"
            "    SCALE = s\n"
        ),
        "train.py": (
            "from torch.utils.checkpoint import checkpoint\n"
            "from .layers import cfg\n"
            "from .layers.ops import plain, scaled\n"
            "def step(xs, ckpt, flag):\n"
            "    for x in xs:\n"
            "        if ckpt:\n"
            "            y = checkpoint(scaled, x, flag, use_reentrant=False)\n"
            "            z = checkpoint(plain, x, use_reentrant=True)\n"
            "        cfg.SCALE = 0.5\n"
        ),
    }
    for name, text in files.items():
        (package / name).write_text(text, encoding="utf-8")
    cst_project, ast_project = parity.tree_projects()
    total = parity.RulesComparison()
    for name in sorted(files):
        path = package / name
        parity.compare_in_tree(path, path.read_text(encoding="utf-8"), cst_project, ast_project, total)
    assert total.mismatches == []
    assert dict(total.diagnostics) == {"CKP005": 1, "CKP201": 1, "CKP202": 1}


def test_what_the_context_answers_per_site() -> None:
    """``condition`` and ``recomputes_nothing`` of every site of the examples, cases and
    test-suite programs (regions built where a reentrant site may skip backward)."""
    found, sites = [], 0
    texts = [text for _, text in _EXAMPLES] + _SUITE + [p.read_text(encoding="utf-8") for p in _case_files()]
    for index, text in enumerate(texts):
        compared, mismatches = parity.compare_site_queries(text, "pkg.mod")
        sites += compared
        found += [(index, m) for m in mismatches]
    assert found == []
    assert sites >= 500  # of them, 37 recompute nothing and 160 run under a condition


def test_region_conditions_of_the_calls_a_region_runs() -> None:
    """``region_condition`` (the site's condition, the tests on the region's way to a call and
    around it) for every call of the linted module that a site's region runs, on the examples,
    cases and test-suite programs."""
    found, calls = [], 0
    texts = [text for _, text in _EXAMPLES] + _SUITE + [p.read_text(encoding="utf-8") for p in _case_files()]
    for index, text in enumerate(texts):
        compared, mismatches = parity.compare_region_conditions(text, "pkg.mod")
        calls += compared
        found += [(index, m) for m in mismatches]
    assert found == []
    assert calls >= 400  # 121 of them under tests of their own, beyond the site's condition


def test_batchnorm_across_the_modules_of_a_tree(tmp_path: Path) -> None:
    """CKP203 in the tree mode: a block whose BatchNorm is made in another module, and
    backbones of other modules (one keeps its BatchNorm in eval mode) building the block."""
    package = tmp_path / "pkg"
    package.mkdir()
    files = {
        "__init__.py": "",
        "layers.py": "from torch import nn\ndef make_norm(c):\n    return nn.BatchNorm2d(c)\n",
        "block.py": (
            "from torch import nn\n"
            "from torch.utils.checkpoint import checkpoint\n"
            "from .layers import make_norm\n"
            "class Block(nn.Module):\n"
            "    def __init__(self, c, with_cp=False):\n"
            "        super().__init__()\n"
            "        self.norm = make_norm(c)\n"
            "        self.with_cp = with_cp\n"
            "    def forward(self, x):\n"
            "        if self.with_cp:\n"
            "            return checkpoint(self.norm, x, use_reentrant=False)\n"
            "        return self.norm(x)\n"
        ),
        "backbone.py": (
            "from torch import nn\n"
            "from .block import Block\n"
            "class Backbone(nn.Module):\n"
            "    def __init__(self, norm_eval=True):\n"
            "        super().__init__()\n"
            "        self.norm_eval = norm_eval\n"
            "        self.layer = nn.Sequential(Block(8, with_cp=True), Block(8, with_cp=True))\n"
            "    def train(self, mode=True):\n"
            "        super().train(mode)\n"
            "        if mode and self.norm_eval:\n"
            "            for m in self.modules():\n"
            "                if isinstance(m, nn.BatchNorm2d):\n"
            "                    m.eval()\n"
        ),
    }
    for name, text in files.items():
        (package / name).write_text(text, encoding="utf-8")
    cst_project, ast_project = parity.tree_projects()
    total = parity.RulesComparison()
    for name in sorted(files):
        path = package / name
        parity.compare_in_tree(path, path.read_text(encoding="utf-8"), cst_project, ast_project, total, ("CKP203",))
    assert total.mismatches == []
    assert total.files == 4 and total.diagnostics["CKP203"] == 1, total.diagnostics


def test_a_helper_of_another_module_states_its_own_tests(tmp_path: Path) -> None:
    """A helper imported from another module that checkpoints only under a test of its own
    (PixArt's ``auto_grad_checkpoint``): the finding at the call states that test, read in the
    helper's module, on both sides."""
    package = tmp_path / "pkg"
    package.mkdir()
    files = {
        "__init__.py": "",
        "utils.py": (
            "from torch.utils.checkpoint import checkpoint\n"
            "def auto_ckpt(module, *args, **kwargs):\n"
            "    if getattr(module, 'grad_checkpointing', False):\n"
            "        return checkpoint(module, *args, **kwargs)\n"
            "    return module(*args, **kwargs)\n"
        ),
        "model.py": "from .utils import auto_ckpt\ndef forward(block, x):\n    return auto_ckpt(block, x)\n",
    }
    for name, text in files.items():
        (package / name).write_text(text, encoding="utf-8")
    cst_project, ast_project = parity.tree_projects()
    total = parity.RulesComparison()
    path = package / "model.py"
    parity.compare_in_tree(path, path.read_text(encoding="utf-8"), cst_project, ast_project, total, codes=("CKP001",))
    assert total.mismatches == []
    assert total.diagnostics["CKP001"] == 1
    found: list = []
    from ckptlint.rules.ast_base import AstRuleContext
    from ckptlint.semantic.ast_analysis import parse_ast

    analysis = parse_ast(SourceFile(str(path), path.read_text(encoding="utf-8")), "pkg.model")
    assert analysis is not None
    ast_project.track(tmp_path)
    ctx = AstRuleContext(analysis, ast_project, found.append)
    ctx.code = "CKP001"
    parity.AST_RULES["CKP001"]().check(ctx)
    assert [d.message.split("; ")[-1] for d in found] == [
        "this code runs only when `getattr(module, 'grad_checkpointing', False)` (inside `auto_ckpt()`)"
    ]

"""The evaluator's pieces without evaluator state on CPython's ``ast``
(ckptlint.checkpoint.evaluator.ast_arguments, ast_iteration, ast_class_summary,
ast_config_values, ast_literals), their answers recorded while they were libcst's: every class
summary field by field (methods, attribute values in order with their methods and paths,
appended values, buffers, method order, ``find_method``, ``layer_base``), the signature and
argument binding of every call of a module function or method, the container of every
``for`` target, and the ``literal``/``decide``/``runs`` answers of ``LiteralDecisions`` for
every test and every name and attribute read; on the rule examples, the test cases, the
shared cases as recorded, the programs of the test suite and hand-written programs (golden
answers: ``__snapshots__/test_ast_evaluator_leaves.ambr`` and
``__digests__/evaluator_leaves_suite.json``; the readings are ``evaluator_readings.py``'s)."""

from __future__ import annotations

import ast
import functools
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from evaluator_readings import evaluator_answers
from goldens import case_params, check_suite, example_params, read_case, render, suite_programs

from ckptlint.checkpoint.evaluator.ast_arguments import bind_arguments, signature_of
from ckptlint.checkpoint.evaluator.ast_class_summary import dynamic_key, summarise_class
from ckptlint.checkpoint.evaluator.ast_config_values import annotated_class, shipped_values
from ckptlint.checkpoint.evaluator.ast_literals import LiteralDecisions
from ckptlint.checkpoint.evaluator.denotations import Context, FunctionValue
from ckptlint.checkpoint.sites.options import NOT_LITERAL
from ckptlint.semantic.ast_analysis import AstAnalysis
from ckptlint.text.source import SourceFile

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def _answers(text: str, module_name: str = "pkg.mod") -> tuple[list[tuple], Counter[str], Counter[str]]:
    """The readings of ``text`` (made once: the counts reuse them)."""
    return evaluator_answers(text, module_name)


def _golden(text: str, module_name: str = "pkg.mod") -> str:
    return render(_answers(text, module_name)[0])


@pytest.mark.parametrize(("label", "text"), example_params())
def test_rule_examples(label: str, text: str, snapshot) -> None:
    assert _golden(text) == snapshot


@pytest.mark.parametrize("path", case_params())
def test_cases(path: Path, snapshot) -> None:
    assert _golden(read_case(path), "pkg.cases." + path.stem) == snapshot


#: The programs of the test suite (but this module's, recorded one by one below).
_SUITE = suite_programs(exclude=Path(__file__).name)


def test_programs_of_the_test_suite(request: pytest.FixtureRequest) -> None:
    """One test for them all (a few hundred small programs)."""
    assert check_suite(request, "evaluator_leaves_suite", _SUITE, lambda text: _answers(text)[0]) >= 100


def test_the_inputs_hold_what_is_compared() -> None:
    """The examples, cases and programs are not empty of what is recorded."""
    items: Counter[str] = Counter()
    answered: Counter[str] = Counter()
    for text in [p.values[1] for p in example_params()] + _SUITE:
        _, kinds, done = _answers(text)
        items.update(kinds)
        answered.update(done)
    for kind, least in {"class": 200, "call": 100, "loop": 100, "test": 100, "read": 5000, "bound test": 50, "runs": 100}.items():
        assert items[kind] >= least, kind
    for kind, least in {"read": 100, "loop": 50, "test": 20, "bound test": 20, "runs": 10}.items():
        assert answered[kind] >= least, kind


PROGRAMS = {
    "methods, properties, static and async methods, positional-only self": """
        import functools
        from torch import nn
        class A(nn.Module):
            x: int = 1
            y = z = 2
            a, b = 3, 4
            @property
            def p(self): return self.x
            @functools.cached_property
            def q(self): return 1
            @staticmethod
            def s(a, b=1): return a
            async def run(self, x, *, flag=True):
                if flag:
                    return await self.go(x, flag=False)
            async def go(self, x, flag=None): return x
            def pos(self, a, /, b, *args, c=1, **kw):
                return self.pos(1, 2, c=3)
            def s2(self):
                return self.s(1, b=2)
    """,
    "one-line bodies": """
        from dataclasses import dataclass
        class Empty: x = 1; y = 2
        @dataclass
        class Cfg: attn: str = "se"
        def build(cfg: Cfg):
            if cfg.attn == "eca":
                return 1
        class B:
            def f(self): self.x = 1; self.y = self.x
    """,
    "what a constructor assigns": """
        from torch import nn
        NAME = "w"
        class Block(nn.Module):
            def __init__(self, dim, drop=0.1, names=("a", "b"), *layers, **kw):
                super().__init__()
                self.t = (nn.ReLU(), nn.GELU())
                self.a, self.b = nn.ReLU(), nn.GELU()
                self.n, self.m = build_norm(dim)
                self.layers = nn.ModuleList()
                self.layers.extend([nn.ReLU(), nn.Tanh()])
                self.layers.append(nn.Dropout(drop))
                self.layers += [nn.Identity(), nn.SiLU()]
                self.layers += layers
                self.mid = nn.Module()
                self.mid.block_1 = nn.Linear(dim, dim)
                self.add_module("fixed", nn.ReLU())
                self.add_module(names[0], nn.ReLU())
                self.add_module(f"layer{dim}", nn.ReLU())
                self.add_module(self.norm_name, nn.ReLU())
                self.register_module(name="kw", module=nn.ReLU())
                self.register_buffer("running", None)
                self.register_parameter("weight", None)
                self.table = {"x": nn.ReLU()}
                self.table.update(y=nn.GELU())
                setattr(self, NAME, nn.ReLU())
                setattr(self, "v", nn.ReLU())
                with nullcontext(nn.ReLU()) as self.ctx:
                    pass
                for self.last in [nn.ReLU(), nn.GELU()]:
                    pass
                self.drop = nn.Dropout(drop) if drop > 0 else nn.Identity()
                self.count: int = 0
                self.count += 1
                self.annotated: nn.Module
            def reset(self):
                self.drop = None
    """,
    "bases: layers, the module's classes, unknown ones, cycles": """
        import torch.nn as nn
        from other import Base
        class Norm(nn.BatchNorm2d):
            pass
        class Act(Norm):
            def forward(self, x): return x
        class Seq(nn.Sequential):
            pass
        class Mixed(Base, Act):
            def extra(self): return self.forward(1)
        class Loop(Loop2):
            pass
        class Loop2(Loop):
            def f(self): return self.g()
    """,
    "calls: names, lambdas, star arguments, methods along the bases": """
        def f(a, b=1, *args, c=2, **kw):
            if b == 1 and c == 2:
                return a
            return g(a, c=c)
        def g(x, /, y=None, *, c=None):
            if c is None or y:
                return x
            return [i for i in x] if y else x
        h = lambda x, y=2: x if y else None
        f(1)
        f(1, 2, 3, c=4, d=5)
        f(*a)
        f(1, **kw)
        f(b=3, a=1)
        g(1, 2, c=3)
        h(1, y=0)
        class Base:
            def run(self, x, mode="a"):
                if mode == "a":
                    return self.other(x)
                return x
            def other(self, x, *, deep=False):
                return deep
        class Child(Base):
            def go(self, x):
                return self.run(x, mode="b") if x else self.run(x)
    """,
    "loops": """
        def f(self, a, b, rest):
            blocks = list(zip(self.resnets, self.attentions))
            for i, (r, t) in enumerate(blocks):
                pass
            for x in tuple(a):
                pass
            for p, q in zip(a, *rest):
                pass
            for j, k in zip(a, b, strict=True):
                pass
            for (u, v), w in zip(zip(a, b), rest):
                pass
            items = [(a, b), (b, a)]
            for m, n in items:
                pass
            for i, e in enumerate(a, start=1):
                pass
            out = [y for _, y in enumerate(b)]
            for g in (x.get(k) for k in a):
                pass
            for s, t in zip((k for k in a), list(x for x in b)):
                pass
            return {k: v for k, v in zip(a, b)}
    """,
    "literals: operators, displays, builtins, subscripts": """
        import copy
        MODES = ("a", "b")
        TABLE = {"a": 1, "b": None, **EXTRA}
        def f(mode="a", flag=False, norm="bn", cfg=dict(type="BN", eps=1e-5), x=1j, e=..., s=b"x"):
            norm = {"bn": "batch", "ln": "layer"}[norm]
            cfg = copy.deepcopy(cfg)
            if mode in MODES and not flag:
                pass
            if mode not in ("c",) or flag and mode == "a" or flag:
                pass
            if flag or mode and norm == "batch" and cfg["type"] == "BN" and cfg.get("eps"):
                pass
            if isinstance(mode, (str, bytes)) and type(flag) is bool and isinstance(cfg, dict):
                pass
            if type(mode) == str and not isinstance(mode, list) and [mode, flag] == ["a", False]:
                pass
            if {mode, norm} == {"a", "batch"} and (mode, *x) and x and e and s:
                pass
            while mode is not None and mode is "a":
                break
            if dict(a=1, **kw)["a"] or dict(b=mode)["b"] == "a" or TABLE["a"]:
                pass
            if mode[0] == "a" or mode[1:] or -1 < 0 < 1 or -x:
                pass
            return f(mode="b", flag=True)
        f()
        f("b", True, "ln")
    """,
    "self attributes: constructor settings and writes elsewhere": """
        from torch import nn
        class Block(nn.Module):
            def __init__(self, mode="a", drop=0.0, act=None, scale=2j):
                super().__init__()
                self.mode = mode
                self.drop = drop
                self.act = act or "relu"
                self.literal = "x"
                self.flag = True
                self.scale = scale
                self.ctx = ...
                self.joined = "a" "b"
                self.both = mode
                self.tuple_a, self.tuple_b = mode, drop
            def forward(self, x):
                if self.mode == "a" and self.drop == 0.0:
                    return x
                if self.act == "relu" or self.literal == "x" or self.flag:
                    return x
                if self.joined and self.tuple_a == "a" and self.scale:
                    return x
                return x if self.both else None
        class Other(nn.Module):
            def __init__(self):
                self.both = 1
                self.drop = 0.5
        class Sub(Block):
            def forward(self, x):
                if self.mode == "a":
                    return x
                self.drop += 1
        def tweak(model):
            model.act = "gelu"
    """,
    "configuration classes and shipped values": """
        from dataclasses import dataclass, replace
        from typing import NamedTuple
        @dataclass
        class NfCfg:
            depth: int = 1
            attn_layer: str = None
            act: str = "relu"
            norm: str = "bn"
            extra: str = "x"
        class Other(NamedTuple):
            kind: str = "a"
        class WithInit:
            kind: str = "a"
            def __init__(self): pass
        def _cfg(depth=1, attn_layer="se", act="relu", **kwargs):
            return NfCfg(depth=depth, attn_layer=attn_layer, act=act, **kwargs)
        def _cfg2(attn_layer, norm):
            attn_layer = attn_layer
            return _cfg(attn_layer=attn_layer, norm=norm)
        cfgs = dict(
            a=_cfg(attn_layer="eca"),
            b=_cfg(2),
            c=NfCfg(attn_layer="cbam"),
            d=replace(NfCfg(), attn_layer="gc"),
            e=NfCfg(1, "se", "gelu", "ln", extra),
        )
        def build(cfg: NfCfg, other: Other, w: WithInit, **kwargs):
            cfg = replace(cfg, **kwargs)
            if cfg.attn_layer == "lambda":
                pass
            if cfg.attn_layer.lower() == "ECA":
                pass
            if cfg.act == "gelu" or cfg.norm == "ln" or cfg.depth > 1:
                pass
            if other.kind == "b" or w.kind == "b" or cfg.extra == "y":
                pass
            name = cfg.attn_layer
            if name == "se":
                pass
            name = name.upper()
            if name == "SE":
                pass
        def later(cfg: NfCfg):
            cfg.norm = "gn"
    """,
    "runs: branches and ternaries decided by the arguments": """
        def f(mode="a", deep=False):
            if mode == "a":
                g(1)
            elif mode == "b":
                g(2)
            else:
                g(3)
            if deep:
                g(4)
            x = g(5) if mode == "a" else g(6)
            while deep:
                g(7)
            return [g(8) for _ in range(2)] if not deep else (lambda: g(9))
        def g(x): return x
        f()
        f("b", deep=True)
        f(mode="c")
    """,
    "nested and decorated classes, walrus, match, positional-only constructors": """
        import torch.nn as nn
        def factory(kind="a"):
            class Inner(nn.Module):
                def __init__(self, k=kind):
                    self.k = k
                    class Deeper:
                        def m(this): this.v = 1
                def forward(self, x):
                    if self.k == "a":
                        return x
                    if (y := self.k) and y == "b":
                        return y
            return Inner
        class Outer:
            class Nested(nn.Linear):
                def f(self): return self.g(1) if self.flag else None
            flag = True
            def g(self, a, *, b=(1, 2)):
                match a:
                    case 1:
                        if b[0] == 1: pass
                return [self.g(v) for v in (a,)]
        @decorator
        class D(Outer.Nested, metaclass=Meta):
            def __init__(self, a: int, b, /, c=None):
                self.a = a; self.b = b
                if c is not None and isinstance(c, (int, float)):
                    self.c = c
            def run(self):
                return self.__init__(1, 2, c=3.0)
        x = [i for i in range(3) if i]
        for k, (a, *b) in enumerate(zip(x, x)):
            pass
        global_thing = D(1, 2) if x else Outer()
    """,
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_hand_written_programs(name: str, snapshot) -> None:
    text = textwrap.dedent(PROGRAMS[name])
    assert _golden(text) == snapshot
    assert sum(_answers(text)[1].values()) > 0


#: Class bodies after the colon on the header's logical line (libcst's
#: ``SimpleStatementSuite``: no attributes), where ``ast``'s physical rows differ.
LAYOUTS = {
    "a class body after a parenthesis on its own line": """
        class Cfg(
            object
        ): use_checkpoint = True
        def f(a
        ): return Cfg.use_checkpoint
    """,
    "a class body after a backslash": r"""
        from torch.utils.checkpoint import checkpoint
        class Cfg: \
            use_checkpoint = False
        class B:
            def __init__(self, config: Cfg):
                self.config = config
            def forward(self, x):
                if self.config.use_checkpoint:
                    return checkpoint(self.f, x)
    """,
}


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_logical_line_layouts(name: str, snapshot) -> None:
    text = textwrap.dedent(LAYOUTS[name])
    assert _golden(text) == snapshot
    assert sum(_answers(text)[1].values()) > 0


def test_an_nfkc_identifier(snapshot) -> None:
    """``ast`` normalises identifiers as Python does (PEP 3131; libcst kept the spelling)."""
    text = textwrap.dedent("""
        class B:
            def __init__(self, \uff57ith_cp=False):
                self.\uff57ith_cp = with_cp
            def forward(self, x):
                return self.with_cp
    """)
    assert _golden(text) == snapshot


# --------------------------------------------------------------------------- answers
def _analysis(text: str) -> AstAnalysis:
    text = textwrap.dedent(text)
    return AstAnalysis(SourceFile("<test>", text), ast.parse(text), "pkg.mod")


def _class(analysis: AstAnalysis, name: str) -> ast.ClassDef:
    return next(n for n in analysis.tree.body if isinstance(n, ast.ClassDef) and n.name == name)


def test_a_summary_reads_what_the_constructor_assigns() -> None:
    analysis = _analysis(PROGRAMS["what a constructor assigns"])
    info = summarise_class(analysis, _class(analysis, "Block"))
    assert list(info.methods) == ["__init__", "reset"]
    assert [analysis.text_of(v.value) for v in info.attributes["drop"]] == [
        "nn.Dropout(drop) if drop > 0 else nn.Identity()",
        "None",
    ]
    assert [analysis.text_of(v) for v, _ in info.appended["layers"]] == [
        "[nn.ReLU(), nn.Tanh()]",
        "nn.Dropout(drop)",
        "nn.Identity()",
        "nn.SiLU()",
    ]
    assert [v.path for v in info.attributes["n"]] == [(0,)]
    assert "mid.block_1" in info.attributes and "w" in info.attributes and "kw" in info.attributes
    assert info.buffers == {"running"}
    assert {"\0names[0]", '\0f"layer{dim}"', "\0self.norm_name"} <= set(info.attributes)
    key = next(n.args[0] for n in ast.walk(info.node) if isinstance(n, ast.Call) and n.args and isinstance(n.args[0], ast.Subscript))
    assert dynamic_key(analysis, key) == "\0names[0]"


def test_a_parenthesized_run_time_key(snapshot) -> None:
    """``ast`` keeps no parentheses: a run-time key's text loses those around it (libcst's kept them)."""
    text = textwrap.dedent("""
        class Block:
            def __init__(self):
                self.add_module((self.norm_name), nn.ReLU())
    """)
    assert _golden(text) == snapshot


def test_arguments_are_bound_to_parameters() -> None:
    analysis = _analysis(PROGRAMS["calls: names, lambdas, star arguments, methods along the bases"])
    f = analysis.tree.body[0]
    caller = Context(analysis)
    value = FunctionValue(f, Context(analysis))
    call = next(n for n in ast.walk(analysis.tree) if isinstance(n, ast.Call) and len(n.args) == 3)
    ctx = bind_arguments(value, call.args, call.keywords, caller)
    assert sorted(b.name for b in ctx.env) == ["a", "b", "c"]
    assert ctx.keyword_params == {"c", "d"} and not ctx.open_call and ctx.bound is f
    starred = next(n for n in ast.walk(analysis.tree) if isinstance(n, ast.Call) and any(k.arg is None for k in n.keywords))
    ctx = bind_arguments(value, starred.args, starred.keywords, caller)
    assert ctx.env == {} and ctx.open_call
    signature = signature_of(value)
    assert signature is not None and signature.keywords == {"a", "b", "c"} and signature.var_keyword


SHIPPED = """
    from dataclasses import dataclass, replace
    @dataclass
    class NfCfg:
        attn_layer: str = None
        act: str = "relu"
    def _cfg(attn_layer="se", act="relu"):
        return NfCfg(attn_layer=attn_layer, act=act)
    cfgs = dict(a=_cfg(attn_layer="eca"), b=_cfg(act=make()), c=replace(NfCfg(), attn_layer="gc"), d=NfCfg(attn_layer=None))
    def build(cfg: NfCfg, mode="a"):
        if cfg.attn_layer == "lambda":
            pass
        if mode == "a" and cfg.attn_layer in ("se", "eca", "gc", None):
            pass
    build(cfgs["a"], mode="b")
"""


def test_literals_follow_arguments_defaults_and_shipped_values(snapshot) -> None:
    analysis = _analysis(SHIPPED)
    build = next(n for n in analysis.tree.body if isinstance(n, ast.FunctionDef) and n.name == "build")
    cls = annotated_class(analysis, build.args.args[0])
    assert cls is not None and cls.name == "NfCfg"
    assert shipped_values(analysis, cls, "attn_layer") == {"se", "eca", "gc", None}
    assert shipped_values(analysis, cls, "act") is None  # `make()` is not known
    decisions = LiteralDecisions()
    first, second = [n.test for n in ast.walk(build) if isinstance(n, ast.If)]
    plain = Context(analysis)
    assert decisions.literal(first, plain) is NOT_LITERAL
    assert decisions.decide(first, plain) is False  # no configuration ships "lambda"
    assert decisions.decide(second, plain) is None  # `mode`'s default: the call is not seen
    call = analysis.tree.body[-1].value  # type: ignore[attr-defined]
    bound = bind_arguments(FunctionValue(build, plain), call.args, call.keywords, plain)
    assert decisions.decide(second, bound) is False
    assert decisions.decide(second, bind_arguments(FunctionValue(build, plain), [], [], plain)) is None
    assert _golden(textwrap.dedent(SHIPPED)) == snapshot

"""The expression evaluator on CPython's ``ast`` (ckptlint.checkpoint.evaluator.ast_evaluation,
with ast_imports, ast_norm_configs and ast_flow), its answers recorded while they were
libcst's: for every checkpointed callable, method call, ``self.X`` read in ``forward`` and
module-level name of the rule examples, the test cases, the shared cases as recorded, the
programs of the test suite and hand-written programs, the values of a plain and a complete
query, and what an instance of every class holds (golden answers:
``__snapshots__/test_ast_evaluation.ambr`` and ``__digests__/evaluation_suite.json``; the
readings are ``evaluation_readings.py``'s)."""

from __future__ import annotations

import ast
import functools
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from evaluation_readings import evaluation_answers
from goldens import case_params, check_suite, example_params, read_case, render
from test_ast_evaluator_leaves import _SUITE

from ckptlint.checkpoint.evaluator.ast_flow import attribute_set_before, returns_of
from ckptlint.semantic.ast_analysis import AstAnalysis
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.ast_subscripts import subscript_elements, subscript_elements_in
from ckptlint.semantic.project import AstProject, Project, module_name_for
from ckptlint.text.source import SourceFile


@functools.cache
def _answers(text: str, module_name: str = "pkg.mod") -> tuple[list[tuple], Counter[str], Counter[str]]:
    """The answers for ``text`` (made once: the counts reuse them)."""
    return evaluation_answers(text, module_name)


def _golden(text: str, module_name: str = "pkg.mod") -> str:
    return render(_answers(text, module_name)[0])


@pytest.mark.parametrize(("label", "text"), example_params())
def test_rule_examples(label: str, text: str, snapshot) -> None:
    assert _golden(text) == snapshot


@pytest.mark.parametrize("path", case_params())
def test_cases(path: Path, snapshot) -> None:
    assert _golden(read_case(path), "pkg.cases." + path.stem) == snapshot


def test_programs_of_the_test_suite(request: pytest.FixtureRequest) -> None:
    """One test for them all (a few hundred small programs)."""
    assert check_suite(request, "evaluation_suite", _SUITE, lambda text: _answers(text)[0]) >= 100


def test_the_inputs_hold_what_is_compared() -> None:
    """The examples and programs are not empty of what is recorded, nor of known values."""
    items: Counter[str] = Counter()
    answered: Counter[str] = Counter()
    for text in [p.values[1] for p in example_params()] + _SUITE + [textwrap.dedent(p) for p in PROGRAMS.values()]:
        _, asked, done = _answers(text)
        items.update(asked)
        answered.update(done)
    for kind, least in {"site": 300, "call": 1500, "self read": 400, "name": 300, "held": 250}.items():
        assert items[kind] >= least, kind
    for kind, least in {"site": 100, "call": 600, "self read": 150, "name": 100, "held": 120}.items():
        assert answered[kind] >= least, kind


PROGRAMS = {
    "factory closures, partials, decided returns": """
        import functools
        from torch import nn
        from torch.utils.checkpoint import checkpoint

        def make(dim, drop=0.1):
            def inner(x):
                return nn.Dropout(drop)(x)
            return inner

        def pick(kind="a"):
            if kind == "a":
                return nn.Dropout(0.1)
            elif kind == "b":
                return nn.BatchNorm1d(4)
            else:
                return nn.Identity()

        def guarded():
            try:
                return nn.ReLU()
            except ValueError:
                return nn.GELU()
            finally:
                pass

        class Block(nn.Module):
            def __init__(self, dim, norm_layer=nn.LayerNorm, act=functools.partial(nn.Dropout, p=0.2)):
                super().__init__()
                self.norm = norm_layer(dim)
                self.act = act()
                self.fn = functools.partial(make, dim)
                self.fixed = functools.partial(nn.BatchNorm1d, track_running_stats=False)
                self.chosen = pick("b")
                self.other = pick()
                self.safe = guarded()

            def forward(self, x):
                x = checkpoint(make(3), x, use_reentrant=False)
                x = checkpoint(self.fn(), x, use_reentrant=False)
                x = checkpoint(lambda t: self.norm(t), x, use_reentrant=False)
                return self.act(x) + self.chosen(x) + self.other(x) + self.safe(x) + self.fixed(4)(x)

        model = Block(4, norm_layer=nn.BatchNorm1d)
        other = Block(4, *[nn.LayerNorm])
        """,
    "containers: ModuleList, Sequential, slices, dicts, appends": """
        from torch import nn
        from torch.utils.checkpoint import checkpoint, checkpoint_sequential

        REGISTRY = {"bn": nn.BatchNorm2d, "ln": nn.LayerNorm, **{}}
        KEYED = {"bn": nn.BatchNorm2d, "drop": nn.Dropout}

        class Net(nn.Module):
            def __init__(self, depth=3, kind="bn"):
                super().__init__()
                layers = []
                for i in range(depth):
                    layers.append(nn.Linear(4, 4))
                layers += [nn.Dropout(0.1)]
                layers.extend([nn.ReLU(), nn.GELU()])
                layers.insert(0, nn.Identity())
                self.blocks = nn.ModuleList(layers)
                self.seq = nn.Sequential(nn.Linear(4, 4), *layers, nn.BatchNorm1d(4))
                self.empty = nn.ModuleList()
                self.kw = nn.ModuleList(**{})
                self.norm = KEYED[kind](4)
                self.norm2 = KEYED.get("drop", nn.Identity)(0.1)
                self.norm3 = REGISTRY.get(kind)(4)
                self.pair = (nn.Linear(4, 4), nn.Dropout(0.2))
                self.gen = nn.ModuleList(nn.Linear(4, 4) for _ in range(2))
                self.heads = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
                self.heads.append(nn.Dropout(0.3))
                self.add_module("extra", nn.Dropout(0.4))

            def forward(self, x):
                x = checkpoint_sequential(self.seq, 2, x)
                for a, b in zip(self.blocks[1:], self.blocks[:-1]):
                    x = checkpoint(a, x) + b(x)
                for i, blk in enumerate(self.heads):
                    x = checkpoint(blk, x)
                x = self.seq[0](x) + self.seq[-1](x) + self.seq[1::2][0](x)
                x = self.pair[1](x) + self.pair[0, 1] + self.pair[(0, 1)]
                return self.gen[0](x) + self.norm(x) + self.norm2(x) + self.norm3(x) + self.extra(x) + self.empty

        a, b = nn.Linear(4, 4), nn.Dropout(0.5)
        first, *rest = [nn.ReLU(), nn.GELU(), nn.Dropout()]
        net = Net(kind="ln")
        chosen = net.blocks[0] or net.seq or net.heads
        """,
    "getattr, properties, add_module, nested holders, annotations, static methods": """
        from torch import nn
        from torch.utils.checkpoint import checkpoint

        class Expert(nn.Module):
            def forward(self, x):
                return x

            @staticmethod
            def build(dim):
                return nn.Linear(dim, dim)

        class Block(nn.Module):
            def __init__(self, dim, expert: Expert = None):
                super().__init__()
                self.norm1_name = "norm_{}".format(1)
                self.add_module(self.norm1_name, nn.BatchNorm2d(dim))
                setattr(self, "drop", nn.Dropout(0.1))
                self.mid = nn.Module()
                self.mid.block_1 = nn.Dropout(0.2)
                self.expert = expert
                self.built = Expert.build(dim)

            @property
            def norm1(self):
                return getattr(self, self.norm1_name)

            def run(self, layer: Expert, x):
                return checkpoint(layer, x)

            def forward(self, x):
                f = getattr(self, "drop")
                g = getattr(self, "missing", None)
                x = checkpoint(self.norm1, x) + checkpoint(self.mid.block_1, x)
                return f(x) + self.expert(x) + self.build(4)(x) + self.built(x) + self.children()

        block = Block(4, Expert())
        """,
    "norms from configs": """
        from torch import nn
        from mmcv.cnn import ConvModule, build_norm_layer

        class Net(nn.Module):
            def __init__(self, norm_cfg=dict(type="BN", requires_grad=True), layer_cfg=dict(type=nn.BatchNorm2d)):
                super().__init__()
                self.norm_name, norm = build_norm_layer(norm_cfg, 4)
                self.add_module(self.norm_name, norm)
                self.gn = build_norm_layer(dict(type="GN", num_groups=2), 4)[1]
                self.ln = build_norm_layer(dict(type="LN"), 4)[1]
                self.odd = build_norm_layer(dict(type="Unknown"), 4)
                self.typed = build_norm_layer(layer_cfg, 4)[1]
                self.conv = ConvModule(4, 4, 3, norm_cfg=dict(type="SyncBN"))
                self.conv2 = ConvModule(4, 4, 3, norm_cfg=norm_cfg)
                self.none = build_norm_layer(*[norm_cfg])

            def forward(self, x):
                return self.gn(x) + self.ln(x) + self.typed(x) + self.conv(x) + self.conv2(x) + self.odd

        net = Net(norm_cfg=dict(type="LN"))
        """,
    "wrappers, returning self, constructors, set just before": """
        import deepspeed
        import torch
        from torch import nn
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
        from transformers import AutoModel

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = checkpoint_wrapper(nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1)))
                self.moved = Model2().to("cuda").half()
                self.loaded = Model2.from_pretrained("x")
                self.auto = AutoModel.from_pretrained("x")
                self.compiled = torch.compile(Model2())

            def forward(self, x):
                self.llm = Model2()
                self.llm.enable()
                if x: self.a = nn.ReLU(); self.a(x)
                self.b = nn.GELU(); self.b(x)
                for _ in range(2):
                    self.c(x)
                    self.c = nn.Dropout()
                y, self.d = 1, nn.ReLU()
                self.d(x)
                return self.body(x) + self.moved(x) + self.loaded(x) + self.compiled(x)

        class Model2(nn.Module):
            def forward(self, x):
                return x

        engine, optimizer, _, _ = deepspeed.initialize(model=Model(), config={})
        engine.module
        engine.forward
        engine.step
        m = Model()
        m.llm = Model2()
        m.llm.enable()
        wide = m.body or m.moved and m.loaded or m.auto
        """,
    "loops, with, walrus, match, star arguments": """
        from contextlib import nullcontext
        from torch import nn
        from torch.utils.checkpoint import checkpoint

        class Net(nn.Module):
            def __init__(self, layers=(nn.Linear(4, 4), nn.Dropout(0.1))):
                super().__init__()
                self.layers = nn.ModuleList(layers)
                self.drops = [nn.Dropout(p) for p in (0.1, 0.2)]

            def forward(self, x, mode="a"):
                for i, (a, b) in enumerate(zip(self.layers, self.drops)):
                    x = checkpoint(a, x) + checkpoint(b, x)
                for drop in (self.drops[0], self.layers[1]):
                    x = drop(x)
                with nullcontext(self.layers[0]) as first:
                    x = first(x)
                if (layer := self.layers[0]) is not None:
                    x = checkpoint(layer, x)
                match mode:
                    case "a":
                        x = self.layers[1](x)
                    case _:
                        x = self.drops[1](x)
                return checkpoint(*self.layers, x)

        net = Net()
        a = b = net.layers
        """,
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_programs(name: str, snapshot) -> None:
    text = textwrap.dedent(PROGRAMS[name])
    assert _golden(text) == snapshot
    answered = _answers(text)[2]
    assert answered["call"] + answered["name"] > 5


TREE = {
    "pkg/__init__.py": "from .layers import Block as Block\n",
    "pkg/layers.py": """
        from torch import nn

        class Block(nn.Module):
            class Inner(nn.Module):
                def forward(self, x):
                    return x

            def __init__(self, dim, drop=0.1):
                super().__init__()
                self.drop = nn.Dropout(drop)

            def forward(self, x):
                return self.drop(x)

        def make_block(dim):
            return Block(dim, drop=0.0)

        NORMS = {"bn": nn.BatchNorm1d}
        """,
    "pkg/star.py": """
        from torch import nn
        from .layers import *

        class Starred(nn.Module):
            def forward(self, x):
                return x
        """,
    "pkg/sub/__init__.py": "",
    "pkg/sub/deep.py": """
        from torch import nn

        def deep(dim):
            return nn.LayerNorm(dim)
        """,
    "pkg/model.py": """
        import pkg.layers as L
        import pkg.sub.deep
        from torch import nn
        from torch.utils.checkpoint import checkpoint
        from . import layers
        from .layers import Block, make_block, NORMS
        from .star import *
        from .sub import deep as deep_module
        from .missing import Nothing
        from pkg.layers import Block as Inner
        from pkg.layers import Block

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = Block(4)
                self.b = make_block(4)
                self.c = layers.Block(4)
                self.d = L.make_block(4)
                self.e = Starred()
                self.f = NORMS["bn"](4)
                self.g = pkg.sub.deep.deep(4)
                self.h = deep_module.deep(4)
                self.i = Nothing()
                self.j = Block.Inner()
                self.k = layers.sub if False else layers

            def forward(self, x):
                x = checkpoint(self.a, x) + checkpoint(self.b, x) + checkpoint(self.c, x)
                return self.d(x) + self.e(x) + self.f(x) + self.g(x) + self.h(x) + self.i(x) + self.j(x)

        model = Model()
        pieces = (Block, make_block, layers, L, deep_module, Starred, Nothing, Inner)
        """,
}


def test_a_tree_read_through_the_loader(tmp_path: Path, snapshot) -> None:
    """Names imported from other modules of the tree (``from .layers import Block``, modules,
    star imports, submodules, nested classes) denote through ``AstProject`` the values they
    denoted through libcst's ``Project``."""
    for relative, text in TREE.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    loader = AstProject(Project())
    answered: Counter[str] = Counter()
    found = {}
    for relative in TREE:
        path = tmp_path / relative
        name, is_package, home = module_name_for(path)
        loader.project.track(home)
        out, _, done = evaluation_answers(path.read_text(encoding="utf-8"), name, is_package, str(path), loader)
        found[relative] = render(out)
        answered.update(done)
    assert "\n".join(f"== {relative}\n{text}" for relative, text in found.items()) == snapshot
    assert answered["site"] >= 3
    assert answered["call"] >= 10
    assert answered["name"] >= 8


def _analysis(text: str) -> AstAnalysis:
    text = textwrap.dedent(text)
    return AstAnalysis(SourceFile("<test>", text), ast.parse(text))


def test_returns_of_skips_the_branches_decided_against() -> None:
    analysis = _analysis("""
        def f(flag):
            if flag:
                return 1
            elif other:
                return 2
            for x in y:
                return 3
            def inner():
                return 4
            return 5
        """)
    function = analysis.tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    values = [r.value.value for r in returns_of(function)]  # type: ignore[union-attr]
    assert values == [1, 2, 3, 5]
    decided = [r.value.value for r in returns_of(function, lambda test: isinstance(test, ast.Name) and test.id == "flag")]  # type: ignore[union-attr]
    assert decided == [1, 3, 5]


def test_attribute_set_before_reads_straight_line_code() -> None:
    analysis = _analysis("""
        def f(self):
            self.a = 1
            self.a
            self.b = 2; self.b
            if c: self.d = 3; self.d
            self.e = 4
            for _ in x:
                self.e
                self.e = 5
        """)
    reads = [n for n in ast.walk(analysis.tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)]
    found = {r.attr: attribute_set_before(analysis, r) for r in reads}
    assert isinstance(found["a"], ast.Constant) and found["a"].value == 1
    assert found["b"] is None  # the same line is one libcst statement
    assert found["d"] is None  # a block on its header's line is no indented block
    assert found["e"] is None  # the loop assigns it again


# ------------------------------------------------- subscripts whose index is a tuple
_NET = """\
import torch.nn as nn
import torch.utils.checkpoint as cp
CFG = {"head": "a"}
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(2, 2), nn.Dropout(0.1)])
        self.heads = nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.ReLU()})
    def forward(self, x):
        return cp.checkpoint(INDEXED, x)
"""
#: libcst splits the brackets by their top-level commas; ``ast`` gives one ``Tuple``.
TUPLE_INDEXES = {
    "trailing comma": "self.blocks[0,]",
    "trailing comma, key": 'self.heads["a",]',
    "parenthesised first element": 'self.heads[("a"), "b"]',
    "parenthesised elements": 'self.heads[("a"), ("b")]',
    "parenthesised tuple": 'self.heads[("a", "b")]',
    "slice with a trailing comma": "self.blocks[1:,]",
    "two slices": "self.blocks[1:, :1]",
    "literal key with a trailing comma": 'self.heads[CFG["head",]]',
    "starred": "self.blocks[*CFG]",
}


@pytest.mark.parametrize("name", list(TUPLE_INDEXES))
def test_subscripts_whose_index_is_a_tuple(name: str, snapshot) -> None:
    text = _NET.replace("INDEXED", TUPLE_INDEXES[name])
    assert _golden(text) == snapshot
    answered = _answers(text)[2]
    assert answered["call"] + answered["name"] > 5


@pytest.mark.parametrize(
    ("source", "elements"),
    [
        ("x[0]", ["0"]),
        ("x[0,]", ["0"]),
        ("x[(a), b]", ["a", "b"]),
        ("x[(a), (b)]", ["a", "b"]),
        ("x[(a),]", ["a"]),
        ("x[(a, b)]", ["(a, b)"]),
        ("x[(a, b),]", ["(a, b)"]),
        ("x[1:,]", ["1:"]),
        ("x[1:, ::2]", ["1:", "::2"]),
        ("x[*a]", ["a"]),
        ("x[f(a, b)]", ["f(a, b)"]),
        ("x[[a, b]]", ["[a, b]"]),
        ('x["a,", (\n  b  # ,\n)]', ["'a,'", "b"]),
        ('"""é\n"""[(0), (1)]', ["0", "1"]),
        ('x[\n  "é", (1),\n]', ["'é'", "1"]),
    ],
)
def test_subscript_elements_are_libcsts(source: str, elements: list[str]) -> None:
    """The elements libcst splits at the top-level commas of the brackets, with the text and
    (for the forms positions can tell) without it."""
    text = f"y = {source}\n"
    model = AstModel.build(ast.parse(text), "m", text=text)
    subscript = model.module.body[0].value  # type: ignore[attr-defined]
    assert [ast.unparse(e) for e in subscript_elements(model, subscript)] == elements
    guessed = [ast.unparse(e) for e in subscript_elements_in(None, subscript)]
    if source not in ("x[(a), (b)]", "x[(a),]", '"""é\n"""[(0), (1)]', 'x[\n  "é", (1),\n]'):  # positions alone read these as one tuple
        assert guessed == elements

"""What the outer-state rules share, on CPython's ``ast``
(:mod:`ckptlint.checkpoint.analyses.ast_outer_state`), answers as libcst's
(:mod:`ckptlint.checkpoint.analyses.outer_state`): for every node of every frame of the
regions ``benchmarks/ast_outer_state_parity.py`` builds by hand, the same frame scope and
``self`` name, code and message text, store/load, owner and bindings, and enclosing
statements. Inputs: the rule examples, the test cases, the shared cases when present, the
programs of the test suite and hand-written programs."""

from __future__ import annotations

import functools
import textwrap
from pathlib import Path

import pytest
from parity_scripts import load_parity
from test_ast_evaluator_leaves import _SUITE
from test_ast_model import _case_files, _parses, _rule_examples

from ckptlint.checkpoint.analyses.ast_outer_state import is_load, is_store, node_code
from ckptlint.semantic.ast_analysis import AstAnalysis, parse_ast
from ckptlint.semantic.project import AstProject, Project, module_name_for
from ckptlint.text.source import SourceFile

#: The kinds of answers of ``outer_state``.
KINDS = {"frame", "code", "text", "store", "load", "owner", "contains"}


parity = load_parity("ast_outer_state_parity")

_EXAMPLES = [(label, text) for label, text in _rule_examples() if _parses(text)]


@functools.cache
def _compared(text: str):
    """The comparison of ``text`` as module ``pkg.mod`` (made once: the counts reuse it)."""
    return parity.compare(text, "pkg.mod")


@pytest.mark.parametrize(("label", "text"), [pytest.param(t, x, id=t) for t, x in _EXAMPLES])
def test_rule_examples(label: str, text: str) -> None:
    assert _compared(text).of(KINDS) == []


@pytest.mark.parametrize("path", _case_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_cases(path: Path) -> None:
    assert _compared(path.read_text(encoding="utf-8")).of(KINDS) == []


def test_programs_of_the_test_suite() -> None:
    """One test for them all (a few hundred small programs): every mismatch listed."""
    found = [(index, m) for index, text in enumerate(_SUITE) for m in _compared(text).of(KINDS)]
    assert found == []


PROGRAMS = {
    "state of every kind": """
        import torch
        from torch import nn
        counter = 0
        cache = {}
        stats = []

        class Block(nn.Module):
            scale = 2

            def __init__(self):
                super().__init__()
                self.n = 0

            def forward(self, x, y=None, *rest, flag=False, **kw):
                global counter
                counter += 1
                self.n += 1
                a, (b, *c) = x, (y, 1, 2)
                for i, (j) in enumerate((x)):
                    self.helper(i)
                with torch.no_grad() as g, open("f") as (h, k):
                    z = [m for m in (x) if m]
                if key not in cache:
                    cache[(key)] = (x).sum()
                kw = kw.copy()
                kw["a"] = 1
                rest += (1,)
                return (self.n), x.to(y), Block.scale, torch.relu(x)

            def helper(self, i):
                stats.append(i)
                self.stats.append(i)
                return sorted((i for i in range(3)), key=lambda v: (v))

        def outer(a):
            total = 0
            def inner(b):
                nonlocal total
                total += b
                return a + total
            return inner
        """,
    "parentheses, comments and layout": """
        class A:
            def f(self, x):
                y = (  # (
                    x)
                z = g(a,
                      b,  # c
                  d,
                        e) + \\
                      h(\"\"\"x
                    y\"\"\")
                print((a), f(x for x in y), f((x for x in y)), f((a), b), f(b, (a)), f((a),))
                w = ((x, y)), (x), (y)
                v = f(
                    # first
                    q
                    for q in x
                    if q  # last
                )
                raise ValueError(
                    f"first {x} "
                        "second"  # (
                    'third'
                    '''fourth
                fifth'''
                )
                u = ((  x  ))[(0)].attr
                (
                    first,
                    *middle ,  # c
                    # d
                    last,
                    *rest,
                ) = x
                *front, = [*x, *y ,]
                t = [(a) for (a) in (x) if (a)]
                s = {(k): (v) for k, v in x.items()}
                return (lambda: (x))(), (yield), -(x), not (x), x if (y) else (z)
        """,
    "parenthesized with items": """
        def f(a, b, c):
            with (a):
                pass
            with (a) as b, (c):
                pass
            with (a, b):
                pass
            with (a as b):
                pass
            with ((a)):
                pass
            with (a), (b):
                pass
            with (a, b) as c:
                pass
            with (
                a  # x
                if b
                else c
            ):  # y
                pass
            with (a)() as b:
                pass
        """,
    "async, decorators and classes in functions": """
        import functools

        class B:
            @functools.cache
            async def run(self, x):
                async with lock as held:
                    async for item in x:
                        self.items.append(item)
                class Inner((Base), metaclass=(Meta)):
                    pass
                return [await f(v) async for v in x]

            @staticmethod
            def s(a, b=(1), *, c=(2)):
                return a, b, c

        def module_function(x):
            return B().run(x), B.s(x)
        """,
    "targets of every kind": """
        import torch

        class C:
            def forward(self, x):
                self.a = self.b = x
                self.c: int = 1
                self.d[0], self.e.f = x, x
                [self.g, *self.h] = x
                (self.i) = x
                for self.j in x:
                    pass
                y = [self.k for self.k in x]
                del self.a
                self.n += 1
                (w := x)
                return y
        """,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs(name: str) -> None:
    assert _compared(textwrap.dedent(PROGRAMS[name])).of(KINDS) == []


def test_the_inputs_hold_what_is_compared() -> None:
    """The examples and programs are not empty of what is compared."""
    total = parity.Comparison()
    for text in [text for _, text in _EXAMPLES] + _SUITE + [textwrap.dedent(p) for p in PROGRAMS.values()]:
        total.add(_compared(text))
    for kind, least in {"frame": 1000, "code": 15000, "store": 10000, "owner": 10000, "load": 7000, "contains": 7000}.items():
        assert total.items[kind] >= least, kind


@functools.cache
def _regions_compared(text: str):
    """The comparison over the regions the builders make of ``text``'s sites (module alone)."""
    return parity.compare_regions(text, "pkg.mod")


def test_the_regions_of_the_builders() -> None:
    """Every answer of the three analyses (outer state, write exemptions, end resets) over the
    regions ``RegionBuilder`` and ``AstRegionBuilder`` make of every site of the inputs."""
    texts = [text for _, text in _EXAMPLES] + _SUITE + [textwrap.dedent(p) for p in PROGRAMS.values()]
    texts += [path.read_text(encoding="utf-8") for path in _case_files()]
    total = parity.Comparison()
    for text in texts:
        total.add(_regions_compared(text))
    assert total.mismatches == []
    assert total.regions >= 600
    assert total.frames >= 200
    assert total.items["code"] >= 2500


TREE = {
    "pkg/__init__.py": "",
    "pkg/stats.py": """
        import torch
        _STACK = []
        calls = 0

        def push(name):
            global calls
            calls += 1
            _STACK.append(name)

        def pop():
            _STACK.pop()

        class Meter(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.time_ms = 0.0
                self.events = []

            def forward(self, x):
                push("meter")
                self.time_ms += 1.0
                self.events.append(x)
                y = x * 2
                self.reset()
                pop()
                return y

            def reset(self):
                self.time_ms = 0.0
                self.events = []
        """,
    "pkg/model.py": """
        import torch
        from torch.utils.checkpoint import checkpoint
        from .stats import Meter, push, pop
        from . import stats

        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.meter = Meter()
                self.cache = None

            def body(self, x):
                push("body")
                if self.cache is None:
                    self.cache = x.new_zeros(1)
                stats.calls += 1
                pop()
                return self.meter(x) + self.cache

            def forward(self, x):
                x = checkpoint(self.meter, x, use_reentrant=False)
                return checkpoint(self.body, x, use_reentrant=False)
        """,
}


def test_a_tree_read_through_both_loaders(tmp_path: Path) -> None:
    """Regions whose frames are in another module of the tree answer alike."""
    for relative, text in TREE.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    project = Project(partial=False)
    loader = AstProject(Project(partial=False))
    total = parity.Comparison()
    for relative in TREE:
        path = tmp_path / relative
        name, is_package, home = module_name_for(path)
        project.track(home)
        loader.project.track(home)
        total.add(parity.compare_regions(path.read_text(encoding="utf-8"), name, is_package, str(path), project, loader))
    assert total.mismatches == []
    assert total.regions == 2 and total.frames >= 4
    assert total.yes["balanced"] == 2 and total.yes["resets"] >= 1 and total.yes["covers"] >= 2 and total.yes["once"] >= 1


def _analysis(text: str) -> AstAnalysis:
    analysis = parse_ast(SourceFile(path="m.py", text=textwrap.dedent(text)), "m")
    assert analysis is not None
    return analysis


def test_node_code_keeps_own_parentheses_and_drops_the_calls() -> None:
    analysis = _analysis("""
        class A:
            def f(self):
                print((a), g(x for x in y), g((b)), k((c),), (d).e, (  # (
                    f))
        """)
    codes = [node_code(analysis, node) for node in analysis.tree.body[0].body[0].body[0].value.args]  # type: ignore[attr-defined]
    assert codes == ["(a)", "g(x for x in y)", "g((b))", "k((c),)", "(d).e", "(  # (\n    f)"]
    generator = analysis.tree.body[0].body[0].body[0].value.args[1].args[0]  # type: ignore[attr-defined]
    assert node_code(analysis, generator) == "x for x in y"


def test_every_name_is_a_load_but_a_with_target() -> None:
    analysis = _analysis("""
        with a as b, c as (d, e):
            f = g
        """)
    names = {node.id: node for node in __import__("ast").walk(analysis.tree) if type(node).__name__ == "Name"}
    model = analysis.model
    assert {name: is_load(model, node) for name, node in names.items()} == {
        "a": True, "b": False, "c": True, "d": True, "e": True, "f": True, "g": True,
    }
    assert {name: is_store(model, node) for name, node in names.items()} == {
        "a": False, "b": False, "c": False, "d": False, "e": False, "f": True, "g": False,
    }

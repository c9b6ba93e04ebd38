"""What the outer-state rules share, on CPython's ``ast``
(:mod:`ckptlint.checkpoint.analyses.ast_outer_state`), recorded while it answered as libcst's
(:mod:`ckptlint.checkpoint.analyses.outer_state`): for every node of every frame of the
regions ``outer_state_readings.hand_regions`` builds, the frame scope and ``self`` name, code
and message text, store/load, owner and bindings, and enclosing statements; and the answers of
the three analyses on the regions of the builder. Inputs: the rule examples, the test cases,
the shared cases as recorded, the programs of the test suite and hand-written programs (golden
answers: ``__snapshots__/test_ast_outer_state.ambr`` and ``__digests__/outer_state_*.json``)."""

from __future__ import annotations

import functools
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from goldens import case_params, check_suite, example_params, read_case, render
from outer_state_readings import outer_state_answers, region_answers, yes_counts
from test_ast_evaluator_leaves import _SUITE

from ckptlint.checkpoint.analyses.ast_outer_state import is_load, is_store, node_code
from ckptlint.semantic.ast_analysis import AstAnalysis, parse_ast
from ckptlint.semantic.project import AstProject, Project, module_name_for
from ckptlint.text.source import SourceFile

#: The kinds of answers of ``outer_state``.
KINDS = {"frame", "code", "text", "store", "load", "owner", "contains"}


@functools.cache
def _answers(text: str) -> dict[tuple, object]:
    """Every answer for the hand-built regions of ``text`` as module ``pkg.mod`` (made once:
    the three analyses' tests and the counts reuse them)."""
    return outer_state_answers(text, "pkg.mod")


def _golden(text: str, kinds: set[str]) -> str:
    """The answers of these kinds, one line per place (region, frame, where: its answers by
    kind)."""
    grouped: dict[tuple, dict[str, object]] = {}
    for key, value in _answers(text).items():
        if key[2] in kinds:
            grouped.setdefault((key[0], key[1], *key[3:]), {})[key[2]] = value
    return render(grouped)


@pytest.mark.parametrize(("label", "text"), example_params())
def test_rule_examples(label: str, text: str, snapshot) -> None:
    assert _golden(text, KINDS) == snapshot


@pytest.mark.parametrize("path", case_params())
def test_cases(path: Path, snapshot) -> None:
    assert _golden(read_case(path), KINDS) == snapshot


def test_programs_of_the_test_suite(request: pytest.FixtureRequest) -> None:
    """One test for them all (a few hundred small programs)."""
    assert check_suite(request, "outer_state_suite", _SUITE, lambda text: _golden(text, KINDS)) >= 100


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
def test_programs(name: str, snapshot) -> None:
    assert _golden(textwrap.dedent(PROGRAMS[name]), KINDS) == snapshot


def test_the_inputs_hold_what_is_compared() -> None:
    """The examples and programs are not empty of what is recorded."""
    items: Counter[str] = Counter()
    for text in [p.values[1] for p in example_params()] + _SUITE + [textwrap.dedent(p) for p in PROGRAMS.values()]:
        items.update(key[2] for key in _answers(text))
    for kind, least in {"frame": 1000, "code": 15000, "store": 10000, "owner": 10000, "load": 7000, "contains": 7000}.items():
        assert items[kind] >= least, kind


def test_the_regions_of_the_builders(request: pytest.FixtureRequest) -> None:
    """Every answer of the three analyses (outer state, write exemptions, end resets) over the
    regions ``AstRegionBuilder`` makes of every site of the inputs (module alone)."""
    texts = [p.values[1] for p in example_params()] + _SUITE + [textwrap.dedent(p) for p in PROGRAMS.values()]
    texts += [p.values[0].read_text(encoding="utf-8") for p in case_params() if p.values[0].is_file()]
    found = {text: region_answers(text) for text in dict.fromkeys(texts)}
    check_suite(request, "outer_state_builder_regions", texts, lambda text: render(found[text]))
    assert sum(len({key[0] for key in answers}) for answers in found.values()) >= 600
    assert sum(1 for answers in found.values() for key in answers if key[2] == "frame") >= 200
    assert sum(1 for answers in found.values() for key in answers if key[2] == "code") >= 2500


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


def test_a_tree_read_through_the_loader(tmp_path: Path, snapshot) -> None:
    """Regions whose frames are in another module of the tree answer as they did on libcst."""
    for relative, text in TREE.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    loader = AstProject(Project())
    yes: Counter[str] = Counter()
    golden, regions, frames = [], 0, 0

    def shown(file: str) -> str:
        return Path(file).relative_to(tmp_path).as_posix() if Path(file).is_relative_to(tmp_path) else file

    for relative in TREE:
        path = tmp_path / relative
        name, is_package, home = module_name_for(path)
        loader.project.track(home)
        found = region_answers(path.read_text(encoding="utf-8"), name, is_package, str(path), loader, shown)
        golden.append(f"== {relative}\n{render(found)}")
        yes.update(yes_counts(found))
        regions += len({key[0] for key in found})
        frames += sum(1 for key in found if key[2] == "frame")
    assert "\n".join(golden) == snapshot
    assert regions == 2 and frames >= 4
    assert yes["balanced"] == 2 and yes["resets"] >= 1 and yes["covers"] >= 2 and yes["once"] >= 1


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

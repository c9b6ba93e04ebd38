"""The frames of a region on ``ast`` (:func:`ckptlint.semantic.ast_walk.nodes_of_function`),
the nodes they walk recorded while they were those libcst's frames walked
(:func:`ckptlint.semantic.walk.nodes_of_function`): for every function and lambda of the rule
examples, the cases and the programs below, the calls, attributes and names met, in order,
with every branch taken, none decided, and the ``if`` tests with a literal decided (golden
answers: ``__snapshots__/test_ast_region.ambr``)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
from goldens import case_params, example_params, read_case, render

from ckptlint.checkpoint.evaluator.ast_region import AstFrame
from ckptlint.checkpoint.evaluator.denotations import Context
from ckptlint.semantic.ast_analysis import AstAnalysis, parse_ast
from ckptlint.semantic.ast_walk import nodes_of_function
from ckptlint.text.source import SourceFile


def _literal_test(test: object) -> bool | None:
    """A decision taken on a test spelled ``True``/``False``."""
    if isinstance(test, ast.Constant) and isinstance(test.value, bool):
        return test.value
    return None


def _ast_walks(analysis: AstAnalysis, decide: bool) -> dict[tuple[int, int], list[tuple[str, tuple[int, int]]]]:
    found = {}
    text = analysis.source.text
    for node in ast.walk(analysis.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            if isinstance(node, ast.Lambda):
                start = analysis.start(node)
            else:  # where libcst's ``name`` starts: after ``def``
                line = text.splitlines()[node.lineno - 1]
                index = line.index(node.name, line.index("def", node.col_offset) + 3)
                start = (node.lineno, index + 1)
            seen = []
            for inner in nodes_of_function(node, _literal_test if decide else None):
                kind = {ast.Call: "call", ast.Attribute: "attribute", ast.Name: "name"}.get(type(inner))
                if kind is not None:
                    seen.append((kind, analysis.start(inner)))
            found[start] = seen
    return found


def _walks(text: str) -> str:
    """Per function (where its name starts, a lambda where it starts) and way (branches taken
    or decided), the nodes walked, one line each."""
    text = textwrap.dedent(text)
    twin = parse_ast(SourceFile(path="mod.py", text=text), "pkg.mod")
    assert twin is not None
    found = []
    for decide in (False, True):
        found += [(start, decide, seen) for start, seen in sorted(_ast_walks(twin, decide).items())]
    return render(found)


@pytest.mark.parametrize(("label", "text"), example_params())
def test_rule_examples(label: str, text: str, snapshot) -> None:
    assert _walks(text) == snapshot


@pytest.mark.parametrize("path", case_params())
def test_cases(path: Path, snapshot) -> None:
    assert _walks(read_case(path)) == snapshot


PROGRAMS = {
    "branches": """
        def f(x, flag=True):
            if True:
                a = g(x)
            elif flag:
                a = h(x)
            else:
                a = k(x)
            b = m(x) if False else n(x)
            try:
                c = p(x)
            except (ValueError, q(x)) as err:
                c = r(err)
            else:
                c = s(c)
            finally:
                t(x)
            return {u(x): v(x), **w(x)}, z(1, y=2, *a, key=b.c(3), **d)
        """,
    "nested": """
        class Block:
            def forward(self, x):
                def inner(y):
                    return self.fc(y)
                fn = lambda y: self.drop(y).mean()
                with torch.no_grad() as ctx, amp(x):
                    x = [self.norm(v) for v in x if ok(v)]
                global counter
                import os.path as osp
                for i, layer in enumerate(self.layers):
                    x = layer(x, scale=i)
                while x.cond():
                    x = x[0, 1:2].view(-1)
                return fn(inner(x)), f"{x!r:>{width(x)}}"
        """,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs(name: str, snapshot) -> None:
    assert _walks(PROGRAMS[name]) == snapshot


def test_frame_named_and_replay() -> None:
    text = "def f(self, x):\n    y = self.fc(x)\n    return x + y.fc\n"
    analysis = parse_ast(SourceFile(path="m.py", text=text), "m")
    assert analysis is not None
    function = analysis.tree.body[0]
    frame = AstFrame(function, Context(analysis), 0, "f")
    first = list(frame.nodes())
    assert list(frame.nodes()) == first  # walked once, replayed
    assert [type(n).__name__ for n in frame.named("fc")] == ["Attribute", "Attribute"]
    assert [analysis.start(n) for n in frame.named("x")] == [(2, 17), (3, 12)]

"""The frames of a region on ``ast`` walk the nodes libcst's frames walk
(:func:`ckptlint.semantic.ast_walk.nodes_of_function` against
:func:`ckptlint.semantic.walk.nodes_of_function`): for every function and lambda of the rule
examples, the cases and the programs below, the calls, attributes and names met, in the same
order, with every branch taken, none decided, and the ``if`` tests with a literal decided."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import libcst as cst
import pytest
from test_ast_model import _case_files, _parses, _rule_examples

from ckptlint.checkpoint.evaluator.ast_region import AstFrame
from ckptlint.checkpoint.evaluator.denotations import Context
from ckptlint.semantic import walk
from ckptlint.semantic.analysis import ModuleAnalysis
from ckptlint.semantic.ast_analysis import AstAnalysis, parse_ast
from ckptlint.semantic.ast_walk import nodes_of_function
from ckptlint.semantic.parse import parse_source
from ckptlint.text.source import SourceFile

_EXAMPLES = [(label, text) for label, text in _rule_examples() if _parses(text)]


def _literal_test(test: object) -> bool | None:
    """A decision both trees can take alike: a test spelled ``True``/``False``."""
    if isinstance(test, cst.Name) and test.value in ("True", "False"):
        return test.value == "True"
    if isinstance(test, ast.Constant) and isinstance(test.value, bool):
        return test.value
    return None


def _cst_walks(analysis: ModuleAnalysis, decide: bool) -> dict[tuple[int, int], list[tuple[str, tuple[int, int]]]]:
    found = {}
    for node in walk.iter_tree(analysis.module):
        if isinstance(node, (cst.FunctionDef, cst.Lambda)):
            start = analysis.range(node.name if isinstance(node, cst.FunctionDef) else node)[0]
            seen = []
            for inner in walk.nodes_of_function(node, _literal_test if decide else None):
                if isinstance(inner, cst.Call):
                    seen.append(("call", analysis.range(inner)[0]))
                elif isinstance(inner, cst.Attribute):
                    seen.append(("attribute", analysis.range(inner)[0]))
                elif isinstance(inner, cst.Name):
                    seen.append(("name", analysis.range(inner)[0]))
            found[start] = seen
    return found


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


def _mismatches(text: str) -> list[str]:
    text = textwrap.dedent(text)
    source = SourceFile(path="mod.py", text=text)
    analysis = parse_source(source, "pkg.mod")
    twin = parse_ast(source, "pkg.mod")
    assert twin is not None
    problems = []
    for decide in (False, True):
        cst_side, ast_side = _cst_walks(analysis, decide), _ast_walks(twin, decide)
        assert set(cst_side) == set(ast_side)
        for start, seen in cst_side.items():
            names = {position for kind, position in ast_side[start] if kind == "name"}
            # libcst also walks names ``ast`` keeps as strings (an attribute's, a keyword's)
            kept = [(kind, position) for kind, position in seen if kind != "name" or position in names]
            if kept != ast_side[start]:
                problems.append(f"{start} decide={decide}: {kept} != {ast_side[start]}")
    return problems


@pytest.mark.parametrize(("label", "text"), [pytest.param(t, x, id=t) for t, x in _EXAMPLES])
def test_rule_examples(label: str, text: str) -> None:
    assert _mismatches(text) == []


@pytest.mark.parametrize("path", _case_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_cases(path: Path) -> None:
    assert _mismatches(path.read_text(encoding="utf-8")) == []


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
def test_programs(name: str) -> None:
    assert _mismatches(PROGRAMS[name]) == []


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

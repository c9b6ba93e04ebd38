"""The edits built from libcst's tree of the one statement around an ``ast`` node
(ckptlint.rules.edits, ckptlint.text.ast_statement_cst), recorded while they were byte for
byte the edits the rules built from the whole module's libcst analysis:
for every node that can take an edit in hand-written programs (continuations, brackets over
lines, comments, ``;``, CRLF, tabs, non-ASCII text, deep blocks, compound headers; nodes of an
f-string left out, which ``ast`` places apart before Python 3.12). Golden answers:
``__snapshots__/test_ast_edits.ambr``."""

from __future__ import annotations

import ast
import textwrap
from collections import Counter
from collections.abc import Callable
from functools import partial

import pytest
from goldens import render

from ckptlint.rules import edits as ast_edits
from ckptlint.semantic.ast_analysis import parse_ast
from ckptlint.text.ast_statement_cst import statement_cst
from ckptlint.text.diagnostics import Edit
from ckptlint.text.source import SourceFile

PROGRAMS = {
    "simple statements": """
        import torch
        from torch.utils.checkpoint import checkpoint
        def forward(self, x):
            y = checkpoint(self.block, x)
            z = checkpoint(self.block, x, use_reentrant=True, preserve_rng_state=False)
            return checkpoint(self.block, *x, **kw), [torch.cat([x])], (x, y)
    """,
    "continuations and comments": """
        y = checkpoint(
            block,  # the block
            x,
        )
        z = checkpoint(block,
                       x)
        w = checkpoint(block, x) + \\
            checkpoint(block,
                       # a comment
                       x, use_reentrant=True
            )
        v = (
            checkpoint(block, x)  # why
        )
    """,
    "semicolons and one-line bodies": """
        a = f(1); b = g(2, k=3); c = h()
        if a: d = f(a); e = g(b, {})
        for i in r(3): s(i); t(i, j)
        while w(1): pass
        class A: x = f(1)
    """,
    "headers": """
        import torch
        @pytest.mark.skipif(not f("2.4"), reason="x")
        @pytest.mark.skipif(g(1), reason="y")
        def test():
            pass
        @dec(1, k=2)
        @other
        def f(a, b=g(1, x=2), *, c={"a": 1}) -> h("x"):
            if a(1, 2):
                pass
            elif b(3, (4, 5)):
                pass
            else:
                pass
            while c(4): break
            with open("x", mode="r") as q, o(2):
                pass
            with (p(1) as u,
                  p(2) as v):
                pass
            for i in r(3, step=1):
                pass
            async def inner(x=q(1)):
                async for j in aiter(x, 2):
                    pass
                async with lock(3):
                    pass
            try:
                pass
            except t(1) as e:
                pass
            except (A, B):
                pass
            finally:
                pass
        class C(B, metaclass=M(1)):
            pass
    """,
    "deep block": """
        def f():
            if a:
                for b in c:
                    while d:
                        with e:
                            try:
                                if g:
                                    h = checkpoint(block, x)
                                    if k(1,
                                         2):
                                        pass
                            finally:
                                pass
    """,
    "f-strings, generators, tuples, dicts": """
        print(f"{g(1)} and {h(k=2)}", f'{g("x")}')
        total = sum(x for x in y)
        spaced = sum( x for x in y )
        pair = f((1, 2), ((3, 4)))
        options = dict(a=1, **{"b": 2})
        empty = g({}, {"use_reentrant": True,})
        nested = f(g(h(1), 2), k=[m(3)])
    """,
    "match": """
        match f(1):
            case {"k": 1} if g(2):
                h(3)
            case _:
                pass
    """,
}


def _edits_of_every_node(text: str) -> list[tuple]:
    """Every edit on every node of ``text`` that can take one, as ``(builder, where, edits or
    the error's name and message)``: each call gets a keyword and loses each argument, each
    dict gets an entry, each keyword and attribute is renamed, each expression replaced (by
    text holding ``"``, which an f-string changes); nodes of an f-string left out."""
    analysis = parse_ast(SourceFile("<compared>", text))
    assert analysis is not None
    found: list[tuple] = []

    def edit(name: str, node: ast.AST, way: Callable[[], object]) -> None:
        try:
            made: object = way()
        except Exception as exc:  # noqa: BLE001 - recorded like an answer
            made = f"{type(exc).__name__}: {exc}"
        found.append((name, analysis.start(node), (made,) if isinstance(made, Edit) else made))

    no_tuple = {id(n.slice) for n in ast.walk(analysis.tree) if isinstance(n, ast.Subscript)}  # libcst's elements
    in_fstring = {id(n) for f in ast.walk(analysis.tree) if isinstance(f, ast.JoinedStr) for n in ast.walk(f)}
    for node in ast.walk(analysis.tree):
        if getattr(node, "end_lineno", None) is None or isinstance(node, ast.stmt) or id(node) in no_tuple | in_fstring:
            continue
        if isinstance(node, ast.Call):
            edit("add_keyword_argument", node, partial(ast_edits.add_keyword_argument, analysis, node, 'k="v"'))
            for arg in [*node.args, *node.keywords]:
                edit("remove_argument", arg, partial(ast_edits.remove_argument, analysis, node, arg))
        elif isinstance(node, ast.Dict):
            edit("add_dict_entry", node, partial(ast_edits.add_dict_entry, analysis, node, '"k": "v"'))
        elif isinstance(node, ast.keyword) and node.arg is not None:
            edit("replace_node", node, partial(ast_edits.replace_node, analysis, node, "renamed"))
        if isinstance(node, ast.Attribute):
            edit("replace_attribute_name", node, partial(ast_edits.replace_attribute_name, analysis, node, "renamed"))
        if isinstance(node, ast.expr) and not isinstance(node, (ast.Starred, ast.Slice)):
            edit("replace_node", node, partial(ast_edits.replace_node, analysis, node, 'f("x")'))
    return found


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_every_node_of_hand_written_programs(name: str, snapshot) -> None:
    found = _edits_of_every_node(textwrap.dedent(PROGRAMS[name]))
    assert render(found) == snapshot
    assert Counter(name for name, _, _ in found)["replace_node"] > 0


@pytest.mark.parametrize("name", ["continuations and comments", "headers", "semicolons and one-line bodies"])
def test_crlf_tabs_and_non_ascii(name: str, snapshot) -> None:
    text = textwrap.dedent(PROGRAMS[name])
    for variant in (
        text.replace("\n", "\r\n"),
        text.replace("    ", "\t"),
        text.replace("(1", "('é🙂', 1").replace("x)", "x, 'ü')"),
        "# é🙂 ü\n" + text.replace("a(", "ä(").replace("f(", "fé("),
    ):
        assert ast.parse(variant)
        found = _edits_of_every_node(variant)
        assert render(found) == snapshot
        assert Counter(name for name, _, _ in found)["add_keyword_argument"] > 0


def _unit(text: str, line: int):
    """The unit parsed for the first call on 1-based ``line`` of ``text``, and the analysis."""
    analysis = parse_ast(SourceFile("t.py", text))
    call = next(n for n in ast.walk(analysis.tree) if isinstance(n, ast.Call) and n.lineno == line)
    return statement_cst(analysis.source, analysis.tree, call), analysis, call


def test_a_simple_statement_is_parsed_alone() -> None:
    text = "import torch\nx = 1\nif x:\n    a = 2; y = torch.f(x,\n  3)  # c\n    z = 3\n"
    unit, _, _ = _unit(text, 4)
    assert unit.kind == "statement"
    assert unit.module.code == "a = 2; y = torch.f(x,\n  3)"


def test_a_header_is_parsed_with_a_placeholder_body() -> None:
    text = "def f():\n    if g(1,\n          2):  # c\n        return 3\n    elif h(4):\n        pass\n"
    unit, _, _ = _unit(text, 2)
    assert (unit.kind, unit.module.code) == ("header", "if 1:\n    if g(1,\n          2):\n        pass\n")
    unit, _, _ = _unit(text, 5)
    assert unit.kind == "header"
    assert unit.module.code == "if 1:\n    if 1:\n        pass\n    elif h(4):\n        pass\n"


def test_decorators_and_defaults_are_the_header() -> None:
    text = "class A:\n    @dec(1)\n    def f(self, x=g(2)):\n        return x\n"
    for line in (2, 3):
        unit, _, _ = _unit(text, line)
        assert unit.kind == "header"
        assert unit.module.code == "if 1:\n    @dec(1)\n    def f(self, x=g(2)):\n        pass\n"


def test_decorators_end_lines_before_the_header() -> None:
    text = "@click.group()\n@click.option('x', f(1))\ndef cli():\n    g(2)\n"
    for line in (1, 2):
        unit, _, _ = _unit(text, line)
        assert unit.kind == "header"
        assert unit.module.code == "@click.group()\n@click.option('x', f(1))\ndef cli():\n    pass\n"


def test_a_match_statement_is_parsed_whole() -> None:
    text = "match f(1):\n    case _:\n        pass\n"
    unit, _, _ = _unit(text, 1)
    assert unit.kind == "compound"


def test_statements_are_parsed_once_per_analysis() -> None:
    text = "import torch\ntorch.f(a=1, b=2)\n"
    analysis = parse_ast(SourceFile("t.py", text))
    call = analysis.tree.body[1].value
    first = ast_edits.replace_node(analysis, call.keywords[0], "x")
    second = ast_edits.replace_node(analysis, call.keywords[1], "y")
    assert (first.content, first.start, second.start) == ("x", (2, 9), (2, 14))
    assert len(analysis.derived["edits.statements"]) == 1
    assert ast_edits.replace_attribute_name(analysis, call.func, "g").start == (2, 7)


_ROW = "[" + ", ".join(str(i % 20) for i in range(33_000)) + "]"


def _huge_text() -> str:
    """Five 33,000-element list lines, then one ``checkpoint(f, x)`` without ``use_reentrant``."""
    lines = ["import torch", *(f"DATA_{i} = {_ROW}" for i in range(5)), "", "def forward(f, x):"]
    lines.append("    return torch.utils.checkpoint.checkpoint(f, x)")
    return "\n".join(lines) + "\n"


def test_a_huge_file_parses_one_statement() -> None:
    text = _huge_text()
    analysis = parse_ast(SourceFile("huge.py", text))
    call = analysis.tree.body[-1].body[0].value  # type: ignore[attr-defined]
    unit = statement_cst(analysis.source, analysis.tree, call)
    assert len(text) > 512 * 1024
    assert unit.kind == "statement"
    assert unit.module.code == "return torch.utils.checkpoint.checkpoint(f, x)"
    (edit,) = ast_edits.add_keyword_argument(analysis, call, "use_reentrant=False")
    assert (edit.start, edit.content) == ((9, 50), ", use_reentrant=False")

"""The offsets of libcst's nodes (:func:`ckptlint.text.positions.node_offsets`, which the fix
edits read through :mod:`ckptlint.text.ast_statement_cst`) are where ``ast`` places the same
nodes: for every expression of varied layouts (comments, tabs, mixed indentation, CRLF, no
final newline, decorators, ``;``, continuations, ``async``, ``try``/``match``, strings that
look like code), the libcst node of the smallest unit parsed around it starts and ends where
the ``ast`` node does (once checked against libcst's ``PositionProvider``)."""

from __future__ import annotations

import ast

import pytest

from ckptlint.text.ast_statement_cst import ast_offsets, statement_cst
from ckptlint.text.source import SourceFile

SOURCES = {
    "nested": (
        "import torch\n\n\nclass A:\n    # a comment\n    def f(self, x):\n        if x:\n"
        "            return torch.ones(1)  # same line\n        return x\n\n    @property\n    def g(self):\n"
        "        def inner(y=lambda z: z):\n            return [i for i in y]\n        return inner\n"
    ),
    "repeated statements": "def f(x):\n    return x\n\n\ndef g(x):\n    return x\n\n\nx = 1\nx = 1\nif x:\n    x = 1\n",
    "tabs": "class A:\n\tdef f(self):\n\t\treturn 1\n\n\tdef g(self):\n\t\treturn 1\n",
    "mixed indentation": "if True:\n  x = 1\n  if x:\n        y = 2\n        z = (1,\n   2)\n",
    "no trailing newline": "def f():\n    return 1\ny = f()",
    "crlf": "def f(a):\r\n    return a\r\n\r\nb = f(1)\r\n",
    "comments at block ends": "def f():\n    x = 1\n    # trailing comment in the body\n# a comment at column 0\n\ny = 2\n",
    "decorators and semicolons": "@a.b(1)\n@c\ndef f(): x = 1; y = 2; return x\n\nz = f(); w = z\n",
    "continuations": "x = 1 + \\\n    2\ny = [\n    1,\n    2,\n]\n",
    "async and with": "async def f():\n    async with a as b, c:\n        await b\n    async for i in b:\n        pass\n",
    "try and match": (
        "try:\n    pass\nexcept (A, B) as e:\n    raise\nelse:\n    pass\nfinally:\n    pass\n"
        "match x:\n    case [1, *rest]:\n        pass\n    case {'k': v}:\n        pass\n"
    ),
    "strings": 'x = """\ndef f():\n    return x\n"""\ndef f():\n    return x\n',
}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_the_offsets_of_libcsts_nodes_are_asts(name: str) -> None:
    source = SourceFile("m.py", SOURCES[name])
    tree = ast.parse(source.text)
    checked = 0
    for node in ast.walk(tree):
        if not isinstance(node, ast.expr) or isinstance(node, (ast.Tuple, ast.GeneratorExp, ast.JoinedStr)):
            continue  # a tuple's or generator's parentheses are placed apart by libcst
        unit = statement_cst(source, tree, node)
        assert unit is not None, (name, ast.dump(node))
        found = unit.node_for(node)
        assert found is not None and unit.offsets(found) == ast_offsets(source, node), (name, ast.unparse(node))
        checked += 1
    assert checked > 0

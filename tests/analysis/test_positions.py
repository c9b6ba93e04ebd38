"""Positions computed per statement equal those of a whole-module pass, which equal
libcst's ``PositionProvider``."""

from __future__ import annotations

import pytest

from ckptlint.semantic.parse import parse_source
from ckptlint.text.positions import node_offsets
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
def test_offsets_per_statement_equal_the_whole_module_pass(name: str) -> None:
    source = SourceFile("m.py", SOURCES[name])
    reference = node_offsets(parse_source(source).module)
    assert reference  # the whole-module pass saw every node
    nodes = list(parse_source(source).model.parents)
    for index in range(len(nodes)):
        analysis = parse_source(source)  # a fresh analysis: no offsets known yet
        node = list(analysis.model.parents)[index]
        expected = node_offsets(analysis.module)[node]
        assert analysis.offsets(node) == expected, (name, type(node).__name__)
    analysis = parse_source(source)
    for node in analysis.model.parents:  # one analysis answering every node in turn
        assert analysis.offsets(node) == node_offsets(analysis.module)[node]


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_whole_module_pass_equals_libcst_position_provider(name: str) -> None:
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    source = SourceFile("m.py", SOURCES[name])
    wrapper = MetadataWrapper(cst.parse_module(source.text), unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    offsets = node_offsets(wrapper.module)
    for node, code_range in positions.items():
        if isinstance(node, cst.Module) or code_range.end.line > len(source.line_starts):
            continue  # ends past a missing final newline, which libcst counts: never reported
        start, end = offsets[node]
        assert source.position(start) == (code_range.start.line, code_range.start.column + 1)
        assert source.position(end) == (code_range.end.line, code_range.end.column + 1)


def test_unvalidated_parse_gives_the_same_tree_and_restores_validation() -> None:
    import libcst as cst

    from ckptlint.semantic.parse import parse_module_unvalidated

    for text in SOURCES.values():
        assert parse_module_unvalidated(text).deep_equals(cst.parse_module(text))
    with pytest.raises(cst.ParserSyntaxError):
        parse_module_unvalidated("def f(:\n")
    with pytest.raises(cst.CSTValidationError):  # validation is back on, also after an error
        cst.SimpleWhitespace("not whitespace")

"""Parsing an edited file again (ckptlint.semantic.reparse, the language server's relint): the
module put together from top-level chunks parsed alone is libcst's whole parse of the text,
node for node (``deep_equals``), with the same nesting depth and the same errors, after any
edit; an edit inside one top-level statement parses that statement's chunk alone."""

from __future__ import annotations

import re
import warnings

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_properties import programs  # the property tests' random programs

from ckptlint.semantic.parse import parse_source
from ckptlint.semantic.reparse import Reparser
from ckptlint.text.source import SourceFile

PATH = "/project/model.py"

FILLER = "\n\ndef filler(x):\n    return torch.relu(x) + torch.tanh(x) * 2\n"

TEXTS = {
    "header, docstring, comments between statements": (
        "#!/usr/bin/env python\n# Copyright\n\n\"\"\"Doc.\"\"\"\n\nimport torch\n# about nn\nfrom torch import nn\n\n\n"
        "# a comment\n\n@torch.no_grad()\n# between decorator and def\ndef f(x):\n    return x\n\n\n"
        "class A(nn.Module):\n    def forward(self, x):\n        return x\n# at column 0\n\ny = 1\n"
    ),
    "indented comment and blank lines with spaces after a block": (
        "import torch\n\n\nclass A:\n    def f(self):\n        pass\n        # deep\n    # less deep\n\n"
        "x = 1\n\n\ndef g():\n    pass\n    \n\ny = 2\n" + FILLER
    ),
    "backslash continuations and semicolons": (
        "import torch\nx = 1 + \\\n    2\nz = 3 \\\n\nw = 4\na = 1; b = 2\nc = 3;\n" + FILLER
    ),
    "one-line bodies, else blocks and try": (
        "import torch\nif torch: pass\nelse:\n    y = 1\nfor i in range(3): print(i)\n\n"
        "try:\n    import numpy\nexcept ImportError:\n    numpy = None\nelse:\n    pass\nfinally:\n    z = 0\n"
        "while False:\n    break\nelse:\n    pass\nwith open('x') as f: pass\n" + FILLER
    ),
    "match statement": (
        "import torch\n\n\ndef kind(x):\n    match x:\n        case [a, *_]:\n            return a\n        case _:\n"
        "            return None\n\n\nmatch 1:\n    case 1:\n        pass\n" + FILLER
    ),
    "two-space first block, then four": (
        "import torch\n\n\ndef f():\n  return 1\n\n\ndef g():\n    if True:\n          return 2\n" + FILLER
    ),
    "tabs first, spaces later": "import torch\n\n\ndef f():\n\treturn 1\n" + FILLER,
    "strings with column-0 lines": (
        "import torch\n\nHELP = '''\ndef fake():\n# not a comment\nclass Fake:\n'''\n\n\ndef f():\n"
        "    s = \"\"\"\nx = 1\n\"\"\"\n    return s\n" + FILLER
    ),
    "footer comments": "import torch\n" + FILLER + "\n\n# end\n    # indented end\n\n",
    "no newline at the end": "import torch\n" + FILLER.rstrip("\n"),
    "windows line ends": ("import torch\n" + FILLER).replace("\n", "\r\n"),
    "only comments": "# just a comment\n" * 10,
    "deeply nested": "import torch\n\nx = " + "(" * 120 + "1" + ")" * 120 + "\n" + FILLER,
    "long and/or chain": "import torch\n\nx = " + " and ".join(["a"] * 60) + "\n" + FILLER,
    "syntax error": "import torch\n\n\ndef f(:\n    pass\n" + FILLER,
    "class members, comments and gaps between them": (
        "# top\n\nclass A(  # why\n    torch.nn.Module,\n):  # after the colon\n    # before the first member\n\n"
        '    """Doc."""\n\n    x = 1\n    # about f\n    @property\n    # inside the decorators\n    def f(self):\n'
        "        return 1\n        # deep, after f\n  # shallow\n\n    def g(self):\n        pass\n    \n"
        "    class Inner:\n        y = 2\n\n        def h(self):\n            pass\n\n    z = 3; w = 4\n"
        "    v = 5 \\\n        + 1\n\n\n    u = 6\n# after the class\n\n\nclass B: pass\n" + FILLER
    ),
    "a class last, with a footer": (
        "import torch\n\n\nclass A:\n    def f(self):\n        return 1\n\n    def g(self):\n        return 2\n"
        "\n\n# end\n    # indented end\n"
    ),
    "a class first, tab-indented": (
        "class A:\n\tdef f(self):\n\t\treturn 1\n\n\tdef g(self):\n\t\treturn 2\n" + FILLER.replace("    ", "\t")
    ),
}


def _outcome(parse):
    try:
        analysis = parse()
    except Exception as exc:  # noqa: BLE001 - the errors must be the same
        return ("error", type(exc).__name__, str(exc))
    return ("parsed", analysis.module, analysis.depth)


def _check(reparser: Reparser, text: str) -> None:
    source = SourceFile(PATH, text)
    expected = _outcome(lambda: parse_source(source))
    got = _outcome(lambda: reparser.parse(source))
    assert got[0] == expected[0], (got, expected)
    if expected[0] == "error":
        assert got == expected
        return
    assert got[1].deep_equals(expected[1])
    assert got[1].code == expected[1].code
    assert got[2] == expected[2]
    if reparser.compiles(PATH, text):  # then CPython's compiler takes the whole text
        assert _compile_error(text) is None


def _compile_error(text: str) -> str | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "<test>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        return exc.msg
    return None


@pytest.mark.parametrize("name", TEXTS)
def test_chunks_make_the_whole_parse(name: str) -> None:
    _check(Reparser(), TEXTS[name])


EDITS = [
    ("append a line break", lambda t: t + "\n"),
    ("append a statement", lambda t: t + "z = 9\n"),
    ("append an indented line", lambda t: t + "    q = 1\n"),
    ("indented comment after the first block", lambda t: t.replace("\n\n\n", "\n    # here\n\n\n", 1)),
    ("blank line with spaces after a block", lambda t: t.replace("\n\n\n", "\n    \n\n\n", 1)),
    ("column-0 comment between statements", lambda t: t.replace("\n\n\n", "\n\n# new\n\n", 1)),
    ("new function in the middle", lambda t: t.replace("\n\n\n", "\n\n\ndef new():\n    return 1\n\n\n", 1)),
    ("edit inside the filler", lambda t: t.replace("* 2", "* 3 + 1")),
    ("remove the first statement", lambda t: t.split("\n", 1)[1]),
    ("comment before the first statement", lambda t: "# top\n" + t),
    ("open a string", lambda t: t.replace("torch.relu", "'torch.relu")),
    ("open a bracket", lambda t: t.replace("return torch.relu(x)", "return torch.relu((x)")),
    ("backslash at a statement's end", lambda t: t.replace("import torch\n", "import torch \\\n", 1)),
    ("tab-indented block", lambda t: t + "\ndef h():\n\treturn 0\n"),
    ("delete everything", lambda t: ""),
    ("new line in a method", lambda t: t.replace("        return 1\n", "        y = 0\n        return 1\n", 1)),
    ("new method after another", lambda t: t.replace("        return 1\n", "        return 1\n\n    def n(self):\n        pass\n", 1)),
    ("comment between members", lambda t: t.replace("        return 1\n", "        return 1\n    # new\n", 1)),
    ("shallow comment between members", lambda t: t.replace("        return 1\n", "        return 1\n  # new\n", 1)),
    ("dedented code after a member", lambda t: t.replace("        return 1\n", "        return 1\nq = 1\n", 1)),
    ("member indented further", lambda t: t.replace("\n    def g(", "\n        def g(", 1)),
    ("class header changed", lambda t: t.replace("class A", "class AA", 1)),
    ("a member removed", lambda t: re.sub(r"\n    def g\(self\):\n        [^\n]*\n", "\n", t, count=1)),
]


@pytest.mark.parametrize("edit", [e[0] for e in EDITS])
@pytest.mark.parametrize("name", TEXTS)
def test_an_edit_gives_the_whole_parse(name: str, edit: str) -> None:
    change = dict(EDITS)[edit]
    reparser = Reparser()
    text = TEXTS[name]
    _check(reparser, text)
    edited = change(text)
    _check(reparser, edited)
    _check(reparser, text)  # and back


def test_an_edit_in_one_function_parses_that_chunk_alone() -> None:
    functions = [f"def f{i}(x):\n    y = x + {i}\n    return y\n" for i in range(30)]
    text = "import torch\n\n\n" + "\n\n".join(functions)
    reparser = Reparser()
    _check(reparser, text)
    assert reparser.last_parsed == 31  # the import and every function: nothing parsed before
    edited = text.replace("y = x + 12\n", "y = x + 12\n    y = y * 2\n")
    _check(reparser, edited)
    assert reparser.last_parsed == 1
    _check(reparser, edited + "\n")
    assert reparser.last_parsed == 1  # the last function and the new line after it
    _check(reparser, edited + "\n")
    assert reparser.last_parsed == 0  # the same text


def test_an_edit_in_one_method_parses_that_piece_alone() -> None:
    methods = [f"    def m{i}(self, x):\n        y = x + {i}\n        return y\n" for i in range(20)]
    text = "import torch\n\n\nclass Big(torch.nn.Module):\n" + "\n".join(methods)
    reparser = Reparser()
    _check(reparser, text + FILLER)
    assert reparser.last_parsed == 22  # the import, 20 pieces of the class, the filler
    text = text.replace("y = x + 7\n", "y = x + 7\n        y = y * 2\n")
    _check(reparser, text + FILLER)
    assert reparser.last_parsed == 1
    _check(reparser, text)  # the class last now
    assert reparser.last_parsed == 0
    _check(reparser, text + "\n\n")
    assert reparser.last_parsed == 1  # its last piece, with the new lines
    _check(reparser, text.replace("class Big(", "class Bigger("))
    assert reparser.last_parsed == 20  # the header changed: the class again


LONG = FILLER + FILLER.replace("filler", "filler2")
COMPILED = {
    "clean": ("import torch\n" + LONG, None),
    "return outside a function": ("import torch\n" + LONG + "\n\nreturn 1\n", "'return' outside function"),
    "a global after the name's use, in another chunk": (
        "import torch\nx = 1\n" + LONG + "\n\nglobal x\n",
        "name 'x' is assigned to before global declaration",
    ),
    "a class's global after the name's use, in another piece": (
        "import torch\n\n\nclass A:\n    x = 1\n\n    def f(self):\n        pass\n\n    global x\n" + LONG,
        "name 'x' is assigned to before global declaration",
    ),
    "a global in a function": ("import torch\n\n\ndef f():\n    global y\n    y = 1\n" + LONG, None),
    "future annotations": ("from __future__ import annotations\n\nimport torch\n\n\ndef f(x: Tensor) -> Tensor:\n    pass\n" + LONG, None),
    "future annotations and a yield in one": (
        # in a generator without the import; an error with it (the other chunk's import counts)
        "from __future__ import annotations\n\nimport torch\n\n\ndef g():\n    x: (yield)\n" + LONG,
        "'yield expression' can not be used within an annotation",
    ),
    "future import elsewhere": (
        "import torch\n" + LONG + "\n\nfrom __future__ import annotations\n",
        "from __future__ imports must occur at the beginning of the file",
    ),
    "await outside a function": ("import torch\n" + LONG + "\n\nawait torch.f()\n", "'await' outside function"),
}


@pytest.mark.parametrize("name", COMPILED)
def test_what_compiles_is_known_from_the_chunks(name: str) -> None:
    text, error = COMPILED[name]
    assert _compile_error(text) == error
    reparser = Reparser()
    _check(reparser, text)  # asserts: known to compile -> compiles
    assert reparser.compiles(PATH, text) == (name in ("clean", "future annotations"))
    assert not reparser.compiles(PATH, text + "\n")  # another text than the one parsed


def test_a_syntax_error_is_reported_as_by_the_whole_parse() -> None:
    text = "import torch\n" + FILLER
    reparser = Reparser()
    _check(reparser, text)
    with pytest.raises(cst.ParserSyntaxError):
        reparser.parse(SourceFile(PATH, text.replace("def filler(x):", "def filler(x:")))
    assert reparser.last_parsed is None
    _check(reparser, text)  # after the error: parsed again from scratch, correctly


INSERTS = st.sampled_from(
    ["", "\n", "    ", "# c\n", "    # c\n", "x = 1\n", "    x = 1\n", "(", ")", "'''", "\\\n", "\t", ":\n", "@d\n", "pass\n"]
)


@st.composite
def edits(draw, text: str) -> str:
    start = draw(st.integers(0, len(text)))
    end = draw(st.integers(start, min(len(text), start + 40)))
    return text[:start] + draw(INSERTS) + text[end:]


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data(), programs())
def test_random_edits_of_random_programs(data: st.DataObject, text: str) -> None:
    reparser = Reparser()
    text = text + FILLER
    _check(reparser, text)
    for _ in range(3):
        text = data.draw(edits(text))
        _check(reparser, text)


hypothesmith = pytest.importorskip("hypothesmith")


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data(), hypothesmith.from_grammar(auto_target=False))
def test_random_edits_of_arbitrary_python(data: st.DataObject, code: str) -> None:
    reparser = Reparser()
    text = "import torch\n" + code + ("" if code.endswith("\n") else "\n") + FILLER
    _check(reparser, text)
    for _ in range(3):
        text = data.draw(edits(text))
        _check(reparser, text)

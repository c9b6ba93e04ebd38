"""Deep nesting: refuse only what could crash the process.

libcst's native parser, which builds fix edits from the statement around a finding, overflows
the C stack (the process dies with SIGSEGV) on deep enough code; where depends on the
construct and the stack size. ckptlint refuses a file deeper than
:data:`~ckptlint.semantic.nesting.MAX_NESTING` levels (CKP902) and lints everything below,
however deep real code is not.
"""

from __future__ import annotations

import ast
import resource
import subprocess
import sys
from importlib.metadata import version

import pytest

from ckptlint.api import lint_source
from ckptlint.semantic.nesting import MAX_NESTING, nesting_depth, nesting_levels
from ckptlint.testing import codes

IMPORT = "from torch.utils.checkpoint import checkpoint\n"


def test_a_310_term_sum_is_linted() -> None:
    assert codes(IMPORT + "y = checkpoint(f, " + " + ".join(["a"] * 310) + ")\n") == ["CKP001"]


def test_a_350_branch_elif_chain_is_linted() -> None:
    branches = "".join(f"    elif x == {i}:\n        return {i}\n" for i in range(1, 350))
    source = IMPORT + "def g(x):\n    if x == 0:\n        return checkpoint(f, x)\n" + branches
    assert codes(source) == ["CKP001"]


def _and_chain(operands: int) -> str:
    """``and`` chain: ``MAX_NESTING`` levels deep at 2,994 operands (Module, Assign, Call, and
    the chain counted once a level and once an operand)."""
    return IMPORT + "y = checkpoint(f, " + " and ".join(["a"] * operands) + ")\n"


@pytest.mark.slow
def test_both_sides_of_the_limit() -> None:
    assert MAX_NESTING == 3000
    assert codes(_and_chain(2994)) == ["CKP001"]  # at the limit: linted
    [refused] = lint_source(_and_chain(2995), select=["ALL"])
    assert (refused.code, refused.message) == (
        "CKP902",
        "too deeply nested to check (more than 3000 levels); file skipped",
    )


_PROBE = """
import sys
import libcst
source = "from torch.utils.checkpoint import checkpoint\\n"
libcst.parse_module(source + "y = checkpoint(f, " + " and ".join(["a"] * int(sys.argv[1])) + ")\\n")
"""


@pytest.mark.slow
@pytest.mark.skipif(
    version("libcst") != "1.9.0" or resource.getrlimit(resource.RLIMIT_STACK)[0] != 8 * 2**20,
    reason="the boundary measured for libcst 1.9.0 on an 8 MiB stack",
)
def test_libcst_itself_crashes_just_above_the_measured_boundary() -> None:
    """The fact the limit rests on: libcst 1.9.0 parses ``checkpoint(f, a and a ...)`` with an
    ``and`` chain of about 7,050 operands and kills the process (a stack overflow) just above;
    the exact point moves by a few levels from run to run (7,046 parsed and 7,054 crashed in
    three bisections, 7,052 crashed in another run), so both sides are tested with a margin,
    far above MAX_NESTING."""

    def parse(operands: int) -> int:
        command = [sys.executable, "-c", _PROBE, str(operands)]
        return subprocess.run(command, capture_output=True, timeout=120).returncode

    assert parse(6500) == 0
    assert parse(7600) < 0  # killed by a signal (SIGSEGV)


def _levels_of_every_field(tree: ast.AST) -> tuple[int, int]:
    """``nesting_levels`` read through every field of every node (no grammar table)."""
    level, depth, chain = [tree], 0, 0
    while level:
        depth += 1
        below: list[ast.AST] = []
        for node in level:
            for name in node._fields:
                value = getattr(node, name, None)
                if isinstance(value, list):
                    below.extend(child for child in value if isinstance(child, ast.AST))
                elif isinstance(value, ast.AST):
                    below.append(value)
            if isinstance(node, ast.BoolOp):
                chain = max(chain, len(node.values))
        level = below
    return depth, chain


@pytest.mark.parametrize(
    "text",
    [
        "{**a, 'b': [1, (2, {3})]}\n",
        "def f(a, /, b=1, *c, d, e=2, **g) -> int:\n    return lambda x=1, *, y: x\n",
        "x = a and b and (c or d or e or f)\n",
        "y = f'{x!r:{width}}' + b'z'\n",
        "match p:\n    case C(a, b=[1, *r]) | {1: y, **k} if y:\n        pass\n    case None:\n        pass\n",
        "try:\n    import a.b as c\nexcept* (E, F) as e:\n    global g\n",
        "async def f():\n    async with a as (b, c):\n        await [x async for x in y if x]\n",
    ],
)
def test_nesting_levels_read_from_the_grammar_are_every_fields(text: str) -> None:
    tree = ast.parse(text)
    assert nesting_levels(tree) == _levels_of_every_field(tree)
    assert nesting_depth(tree) == sum(_levels_of_every_field(tree))

"""How deep a syntax tree nests, and the limit above which ckptlint does not parse with libcst."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

__all__ = ["MAX_NESTING", "TooDeeplyNested", "deep_recursion", "nesting_depth", "nesting_levels"]


MAX_NESTING = 3000
"""The deepest syntax tree ckptlint parses with libcst (levels of Python's own AST, an
``and``/``or`` chain counting one level per operand). libcst's native parser (libcst 1.9.0,
the default 8 MiB stack) crashes the interpreter with a stack overflow somewhere above this,
the point depending on the construct and moving by a few levels from run to run: an ``and``
chain parses up to ~7,050 operands (7,046 parsed, 7,054 crashed), an ``elif`` chain up to
~8,240 branches (8,238 parsed, 8,239 crashed), nested lambdas up to ~3,500 (3,468 parsed,
3,562 crashed; CPython 3.11 refuses 2,990 itself). ``tests/test_nesting.py`` checks the
``and`` boundary in a child process. Its parse time also grows quadratically with depth (a
3,000-term sum: ~7 s, a 3,000-deep subscript chain: ~50 s on a loaded 2-core machine, where
``--file-timeout`` takes over). Every construct tried parses at 3,000 levels; CPython 3.11's
own parser refuses some before (such a file is refused too). Real code stays below ~60
levels."""

#: Python recursion allowed while rules walk a deep tree (libcst's visitors recurse a few
#: frames per level); raised only for files deeper than :data:`DEEP`, and restored after.
_FRAMES_PER_LEVEL = 8

DEEP = 100

class TooDeeplyNested(ValueError):
    """The source nests deeper than :data:`MAX_NESTING` levels: it is not parsed with libcst."""

class deep_recursion:
    """Raise Python's recursion limit while a tree ``depth`` levels deep is walked (libcst's
    visitors and the rules recurse a few frames a level: a 3,000-level tree needs ~24,000
    frames, Python's default is 1,000); a no-op for ordinary files (depth <= 100)."""

    def __init__(self, depth: int) -> None:
        self.needed = _FRAMES_PER_LEVEL * depth + 1000 if depth > DEEP else 0
        self.saved = 0

    def __enter__(self) -> deep_recursion:
        import sys

        self.saved = sys.getrecursionlimit()
        if self.needed > self.saved:
            sys.setrecursionlimit(self.needed)
        return self

    def __exit__(self, *exc_info: object) -> None:
        import sys

        sys.setrecursionlimit(self.saved)

def too_deep_message() -> str:
    return f"too deeply nested for libcst to parse (more than {MAX_NESTING} levels); file skipped"

def nesting_depth(tree: ast.AST) -> int:
    """An upper bound of the depth of libcst's tree relative to ``tree``'s: levels of the
    AST plus the longest ``and``/``or`` chain (one node in ``ast``, nested in libcst)."""
    levels, chain = nesting_levels(tree)
    return levels + chain

def nesting_levels(tree: ast.AST) -> tuple[int, int]:
    """The two parts of :func:`nesting_depth`: ``(levels of the AST, longest and/or
    chain)``. A module's levels are one more than its deepest statement's, and its chain
    the longest of its statements', so the depth of a module can be put together from
    those of its statements."""
    level: list[ast.AST] = [tree]
    depth = chain = 0
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
            if type(node) is ast.BoolOp and len(node.values) > chain:
                chain = len(node.values)
        level = below
    return depth, chain

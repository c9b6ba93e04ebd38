"""How deep a syntax tree nests, the limit above which ckptlint does not lint a file, and the
recursion limit its walks of a deep tree run under."""

from __future__ import annotations

import ast
import re

__all__ = ["MAX_NESTING", "TooDeeplyNested", "deep_recursion", "nesting_depth", "nesting_levels"]


MAX_NESTING = 3000
"""The deepest syntax tree ckptlint lints (levels of Python's own AST, an ``and``/``or`` chain
counting one level per operand); a deeper file is a ``parse`` problem (CKP902), not linted.

The limit bounds three things. CPython's parser runs with the recursion limit raised to a
little above it (a ``RecursionError`` or ``MemoryError`` there is the same problem; CPython
3.11 refuses some constructs below it, nested lambdas at 2,990). ckptlint's own recursive
walks of the tree (the rules, the region builder) run under :class:`deep_recursion`, which
needs frames in proportion to the depth. And a fix parses the smallest statement around its
edit with libcst, a statement that may nest as deep as the file: libcst's native parser
(libcst 1.9.0, the default 8 MiB stack) crashes the interpreter with a stack overflow
somewhere above this limit, the point depending on the construct and moving by a few levels
from run to run: an ``and`` chain parses up to ~7,050 operands (7,046 parsed, 7,054 crashed),
an ``elif`` chain up to ~8,240 branches (8,238 parsed, 8,239 crashed), nested lambdas up to
~3,500 (3,468 parsed, 3,562 crashed); every construct tried parses at 3,000 levels.
``tests/test_nesting.py`` checks the ``and`` boundary in a child process. libcst's parse time
also grows quadratically with depth (a 3,000-term sum: ~7 s, a 3,000-deep subscript chain:
~50 s on a loaded 2-core machine, measured on whole files). Real code stays below ~60
levels."""

#: Python recursion allowed per level while rules walk a deep tree (recursive walks take a
#: few frames a level); raised only for files deeper than :data:`DEEP`, and restored after.
_FRAMES_PER_LEVEL = 8

DEEP = 100

class TooDeeplyNested(ValueError):
    """The source nests deeper than :data:`MAX_NESTING` levels: it is not linted."""

class deep_recursion:
    """Raise Python's recursion limit while a tree ``depth`` levels deep is parsed or walked
    (recursive walks take a few frames a level: a 3,000-level tree is given ~24,000 frames,
    Python's default is 1,000); a no-op for ordinary files (depth <= 100)."""

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
    """The message of the ``parse`` problem (CKP902) of a file deeper than :data:`MAX_NESTING`."""
    return f"too deeply nested to check (more than {MAX_NESTING} levels); file skipped"

def nesting_depth(tree: ast.AST) -> int:
    """The depth of ``tree`` as :data:`MAX_NESTING` counts it: levels of the AST plus the
    longest ``and``/``or`` chain (one ``BoolOp`` in ``ast``, read as a nest of pairs: an upper
    bound of the depth of libcst's tree of a statement, too)."""
    levels, chain = nesting_levels(tree)
    return levels + chain

def nesting_levels(tree: ast.AST) -> tuple[int, int]:
    """The two parts of :func:`nesting_depth`: ``(levels of the AST, longest and/or
    chain)``. A module's levels are one more than its deepest statement's, and its chain
    the longest of its statements', so the depth of a module can be put together from
    those of its statements."""
    level: list[ast.AST] = [tree]
    depth = chain = 0
    known = _CHILD_FIELDS
    while level:
        depth += 1
        below: list[ast.AST] = []
        for node in level:
            kind = type(node)
            fields = known.get(kind)
            if fields is None:
                fields = known[kind] = _child_fields(kind)
            for name, how in fields:
                value = getattr(node, name, None)
                if value is None:
                    continue
                if how is _ONE:
                    below.append(value)
                elif how is _MANY:
                    below.extend(value)
                elif isinstance(value, list):  # may hold ``None`` (a dict's ``**`` keys), or unknown
                    below.extend(child for child in value if isinstance(child, ast.AST))
                elif isinstance(value, ast.AST):
                    below.append(value)
            if kind is ast.BoolOp and len(node.values) > chain:  # type: ignore[attr-defined]
                chain = len(node.values)  # type: ignore[attr-defined]
        level = below
    return depth, chain


#: How a field holds nodes (:func:`_child_fields`): one node, a list of nodes, or either
#: with ``None`` or other values mixed in (checked one by one).
_ONE, _MANY, _CHECKED = "one", "many", "checked"

#: Fields of the ``ast`` grammar that may hold ``None`` in a list.
_MAY_HOLD_NONE = frozenset({("Dict", "keys"), ("arguments", "kw_defaults")})

#: Types of the ``ast`` grammar whose values are not nodes.
_LEAVES = frozenset({"identifier", "string", "int", "constant"})

_FIELD = re.compile(r"(\w+)([*?]?) (\w+)")


#: :func:`_child_fields` of each node type met.
_CHILD_FIELDS: dict[type, tuple[tuple[str, str], ...]] = {}


def _child_fields(kind: type) -> tuple[tuple[str, str], ...]:
    """The fields of the node type ``kind`` that may hold nodes, with how (:data:`_ONE`,
    :data:`_MANY`, :data:`_CHECKED`), read from its grammar line (``ast.BinOp.__doc__`` is
    ``BinOp(expr left, operator op, expr right)``); every field :data:`_CHECKED` where that
    line does not name exactly its ``_fields``."""
    fields: tuple[str, ...] = getattr(kind, "_fields", ())
    line = (kind.__doc__ or "").strip()
    found = _FIELD.findall(line[line.find("(") + 1 : -1]) if line.startswith(f"{kind.__name__}(") else []
    if tuple(name for _, _, name in found) != fields:
        return tuple((name, _CHECKED) for name in fields)
    return tuple(
        (name, _CHECKED if (kind.__name__, name) in _MAY_HOLD_NONE else _MANY if mark == "*" else _ONE)
        for of, mark, name in found
        if of not in _LEAVES
    )

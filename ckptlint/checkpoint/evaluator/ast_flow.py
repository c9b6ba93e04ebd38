"""Statements a function's evaluation reads on CPython's ``ast``: the ``return`` statements
that can run (:func:`returns_of`) and the value an attribute was just set to before a read
(:func:`attribute_set_before`), for :mod:`ckptlint.checkpoint.evaluator.ast_evaluation`."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ckptlint.semantic.ast_lines import body_on_header
from ckptlint.semantic.ast_reaching import line_groups

if TYPE_CHECKING:
    from ckptlint.semantic.ast_analysis import AstAnalysis

__all__ = ["attribute_set_before", "returns_of"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: ``try`` statements (``try``/``except*`` from Python 3.11).
_TRIES: tuple[type[ast.Try], ...] = tuple(getattr(ast, name) for name in ("Try", "TryStar") if hasattr(ast, name))


def returns_of(
    function: ast.FunctionDef | ast.AsyncFunctionDef, decide: Callable[[ast.expr], bool | None] | None = None
) -> list[ast.Return]:
    """The ``return`` statements of ``function``'s own body, in source order, not entering
    nested ``def`` and ``class`` statements; with ``decide`` (a test -> ``True``/``False``/
    ``None``), the branch of an ``if`` that cannot run is skipped."""
    return list(_returns(function.body, decide))


def _returns(body: list[ast.stmt], decide: Callable[[ast.expr], bool | None] | None) -> Iterator[ast.Return]:
    for statement in body:
        if isinstance(statement, ast.Return):
            yield statement
        elif isinstance(statement, ast.If):
            taken = decide(statement.test) if decide is not None else None
            if taken is None or taken:
                yield from _returns(statement.body, decide)
            if taken is None or not taken:
                yield from _returns(statement.orelse, decide)
        elif isinstance(statement, _TRIES):
            yield from _returns(statement.body, decide)
            for handler in statement.handlers:
                yield from _returns(handler.body, decide)
            yield from _returns(statement.orelse, decide)
            yield from _returns(statement.finalbody, decide)
        elif isinstance(statement, ast.Match):
            for case in statement.cases:
                yield from _returns(case.body, decide)
        elif isinstance(statement, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)):
            yield from _returns(statement.body, decide)
            yield from _returns(getattr(statement, "orelse", []), decide)


def attribute_set_before(analysis: AstAnalysis, read: ast.Attribute) -> ast.expr | None:
    """For a read of ``owner.attr`` (``owner`` a name): the value of the last ``owner.attr =
    value`` statement before the read in straight-line code of its function, in the read's own
    block or one around it, with nothing between that assigns ``owner`` or ``owner.attr``
    otherwise and no loop around the read that does; ``None`` when there is none (a block on
    its header's line is not searched; simple statements sharing a line are one statement)."""
    if not isinstance(read.value, ast.Name):
        return None
    owner, attr = read.value.id, read.attr
    model = analysis.model
    below: ast.AST = read
    for ancestor in model.ancestors(read):
        block = _block_holding(ancestor, below) if isinstance(below, ast.stmt) else None
        if block is not None and not body_on_header(model, block):
            groups = line_groups(model, block)
            position = groups[id(below)]
            lines: list[list[ast.stmt]] = [[] for _ in range(position)]
            for statement in block:
                if groups[id(statement)] < position:
                    lines[groups[id(statement)]].append(statement)
            for line in reversed(lines):
                small = line[-1]
                if isinstance(small, ast.Assign) and len(small.targets) == 1 and _is(small.targets[0], owner, attr):
                    return small.value
                if any(_assigns(s, owner, attr) for s in line):
                    return None
        if isinstance(ancestor, (*_FUNCTIONS, ast.ClassDef, ast.Lambda, ast.Module)):
            return None
        if isinstance(ancestor, (ast.For, ast.AsyncFor, ast.While)) and _assigns(ancestor, owner, attr):
            return None  # a later iteration may see what the loop's body assigns
        below = ancestor
    return None


def _block_holding(node: ast.AST, child: ast.stmt) -> list[ast.stmt] | None:
    """The statement list of ``node`` that holds ``child`` (a body, an ``else``, a ``finally``);
    ``None`` at module level (the module's body is no block searched)."""
    if isinstance(node, ast.Module):
        return None
    for name in ("body", "orelse", "finalbody"):
        block = getattr(node, name, None)
        if isinstance(block, list) and any(s is child for s in block):
            return block
    return None


def _is(node: ast.AST, owner: str, attr: str | None) -> bool:
    """``node`` spells ``owner.attr`` (``owner`` itself for ``attr=None``)."""
    if attr is None:
        return isinstance(node, ast.Name) and node.id == owner
    return isinstance(node, ast.Attribute) and node.attr == attr and _is(node.value, owner, None)


def _assigns(node: ast.AST, owner: str, attr: str) -> bool:
    """Whether ``node`` assigns ``owner`` or ``owner.attr`` anywhere (any assignment form, a
    ``for``/``with``/``as`` target, ``del``, ``setattr``)."""
    for child in ast.walk(node):
        targets: list[ast.AST] = []
        if isinstance(child, (ast.Assign, ast.Delete)):
            targets = list(child.targets)
        elif isinstance(child, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.comprehension, ast.NamedExpr)):
            targets = [child.target]
        elif isinstance(child, ast.withitem) and child.optional_vars is not None:
            targets = [child.optional_vars]
        elif isinstance(child, (ast.alias, ast.ExceptHandler)):
            name = child.asname if isinstance(child, ast.alias) else child.name
            if name == owner:
                return True
        elif isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and child.func.id == "setattr":
            return True
        if any(_is(t, owner, attr) or _is(t, owner, None) for target in targets for t in _unpacked(target)):
            return True
    return False


def _unpacked(target: ast.AST) -> Iterator[ast.AST]:
    """The names and attributes a target assigns (``a, (b.c, *d)``: ``a``, ``b.c``, ``d``)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _unpacked(element)
    elif isinstance(target, ast.Starred):
        yield from _unpacked(target.value)
    else:
        yield target

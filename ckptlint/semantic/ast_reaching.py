"""Which bindings of a name can hold its value where it is read, on CPython's ``ast``: the
same refinement as :func:`ckptlint.semantic.reaching.reaching` (same rules, same answers) for
:class:`~ckptlint.semantic.ast_model.AstModel`.

libcst groups the simple statements of one line (``a = {}; f(**a)``) into one
``SimpleStatementLine``, and a body written after the colon (``def f(): return x``) is no
indented block; ``ast`` has neither, so statements are grouped here by the line they share
(:func:`_line_groups`) and a function whose first statement sits on the line of its colon is
treated as libcst treats a one-line body."""

from __future__ import annotations

import ast
from collections.abc import Callable

from ckptlint.semantic.ast_model import AstBinding, AstModel
from ckptlint.semantic.bindings import BindingKind

__all__ = ["reaching"]

_COMPOUND = (
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.Try,
    ast.With,
    ast.AsyncWith,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Match,
    *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
)
#: Ancestors that make a module-level binding conditional (libcst's ``For``, ``While``,
#: ``Try``, ``With``, ``Else`` of a loop or ``try``, ``ExceptHandler``).
_CONDITIONAL = (ast.For, ast.AsyncFor, ast.While, ast.Try, ast.With, ast.AsyncWith, ast.ExceptHandler)


def reaching(model: AstModel, name_node: ast.Name, decide: Callable[[ast.expr], bool | None] | None = None) -> list[AstBinding]:
    """:meth:`AstModel.bindings_of` less the bindings that cannot reach the read (see
    :func:`ckptlint.semantic.reaching.reaching`)."""
    bindings = model.bindings_of(name_node)
    if len(bindings) < 2:
        return bindings
    if all(b.scope is model.module_scope for b in bindings) and model.scope_of(name_node) is not model.module_scope:
        return _last_module_bindings(model, bindings, decide)
    statement: ast.AST = name_node
    function: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    for ancestor in model.ancestors(name_node):
        if isinstance(ancestor, (ast.ClassDef, ast.Lambda)):
            return bindings
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = ancestor
            break
        statement = ancestor
    if function is None or _one_line_body(function):
        return bindings
    groups = _line_groups(function.body)
    position = groups.get(id(statement))
    if position is None:
        return bindings

    def where(binding: AstBinding) -> int | None:
        if binding.kind is BindingKind.PARAMETER:
            return -1
        node: ast.AST | None = binding.node
        while node is not None and id(node) not in groups:
            node = model.parents.get(node)
        return None if node is None else groups[id(node)]

    places: list[tuple[AstBinding, int, bool]] = []
    for binding in bindings:
        place = where(binding)
        if place is None:
            return bindings  # a binding outside this body (global, nested scope): keep all
        holder: ast.AST | None = binding.node
        while holder is not None and id(holder) not in groups:
            holder = model.parents.get(holder)
        places.append((binding, place, not isinstance(holder, _COMPOUND)))
    killed = -1
    for binding, place, own_line in places:
        if binding.kind is BindingKind.ASSIGNMENT and own_line and place < position:
            killed = max(killed, place)
    simple = not isinstance(statement, _COMPOUND)
    kept = [
        binding
        for binding, place, _ in places
        if killed <= place < position or (place == position and not (simple and binding.kind is BindingKind.ASSIGNMENT))
    ]
    return kept or bindings


def _line_groups(body: list[ast.stmt]) -> dict[int, int]:
    """Index of each statement of ``body`` as libcst counts them: simple statements that
    share a line (``a = 1; b = 2``) are one."""
    groups: dict[int, int] = {}
    index = -1
    previous: ast.stmt | None = None
    for statement in body:
        joined = (
            previous is not None
            and not isinstance(previous, _COMPOUND)
            and not isinstance(statement, _COMPOUND)
            and statement.lineno == previous.end_lineno
        )
        if not joined:
            index += 1
        groups[id(statement)] = index
        previous = statement
    return groups


def _one_line_body(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether the body follows the colon on its line (libcst: no indented block)."""
    header_end = function.lineno
    for node in ast.walk(function.args):
        end = getattr(node, "end_lineno", None)
        if end is not None:
            header_end = max(header_end, end)
    if function.returns is not None and function.returns.end_lineno is not None:
        header_end = max(header_end, function.returns.end_lineno)
    return function.body[0].lineno == header_end


def _last_module_bindings(
    model: AstModel, bindings: list[AstBinding], decide: Callable[[ast.expr], bool | None] | None
) -> list[AstBinding]:
    """The module-level ``bindings`` that can be the name's value once the module ran."""
    body = model.module.body
    groups = _line_groups(body)
    index = dict(groups)
    for statement in body:  # import aliases have no recorded parent
        if isinstance(statement, (ast.Import, ast.ImportFrom)) and statement.names[0].name != "*":
            index.update((id(alias), groups[id(statement)]) for alias in statement.names)
    places: list[tuple[AstBinding, int, bool]] = []
    for binding in bindings:
        node: ast.AST | None = binding.node
        unconditional = True
        while node is not None and id(node) not in index:
            parent = model.parents.get(node)
            if isinstance(parent, ast.If) and node is not parent.test:
                in_body = any(s is node for s in parent.body)
                taken = decide(parent.test) if decide is not None and in_body else None
                unconditional = unconditional and taken is True
            elif isinstance(parent, _CONDITIONAL):
                unconditional = False
            node = parent
        if node is None:
            return bindings
        places.append((binding, index[id(node)], unconditional))
    killed = max((place for _, place, sure in places if sure), default=-1)
    return [binding for binding, place, _ in places if place >= killed] or bindings

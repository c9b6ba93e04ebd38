"""Which bindings of a name can hold its value where it is read: a flow refinement of
:class:`~ckptlint.semantic.ast_model.AstModel`'s scope lookup, for straight-line code (a plain
assignment kills earlier bindings) and for module globals read inside functions (the module's
last binding).

The statements of a function's body are counted by statement line: simple statements that
share a logical line (``a = {}; f(**a)``) are one (:mod:`ckptlint.semantic.ast_lines`), and a
function whose body follows its colon (``def f(): return x``) is not refined."""

from __future__ import annotations

import ast
from collections.abc import Callable

from ckptlint.semantic.ast_lines import body_on_header, statement_lines
from ckptlint.semantic.ast_model import AstBinding, AstModel
from ckptlint.semantic.bindings import BindingKind

__all__ = ["line_groups", "reaching"]

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
#: Ancestors that make a module-level binding conditional (a loop, a ``try``, a ``with``, an
#: ``except`` handler; the ``else`` of a loop or ``try`` is under them).
_CONDITIONAL = (ast.For, ast.AsyncFor, ast.While, ast.Try, ast.With, ast.AsyncWith, ast.ExceptHandler)


def reaching(model: AstModel, name_node: ast.Name, decide: Callable[[ast.expr], bool | None] | None = None) -> list[AstBinding]:
    """:meth:`AstModel.bindings_of` less the bindings that cannot reach the read. In
    straight-line code of one function, a statement line of its own body (not inside an
    ``if``, loop or ``try``) before the read's that binds the name by ``=`` kills the bindings
    before it (a parameter too); a statement's own ``=`` binding does not reach a read in its
    value, nor does a binding in a later line. A read inside a function of a name bound at
    module level sees the module's last unconditional binding and those after it (a
    module-level ``if`` whose test ``decide`` says is true counts as unconditional). Reads
    elsewhere keep every binding."""
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
    if function is None or body_on_header(model, function.body):
        return bindings
    groups = line_groups(model, function.body)
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


def line_groups(model: AstModel, body: list[ast.stmt]) -> dict[int, int]:
    """Index of each statement of ``body`` by statement line: simple statements that
    share a logical line (``a = 1; b = 2``, backslash continuations included) are one."""
    return {id(statement): index for index, line in enumerate(statement_lines(model, body)) for statement in line}


def _last_module_bindings(
    model: AstModel, bindings: list[AstBinding], decide: Callable[[ast.expr], bool | None] | None
) -> list[AstBinding]:
    """The module-level ``bindings`` that can be the name's value once the module ran."""
    body = model.module.body
    groups = line_groups(model, body)
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

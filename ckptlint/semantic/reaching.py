"""Which bindings of a name can hold its value where it is read: a flow refinement of the
semantic model's scope lookup, for straight-line code (a plain assignment kills earlier
bindings) and for module globals read inside functions (the module's last binding)."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from ckptlint.semantic.bindings import Binding, BindingKind
from ckptlint.semantic.model import SemanticModel

__all__ = ["reaching"]


def reaching(model: SemanticModel, name_node: cst.Name, decide: Callable[[cst.BaseExpression], bool | None] | None = None) -> list[Binding]:
    """:meth:`SemanticModel.bindings_of`, less those that a plain assignment kills before the read, in
    straight-line code of one function: when a statement of the function's own body (not
    inside an ``if``, loop or ``try``) before the statement holding the read binds the name
    by ``=``, bindings before it (the parameter of ``kwargs = {..., **kwargs}`` too) cannot
    reach the read; nor can a statement's own ``=`` binding reach a read in its value, nor a
    binding in a later statement of that body. A read inside a function of a name bound at
    module level sees the module's last binding when functions run, after the module ran:
    bindings before a later unconditional module-level binding are dropped (``checkpoint =
    functools.partial(checkpoint, use_reentrant=False)`` after the import; a module-level
    ``if`` whose test ``decide`` says is true counts as unconditional). Reads elsewhere keep
    every binding."""
    bindings = model.bindings_of(name_node)
    if len(bindings) < 2:
        return bindings
    if all(b.scope is model.module_scope for b in bindings) and model.scope_of(name_node) is not model.module_scope:
        return _last_module_bindings(model, bindings, decide)
    statement: cst.CSTNode | None = None
    below: cst.CSTNode = name_node
    body = None
    for ancestor in model.ancestors(name_node):
        if isinstance(ancestor, (cst.ClassDef, cst.Lambda)):
            return bindings
        if isinstance(ancestor, cst.FunctionDef):
            body = ancestor.body.body if isinstance(ancestor.body, cst.IndentedBlock) else None
            break
        statement, below = below, ancestor
    if body is None or statement is None:
        return bindings
    statements = list(body)
    try:
        position = next(i for i, s in enumerate(statements) if s is statement)
    except StopIteration:
        return bindings
    index = {id(s): i for i, s in enumerate(statements)}

    def where(binding: Binding) -> int | None:
        if binding.kind is BindingKind.PARAMETER:
            return -1
        node: cst.CSTNode | None = binding.node
        while node is not None and id(node) not in index:
            node = model.parents.get(node)
        return None if node is None else index[id(node)]

    places: list[tuple[Binding, int]] = []
    for binding in bindings:
        place = where(binding)
        if place is None:
            return bindings  # a binding outside this body (global, nested scope): keep all
        places.append((binding, place))
    killed = -1
    for binding, place in places:
        own_line = isinstance(statements[place], cst.SimpleStatementLine)
        if binding.kind is BindingKind.ASSIGNMENT and own_line and place < position:
            killed = max(killed, place)
    simple = isinstance(statement, cst.SimpleStatementLine)
    kept = [
        binding
        for binding, place in places
        if killed <= place < position
        or (place == position and not (simple and binding.kind is BindingKind.ASSIGNMENT))
    ]
    return kept or bindings

def _last_module_bindings(
    model: SemanticModel, bindings: list[Binding], decide: Callable[[cst.BaseExpression], bool | None] | None
) -> list[Binding]:
    """The module-level ``bindings`` that can be the name's value once the module ran."""
    index = {id(statement): i for i, statement in enumerate(model.module.body)}
    for i, statement in enumerate(model.module.body):  # import aliases have no recorded parent
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
                    index.update((id(alias), i) for alias in small.names)
    places: list[tuple[Binding, int, bool]] = []
    for binding in bindings:
        node: cst.CSTNode | None = binding.node
        unconditional = True
        while node is not None and id(node) not in index:
            parent = model.parents.get(node)
            if isinstance(parent, cst.If) and node is not parent.test:
                taken = decide(parent.test) if decide is not None and node is parent.body else None
                unconditional = unconditional and taken is True
            elif isinstance(parent, (cst.For, cst.While, cst.Try, cst.With, cst.Else, cst.ExceptHandler)):
                unconditional = False
            node = parent
        if node is None:
            return bindings
        places.append((binding, index[id(node)], unconditional))
    killed = max((place for _, place, sure in places if sure), default=-1)
    return [binding for binding, place, _ in places if place >= killed] or bindings

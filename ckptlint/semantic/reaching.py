"""Which bindings of a name can hold its value where it is read: a flow refinement of the
semantic model's scope lookup, for straight-line code (a plain assignment kills earlier
bindings) and for module globals read inside functions (the module's last binding)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import libcst as cst

from ckptlint.semantic.bindings import Binding, BindingKind
from ckptlint.semantic.model import SemanticModel

__all__ = ["attribute_set_before", "reaching"]


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


def attribute_set_before(model: SemanticModel, read: cst.Attribute) -> cst.BaseExpression | None:
    """For a read of ``owner.attr`` (``owner`` a name, ``self.llm = Llama(...)`` then
    ``self.llm.enable()``): the value of the last ``owner.attr = value`` statement before the
    read in straight-line code of its function, in the read's own block or one around it, with
    no statement between them that assigns ``owner`` or ``owner.attr`` otherwise and no loop
    around the read that does; ``None`` when there is none. A call between them that sets the
    attribute (a method of ``owner``) is not followed."""
    if not isinstance(read.value, cst.Name):
        return None
    owner, attr = read.value.value, read.attr.value
    below: cst.CSTNode = read
    for ancestor in model.ancestors(read):
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.Module)):
            return None
        if isinstance(ancestor, (cst.For, cst.While)) and _assigns(ancestor, owner, attr):
            return None  # a later iteration may see what the loop's body assigns
        if isinstance(ancestor, cst.IndentedBlock):
            statements = list(ancestor.body)
            position = next((i for i, s in enumerate(statements) if s is below), 0)
            for statement in reversed(statements[:position]):
                small = statement.body[-1] if isinstance(statement, cst.SimpleStatementLine) else None
                if isinstance(small, cst.Assign) and len(small.targets) == 1 and _is(small.targets[0].target, owner, attr):
                    return small.value
                if _assigns(statement, owner, attr):
                    return None
        below = ancestor
    return None


def _is(node: cst.CSTNode, owner: str, attr: str | None) -> bool:
    """``node`` spells ``owner.attr`` (``owner`` itself for ``attr=None``)."""
    if attr is None:
        return isinstance(node, cst.Name) and node.value == owner
    return isinstance(node, cst.Attribute) and node.attr.value == attr and _is(node.value, owner, None)


def _assigns(node: cst.CSTNode, owner: str, attr: str) -> bool:
    """Whether ``node`` assigns ``owner`` or ``owner.attr`` anywhere (any assignment form, a
    ``for``/``with`` target, ``del``, ``setattr``)."""
    for child in _walk(node):
        targets: list[cst.CSTNode] = []
        if isinstance(child, cst.Assign):
            targets = [t.target for t in child.targets]
        elif isinstance(child, (cst.AugAssign, cst.AnnAssign)):
            targets = [child.target]
        elif isinstance(child, (cst.For, cst.CompFor)):
            targets = [child.target]
        elif isinstance(child, cst.AsName):
            targets = [child.name]
        elif isinstance(child, cst.Del):
            targets = [child.target]
        elif isinstance(child, cst.NamedExpr):
            targets = [child.target]
        elif isinstance(child, cst.Call) and isinstance(child.func, cst.Name) and child.func.value == "setattr":
            return True
        if any(_is(t, owner, attr) or _is(t, owner, None) for target in targets for t in _unpacked(target)):
            return True
    return False


def _unpacked(target: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The names and attributes a target assigns (``a, (b.c, *d)``: ``a``, ``b.c``, ``d``)."""
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _unpacked(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _unpacked(target.value)
    else:
        yield target


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield node
    for child in node.children:
        yield from _walk(child)

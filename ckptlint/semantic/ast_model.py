"""Scopes, bindings and qualified names of one module, on CPython's ``ast``.

The records are those of :mod:`ckptlint.semantic.bindings`; the model is built by one walk of
an ``ast`` tree. It holds the tree's own nodes and, per node, only its parent; the scope a node
is evaluated in is found by climbing to the nearest scope that holds it
(:meth:`AstModel.scope_of`).

Where this model answers in a way Python would not, it does so on purpose, so that findings
stay what they have always been: it is flow-insensitive (every binding of a name in its scope
is a candidate), the first iterable of a comprehension is evaluated in the comprehension's
scope, an annotation without a value binds its name, ``global`` and ``nonlocal`` apply to the
bindings after them in the walk, ``match`` patterns bind nothing, and import statements (their
``alias`` nodes) have no parent.

``symtable`` is not used: it reads source text, not a tree, so it would parse the module a
second time to answer what the walk already sees (``global``/``nonlocal`` statements are
statements of the scope they apply to).
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator

from ckptlint.facts.apis import MODULE_EXPORTS
from ckptlint.semantic.ast_assignments import AstAssigned, assignments
from ckptlint.semantic.ast_walk import base_name, child_nodes, fields_order_children, start
from ckptlint.semantic.bindings import (
    MUTATING_METHODS,
    Binding,
    BindingKind,
    Mutation,
    MutationKind,
    Scope,
    ScopeKind,
)

__all__ = ["AstBinding", "AstModel", "AstMutation", "AstScope"]

AstScope = Scope[ast.AST, ast.expr]
AstBinding = Binding[ast.AST, ast.expr]
AstMutation = Mutation[ast.AST, ast.expr]

_BUILTINS = frozenset(dir(builtins))
#: Nodes whose children are walked in the order of
#: :func:`~ckptlint.semantic.ast_walk.fields_order_children` rather than ``ast``'s field order
#: (a dict's keys and values alternate, a call's arguments in source order), so that calls and
#: bindings are recorded in the order findings have always come out in.
_LIBCST_ORDER = frozenset({ast.Dict, ast.Call, ast.ExceptHandler})
_MAX_ALIAS_DEPTH = 8
#: Values an alias is followed through (``f = g``, ``f = m.g``, ``flag = None``).
_ALIASES = (ast.Name, ast.Attribute, ast.Constant)
#: The constants that are keywords (``builtins.True`` and so on as qualified names).
_NAMED_CONSTANTS = (True, False, None)

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
#: Nodes that open a scope: their inner children are evaluated in it (:meth:`AstModel.scope_of`).
_SCOPE_NODES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, *_COMPREHENSIONS})
#: The nodes :meth:`AstModel._enter` handles.
_ENTERED = frozenset(
    {
        ast.Call,
        ast.FunctionDef,
        ast.AsyncFunctionDef,
        ast.ClassDef,
        ast.Lambda,
        *_COMPREHENSIONS,
        ast.comprehension,
        ast.Import,
        ast.ImportFrom,
        ast.Assign,
        ast.AnnAssign,
        ast.AugAssign,
        ast.NamedExpr,
        ast.For,
        ast.AsyncFor,
        ast.withitem,
        ast.ExceptHandler,
        ast.Global,
        ast.Nonlocal,
        ast.Delete,
    }
)
#: Nodes without child nodes (:func:`child_nodes` is empty) that :meth:`AstModel._enter`
#: does not handle: the walk passes over them.
_LEAVES = frozenset({ast.Name, ast.Constant, ast.Pass, ast.Break, ast.Continue, ast.alias})
_ASSIGNING = frozenset(
    {ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For, ast.AsyncFor, ast.comprehension, ast.withitem}
)


class AstModel:
    """Scopes, bindings, parents and calls of one module's ``ast`` tree.

    Build it with :meth:`build`; it never re-walks the tree afterwards. ``module_name`` and
    the dotted module name (``"pkg.model"``) used for qualified names of local definitions and
    to resolve relative imports; ``is_package`` is true for an ``__init__.py``; ``text`` is the
    source the tree was parsed from, ``None`` when unknown (layout is then judged from
    physical rows, see :mod:`ckptlint.semantic.ast_lines`).
    """

    def __init__(self, module: ast.Module, module_name: str, is_package: bool = False, text: str | None = None) -> None:
        self.module = module
        self.text = text
        self.module_name = module_name
        self.is_package = is_package
        self.module_scope: AstScope = Scope(ScopeKind.MODULE, module, None, "")
        self.parents: dict[ast.AST, ast.AST] = {}
        self.calls: list[ast.Call] = []
        self.mutations: list[AstMutation] = []
        self.scope_of_definition: dict[ast.AST, AstScope] = {}
        #: Absolute modules of ``from M import *`` at module level (in source order).
        self.star_imports: list[str] = []
        #: Facts other layers derive from this model, kept with it.
        self.memo: dict[str, object] = {}

    def release(self) -> None:
        """Drop everything this model holds, breaking the cycles between its scopes and
        bindings (``Scope.bindings`` -> ``Binding.scope``), so that they are freed by reference
        counting at once. Only for a model no one will query again."""
        for scope in [self.module_scope, *self.scope_of_definition.values()]:
            scope.bindings.clear()
        self.scope_of_definition.clear()
        self.parents.clear()
        self.calls.clear()
        self.mutations.clear()
        self.memo.clear()

    # ----------------------------------------------------------------- building
    @classmethod
    def build(cls, module: ast.Module, module_name: str = "", is_package: bool = False, text: str | None = None) -> AstModel:
        """Walk ``module`` (parsed from ``text``, when known) once and return its model."""
        model = cls(module, module_name, is_package, text)
        model._walk()
        return model

    def _walk(self) -> None:
        # two stacks side by side, node and scope (no tuple a node): every node of the module
        nodes: list[ast.AST] = [self.module]
        scopes: list[AstScope] = [self.module_scope]
        pop_node, pop_scope = nodes.pop, scopes.pop
        parents = self.parents
        entered = _ENTERED
        libcst_order = _LIBCST_ORDER
        leaves = _LEAVES
        while nodes:
            node = pop_node()
            scope = pop_scope()
            kind = type(node)
            if kind in leaves:
                continue
            pending = self._enter(node, scope) if kind in entered else None
            if pending is None:  # most nodes: the children share the node's scope
                # calls and bindings in source order: a dict's keys and values alternate
                found = fields_order_children(node) if kind in libcst_order else child_nodes(node)
                if found:
                    parents.update(dict.fromkeys(found, node))
                    found.reverse()
                    nodes += found
                    scopes += [scope] * len(found)
            else:
                for child, _ in pending:
                    parents[child] = node
                for child, inner in reversed(pending):
                    nodes.append(child)
                    scopes.append(inner)

    def _enter(self, node: ast.AST, scope: AstScope) -> list[tuple[ast.AST, AstScope]] | None:
        """Record what ``node`` binds; return its children with their scopes when they differ
        from ``scope`` (``None``: all children in ``scope``)."""
        kind = type(node)
        if kind is ast.Call:
            call: ast.Call = node  # type: ignore[assignment]
            self.calls.append(call)
            self._record_method_mutation(call, scope)
            return None
        if kind in _ASSIGNING:
            owner = scope.function_scope if kind is ast.NamedExpr else scope
            for assigned in assignments(node):
                self._bind_assigned(assigned, owner)
            return None
        if kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            return self._enter_function(node, scope)  # type: ignore[arg-type]
        if kind is ast.ClassDef:
            return self._enter_class(node, scope)  # type: ignore[arg-type]
        if kind is ast.Lambda:
            function: ast.Lambda = node  # type: ignore[assignment]
            inner = self._new_scope(ScopeKind.LAMBDA, node, scope, "<lambda>")
            return [*self._parameters(function.args, scope, inner), (function.body, inner)]
        if kind in _SCOPE_NODES:  # a comprehension: every child in its scope, the first iterable too
            inner = self._new_scope(ScopeKind.COMPREHENSION, node, scope, "<comprehension>")
            return [(child, inner) for child in child_nodes(node)]
        if kind is ast.Import:
            for alias in node.names:  # type: ignore[attr-defined]
                self._bind_import(alias, scope)
            return []
        if kind is ast.ImportFrom:
            self._bind_import_from(node, scope)  # type: ignore[arg-type]
            return []
        if kind is ast.ExceptHandler:
            name = node.name  # type: ignore[attr-defined]
            if name is not None:
                self._bind_name(name, Binding(name, BindingKind.EXCEPT, node, scope), scope)
            return None
        if kind is ast.Global:
            scope.globals.update(node.names)  # type: ignore[attr-defined]
            return []
        if kind is ast.Nonlocal:
            scope.nonlocals.update(node.names)  # type: ignore[attr-defined]
            return []
        if kind is ast.Delete:
            for target in node.targets:  # type: ignore[attr-defined]
                self._record_delete(target, node, scope)
            return None
        return None

    def _new_scope(self, kind: ScopeKind, node: ast.AST, parent: AstScope, name: str) -> AstScope:
        qualname = f"{parent.qualname}.{name}" if parent.qualname else name
        if parent.kind in (ScopeKind.FUNCTION, ScopeKind.LAMBDA) and kind is not ScopeKind.COMPREHENSION:
            qualname = f"{parent.qualname}.<locals>.{name}"
        scope: AstScope = Scope(kind, node, parent, qualname)
        self.scope_of_definition[node] = scope
        return scope

    def _definition_target(self, scope: AstScope, name: str) -> str:
        inner = f"{scope.qualname}.{name}" if scope.qualname else name
        if scope.kind in (ScopeKind.FUNCTION, ScopeKind.LAMBDA):
            inner = f"{scope.qualname}.<locals>.{name}"
        return f"{self.module_name}.{inner}" if self.module_name else inner

    def _enter_function(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef, scope: AstScope
    ) -> list[tuple[ast.AST, AstScope]]:
        name = node.name
        target = self._definition_target(scope, name)
        self._bind_name(name, Binding(name, BindingKind.FUNCTION, node, scope, target=target), scope)
        inner = self._new_scope(ScopeKind.FUNCTION, node, scope, name)
        pending: list[tuple[ast.AST, AstScope]] = [(d, scope) for d in node.decorator_list]
        pending += self._parameters(node.args, scope, inner)
        if node.returns is not None:
            pending.append((node.returns, scope))
        pending += [(statement, inner) for statement in node.body]
        return pending

    def _enter_class(self, node: ast.ClassDef, scope: AstScope) -> list[tuple[ast.AST, AstScope]]:
        name = node.name
        target = self._definition_target(scope, name)
        self._bind_name(name, Binding(name, BindingKind.CLASS, node, scope, target=target), scope)
        inner = self._new_scope(ScopeKind.CLASS, node, scope, name)
        pending: list[tuple[ast.AST, AstScope]] = [(d, scope) for d in node.decorator_list]
        pending += [(base, scope) for base in node.bases]
        pending += [(keyword, scope) for keyword in node.keywords]
        pending += [(statement, inner) for statement in node.body]
        return pending

    def _parameters(self, params: ast.arguments, outer: AstScope, inner: AstScope) -> list[tuple[ast.AST, AstScope]]:
        """Bind the parameters in ``inner`` (in this order: positional-only, plain,
        keyword-only, ``*args``, ``**kwargs``); return ``arguments`` as the walk's next
        node, whose children (defaults, annotations) it walks in ``outer``."""
        every = [*params.posonlyargs, *params.args, *params.kwonlyargs]
        for star in (params.vararg, params.kwarg):
            if star is not None:
                every.append(star)
        for param in every:
            inner.add(Binding(param.arg, BindingKind.PARAMETER, param, inner))
        return [(params, outer)]

    def _bind_name(self, name: str, binding: AstBinding, scope: AstScope) -> None:
        """Add ``binding`` to the scope that owns ``name`` as seen from ``scope``."""
        owner = scope
        if name in scope.globals:
            owner = self.module_scope
        elif name in scope.nonlocals:
            owner = self._enclosing_function_binding_scope(scope, name) or scope
        if owner is not scope:
            binding.declared_in = scope
            binding.scope = owner
        owner.add(binding)

    def _enclosing_function_binding_scope(self, scope: AstScope, name: str) -> AstScope | None:
        parent = scope.parent
        while parent is not None and parent.kind is not ScopeKind.MODULE:
            if parent.kind in (ScopeKind.FUNCTION, ScopeKind.LAMBDA) and name in parent.bindings:
                return parent
            parent = parent.parent
        return None

    def _bind_assigned(self, assigned: AstAssigned, scope: AstScope) -> None:
        target = assigned.target
        kind = type(target)
        if kind is ast.Name:
            name = target.id  # type: ignore[attr-defined]
            binding = Binding(name, assigned.kind, assigned.node, scope, value=assigned.whole, assigned=assigned)
            self._bind_name(name, binding, scope)
        elif kind is ast.Attribute or kind is ast.Subscript:
            base = base_name(target)
            if base is not None:
                how = (
                    MutationKind.AUGMENTED
                    if assigned.kind is BindingKind.AUGMENTED
                    else (MutationKind.ATTRIBUTE if kind is ast.Attribute else MutationKind.SUBSCRIPT)
                )
                self.mutations.append(Mutation(base, assigned.node, scope, how))

    def _record_delete(self, target: ast.expr, node: ast.AST, scope: AstScope) -> None:
        kind = type(target)
        if kind is ast.Tuple or kind is ast.List:
            for element in target.elts:  # type: ignore[attr-defined]
                self._record_delete(element, node, scope)
        elif kind is ast.Attribute or kind is ast.Subscript:
            base = base_name(target)
            if base is not None:
                self.mutations.append(Mutation(base, node, scope, MutationKind.DELETE))

    def _record_method_mutation(self, call: ast.Call, scope: AstScope) -> None:
        func = call.func
        if type(func) is ast.Attribute and func.attr in MUTATING_METHODS:
            base = base_name(func.value)
            if base is not None:
                self.mutations.append(Mutation(base, call, scope, MutationKind.METHOD, func.attr))

    def _bind_import(self, alias: ast.alias, scope: AstScope) -> None:
        dotted = alias.name
        if alias.asname is not None:
            name = alias.asname
            target = dotted
        else:
            name = dotted.split(".")[0]
            target = name
        self._bind_name(name, Binding(name, BindingKind.IMPORT, alias, scope, target=target), scope)

    def _bind_import_from(self, node: ast.ImportFrom, scope: AstScope) -> None:
        base = self.absolute_module(node)
        if base is None:
            return
        if node.names and node.names[0].name == "*":
            if scope is self.module_scope:
                self.star_imports.append(base)
            for name in MODULE_EXPORTS.get(base, ()):
                self._bind_name(name, Binding(name, BindingKind.IMPORT, node, scope, target=f"{base}.{name}"), scope)
            return
        for alias in node.names:
            imported = alias.name
            name = alias.asname if alias.asname is not None else imported
            target = f"{base}.{imported}" if base else imported
            self._bind_name(name, Binding(name, BindingKind.IMPORT, alias, scope, target=target), scope)

    def absolute_module(self, node: ast.ImportFrom) -> str | None:
        """The absolute dotted module an ``ImportFrom`` reads from (relative ones resolved
        against this module's package); ``None`` when it climbs above the top package."""
        module = node.module or ""
        level = node.level or 0
        if level == 0:
            return module
        package_parts = self.module_name.split(".") if self.module_name else []
        if not self.is_package and package_parts:
            package_parts = package_parts[:-1]
        if level - 1 > len(package_parts):
            return None
        if level > 1:
            package_parts = package_parts[: len(package_parts) - (level - 1)]
        return ".".join(part for part in package_parts + ([module] if module else []) if part)

    # ----------------------------------------------------------------- queries
    def scope_of(self, node: ast.AST) -> AstScope:
        """The scope in which ``node`` is evaluated (the module scope if unknown).

        Climbs to the nearest node that opens a scope holding ``node``: a function's or
        lambda's parameters and body, a class's body, all of a comprehension; a function's
        decorators, defaults, annotations and return annotation, and a class's decorators,
        bases and keywords, are evaluated outside."""
        parents = self.parents
        below = node  # the child of ``child`` on the way up (for ``arguments``)
        child = node
        parent = parents.get(node)
        while parent is not None:
            kind = type(parent)
            if kind in _SCOPE_NODES and _holds(parent, child, below, node):
                return self.scope_of_definition[parent]
            below, child, parent = child, parent, parents.get(parent)
        return self.module_scope

    def parent(self, node: ast.AST) -> ast.AST | None:
        return self.parents.get(node)

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        """Yield the parents of ``node`` from the nearest to the module."""
        parent = self.parents.get(node)
        while parent is not None:
            yield parent
            parent = self.parents.get(parent)

    def lookup(self, name: str, scope: AstScope) -> list[AstBinding]:
        """Bindings of ``name`` visible from ``scope`` under Python's LEGB rule: class scopes
        are searched only when they are the starting scope; a name bound anywhere in a function
        is local to the whole function; ``[]`` for names bound nowhere in the module."""
        if name in scope.globals:
            return list(self.module_scope.bindings.get(name, ()))
        current: AstScope | None = scope
        first = True
        while current is not None:
            if current.kind is not ScopeKind.CLASS or first:
                found = current.bindings.get(name)
                if found:
                    return list(found)
            first = False
            current = current.parent
        return []

    def bindings_of(self, name_node: ast.Name) -> list[AstBinding]:
        """Bindings visible for the ``Name`` node (looked up from its own scope)."""
        return self.lookup(name_node.id, self.scope_of(name_node))

    def bindings_at(self, name_node: ast.Name) -> list[AstBinding]:
        """Bindings of ``name_node`` that can hold its value where it is read: inside the
        body of a ``for`` loop whose target binds the name, that loop's element only, unless
        the body rebinds the name (``for blk in self.blocks3: checkpoint(blk, x)`` is not also
        one of ``self.blocks1`` bound by an earlier loop)."""
        bindings = self.bindings_of(name_node)
        if len(bindings) < 2:
            return bindings
        scope = self.scope_of(name_node)
        child: ast.AST = name_node
        for ancestor in self.ancestors(name_node):
            kind = type(ancestor)
            if kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda):
                break
            if (kind is ast.For or kind is ast.AsyncFor) and _in_list(child, ancestor.body):  # type: ignore[attr-defined]
                loop = [b for b in bindings if b.node is ancestor and b.kind is BindingKind.LOOP]
                if not loop or loop[0].scope is not scope:
                    child = ancestor
                    continue
                inner = [b for b in bindings if b.node is not ancestor and self._in_body(b.node, ancestor)]
                return loop if not inner else bindings
            child = ancestor
        return bindings

    def _in_body(self, node: ast.AST, loop: ast.AST) -> bool:
        """Whether ``node`` is inside the body (not the ``else``) of ``loop``."""
        child = node
        for ancestor in self.ancestors(node):
            if ancestor is loop:
                return _in_list(child, loop.body)  # type: ignore[attr-defined]
            child = ancestor
        return False

    def qualified_names(self, expr: ast.AST, _depth: int = 0) -> frozenset[str]:
        """Every qualified name ``expr`` (a ``Name`` or ``Attribute`` chain) may denote:
        ``torch.utils.checkpoint.checkpoint`` for ``ckpt`` after ``from torch.utils.checkpoint
        import checkpoint as ckpt``, ``builtins.len`` for a builtin, aliases (``f = g``)
        followed; empty when nothing is known (parameters, call results, ...)."""
        kind = type(expr)
        if kind is ast.Name:
            name: str = expr.id  # type: ignore[attr-defined]
            bindings = self.lookup(name, self.scope_of(expr))
            if not bindings:
                return frozenset({f"builtins.{name}"}) if name in _BUILTINS else frozenset()
            names: set[str] = set()
            for binding in bindings:
                if binding.target is not None:
                    names.add(binding.target)
                elif (
                    binding.kind is BindingKind.ASSIGNMENT
                    and type(binding.value) in _ALIASES
                    and _depth < _MAX_ALIAS_DEPTH
                    and binding.value is not expr
                ):
                    names |= self.qualified_names(binding.value, _depth + 1)  # type: ignore[arg-type]
            return frozenset(names)
        if kind is ast.Constant and any(expr.value is c for c in _NAMED_CONSTANTS):  # type: ignore[attr-defined]
            # ``True``/``False``/``None`` denote ``builtins.True`` and so on
            return frozenset({f"builtins.{expr.value}"})  # type: ignore[attr-defined]
        if kind is ast.Attribute:
            attr = expr.attr  # type: ignore[attr-defined]
            return frozenset(f"{base}.{attr}" for base in self.qualified_names(expr.value, _depth))  # type: ignore[attr-defined]
        return frozenset()

    def precedes(self, first: ast.AST, second: ast.AST) -> bool | None:
        """Whether ``first`` comes before ``second`` in source order (``True`` also when
        ``first`` contains ``second``); ``None`` when they share no ancestor in this tree.
        Decided at their nearest common ancestor by where its two children start."""
        chain = [first, *self.ancestors(first)]
        index = {id(node): i for i, node in enumerate(chain)}
        below = second
        common = None
        for node in (second, *self.ancestors(second)):
            if id(node) in index:
                common = node
                break
            below = node
        if common is None:
            return None
        if common is first:
            return True
        if common is second:
            return False
        above_first = chain[index[id(common)] - 1]
        return start(above_first) < start(below)

    def enclosing(self, node: ast.AST, *types: type) -> ast.AST | None:
        """The nearest ancestor of ``node`` that is an instance of one of ``types``."""
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, types):
                return ancestor
        return None

    def mutations_of(self, name: str, scope: AstScope) -> list[AstMutation]:
        """Mutations of ``name`` whose code resolves the name to the same binding scope."""
        owner = self._owner_scope(name, scope)
        return [m for m in self.mutations if m.base == name and self._owner_scope(name, m.scope) is owner]

    def _owner_scope(self, name: str, scope: AstScope) -> AstScope | None:
        bindings = self.lookup(name, scope)
        return bindings[0].scope if bindings else None


def _holds(scope_node: ast.AST, child: ast.AST, below: ast.AST, node: ast.AST) -> bool:
    """Whether ``child`` (a child of ``scope_node``, with ``below`` its child on the way up
    from ``node``) is evaluated in the scope ``scope_node`` opens."""
    kind = type(scope_node)
    if kind is ast.ClassDef:
        return isinstance(child, ast.stmt)
    if type(child) is ast.arguments:  # a parameter itself, not its default or annotation
        return below is node and type(node) is ast.arg
    if kind is ast.Lambda:
        return child is scope_node.body  # type: ignore[attr-defined]
    if kind in _FUNCTIONS:
        return isinstance(child, ast.stmt)
    return True  # a comprehension


def _in_list(node: ast.AST, nodes: list[ast.stmt]) -> bool:
    return any(item is node for item in nodes)


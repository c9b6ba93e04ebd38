"""Calls whose API the receiver says, on CPython's ``ast``: methods of instances of an API
class (``ckpt.checkpoint(f, x)`` after ``ckpt = CheckpointWithoutOutput()`` or
``self.ckpt = CheckpointWithoutOutput()`` in a method of the class,
:data:`~ckptlint.facts.apis.INSTANCE_METHOD_APIS`), and ``self.attr(...)`` where the class
stores a checkpoint function in ``self.attr`` (``self._ckpt = checkpoint``). Read by
:mod:`ckptlint.checkpoint.sites.ast_sites`.
"""

from __future__ import annotations

import ast
import re

from ckptlint.checkpoint.sites.ast_options import literal_value
from ckptlint.facts.apis import INSTANCE_METHOD_APIS, PARTIAL_QUALIFIED_NAMES, ApiKind, CheckpointApi, api_for
from ckptlint.semantic.ast_assignments import assignments, attribute_name, candidate_values
from ckptlint.semantic.ast_lines import body_on_header
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.bindings import BindingKind

__all__ = ["instance_method_api", "self_assignments", "self_attribute_api", "self_partial"]

#: Last parts of names of ``self`` attributes worth reading (``self._ckpt_fn``).
_FOLLOWED = re.compile(r"(?i)checkpoint|ckpt|recompute|^apply$")

_INSTANCE_METHODS = frozenset(method for method, _ in INSTANCE_METHOD_APIS.values())
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: The nodes :func:`ckptlint.semantic.ast_assignments.assignments` reads.
_BINDING_NODES = (
    ast.Assign,
    ast.AnnAssign,
    ast.AugAssign,
    ast.NamedExpr,
    ast.For,
    ast.AsyncFor,
    ast.comprehension,
    ast.withitem,
    ast.Call,
)
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


def instance_method_api(func: ast.Attribute, model: AstModel) -> CheckpointApi | None:
    """The API ``receiver.method`` calls when the receiver is an instance of an API class."""
    if func.attr not in _INSTANCE_METHODS:
        return None
    for constructor in _constructors(func.value, model):
        for name in model.qualified_names(constructor.func):
            entry = INSTANCE_METHOD_APIS.get(name)
            if entry is not None and entry[0] == func.attr:
                return entry[1]
    return None


def _self_values(func: ast.Attribute, model: AstModel) -> list[ast.expr]:
    """What the class assigns to ``self.attr`` for a call ``self.attr(...)``, for an attribute
    named like a checkpoint function (``self._ckpt_fn``)."""
    if not (isinstance(func.value, ast.Name) and func.value.id == "self" and _FOLLOWED.search(func.attr)):
        return []
    owner = _enclosing_class(model, func)
    return [] if owner is None else self_assignments(model, owner, func.attr)


def self_attribute_api(func: ast.Attribute, model: AstModel) -> CheckpointApi | None:
    """``self.attr(...)`` where the class assigns a checkpoint function itself to ``self.attr``
    (``self._ckpt = checkpoint``)."""
    for value in _self_values(func, model):
        if isinstance(value, (ast.Name, ast.Attribute)):
            api = api_for(model.qualified_names(value))
            if api is not None and api.kind in (ApiKind.FUNCTION, ApiKind.LIBRARY_FUNCTION):
                return api
    return None


def self_partial(func: ast.Attribute, model: AstModel) -> ast.Call | None:
    """The ``functools.partial(API, ...)`` call the class stores in ``self.attr``, itself or
    returned by a helper (``self.ckpt = make_ckpt()``), for a call ``self.attr(...)``."""
    for value in _self_values(func, model):
        found = _returned_partial(model, value)
        if found is not None:
            return found
    return None


def _returned_partial(model: AstModel, value: ast.expr, hops: int = 0) -> ast.Call | None:
    """The ``functools.partial(...)`` call ``value`` is, or that the function it calls returns
    (followed through a local name and up to two helpers deep; see
    ``reach._returned_partial``)."""
    if hops > 2:
        return None
    if isinstance(value, ast.Name):
        for binding in model.bindings_of(value):
            if binding.kind is BindingKind.ASSIGNMENT and binding.value is not None:
                found = _returned_partial(model, binding.value, hops + 1)
                if found is not None:
                    return found
        return None
    if not isinstance(value, ast.Call):
        return None
    if (value.args or value.keywords) and model.qualified_names(value.func) & PARTIAL_QUALIFIED_NAMES:
        return value
    functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    if isinstance(value.func, ast.Name):
        functions = [b.node for b in model.bindings_of(value.func) if isinstance(b.node, _FUNCTIONS)]
    elif isinstance(value.func, ast.Attribute) and isinstance(value.func.value, ast.Name) and value.func.value.id == "self":
        owner = _enclosing_class(model, value)
        body = owner.body if owner is not None and not body_on_header(model, owner.body) else []
        functions = [s for s in body if isinstance(s, _FUNCTIONS) and s.name == value.func.attr]
    for function in functions:
        for returned in _returns_of(function):
            found = _returned_partial(model, returned.value, hops + 1) if returned.value is not None else None
            if found is not None:
                return found
    return None


def _returns_of(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Return]:
    """The ``return`` statements of ``function``'s own body, not in nested definitions, in
    source order (``walk.returns_of``)."""
    from ckptlint.semantic.ast_walk import child_nodes

    found: list[ast.Return] = []
    stack: list[ast.AST] = list(reversed(function.body))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            found.append(node)
        if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
            continue
        stack.extend(reversed(child_nodes(node)))
    return found


def _constructors(receiver: ast.expr, model: AstModel) -> list[ast.Call]:
    """Calls whose result ``receiver`` may be: itself, a local variable's value, or a
    ``self.attr`` assigned in the enclosing class."""
    if isinstance(receiver, ast.Call):
        return [receiver]
    if isinstance(receiver, ast.Name):
        return [b.value for b in model.bindings_of(receiver) if b.kind is BindingKind.ASSIGNMENT and isinstance(b.value, ast.Call)]
    if isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name):
        owner = _enclosing_class(model, receiver)
        if owner is None:
            return []
        return [value for value in self_assignments(model, owner, receiver.attr) if isinstance(value, ast.Call)]
    return []


def _enclosing_class(model: AstModel, node: ast.AST) -> ast.ClassDef | None:
    function = model.enclosing(node, *_FUNCTIONS)
    while function is not None:
        parent = model.enclosing(function, ast.ClassDef, *_FUNCTIONS)
        if isinstance(parent, ast.ClassDef):
            return parent
        function = parent
    return None


def self_assignments(model: AstModel, owner: ast.ClassDef, attr: str) -> list[ast.expr]:
    """Values assigned to ``self.attr`` in the methods of ``owner``, in any binding form (one
    walk per class, kept in the model's memo; in the order the walk meets them)."""
    memo: dict[int, tuple[ast.ClassDef, dict[str, list[ast.expr]]]] = model.memo.setdefault("self_assignments", {})  # type: ignore[assignment]
    cached = memo.get(id(owner))
    if cached is None or cached[0] is not owner:
        from ckptlint.semantic.ast_walk import child_nodes

        def key(expr: ast.expr) -> str | None:
            value = literal_value(expr, model)
            return value if isinstance(value, str) else None

        found: dict[str, list[ast.expr]] = {}
        stack: list[ast.AST] = list(owner.body)
        while stack:
            node = stack.pop()
            if isinstance(node, ast.ClassDef):
                continue
            if isinstance(node, _BINDING_NODES):
                for assigned in assignments(node, key):
                    name = attribute_name(assigned, "self")
                    if name is not None:
                        found.setdefault(name, []).extend(candidate_values(assigned, model.qualified_names) or ())
            if isinstance(node, ast.Expr):
                stack.append(node.value)  # `setattr(self, "name", value)`
                continue
            if isinstance(node, ast.expr) or (isinstance(node, ast.stmt) and not isinstance(node, _COMPOUND)):
                continue  # assignments are statements: no need to look inside expressions
            stack.extend(child_nodes(node))
        cached = (owner, found)
        memo[id(owner)] = cached
    return cached[1].get(attr, [])

"""Calls whose API the receiver says, on CPython's ``ast``, as
:class:`ckptlint.checkpoint.sites.reach.Recogniser` reads them on libcst: methods of instances
of an API class (``ckpt.checkpoint(f, x)`` after ``ckpt = CheckpointWithoutOutput()`` or
``self.ckpt = CheckpointWithoutOutput()`` in a method of the class,
:data:`~ckptlint.facts.apis.INSTANCE_METHOD_APIS`), and ``self.attr(...)`` where the class
stores a checkpoint function in ``self.attr`` (``self._ckpt = checkpoint``)."""

from __future__ import annotations

import ast
import re

from ckptlint.checkpoint.sites.ast_options import literal_value
from ckptlint.facts.apis import INSTANCE_METHOD_APIS, ApiKind, CheckpointApi, api_for
from ckptlint.semantic.ast_assignments import assignments, attribute_name, candidate_values
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.bindings import BindingKind

__all__ = ["instance_method_api", "self_assignments", "self_attribute_api"]

#: Last parts of names of ``self`` attributes worth reading (``self._ckpt_fn``), as the libcst
#: finder has it (:data:`ckptlint.checkpoint.sites.reach._FOLLOWED`).
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


def self_attribute_api(func: ast.Attribute, model: AstModel) -> CheckpointApi | None:
    """``self.attr(...)`` where the class assigns a checkpoint function itself to ``self.attr``
    (``self._ckpt = checkpoint``), for an attribute named like one."""
    if not (isinstance(func.value, ast.Name) and func.value.id == "self" and _FOLLOWED.search(func.attr)):
        return None
    owner = _enclosing_class(model, func)
    if owner is None:
        return None
    for value in self_assignments(model, owner, func.attr):
        if isinstance(value, (ast.Name, ast.Attribute)):
            api = api_for(model.qualified_names(value))
            if api is not None and api.kind in (ApiKind.FUNCTION, ApiKind.LIBRARY_FUNCTION):
                return api
    return None


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
    walk per class, kept in the model's memo; the order of libcst's walk)."""
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

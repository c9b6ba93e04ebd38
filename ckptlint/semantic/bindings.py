"""The records of the semantic model (pyflakes' explicit bindings, kinds as types): scopes, the
bindings of names in them, and mutations of objects reachable from names.

The records are generic over the tree they point into: ``N`` is the type of a node, ``E`` of
an expression: the model (:mod:`ckptlint.semantic.ast_model`) uses ``Scope[ast.AST,
ast.expr]`` and so on (``AstScope``, ``AstBinding``). Nothing here imports a parser at run
time."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Generic, TypeVar

N = TypeVar("N")
E = TypeVar("E")


__all__ = ["EACH", "ENTER", "Assigned", "Binding", "BindingKind", "Mutation", "MutationKind", "Scope", "ScopeKind"]


#: Method names that mutate the object they are called on (lists, dicts, sets, deques).
MUTATING_METHODS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "pop",
        "popitem",
        "remove",
        "clear",
        "update",
        "setdefault",
        "add",
        "discard",
        "appendleft",
        "extendleft",
        "sort",
        "reverse",
        "__setitem__",
        "__delitem__",
    }
)


class ScopeKind(str, Enum):
    MODULE = "module"
    CLASS = "class"
    FUNCTION = "function"
    LAMBDA = "lambda"
    COMPREHENSION = "comprehension"


class BindingKind(str, Enum):
    IMPORT = "import"
    ASSIGNMENT = "assignment"
    AUGMENTED = "augmented-assignment"
    FUNCTION = "function"
    CLASS = "class"
    PARAMETER = "parameter"
    LOOP = "loop-variable"
    WITH = "with-target"
    EXCEPT = "except-target"
    WALRUS = "walrus"


#: An :attr:`Assigned.path` step: an element of the iterable (``for`` targets).
EACH = "each"


#: An :attr:`Assigned.path` step: what entering the context manager returns (``with ... as``).
ENTER = "enter"


@dataclass(frozen=True, eq=False)
class Assigned(Generic[N, E]):
    """One elementary target of a binding and where its value comes from.

    Attributes:
        node: the binding node (``Assign``, ``AnnAssign``, ``AugAssign``, ``NamedExpr``,
            ``For``, ``CompFor``, ``WithItem``, or the ``setattr`` ``Call``).
        kind: ``ASSIGNMENT`` (plain, chained, annotated, unpacked, ``setattr``), ``AUGMENTED``,
            ``WALRUS``, ``LOOP`` or ``WITH``.
        target: the bound ``Name``, ``Attribute`` or ``Subscript`` (for ``setattr``: its object).
        value: the expression the value is taken from; ``None`` when the text does not say
            (a starred target, an annotation without value, unpacking of a display of
            another length).
        path: steps from ``value`` to the target's value, in order: an ``int`` position
            (negative after a starred target), :data:`EACH`, :data:`ENTER`; empty when the
            target gets ``value`` itself.
        owner: for an attribute target, the object written (``self`` of ``self.x = v``,
            ``setattr``'s first argument); else ``None``.
        attr: for an attribute target, the attribute name; else ``None``.
    """

    node: N
    kind: BindingKind
    target: E
    value: E | None
    path: tuple[int | str, ...] = ()
    owner: E | None = None
    attr: str | None = None

    @property
    def whole(self) -> E | None:
        """``value`` when the target gets all of it (no path, not augmented), else ``None``."""
        if self.path or self.kind is BindingKind.AUGMENTED:
            return None
        return self.value


@dataclass(eq=False)
class Binding(Generic[N, E]):
    """One place where a name gets a value.

    Attributes:
        name: the bound name.
        kind: what kind of statement binds it.
        node: the binding node (``ImportAlias``, ``Assign``, ``FunctionDef``, ``Param``,
            ``For``, ...).
        value: the expression the name gets whole (``x = v``, each of ``a = b = v``, ``a, b = v, w``
            element-wise, ``x: T = v``, ``(x := v)``); else ``None``.
        target: for imports, the imported qualified name (``"torch.utils.checkpoint"``);
            for ``def``/``class``, the qualified name of the definition.
        scope: the scope the name lives in.
        declared_in: for a ``global``/``nonlocal`` rebinding, the scope whose code rebinds
            it (different from ``scope``); otherwise ``None``.
        assigned: for a name bound by an assignment, loop, ``with`` or walrus, where its
            value comes from (:func:`ckptlint.semantic.ast_assignments.assignments`).
    """

    name: str
    kind: BindingKind
    node: N
    scope: Scope[N, E]
    value: E | None = None
    target: str | None = None
    declared_in: Scope[N, E] | None = None
    assigned: Assigned[N, E] | None = None


class MutationKind(str, Enum):
    """How a :class:`Mutation` writes into its object."""

    ATTRIBUTE = "attribute"  # obj.attr = v
    SUBSCRIPT = "subscript"  # obj[k] = v
    AUGMENTED = "augmented"  # obj.attr += v, obj[k] += v
    METHOD = "method"  # obj.append(v)
    DELETE = "delete"  # del obj[k], del obj.attr


@dataclass(eq=False)
class Mutation(Generic[N, E]):
    """A write into an object reachable from a name, without rebinding the name.

    ``obj.attr = v``, ``obj[k] = v``, ``obj.attr += v``, ``del obj[k]`` and mutating method
    calls (``obj.append(v)``, ``cache["k"].append(v)``) are mutations of ``base`` (the
    leftmost name, ``obj``/``cache``).
    """

    base: str
    node: N
    scope: Scope[N, E]
    kind: MutationKind
    method: str | None = None


@dataclass(eq=False)
class Scope(Generic[N, E]):
    """A Python scope: the module, a class body, a function, a lambda or a comprehension."""

    kind: ScopeKind
    node: N
    parent: Scope[N, E] | None
    qualname: str
    bindings: dict[str, list[Binding[N, E]]] = field(default_factory=dict)
    globals: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)

    def add(self, binding: Binding[N, E]) -> None:
        self.bindings.setdefault(binding.name, []).append(binding)

    @property
    def function_scope(self) -> Scope[N, E]:
        """The nearest enclosing function or module scope (comprehensions and lambdas count
        as part of the function that contains them for ``global``/walrus purposes)."""
        scope = self
        while scope.kind is ScopeKind.COMPREHENSION and scope.parent is not None:
            scope = scope.parent
        return scope



"""What the outer-state rules (CKP201/CKP202) share: the records of a read and a write outside a
region, and how a name in a frame is resolved to the scope that owns it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Generic, Protocol

import libcst as cst

from ckptlint.checkpoint.evaluator.region import Frame
from ckptlint.semantic.analysis import ModuleAnalysis
from ckptlint.semantic.bindings import (
    Binding,
    BindingKind,
    Scope,
    ScopeKind,
)

if TYPE_CHECKING:
    from typing_extensions import TypeVar

    from ckptlint.semantic.model import SemanticModel

    class _Framed(Protocol):
        @property
        def analysis(self) -> Any: ...

    # The node a write or read is at, the frame it is in and that frame's module: libcst's
    # unless parametrised (the records of :mod:`ckptlint.checkpoint.analyses.ast_outer_state`
    # are ``OuterWrite[ast.AST, AstFrame, AstAnalysis]`` and so on).
    N = TypeVar("N", default=cst.CSTNode)
    R = TypeVar("R", default=cst.Name | cst.Attribute)
    Fr = TypeVar("Fr", bound=_Framed, default=Frame)
    M = TypeVar("M", default=ModuleAnalysis)
else:
    from typing import TypeVar

    N = TypeVar("N")
    R = TypeVar("R")
    Fr = TypeVar("Fr")
    M = TypeVar("M")

__all__ = ["LOOP_VARIABLE", "OuterRead", "OuterWrite"]


STATE_KINDS = (BindingKind.ASSIGNMENT, BindingKind.AUGMENTED, BindingKind.WALRUS)

@dataclass(eq=False)
class OuterWrite(Generic[N, Fr, M]):
    """A statement or call in a frame that changes state living outside the region.

    Generic over the node, frame and module types: libcst's unless parametrised."""

    node: N
    frame: Fr
    what: str

    @property
    def analysis(self) -> M:
        return self.frame.analysis

@dataclass(eq=False)
class OuterRead(Generic[R, Fr, M]):
    """A read, in a frame, of module-level or closure state that is changed elsewhere.

    Generic over the read node, frame and module types: libcst's unless parametrised."""

    node: R
    frame: Fr
    name: str
    why: str

    @property
    def loop_variable(self) -> bool:
        """The variable of the loop that runs the checkpoint (it differs every iteration)."""
        return self.why.startswith(LOOP_VARIABLE)

    @property
    def late_binding(self) -> bool:
        """A loop variable read by a closure: recomputation sees the last iteration's value."""
        return self.why.startswith(LOOP_VARIABLE) or self.why.endswith(LOOP_REBINDING)

    @property
    def analysis(self) -> M:
        return self.frame.analysis

def frame_scope(frame: Frame) -> Scope | None:
    return frame.analysis.model.scope_of_definition.get(frame.function)


class Owner(str, Enum):
    """Where a name used in a frame lives, relative to that frame."""

    LOCAL = "local"  # bound in the frame itself: a local object
    PARAMETER = "parameter"  # a parameter: the caller's object
    SELF = "self"  # the method's `self`: state of the module
    DEFINITION = "definition"  # an import, a def or a class of an outer scope
    OUTER = "outer"  # a variable of the module or of an enclosing function
    UNKNOWN = "unknown"  # bound nowhere in the module (a builtin, or undefined)


def owner_of(frame: Frame, name: str, at: cst.CSTNode) -> tuple[Owner, list[Binding]]:
    """Where ``name`` (used at ``at``) lives relative to the frame (an :class:`Owner`)."""
    model = frame.analysis.model
    bindings = model.lookup(name, model.scope_of(at))
    if not bindings:
        return Owner.UNKNOWN, bindings
    scope = frame_scope(frame)
    first = bindings[0]
    if first.scope is scope or (scope is not None and _inside(first.scope, scope)):
        if any(frame.is_parameter(b) for b in bindings) and all(
            frame.is_parameter(b) or b.kind is BindingKind.AUGMENTED for b in bindings
        ):
            return (Owner.SELF if name == frame_self_name(frame) else Owner.PARAMETER), bindings
        return Owner.LOCAL, bindings  # rebound in the frame (e.g. `kwargs = kwargs.copy()`): a local object
    if first.kind in (BindingKind.IMPORT, BindingKind.FUNCTION, BindingKind.CLASS):
        return Owner.DEFINITION, bindings
    return Owner.OUTER, bindings

def _inside(scope: Scope, ancestor: Scope) -> bool:
    current: Scope | None = scope
    while current is not None:
        if current is ancestor:
            return True
        current = current.parent
    return False

def frame_self_name(frame: Frame) -> str | None:
    """The ``self`` parameter of the frame's function, only when that function is defined
    directly in a class body (a module function reached from a method has no ``self``: its
    first parameter, timm's ``cal_rel_pos_type(attn, ...)``, is the caller's object)."""
    scope = frame_scope(frame)
    if scope is None or scope.parent is None or scope.parent.kind is not ScopeKind.CLASS:
        return None
    return frame.self_parameter()

def is_store(model: SemanticModel, node: cst.CSTNode) -> bool:
    """Whether ``node`` is (an element of) an assignment target rather than a read."""
    child = node
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, (cst.Tuple, cst.List, cst.Element, cst.StarredElement)):
            child = ancestor
            continue
        if isinstance(ancestor, cst.AssignTarget):
            return ancestor.target is child
        if isinstance(ancestor, (cst.AnnAssign, cst.For, cst.CompFor)):
            return ancestor.target is child
        return False
    return False

@lru_cache(maxsize=1 << 16)  # asked again and again for the same nodes (CKP202: ~60,000 times a model file)
def node_code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node).strip()

def describe(kind: Owner, base: str) -> str:
    names = {
        Owner.SELF: "state of the module (`self`)",
        Owner.PARAMETER: f"the caller's object `{base}`",
        Owner.OUTER: f"the outer object `{base}`",
    }
    return names.get(kind, f"`{base}`")

def frame_text(frame: Frame, node: cst.CSTNode) -> str:
    text = frame.analysis.module.code_for_node(node).strip()
    return text if len(text) <= 40 else text[:37] + "..."

#: How :func:`_changed` starts the reason for a loop variable read by a closure defined in the
#: loop (the late-binding trap); the rule words its advice for it.
LOOP_VARIABLE = "the variable of the loop that runs the checkpoint"

LOOP_REBINDING = "in the loop that also runs the checkpoint"

def contains_node(model: SemanticModel, outer: cst.CSTNode, node: cst.CSTNode) -> bool:
    return any(a is outer for a in model.ancestors(node))

def is_load(model: SemanticModel, node: cst.Name) -> bool:
    parent = model.parent(node)
    if isinstance(parent, cst.Attribute) and parent.attr is node:
        return False
    if isinstance(parent, cst.Arg) and parent.keyword is node:
        return False
    if isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.ImportAlias, cst.AsName, cst.Param, cst.NameItem)):
        return False
    return True

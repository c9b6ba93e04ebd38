"""What the outer-state rules (CKP201/CKP202) share: the records of a read and a write outside a
region (:class:`OuterRead`, :class:`OuterWrite`), the binding kinds that hold state, the owners
a name may resolve to (:class:`Owner`, :func:`describe`) and the wording of a loop variable's
reason. They are used by :mod:`ckptlint.checkpoint.analyses.ast_outer_state`, :mod:`ckptlint.checkpoint.analyses.ast_outer_reads`,
:mod:`ckptlint.checkpoint.analyses.ast_outer_writes` and the exemptions (:mod:`ckptlint.checkpoint.analyses.ast_write_exemptions`,
:mod:`ckptlint.checkpoint.analyses.ast_end_resets`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Generic, Protocol, TypeVar

from ckptlint.semantic.bindings import BindingKind


class _Framed(Protocol):
    @property
    def analysis(self) -> Any: ...


# The node a write or read is at, the frame it is in and that frame's module (the records
# :mod:`ckptlint.checkpoint.analyses.ast_outer_state` makes are
# ``OuterWrite[ast.AST, AstFrame, AstAnalysis]`` and so on).
N = TypeVar("N")
R = TypeVar("R")
Fr = TypeVar("Fr", bound=_Framed)
M = TypeVar("M")


__all__ = ["LOOP_VARIABLE", "OuterRead", "OuterWrite"]


STATE_KINDS = (BindingKind.ASSIGNMENT, BindingKind.AUGMENTED, BindingKind.WALRUS)


@dataclass(eq=False)
class OuterWrite(Generic[N, Fr, M]):
    """A statement or call in a frame that changes state living outside the region.

    Generic over the node, frame and module types."""

    node: N
    frame: Fr
    what: str

    @property
    def analysis(self) -> M:
        return self.frame.analysis


@dataclass(eq=False)
class OuterRead(Generic[R, Fr, M]):
    """A read, in a frame, of module-level or closure state that is changed elsewhere.

    Generic over the read node, frame and module types."""

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


class Owner(str, Enum):
    """Where a name used in a frame lives, relative to that frame."""

    LOCAL = "local"  # bound in the frame itself: a local object
    PARAMETER = "parameter"  # a parameter: the caller's object
    SELF = "self"  # the method's `self`: state of the module
    DEFINITION = "definition"  # an import, a def or a class of an outer scope
    OUTER = "outer"  # a variable of the module or of an enclosing function
    UNKNOWN = "unknown"  # bound nowhere in the module (a builtin, or undefined)


def describe(kind: Owner, base: str) -> str:
    names = {
        Owner.SELF: "state of the module (`self`)",
        Owner.PARAMETER: f"the caller's object `{base}`",
        Owner.OUTER: f"the outer object `{base}`",
    }
    return names.get(kind, f"`{base}`")


#: How :func:`ckptlint.checkpoint.analyses.ast_outer_reads._changed` starts the reason for a loop variable read by a closure defined in the
#: loop (the late-binding trap); the rule words its advice for it.
LOOP_VARIABLE = "the variable of the loop that runs the checkpoint"


LOOP_REBINDING = "in the loop that also runs the checkpoint"



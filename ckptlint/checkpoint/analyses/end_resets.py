"""Statistics that a region resets to a constant as the last thing it does to them, so that
CKP202 leaves out the writes before the reset.

fairseq's MoE layer (``MOELayer.forward``, ``fairseq/modules/moe/moe_layer.py`` of its
``moe`` branch and its forks) times its all-to-alls with ``self.a2a_cpu_time_ms += ...`` and
``self.a2a_cuda_event_intervals.append(...)``, and ends with ``self.record_all_to_all_stats()``,
whose last statements are ``self.a2a_cpu_time_ms = 0.0`` and
``self.a2a_cuda_event_intervals = []`` ("reset stats"); ``__init__`` sets the same constants.
Every run of the forward, the recomputation included, starts from those constants and leaves
them behind: the recomputation writes what the forward wrote, and nothing outside the region
ever sees the values in between."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic

import libcst as cst

from ckptlint.checkpoint.analyses.outer_state import OuterWrite, frame_scope, frame_self_name
from ckptlint.checkpoint.analyses.write_exemptions import constant_key
from ckptlint.checkpoint.evaluator.class_summary import self_attribute
from ckptlint.checkpoint.evaluator.region import Frame, Region
from ckptlint.semantic.assignments import assignments
from ckptlint.semantic.walk import iter_tree

if TYPE_CHECKING:
    from typing_extensions import TypeVar

    from ckptlint.semantic.model import SemanticModel

    #: The frame a reset is made in: libcst's unless parametrised (``AstFrame`` in
    #: :mod:`ckptlint.checkpoint.analyses.ast_end_resets`).
    Fr = TypeVar("Fr", default=Frame)
else:
    from typing import TypeVar

    Fr = TypeVar("Fr")

__all__ = ["EndResets", "end_resets"]


@dataclass(frozen=True)
class _Reset(Generic[Fr]):
    """``self.<attr> = <constant>`` at statement ``index`` of ``frame``'s body (directly, or
    in the method that statement calls as ``self.m()``)."""

    frame: Fr
    attr: str
    index: int


class EndResets:
    """The resets of a region (:func:`end_resets`) and the question they answer."""

    def __init__(self, region: Region, resets: list[_Reset]) -> None:
        self._functions = {id(frame.function) for frame in region.frames}
        self._resets = resets

    def covers(self, write: OuterWrite) -> bool:
        """Whether every ``self`` attribute ``write`` changes is reset to a constant later in
        the same run of the region (see :func:`end_resets`)."""
        if not self._resets:
            return False
        frame = write.frame
        self_name = frame_self_name(frame)
        if self_name is None:
            return False
        scope = frame_scope(frame)
        attrs = _written_attributes(write.node, self_name, scope.globals | scope.nonlocals if scope is not None else set())
        if not attrs:
            return False
        return all(self._covered(frame, attr) and self._covered_at(frame, write.node, attr) for attr in attrs)

    def _covered(self, frame: Frame, attr: str) -> bool:
        """Whether the class gives ``attr``, outside the region, only the constant the region
        resets it to (``__init__``'s ``self.a2a_cpu_time_ms = 0.0``): the first forward then
        starts from it too."""
        info = frame.ctx.self_class
        if info is None:
            return False
        outside = [v for v in info.attributes.get(attr, []) if v.method is None or id(v.method) not in self._functions]
        model = info.analysis.model
        constants = {constant_key(v.value, model) for v in outside}
        resets = {_reset_value(r) for r in self._resets if r.attr == attr and r.frame.ctx.self_class is info}
        return len(outside) > 0 and len(constants) == 1 and constants == resets and None not in constants

    def _covered_at(self, frame: Frame, node: cst.CSTNode, attr: str) -> bool:
        info = frame.ctx.self_class
        for reset in self._resets:
            if reset.attr != attr or reset.frame.ctx.self_class is not info:
                continue
            index = _index_in(reset.frame, frame, node)
            if index is not None and index < reset.index:
                return True
        return False


def end_resets(region: Region) -> EndResets:
    """The attributes that a frame of the region resets to a constant and touches no more:
    ``self.X = c`` (a literal, or an empty ``[]``, ``{}``, ``()``, ``list()``) as a statement of
    the frame's own body, or of the body of a method it calls as a statement ``self.m()``,
    reached by every run of that body (no ``return`` in a statement before it); no later
    statement of that body (or method) reads or writes ``self.X`` again, and no later
    statement of the frame's body calls a method of ``self``. A write of ``self.X`` is then
    left out when it runs before the reset in the same frame, or in a frame the reset's
    frame called before it (:meth:`EndResets.covers`), and the class gives ``self.X``
    elsewhere only the same constant."""
    resets: list[_Reset] = []
    for frame in region.frames:
        self_name = frame_self_name(frame)
        info = frame.ctx.self_class
        body = _body(frame.function)
        model = frame.analysis.model
        if self_name is None or info is None or body is None:
            continue
        for index, statement in enumerate(body):
            found = _resets_in(statement, self_name, model)
            method = _self_method_call(statement, self_name)
            if method is not None and method in info.methods:
                inner = _body(info.methods[method])
                inner_self = _first_parameter(info.methods[method])
                if inner is not None and inner_self is not None:
                    found |= _final_resets(inner, inner_self, model)
            later = body[index + 1 :]
            for attr in sorted(found):
                if not any(_touches(s, self_name, attr, model) or _calls_self(s, self_name) for s in later):
                    resets.append(_Reset(frame, attr, index))
            if _returns(statement):
                break
    return EndResets(region, resets)


def _final_resets(body: list[cst.BaseStatement], self_name: str, model: SemanticModel) -> set[str]:
    """Attributes reset to a constant by a statement of ``body`` that every run reaches and
    that no later statement touches."""
    found: set[str] = set()
    for index, statement in enumerate(body):
        for attr in _resets_in(statement, self_name, model):
            if not any(_touches(s, self_name, attr, model) or _calls_self(s, self_name) for s in body[index + 1 :]):
                found.add(attr)
        if _returns(statement):
            break
    return found


def _resets_in(statement: cst.BaseStatement, self_name: str, model: SemanticModel) -> set[str]:
    if not isinstance(statement, cst.SimpleStatementLine):
        return set()
    found: set[str] = set()
    for small in statement.body:
        if not isinstance(small, cst.Assign) or constant_key(small.value, model) is None:
            continue
        for assigned in assignments(small):
            attr = self_attribute(assigned.target, self_name)
            if attr is not None:
                found.add(attr)
    return found


def _reset_value(reset: _Reset) -> object | None:
    """The constant of the reset (the last one of its statement or method, as found)."""
    frame = reset.frame
    body = _body(frame.function) or []
    statement = body[reset.index]
    self_name = frame_self_name(frame) or ""
    method = _self_method_call(statement, self_name)
    info = frame.ctx.self_class
    if method is not None and info is not None and method in info.methods:
        function = info.methods[method]
        self_name = _first_parameter(function) or ""
        statements = _body(function) or []
    else:
        statements = [statement]
    value: object | None = None
    for line in statements:
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        for small in line.body:
            if isinstance(small, cst.Assign) and any(self_attribute(a.target, self_name) == reset.attr for a in assignments(small)):
                value = constant_key(small.value, frame.analysis.model)
    return value


def _index_in(owner: Frame, frame: Frame, node: cst.CSTNode) -> int | None:
    """The index of the statement of ``owner``'s body that runs ``node`` of ``frame``: the
    statement holding it when ``frame`` is ``owner``, else the one holding the call through
    which ``owner`` first reached ``frame`` (``None`` when ``owner`` did not reach it)."""
    current: Frame | None = frame
    inner: cst.CSTNode | None = node
    while current is not None and current is not owner:
        inner = current.invocation
        current = current.caller
    if current is None or inner is None:
        return None
    body = _body(owner.function) or []
    model = owner.analysis.model
    for ancestor in [inner, *model.ancestors(inner)]:
        for index, statement in enumerate(body):
            if ancestor is statement:
                return index
    return None


def _body(function: cst.FunctionDef | cst.Lambda) -> list[cst.BaseStatement] | None:
    if isinstance(function, cst.FunctionDef) and isinstance(function.body, cst.IndentedBlock):
        return list(function.body.body)
    return None


def _first_parameter(function: cst.FunctionDef) -> str | None:
    params = function.params.params or function.params.posonly_params
    return params[0].name.value if params else None


def _self_method_call(statement: cst.BaseStatement, self_name: str) -> str | None:
    """``m`` when ``statement`` is ``self.m()`` alone."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if not isinstance(small, cst.Expr) or not isinstance(small.value, cst.Call):
        return None
    return self_attribute(small.value.func, self_name)


def _touches(statement: cst.CSTNode, self_name: str, attr: str, model: SemanticModel) -> bool:
    """Whether ``statement`` mentions ``self.attr`` other than resetting it to a constant."""
    if isinstance(statement, cst.SimpleStatementLine) and attr in _resets_in(statement, self_name, model):
        others = [n for n in iter_tree(statement) if isinstance(n, cst.Attribute) and self_attribute(n, self_name) == attr]
        targets = [a.target for s in statement.body if isinstance(s, cst.Assign) for a in assignments(s)]
        return any(all(n is not t for t in targets) for n in others)
    return any(isinstance(n, cst.Attribute) and self_attribute(n, self_name) == attr for n in iter_tree(statement))


def _calls_self(statement: cst.CSTNode, self_name: str) -> bool:
    """Whether ``statement`` calls a method or a layer of ``self`` (which may write again)."""
    for node in iter_tree(statement):
        if isinstance(node, cst.Call):
            func = node.func
            while isinstance(func, cst.Attribute):
                func = func.value
            if isinstance(func, cst.Name) and func.value == self_name:
                return True
    return False


def _returns(statement: cst.CSTNode) -> bool:
    """Whether ``statement`` may return (not counting nested functions)."""
    for node in iter_tree(statement):
        if isinstance(node, cst.Return):
            return True
    return False


def _written_attributes(node: cst.CSTNode, self_name: str, outer_names: set[str]) -> set[str] | None:
    """The ``self`` attributes the write ``node`` changes (``self.X += v``, ``self.X[k] = v``,
    ``self.X.append(v)``), or ``None`` when it changes something else too."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        attr = _root_attribute(node.func.value, self_name)
        return None if attr is None else {attr}
    if isinstance(node, cst.AugAssign):
        attr = _root_attribute(node.target, self_name)
        return None if attr is None else {attr}
    if isinstance(node, (cst.Assign, cst.AnnAssign)):
        found: set[str] = set()
        for assigned in assignments(node):
            target = assigned.target
            if isinstance(target, cst.Name) and target.value not in outer_names:
                continue  # a local of the frame
            attr = _root_attribute(target, self_name)
            if attr is None:
                return None
            found.add(attr)
        return found
    return None


def _root_attribute(expr: cst.BaseExpression, self_name: str) -> str | None:
    """``X`` for ``self.X``, ``self.X[k]``, ``self.X[k][j]``."""
    while isinstance(expr, cst.Subscript):
        expr = expr.value
    return self_attribute(expr, self_name)

"""Statistics that a region resets to a constant as the last thing it does to them (fairseq's
MoE layer timing its all-to-alls and ending with ``self.record_all_to_all_stats()``;
:mod:`ckptlint.checkpoint.analyses.end_resets` tells the case and holds the ``_Reset`` record,
here over :class:`~ckptlint.checkpoint.evaluator.ast_region.AstFrame`).

A body of a ``def`` is read as its statement lines
(:func:`ckptlint.semantic.ast_lines.statement_lines`: simple statements joined by ``;`` make
one), each a list of ``ast`` statements, and a reset's ``index`` counts them; a ``def`` whose
body follows its colon has none."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ckptlint.checkpoint.analyses.ast_outer_state import frame_scope, frame_self_name
from ckptlint.checkpoint.analyses.ast_write_exemptions import constant_key
from ckptlint.checkpoint.analyses.end_resets import _Reset
from ckptlint.checkpoint.evaluator.ast_class_summary import self_attribute
from ckptlint.semantic.ast_assignments import assignments
from ckptlint.semantic.ast_lines import body_on_header, statement_lines

if TYPE_CHECKING:
    from ckptlint.checkpoint.analyses.ast_outer_state import AstOuterWrite
    from ckptlint.checkpoint.evaluator.ast_region import AstFrame, AstRegion
    from ckptlint.semantic.ast_model import AstModel

    AstReset = _Reset[AstFrame]

__all__ = ["EndResets", "end_resets"]

#: One statement line of a body: a compound statement alone, or the simple statements of one logical line.
Line = list[ast.stmt]
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class EndResets:
    """The resets of a region (:func:`end_resets`) and the question they answer."""

    def __init__(self, region: AstRegion, resets: list[AstReset]) -> None:
        self._functions = {id(frame.function) for frame in region.frames}
        self._resets = resets

    def covers(self, write: AstOuterWrite) -> bool:
        """Whether every ``self`` attribute ``write`` changes is reset to a constant later in
        the same run of the region."""
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

    def _covered(self, frame: AstFrame, attr: str) -> bool:
        info = frame.ctx.self_class
        if info is None:
            return False
        outside = [v for v in info.attributes.get(attr, []) if v.method is None or id(v.method) not in self._functions]
        model = info.analysis.model
        constants = {constant_key(v.value, model) for v in outside}
        resets = {_reset_value(r) for r in self._resets if r.attr == attr and r.frame.ctx.self_class is info}
        return len(outside) > 0 and len(constants) == 1 and constants == resets and None not in constants

    def _covered_at(self, frame: AstFrame, node: ast.AST, attr: str) -> bool:
        info = frame.ctx.self_class
        for reset in self._resets:
            if reset.attr != attr or reset.frame.ctx.self_class is not info:
                continue
            index = _index_in(reset.frame, frame, node)
            if index is not None and index < reset.index:
                return True
        return False


def end_resets(region: AstRegion) -> EndResets:
    """The attributes that a frame of the region resets to a constant and touches no more:
    ``self.X = c`` (a literal or an empty container) as a statement of the frame's body, or of a
    method it calls as ``self.m()``, reached by every run of that body and followed by no read
    or write of ``self.X`` and no call of a method of ``self``."""
    resets: list[AstReset] = []
    for frame in region.frames:
        self_name = frame_self_name(frame)
        info = frame.ctx.self_class
        model = frame.analysis.model
        body = _body(model, frame.function)
        if self_name is None or info is None or body is None:
            continue
        for index, statement in enumerate(body):
            found = _resets_in(statement, self_name, model)
            method = _self_method_call(statement, self_name)
            if method is not None and method in info.methods:
                inner = _body(model, info.methods[method])
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


def _final_resets(body: list[Line], self_name: str, model: AstModel) -> set[str]:
    found: set[str] = set()
    for index, statement in enumerate(body):
        for attr in _resets_in(statement, self_name, model):
            if not any(_touches(s, self_name, attr, model) or _calls_self(s, self_name) for s in body[index + 1 :]):
                found.add(attr)
        if _returns(statement):
            break
    return found


def _simple(line: Line) -> bool:
    """Whether ``line`` holds simple statements: a compound statement (one with a ``body``, or
    a ``match``) is a line alone."""
    return not (hasattr(line[0], "body") or isinstance(line[0], ast.Match))


def _resets_in(statement: Line, self_name: str, model: AstModel) -> set[str]:
    if not _simple(statement):
        return set()
    found: set[str] = set()
    for small in statement:
        if not isinstance(small, ast.Assign) or constant_key(small.value, model) is None:
            continue
        for assigned in assignments(small):
            attr = self_attribute(assigned.target, self_name)
            if attr is not None:
                found.add(attr)
    return found


def _reset_value(reset: AstReset) -> object | None:
    """The constant of the reset (the last one of its statement or method, as found)."""
    frame = reset.frame
    model = frame.analysis.model
    body = _body(model, frame.function) or []
    statement = body[reset.index]
    self_name = frame_self_name(frame) or ""
    method = _self_method_call(statement, self_name)
    info = frame.ctx.self_class
    if method is not None and info is not None and method in info.methods:
        function = info.methods[method]
        self_name = _first_parameter(function) or ""
        statements = _body(model, function) or []
    else:
        statements = [statement]
    value: object | None = None
    for line in statements:
        if not _simple(line):
            continue
        for small in line:
            if isinstance(small, ast.Assign) and any(self_attribute(a.target, self_name) == reset.attr for a in assignments(small)):
                value = constant_key(small.value, model)
    return value


def _index_in(owner: AstFrame, frame: AstFrame, node: ast.AST) -> int | None:
    """The index of the line of ``owner``'s body that runs ``node`` of ``frame``, or ``None``."""
    current: AstFrame | None = frame
    inner: ast.AST | None = node
    while current is not None and current is not owner:
        inner = current.invocation
        current = current.caller
    if current is None or inner is None:
        return None
    model = owner.analysis.model
    body = _body(model, owner.function) or []
    for ancestor in [inner, *model.ancestors(inner)]:
        for index, statement in enumerate(body):
            if any(ancestor is s for s in statement):
                return index
    return None


def _body(model: AstModel, function: ast.AST) -> list[Line] | None:
    """The statement lines of a ``def``'s body; ``None`` for a lambda or a body on the
    ``def`` line."""
    if isinstance(function, _FUNCTIONS) and not body_on_header(model, function.body):
        return statement_lines(model, function.body)
    return None


def _first_parameter(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The first plain (positional-or-keyword) parameter, else the first positional-only one:
    the first parameter after ``/`` when there is one."""
    params = function.args.args or function.args.posonlyargs
    return params[0].arg if params else None


def _self_method_call(statement: Line, self_name: str) -> str | None:
    """``m`` when ``statement`` is ``self.m()`` alone."""
    if len(statement) != 1:
        return None
    small = statement[0]
    if not isinstance(small, ast.Expr) or not isinstance(small.value, ast.Call):
        return None
    return self_attribute(small.value.func, self_name)


def _walk(statement: Line) -> list[ast.AST]:
    return [node for small in statement for node in ast.walk(small)]


def _touches(statement: Line, self_name: str, attr: str, model: AstModel) -> bool:
    """Whether ``statement`` mentions ``self.attr`` other than resetting it to a constant."""
    others = [n for n in _walk(statement) if isinstance(n, ast.Attribute) and self_attribute(n, self_name) == attr]
    if _simple(statement) and attr in _resets_in(statement, self_name, model):
        targets = [a.target for s in statement if isinstance(s, ast.Assign) for a in assignments(s)]
        return any(all(n is not t for t in targets) for n in others)
    return bool(others)


def _calls_self(statement: Line, self_name: str) -> bool:
    """Whether ``statement`` calls a method or a layer of ``self`` (which may write again)."""
    for node in _walk(statement):
        if isinstance(node, ast.Call):
            func = node.func
            while isinstance(func, ast.Attribute):
                func = func.value
            if isinstance(func, ast.Name) and func.id == self_name:
                return True
    return False


def _returns(statement: Line) -> bool:
    """Whether ``statement`` holds a ``return``, nested functions' included."""
    return any(isinstance(node, ast.Return) for node in _walk(statement))


def _written_attributes(node: ast.AST, self_name: str, outer_names: set[str]) -> set[str] | None:
    """The ``self`` attributes the write ``node`` changes, or ``None`` when it changes
    something else too."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        attr = _root_attribute(node.func.value, self_name)
        return None if attr is None else {attr}
    if isinstance(node, ast.AugAssign):
        attr = _root_attribute(node.target, self_name)
        return None if attr is None else {attr}
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        found: set[str] = set()
        for assigned in assignments(node):
            target = assigned.target
            if isinstance(target, ast.Name) and target.id not in outer_names:
                continue
            attr = _root_attribute(target, self_name)
            if attr is None:
                return None
            found.add(attr)
        return found
    return None


def _root_attribute(expr: ast.expr, self_name: str) -> str | None:
    """``X`` for ``self.X``, ``self.X[k]``, ``self.X[k][j]``."""
    while isinstance(expr, ast.Subscript):
        expr = expr.value
    return self_attribute(expr, self_name)


"""Writes of outer state that a recomputation does not change (balanced push/pop,
phase-guarded code, RNG bookkeeping, idempotent conversions, one-time fills, memo tables,
sizes grown until they fit, shape bookkeeping; the tables are in
:mod:`ckptlint.checkpoint.analyses.write_exemptions`).

:func:`memo_fill` and :func:`assigns_in` take the
:class:`~ckptlint.semantic.ast_analysis.AstAnalysis` (code text, :func:`node_code`),
:func:`idempotent_conversion` takes it first, and :func:`exit_guard_body` takes the model
first (which statements share a logical line, :mod:`ckptlint.semantic.ast_lines`). A body is
a list of statements (``If.body``, a ``def``'s body); one on its header's line is no block of
lines (:func:`assigns_in` finds nothing in it, its last line is its last statement). The
names ``ast`` keeps as strings (an attribute's, a keyword's, a lambda parameter's) count
where every name below a node is compared (:func:`_spelled`)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ckptlint.checkpoint.analyses.ast_outer_state import contains_node, frame_self_name, is_store, node_code
from ckptlint.checkpoint.analyses.write_exemptions import (  # the tables both trees read
    _EMPTY_CONSTRUCTORS,
    _GENERATOR_SETTERS,
    _IDEMPOTENT_CONVERSIONS,
    _POPS,
    _PUSHES,
    _RNG_STATE_SETTERS,
    _SHAPE_ATTRIBUTES,
    _SHAPE_CALLS,
)
from ckptlint.checkpoint.evaluator.ast_class_summary import self_attribute
from ckptlint.checkpoint.sites.ast_options import literal_value
from ckptlint.checkpoint.sites.options import NOT_LITERAL
from ckptlint.facts.log_output import LOG_FUNCTIONS, LOGGER_METHODS, LOGGER_NAME_PART
from ckptlint.facts.phases import GRAD_MODE_PREDICATES, RECOMPUTE_PHASE_PREDICATES
from ckptlint.semantic.ast_lines import body_on_header, statement_lines
from ckptlint.semantic.ast_subscripts import one_index
from ckptlint.semantic.bindings import BindingKind

if TYPE_CHECKING:
    from ckptlint.checkpoint.evaluator.ast_region import AstFrame, AstRegion
    from ckptlint.semantic.ast_analysis import AstAnalysis
    from ckptlint.semantic.ast_model import AstModel

__all__ = [
    "after_last_saved", "assigns_in", "balanced_calls", "constant_key", "constant_write", "diagnostic_counter",
    "exit_guard", "exit_guard_body", "idempotent_conversion", "memo_fill", "phase_guarded", "saved_and_restored",
    "sets_rng_state", "shape_bookkeeping", "written_once",
]  # fmt: skip

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_NAMED_CONSTANTS = (True, False, None)


def balanced_calls(region: AstRegion) -> set[int]:
    """Ids of the push and pop calls on one outer container that the region both makes
    (Megatron's NVTX message stack): each run leaves the container as it found it."""
    calls: dict[tuple, dict[str, list[ast.Call]]] = {}
    for frame in region.frames:
        for node in frame.nodes():
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            method = node.func.attr
            if method not in _PUSHES and method not in _POPS:
                continue
            if method in ("pop", "popleft") and (node.args or node.keywords):
                continue  # pop(i)/pop(key): not the inverse of the last push
            key = _container_key(frame, node.func.value)
            if key is not None:
                calls.setdefault(key, {}).setdefault(method, []).append(node)
    out: set[int] = set()
    for methods in calls.values():
        for push, pop in _PUSHES.items():
            pops = methods.get(pop, []) + (methods.get("remove", []) if push == "add" else [])
            if methods.get(push) and pops:
                out |= {id(n) for n in methods[push] + pops}
    return out


def _container_key(frame: AstFrame, owner: ast.expr) -> tuple | None:
    if isinstance(owner, ast.Name):
        model = frame.analysis.model
        bindings = model.lookup(owner.id, model.scope_of(owner))
        if not bindings:
            return None
        return (id(bindings[0].scope), owner.id)
    if isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name) and owner.value.id == frame_self_name(frame):
        info = frame.ctx.self_class
        return None if info is None else (id(info), "self", owner.attr)
    return None


def phase_guarded(frame: AstFrame, node: ast.AST, *, reentrant: bool = False) -> bool:
    """Whether ``node`` sits in a branch of an ``if`` (statement or expression) of its frame
    whose test calls a recompute-phase predicate (with ``reentrant``, a grad-mode one too)."""
    predicates = RECOMPUTE_PHASE_PREDICATES | GRAD_MODE_PREDICATES if reentrant else RECOMPUTE_PHASE_PREDICATES
    model = frame.analysis.model
    below = node
    for ancestor in model.ancestors(node):
        if ancestor is frame.function:
            return False
        if isinstance(ancestor, (ast.If, ast.IfExp)) and below is not ancestor.test:
            for inner in ast.walk(ancestor.test):
                if isinstance(inner, ast.Call) and model.qualified_names(inner.func) & predicates:
                    return True
        below = ancestor
    return False


def diagnostic_counter(frame: AstFrame, node: ast.AugAssign) -> bool:
    """Whether ``node`` bumps ``self.attr`` that the class of the frame reads only to decide or
    format diagnostic output."""
    info = frame.ctx.self_class
    target = node.target
    self_name = frame_self_name(frame)
    if info is None or self_name is None or not isinstance(target, ast.Attribute) or self_attribute(target, self_name) is None:
        return False
    model = info.analysis.model
    reads = 0
    for inner in ast.walk(info.node):
        if not (isinstance(inner, ast.Attribute) and inner.attr == target.attr and isinstance(inner.value, ast.Name)):
            continue
        if inner is target or is_store(model, inner) or _aug_target(model, inner):
            continue
        if not _logs_only(model, inner):
            return False
        reads += 1
    return reads > 0


def _aug_target(model: AstModel, node: ast.AST) -> bool:
    parent = model.parent(node)
    return isinstance(parent, ast.AugAssign) and parent.target is node


def _logs_only(model: AstModel, read: ast.AST) -> bool:
    below = read
    for ancestor in model.ancestors(read):
        if isinstance(ancestor, ast.Call) and _log_call(model, ancestor):
            return True
        if isinstance(ancestor, ast.If) and below is ancestor.test:
            return _log_branches(model, ancestor)
        if isinstance(ancestor, ast.stmt) and not isinstance(ancestor, ast.If):
            return False
        below = ancestor
    return False


def _log_branches(model: AstModel, node: ast.If) -> bool:
    """Whether every branch of ``node`` only logs (an ``elif`` and an ``else:`` holding an
    ``if`` alone answer alike)."""
    return _log_suite(model, node.body) and (not node.orelse or _log_suite(model, node.orelse))


def _log_suite(model: AstModel, body: list[ast.stmt]) -> bool:
    for statement in body:
        if isinstance(statement, ast.If) and _log_branches(model, statement):
            continue
        if isinstance(statement, ast.Pass):
            continue
        if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) and _log_call(model, statement.value)):
            return False
    return True


def _log_call(model: AstModel, call: ast.Call) -> bool:
    if model.qualified_names(call.func) & LOG_FUNCTIONS:
        return True
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in LOGGER_METHODS):
        return False
    receiver = func.value
    last = receiver.attr if isinstance(receiver, ast.Attribute) else receiver.id if isinstance(receiver, ast.Name) else ""
    return LOGGER_NAME_PART in last.lower()


def sets_rng_state(frame: AstFrame) -> bool:
    """Whether the frame sets the device or CPU RNG state, itself or through a function of
    its module (an RNG tracker switching streams: ColossalAI's ``SeedManager.set_mode``)."""
    model = frame.analysis.model
    return any(
        isinstance(node, ast.Call) and bool(model.qualified_names(node.func) & _RNG_STATE_SETTERS or _local_setter(node, model))
        for node in frame.nodes()
    )


def _local_setter(call: ast.Call, model: AstModel) -> bool:
    func = call.func
    if not isinstance(func, ast.Name) or func not in model.parents:
        return False
    for binding in model.bindings_of(func):
        if binding.kind is not BindingKind.FUNCTION or not isinstance(binding.node, _FUNCTIONS):
            continue
        for statement in binding.node.body:
            for node in ast.walk(statement):
                if not isinstance(node, ast.Call):
                    continue
                if model.qualified_names(node.func) & _RNG_STATE_SETTERS:
                    return True
                if isinstance(node.func, ast.Attribute) and node.func.attr in _GENERATOR_SETTERS:
                    return True
    return False


def constant_write(frame: AstFrame, node: ast.AST) -> bool:
    """Whether ``node`` assigns a constant: a literal or an empty container."""
    value = getattr(node, "value", None)
    if not isinstance(node, (ast.Assign, ast.AnnAssign)) or value is None:
        return False
    return constant_key(value, frame.analysis.model) is not None


def constant_key(value: ast.expr, model: AstModel) -> object | None:
    """What constant ``value`` denotes, as a key that compares equal for equal constants
    (literals by their value, empty containers by their kind: ``List``, ``Dict``, ...), or ``None``."""
    if isinstance(value, (ast.List, ast.Set, ast.Tuple)) and not value.elts:
        return ("empty", type(value).__name__)
    if isinstance(value, ast.Dict) and not value.keys:
        return ("empty", "Dict")
    func = value.func if isinstance(value, ast.Call) and not value.args and not value.keywords else None
    if isinstance(func, ast.Name) and func.id in _EMPTY_CONSTRUCTORS:
        return ("empty", func.id.capitalize())
    literal = literal_value(value, model)
    return None if literal is NOT_LITERAL else ("literal", literal)


def idempotent_conversion(analysis: AstAnalysis, node: ast.AST, text: str) -> bool:
    """Whether ``node`` is ``T = T.to(...)`` (``text`` is ``T``'s code), or a conditional
    expression of such conversions, ``T`` and ``None`` where the test allows it."""
    value = getattr(node, "value", None)
    if not isinstance(node, (ast.Assign, ast.AnnAssign)) or value is None:
        return False
    return _idempotent_value(analysis, value, text, none_allowed=False)


def _is_none(expr: ast.AST) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is None


def _idempotent_value(analysis: AstAnalysis, expr: ast.expr, text: str, *, none_allowed: bool) -> bool:
    if isinstance(expr, ast.IfExp):
        checked = _none_test(analysis, expr.test, text)
        return _idempotent_value(analysis, expr.body, text, none_allowed=checked is True) and _idempotent_value(
            analysis, expr.orelse, text, none_allowed=checked is False
        )
    if _is_none(expr):
        return none_allowed
    if not isinstance(expr, ast.Call):
        return _named(analysis, expr) == text
    current: ast.expr = expr
    while isinstance(current, ast.Call):
        func = current.func
        if not isinstance(func, ast.Attribute) or func.attr not in _IDEMPOTENT_CONVERSIONS:
            return False
        for argument in [*current.args, *(k.value for k in current.keywords)]:
            if text in _spelled(analysis, argument):
                return False
        current = func.value
    return node_code(analysis, current) == text


def _named(analysis: AstAnalysis, expr: ast.AST) -> str | None:
    """The code of ``expr`` when it is a ``Name``, an ``Attribute`` or ``True``, ``False`` or
    ``None``, else ``None``."""
    if isinstance(expr, (ast.Name, ast.Attribute)) or _is_named_constant(expr):
        return node_code(analysis, expr)
    return None


def _spelled(analysis: AstAnalysis, root: ast.AST) -> set[str]:
    """The code of every name and attribute below ``root`` (itself included), in walk order:
    an attribute's name, a keyword's and a lambda parameter's count as names."""
    found: set[str] = set()
    for node in ast.walk(root):
        code = _named(analysis, node)
        if code is not None:
            found.add(code)
        if isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.keyword) and node.arg is not None:
            found.add(node.arg)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
    return found


def _none_test(analysis: AstAnalysis, test: ast.expr, text: str) -> bool | None:
    """``True`` for ``T is None``, ``False`` for ``T is not None``, else ``None``."""
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return None
    if not _is_none(test.comparators[0]) or node_code(analysis, test.left) != text:
        return None
    if isinstance(test.ops[0], ast.Is):
        return True
    if isinstance(test.ops[0], ast.IsNot):
        return False
    return None


def saved_and_restored(frame: AstFrame, text: str) -> bool:
    """Whether the frame saves the target (code ``text``) in a local and assigns it back."""
    analysis = frame.analysis
    saved: set[str] = set()
    for node in frame.nodes():
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0]
        if isinstance(target, ast.Name) and node_code(analysis, node.value) == text:
            saved.add(target.id)
        elif isinstance(node.value, ast.Name) and node.value.id in saved and node_code(analysis, target) == text:
            return True
    return False


def _last_line(model: AstModel, body: list[ast.stmt]) -> list[ast.stmt]:
    """The last line of a block: the statements of its last logical line, or the last
    statement alone when the block follows its colon."""
    if body_on_header(model, body):
        return body[-1:]
    return statement_lines(model, body)[-1]


def exit_guard(model: AstModel, node: ast.AST) -> ast.If | None:
    """The ``if`` whose test is where ``node`` is read, when its body ends by leaving
    (``return``, ``raise``, ``continue`` on its last line), else ``None``."""
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, ast.If):
            if not contains_node(model, ancestor.test, node) and ancestor.test is not node:
                return None
            if not ancestor.body:
                return None
            last = _last_line(model, ancestor.body)
            return ancestor if any(isinstance(s, (ast.Return, ast.Raise, ast.Continue)) for s in last) else None
        if isinstance(ancestor, ast.stmt):
            return None
    return None


def written_once(frame: AstFrame, node: ast.AST, target: ast.expr) -> bool:
    """Lazy initialisation and memoisation (``if self.pad is None: self.pad = ...``, ``if key
    not in self.cache: self.cache[key] = ...``): the recomputation does not write again."""
    if _after_init_guard(frame, node, target):
        return True
    analysis = frame.analysis
    slot = _slot(analysis, target)
    if slot is None:
        return False
    container, key = slot
    if container is None and _grown_until_it_fits(analysis, node, key):
        return True
    return _memo_guarded(analysis, node, container, key, frame.function)


def memo_fill(analysis: AstAnalysis, node: ast.AST) -> bool:
    """Whether the assignment ``node`` fills a memo table or a lazily initialised value under
    a test that turns false once it ran (``if key not in cache: cache[key] = v``), every
    target of it: the recomputation reads what the forward's fill wrote."""
    if not isinstance(node, ast.Assign):
        return False
    model = analysis.model
    function = next((a for a in model.ancestors(node) if isinstance(a, (*_FUNCTIONS, ast.Lambda))), None)
    if function is None:
        return False
    for target in node.targets:
        slot = _slot(analysis, target)
        if slot is None or not _memo_guarded(analysis, node, slot[0], slot[1], function):
            return False
    return True


def _slot(analysis: AstAnalysis, target: ast.expr) -> tuple[str | None, str] | None:
    if isinstance(target, ast.Subscript):
        index = one_index(analysis.model, target)
        if index is None:
            return None
        return node_code(analysis, target.value), node_code(analysis, index)
    if _named(analysis, target) is not None:
        return None, node_code(analysis, target)
    return None


def _holds(body: list[ast.stmt], node: ast.AST) -> bool:
    return any(statement is node for statement in body)


def _memo_guarded(analysis: AstAnalysis, node: ast.AST, container: str | None, key: str, function: ast.AST) -> bool:
    child: ast.AST = node
    for ancestor in analysis.model.ancestors(node):
        if ancestor is function:
            return False
        came_from, child = child, ancestor
        if not isinstance(ancestor, ast.If):
            continue
        if _holds(ancestor.body, came_from) and _memo_test(analysis, ancestor.test, ancestor.body, container, key):
            return True
        if _holds(ancestor.orelse, came_from) and _filled_test(analysis, ancestor.test, ancestor.orelse, container, key):
            return True
    return False


def _grown_until_it_fits(analysis: AstAnalysis, node: ast.AST, key: str) -> bool:
    """Whether ``node`` is a statement of the body of a ``while`` loop whose test reads
    ``key`` and whose body only assigns attributes (a size grown until it fits)."""
    model = analysis.model
    loop = model.parent(node)
    if not isinstance(loop, ast.While) or not _holds(loop.body, node) or body_on_header(model, loop.body):
        return False
    if key not in _spelled(analysis, loop.test):
        return False
    for statement in loop.body:
        if isinstance(statement, ast.Pass):
            continue
        if not isinstance(statement, (ast.Assign, ast.AugAssign)):
            return False
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        if not all(isinstance(t, ast.Attribute) for t in targets):
            return False
    return True


def _filled_test(analysis: AstAnalysis, test: ast.expr, branch: list[ast.stmt], container: str | None, key: str) -> bool:
    """Whether ``test`` turns true once the ``else`` branch ``branch`` has run (``and``/``or``
    of several operands read as nested pairs)."""
    if isinstance(test, ast.BoolOp):
        filled = [_filled_test(analysis, value, branch, container, key) for value in test.values]
        return all(filled) if isinstance(test.op, ast.And) else any(filled)
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return False
    operator, right = test.ops[0], test.comparators[0]
    code = node_code
    if container is None and isinstance(operator, ast.IsNot) and code(analysis, right) == "None":
        guard = code(analysis, test.left)
        return guard == key or assigns_in(analysis, branch, guard)
    return container is not None and isinstance(operator, ast.In) and (code(analysis, test.left), code(analysis, right)) == (key, container)


def _memo_test(analysis: AstAnalysis, test: ast.expr, body: list[ast.stmt], container: str | None, key: str) -> bool:
    """Whether ``test`` turns false once ``body`` has run, for the same inputs."""
    code = node_code
    if isinstance(test, ast.BoolOp):
        falls = [_memo_test(analysis, value, body, container, key) for value in test.values]
        return all(falls) if isinstance(test.op, ast.Or) else any(falls)
    if container is None and isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        guard = code(analysis, test.operand)
        return guard == key or assigns_in(analysis, body, guard)
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return False
    operator, right = test.ops[0], test.comparators[0]
    if isinstance(operator, ast.Is) and code(analysis, right) == "None":
        guard = code(analysis, test.left)
        if (container is None and guard == key) or assigns_in(analysis, body, guard):
            return True
    if container is not None and isinstance(operator, ast.NotIn) and (code(analysis, test.left), code(analysis, right)) == (key, container):
        return True
    if isinstance(operator, (ast.Gt, ast.Lt, ast.NotEq)):
        if any(assigns_in(analysis, body, side) for side in (code(analysis, test.left), code(analysis, right))):
            return True
    if isinstance(operator, (ast.NotEq, ast.IsNot)):
        return any(_attribute_of_assigned(analysis, body, side) for side in (test.left, right))
    return False


def _attribute_of_assigned(analysis: AstAnalysis, body: list[ast.stmt], side: ast.expr) -> bool:
    if not isinstance(side, ast.Attribute):
        return False
    base = side.value
    while True:
        if assigns_in(analysis, body, node_code(analysis, base)):
            return True
        if not isinstance(base, ast.Attribute):
            return False
        base = base.value


def _after_init_guard(frame: AstFrame, node: ast.AST, target: ast.expr | None = None) -> bool:
    """Whether ``node`` runs after ``if INITIALIZED: return ...`` at the top of the function
    and the function itself sets ``INITIALIZED`` later (or the guard tests the target)."""
    function = frame.function
    analysis = frame.analysis
    model = analysis.model
    if not isinstance(function, _FUNCTIONS) or body_on_header(model, function.body):
        return False
    statements = function.body
    top = next((s for s in statements if s is node or contains_node(model, s, node)), None)
    if top is None:
        return False
    guards: list[str] = []
    tested: set[str] = set()
    for statement in statements[: statements.index(top)]:
        if isinstance(statement, ast.If) and not statement.orelse and exit_guard_body(model, statement):
            guard = _named(analysis, statement.test)
            if guard is not None:
                guards.append(guard)
            tested |= _spelled(analysis, statement.test)
    if target is not None:
        written = target.value if isinstance(target, ast.Subscript) else target
        code = _named(analysis, written)
        if code is not None and code in tested:
            return True
    if not guards:
        return False
    return any(assigns_in(analysis, statements, guard) for guard in guards)


def exit_guard_body(model: AstModel, statement: ast.If) -> bool:
    """Whether the body of ``statement`` is one line that returns or raises (one statement
    when it follows the colon)."""
    body = statement.body
    lines = [[s] for s in body] if body_on_header(model, body) else statement_lines(model, body)
    return len(lines) == 1 and any(isinstance(s, (ast.Return, ast.Raise)) for s in lines[-1])


def assigns_in(analysis: AstAnalysis, body: list[ast.stmt] | ast.AST, target: str) -> bool:
    """Whether the block ``body`` assigns ``target`` (code text, ``self.pad``) directly in its
    statements (``False`` for a block on its header's line)."""
    if not isinstance(body, list) or body_on_header(analysis.model, body):
        return False
    for statement in body:
        if isinstance(statement, ast.Assign) and any(node_code(analysis, t) == target for t in statement.targets):
            return True
    return False


def shape_bookkeeping(node: ast.AST) -> bool:
    """``self.H, self.W = x.shape[-2:]``: sizes read from tensors, recorded."""
    value = getattr(node, "value", None)
    if not isinstance(node, ast.Assign) or value is None:
        return False
    seen_shape = False
    for inner in ast.walk(value):
        if isinstance(inner, ast.Attribute) and inner.attr in _SHAPE_ATTRIBUTES:
            seen_shape = True
        elif isinstance(inner, ast.Call):
            func = inner.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name not in _SHAPE_CALLS:
                return False
            seen_shape = seen_shape or name in ("size", "dim", "len", "numel")
    return seen_shape


def after_last_saved(frame: AstFrame, node: ast.AST, early_stop: bool) -> bool:
    """Whether the write ``node`` runs after every tensor the recomputation must save, so that
    torch's non-reentrant checkpoint with ``early_stop`` stops the recomputation before it."""
    if not early_stop or frame.depth != 0:
        return False
    model = frame.analysis.model
    statement = node if isinstance(node, ast.stmt) else next((a for a in model.ancestors(node) if isinstance(a, ast.stmt)), None)
    block = _block_of(model, statement) if statement is not None else None
    if statement is None or block is None or body_on_header(model, block):
        return False
    lines = statement_lines(model, block)
    index = next(i for i, line in enumerate(lines) if _holds(line, statement))
    if not _inert(lines[index]):
        return False
    rest = lines[index + 1 :]
    return bool(rest) and all(_inert(s) for s in rest[:-1]) and _plain_return(rest[-1])


def _block_of(model: AstModel, statement: ast.stmt) -> list[ast.stmt] | None:
    """The block (``body``, ``orelse``, ``finalbody``) of a compound statement, handler or
    case that holds ``statement``; ``None`` at module level."""
    parent = model.parent(statement)
    if parent is None or isinstance(parent, ast.Module):
        return None
    for name in ("body", "orelse", "finalbody"):
        block = getattr(parent, name, None)
        if isinstance(block, list) and _holds(block, statement):
            return block
    return None


def _inert(line: list[ast.stmt]) -> bool:
    """A line of counter bumps by a number (``self.n += 1``)."""
    return all(isinstance(s, ast.AugAssign) and isinstance(s.value, ast.Constant) and type(s.value.value) in (int, float) for s in line)


def _plain_return(line: list[ast.stmt]) -> bool:
    if len(line) != 1 or not isinstance(line[0], ast.Return):
        return False
    value = line[0].value
    values = [e.value if isinstance(e, ast.Starred) else e for e in value.elts] if isinstance(value, ast.Tuple) else [value]
    return all(v is None or isinstance(v, (ast.Name, ast.Attribute)) or _is_named_constant(v) for v in values)


def _is_named_constant(expr: ast.AST) -> bool:
    """Whether ``expr`` is the constant ``True``, ``False`` or ``None``."""
    return isinstance(expr, ast.Constant) and any(expr.value is c for c in _NAMED_CONSTANTS)

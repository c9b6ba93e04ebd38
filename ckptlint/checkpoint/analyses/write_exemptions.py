"""Writes of outer state that a recomputation does not change, so CKP202 leaves them out:
balanced push/pop, code guarded by a recompute-phase predicate, RNG bookkeeping the API
restores, idempotent conversions, one-time fills, memo tables and sizes grown until they
fit, shape bookkeeping."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.checkpoint.analyses.outer_state import contains_node, frame_self_name, node_code
from ckptlint.checkpoint.evaluator.region import Frame, Region
from ckptlint.checkpoint.sites.options import NOT_LITERAL, literal_value

if TYPE_CHECKING:
    from ckptlint.semantic.model import SemanticModel

#: Mutating methods that add to a container, and the ones that take the addition back
#: (LIFO ``pop()``; ``pop(0)`` after ``append`` removes another element, so it is no pair).
_PUSHES = {"append": "pop", "appendleft": "popleft", "add": "discard"}

_POPS = {"pop": "append", "popleft": "appendleft", "discard": "add", "remove": "add"}

def balanced_calls(region: Region) -> set[int]:
    """Ids of the push and pop calls on one outer container that the region both makes
    (Megatron's NVTX message stack: ``nvtx_range_push`` appends, ``nvtx_range_pop`` pops the
    same entry): each run of the region leaves the container as it found it, so the
    recomputation neither sees nor leaves a different value. A region that only pushes (or
    only pops) is not balanced."""
    calls: dict[tuple, dict[str, list[cst.Call]]] = {}
    for frame in region.frames:
        for node in frame.nodes():
            if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
                continue
            method = node.func.attr.value
            if method not in _PUSHES and method not in _POPS:
                continue
            if method in ("pop", "popleft") and node.args:
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

def _container_key(frame: Frame, owner: cst.BaseExpression) -> tuple | None:
    """What object ``owner`` (a name or ``self.attr``) denotes, across the region's frames:
    the scope that binds a module or closure name, or the class of ``self``."""
    if isinstance(owner, cst.Name):
        model = frame.analysis.model
        bindings = model.lookup(owner.value, model.scope_of(owner))
        if not bindings:
            return None
        return (id(bindings[0].scope), owner.value)
    if isinstance(owner, cst.Attribute) and isinstance(owner.value, cst.Name) and owner.value.value == frame_self_name(frame):
        info = frame.ctx.self_class
        return None if info is None else (id(info), "self", owner.attr.value)
    return None

def phase_guarded(frame: Frame, node: cst.CSTNode, *, reentrant: bool = False) -> bool:
    """Whether ``node`` sits in a branch of an ``if`` (statement or expression) of its frame
    whose test calls a recompute-phase predicate (``is_recomputing()``, ``is_checkpointing()``
    of fairscale, TransformerEngine's ``in_fp8_activation_recompute_phase()``): such code runs
    in the forward or in the recomputation only, so it does not run twice. With
    ``reentrant`` (the site's forward runs with recording off), ``torch.is_grad_enabled()``
    is such a predicate too (:data:`~ckptlint.facts.phases.GRAD_MODE_PREDICATES`)."""
    from ckptlint.facts.phases import GRAD_MODE_PREDICATES, RECOMPUTE_PHASE_PREDICATES
    from ckptlint.semantic.walk import iter_tree

    predicates = RECOMPUTE_PHASE_PREDICATES | GRAD_MODE_PREDICATES if reentrant else RECOMPUTE_PHASE_PREDICATES
    model = frame.analysis.model
    below = node
    for ancestor in model.ancestors(node):
        if ancestor is frame.function:
            return False
        if isinstance(ancestor, (cst.If, cst.IfExp)) and below is not ancestor.test:
            for inner in iter_tree(ancestor.test):
                if isinstance(inner, cst.Call) and model.qualified_names(inner.func) & predicates:
                    return True
        below = ancestor
    return False

def diagnostic_counter(frame: Frame, node: cst.AugAssign) -> bool:
    """Whether ``node`` bumps ``self.attr`` that the class of the frame reads only to decide or
    format diagnostic output (:mod:`ckptlint.facts.log_output`): in the test of an ``if`` whose
    branches only log, or in a logging call's arguments. MuseV ``transformer_2d.py:441``
    ``self.print_idx += 1``, read only by ``if self.print_idx == 0: logger.debug(...)``: a
    second bump changes what is logged, not what is computed. A counter read nowhere in its
    class stays reported (code elsewhere may read it)."""
    from ckptlint.checkpoint.analyses.outer_state import frame_self_name, is_store
    from ckptlint.checkpoint.evaluator.class_summary import self_attribute
    from ckptlint.semantic.walk import iter_tree

    info = frame.ctx.self_class
    target = node.target
    self_name = frame_self_name(frame)
    if info is None or self_name is None or not isinstance(target, cst.Attribute) or self_attribute(target, self_name) is None:
        return False
    model = info.analysis.model
    reads = 0
    for inner in iter_tree(info.node):
        if not (isinstance(inner, cst.Attribute) and inner.attr.value == target.attr.value and isinstance(inner.value, cst.Name)):
            continue
        if inner is target or is_store(model, inner) or _aug_target(model, inner):
            continue
        if not _logs_only(model, inner):
            return False
        reads += 1
    return reads > 0


def _aug_target(model: SemanticModel, node: cst.CSTNode) -> bool:
    parent = model.parent(node)
    return isinstance(parent, cst.AugAssign) and parent.target is node


def _logs_only(model: SemanticModel, read: cst.CSTNode) -> bool:
    """Whether ``read`` sits in a logging call's arguments or in the test of an ``if`` whose
    branches hold only logging calls (and ``pass``)."""
    below = read
    for ancestor in model.ancestors(read):
        if isinstance(ancestor, cst.Call) and _log_call(model, ancestor):
            return True
        if isinstance(ancestor, cst.If) and below is ancestor.test:
            return _log_branches(model, ancestor)
        if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)) and not isinstance(ancestor, cst.If):
            return False
        below = ancestor
    return False


def _log_branches(model: SemanticModel, node: cst.If) -> bool:
    """Whether every branch of ``node`` (its ``elif``s and ``else`` too) only logs."""
    if not _log_suite(model, node.body):
        return False
    if isinstance(node.orelse, cst.If):
        return _log_branches(model, node.orelse)
    return node.orelse is None or _log_suite(model, node.orelse.body)


def _log_suite(model: SemanticModel, suite: cst.BaseSuite) -> bool:
    smalls: list[cst.BaseSmallStatement] = []
    if isinstance(suite, cst.SimpleStatementSuite):
        smalls = list(suite.body)
    else:
        for statement in suite.body:
            if isinstance(statement, cst.If) and _log_branches(model, statement):
                continue  # `if x is not None: logger.debug(...)` nested in the logging branch
            if not isinstance(statement, cst.SimpleStatementLine):
                return False
            smalls.extend(statement.body)
    return all(
        isinstance(small, cst.Pass) or (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and _log_call(model, small.value))
        for small in smalls
    )


def _log_call(model: SemanticModel, call: cst.Call) -> bool:
    from ckptlint.facts.log_output import LOG_FUNCTIONS, LOGGER_METHODS, LOGGER_NAME_PART

    if model.qualified_names(call.func) & LOG_FUNCTIONS:
        return True
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in LOGGER_METHODS):
        return False
    receiver = func.value
    last = receiver.attr.value if isinstance(receiver, cst.Attribute) else receiver.value if isinstance(receiver, cst.Name) else ""
    return LOGGER_NAME_PART in last.lower()

_RNG_STATE_SETTERS = frozenset(
    {"torch.set_rng_state", "torch.cuda.set_rng_state", "torch.random.set_rng_state", "torch.cuda.random.set_rng_state"}
)

def sets_rng_state(frame: Frame) -> bool:
    """Whether the frame sets the device or CPU RNG state (an RNG tracker switching
    streams: ColossalAI's ``SeedManager.set_mode``, Megatron's ``CudaRNGStatesTracker.fork``).
    APIs that save and restore the tracker states around the recompute
    (``rng_restored`` contains ``"tracker"``) undo what such code writes."""
    model = frame.analysis.model
    return any(
        isinstance(node, cst.Call) and (model.qualified_names(node.func) & _RNG_STATE_SETTERS or _local_setter(node, model))
        for node in frame.nodes()
    )

#: Generator methods that set a generator's state (``torch.cuda.default_generators[i].set_state``,
#: ``torch._C._cuda_setRNGState`` in Megatron's ``_set_cuda_rng_state``).
_GENERATOR_SETTERS = frozenset({"set_state", "_cuda_setRNGState"})

def _local_setter(call: cst.Call, model: SemanticModel) -> bool:
    """Whether ``call`` calls a function of the same module whose body sets the RNG state
    (Megatron's ``_set_cuda_rng_state``, which does not clone the state)."""
    from ckptlint.semantic.bindings import BindingKind
    from ckptlint.semantic.walk import iter_tree

    if not isinstance(call.func, cst.Name) or call.func not in model.scopes:
        return False
    for binding in model.bindings_of(call.func):
        if binding.kind is not BindingKind.FUNCTION or not isinstance(binding.node, cst.FunctionDef):
            continue
        for node in iter_tree(binding.node.body):
            if not isinstance(node, cst.Call):
                continue
            if model.qualified_names(node.func) & _RNG_STATE_SETTERS:
                return True
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in _GENERATOR_SETTERS:
                return True
    return False

def constant_write(frame: Frame, node: cst.CSTNode) -> bool:
    """Whether ``node`` assigns a constant: a literal (``None``, a bool, a number, a string)
    or an empty container (``[]``, ``{}``, ``list()``: a new one on every run, equal to the
    last)."""
    value = getattr(node, "value", None)
    if not isinstance(node, (cst.Assign, cst.AnnAssign)) or value is None:
        return False
    return constant_key(value, frame.analysis.model) is not None

#: Calls that build an empty container: ``list()`` is as constant as ``[]``.
_EMPTY_CONSTRUCTORS = frozenset({"list", "dict", "set", "tuple"})

def constant_key(value: cst.BaseExpression, model: SemanticModel) -> object | None:
    """What constant ``value`` denotes, as a key that compares equal for equal constants
    (literals by their value, empty containers by their kind), or ``None``."""
    if isinstance(value, (cst.List, cst.Dict, cst.Set, cst.Tuple)) and not value.elements:
        return ("empty", type(value).__name__)
    if isinstance(value, cst.Call) and not value.args and isinstance(value.func, cst.Name) and value.func.value in _EMPTY_CONSTRUCTORS:
        return ("empty", value.func.value.capitalize())
    literal = literal_value(value, model)
    return None if literal is NOT_LITERAL else ("literal", literal)

#: Tensor methods ``f`` with ``f(f(t, *a), *a) == f(t, *a)``: converting twice with the same
#: arguments gives what converting once gave.
_IDEMPOTENT_CONVERSIONS = frozenset(
    {"to", "type", "type_as", "cuda", "cpu", "float", "half", "bfloat16", "double", "long", "int", "bool", "contiguous", "detach"}
)

def idempotent_conversion(node: cst.CSTNode, text: str) -> bool:
    """Whether ``node`` is ``T = T.to(...)`` (a chain of conversions of the target ``T``
    itself, whose arguments do not read ``T``): the recomputation converts a value that is
    already converted, which changes nothing. A conditional expression whose branches are
    each such a conversion, ``T`` itself, or ``None`` where the test says ``T is None``
    (EVA's ``T = T.to(x.dtype) if T is not None else None``) is idempotent too."""
    value = getattr(node, "value", None)
    if not isinstance(node, (cst.Assign, cst.AnnAssign)) or value is None:
        return False
    return _idempotent_value(value, text, none_allowed=False)


def _idempotent_value(expr: cst.BaseExpression, text: str, *, none_allowed: bool) -> bool:
    from ckptlint.semantic.walk import iter_tree

    if isinstance(expr, cst.IfExp):
        checked = _none_test(expr.test, text)  # True: `T is None`, False: `T is not None`
        return _idempotent_value(expr.body, text, none_allowed=checked is True) and _idempotent_value(
            expr.orelse, text, none_allowed=checked is False
        )
    if isinstance(expr, cst.Name) and expr.value == "None":
        return none_allowed
    if not isinstance(expr, cst.Call):
        return isinstance(expr, (cst.Name, cst.Attribute)) and node_code(expr) == text
    current: cst.BaseExpression = expr
    while isinstance(current, cst.Call):
        func = current.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in _IDEMPOTENT_CONVERSIONS:
            return False
        for arg in current.args:
            if any(isinstance(n, (cst.Name, cst.Attribute)) and node_code(n) == text for n in iter_tree(arg.value)):
                return False
        current = func.value
    return node_code(current) == text


def _none_test(test: cst.BaseExpression, text: str) -> bool | None:
    """``True`` for ``T is None``, ``False`` for ``T is not None``, else ``None``."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    target = test.comparisons[0]
    if not (isinstance(target.comparator, cst.Name) and target.comparator.value == "None"):
        return None
    if node_code(test.left) != text:
        return None
    if isinstance(target.operator, cst.Is):
        return True
    if isinstance(target.operator, cst.IsNot):
        return False
    return None

def saved_and_restored(frame: Frame, text: str) -> bool:
    """Whether the frame saves the target in a local (``orig = self._current_state_name``) and
    assigns it back (``self._current_state_name = orig``, Megatron's RNG tracker ``fork``): the
    writes in between are undone before the frame returns."""
    saved: set[str] = set()
    for node in frame.nodes():
        if not isinstance(node, cst.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0].target
        if isinstance(target, cst.Name) and node_code(node.value) == text:
            saved.add(target.value)
        elif isinstance(node.value, cst.Name) and node.value.value in saved and node_code(target) == text:
            return True
    return False

def exit_guard(model: SemanticModel, node: cst.CSTNode) -> cst.If | None:
    """The ``if`` whose test is where ``node`` is read, when its body ends by leaving
    (``if _INITIALIZED: return``), else ``None``."""
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, cst.If):
            if not contains_node(model, ancestor.test, node) and ancestor.test is not node:
                return None
            statements = ancestor.body.body
            if not statements:
                return None
            last = statements[-1]
            smalls = last.body if isinstance(last, cst.SimpleStatementLine) else [last]
            return ancestor if any(isinstance(s, (cst.Return, cst.Raise, cst.Continue)) for s in smalls) else None
        if isinstance(ancestor, (cst.BaseSuite, cst.BaseCompoundStatement, cst.SimpleStatementLine)):
            return None
    return None

def written_once(frame: Frame, node: cst.CSTNode, target: cst.BaseExpression) -> bool:
    """Lazy initialisation and memoisation: ``if self.pad is None: self.pad = ...`` or
    ``if key not in self.cache: self.cache[key] = ...``. The first run takes the branch; the
    recomputation finds the value there and does not write again (timm's Conv2dSame,
    EfficientFormer's attention-bias cache)."""
    if _after_init_guard(frame, node, target):
        return True
    slot = _slot(target)
    if slot is None:
        return False
    container, key = slot
    model = frame.analysis.model
    if container is None and _grown_until_it_fits(model, node, key):
        return True
    return _memo_guarded(model, node, container, key, frame.function)


def memo_fill(model: SemanticModel, node: cst.CSTNode) -> bool:
    """Whether the assignment ``node`` fills a memo table or a lazily initialised value under
    a test that turns false once it ran (``if key not in cache: cache[key] = v``, ``if
    self.x is None: self.x = v``, :func:`written_once` without a frame): the recomputation
    reads what the forward's fill wrote, which it would compute the same way. With several
    targets (``cache[key] = eng = Engine(...)`` under ``if eng is None:`` after ``eng =
    cache.get(key)``, axolotl's grouped GEMM engines), each target is a fill of the same guard."""
    if not isinstance(node, cst.Assign):
        return False
    function = next((a for a in model.ancestors(node) if isinstance(a, (cst.FunctionDef, cst.Lambda))), None)
    if function is None:
        return False
    for target in node.targets:
        slot = _slot(target.target)
        if slot is None or not _memo_guarded(model, node, slot[0], slot[1], function):
            return False
    return True


def _slot(target: cst.BaseExpression) -> tuple[str | None, str] | None:
    """``(container, key)`` as code text for ``C[key] = ...``, ``(None, target)`` for an
    attribute or a name, ``None`` for anything else (a slice, several indices, a tuple)."""
    if isinstance(target, cst.Subscript):
        if len(target.slice) != 1 or not isinstance(target.slice[0].slice, cst.Index):
            return None
        return node_code(target.value), node_code(target.slice[0].slice.value)
    if isinstance(target, (cst.Attribute, cst.Name)):
        return None, node_code(target)
    return None


def _memo_guarded(model: SemanticModel, node: cst.CSTNode, container: str | None, key: str, function: cst.CSTNode) -> bool:
    child: cst.CSTNode = node
    for ancestor in model.ancestors(node):
        if ancestor is function:
            return False
        came_from, child = child, ancestor
        if not isinstance(ancestor, cst.If):
            continue
        if came_from is ancestor.body and _memo_test(ancestor.test, ancestor.body, container, key):
            return True
        if came_from is ancestor.orelse and _filled_test(ancestor.test, _branch_body(ancestor.orelse), container, key):
            return True  # `if self.x is not None: <use> else: self.x = ...`, the same fill inverted
    return False


def _grown_until_it_fits(model: SemanticModel, node: cst.CSTNode, key: str) -> bool:
    """Whether ``node`` is a statement of the body of a ``while`` loop that grows the target
    until the loop's test turns false: ``while pos >= self.end or n >= self.end: self.end *= 2``
    (nanotron's rotary embedding). The loop leaves only when its test is false, so the
    recomputation, with the same inputs, finds the test false at once and writes nothing. It
    holds when the test reads the target (``key``, code text), the body is bookkeeping only
    (assignments to attributes: no local computed there flows into the region's outputs, so
    skipping the loop on recompute changes nothing else), and nothing leaves the loop
    early (``break``, ``return``) with the test still true. A plain ``self.count += 1`` is
    in no such loop and stays reported."""
    from ckptlint.semantic.walk import iter_tree

    line = model.parent(node)
    block = model.parent(line) if isinstance(line, cst.SimpleStatementLine) else None
    loop = model.parent(block) if isinstance(block, cst.IndentedBlock) else None
    if not isinstance(loop, cst.While) or loop.body is not block:
        return False
    if not any(isinstance(n, (cst.Name, cst.Attribute)) and node_code(n) == key for n in iter_tree(loop.test)):
        return False
    for statement in block.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            return False
        for small in statement.body:
            if isinstance(small, cst.Pass):
                continue
            if not isinstance(small, (cst.Assign, cst.AugAssign)):
                return False
            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
            if not all(isinstance(t, cst.Attribute) for t in targets):
                return False  # a local computed in the loop (`x = cat([x, x])`) flows on
    return True

def _branch_body(orelse: cst.CSTNode) -> cst.CSTNode:
    """The block an ``else:`` runs (an ``elif`` is an ``If``: its body and branches are
    searched by :func:`assigns_in` only at the top, so it stands for itself)."""
    return orelse.body if isinstance(orelse, cst.Else) else orelse

def _filled_test(test: cst.BaseExpression, branch: cst.CSTNode, container: str | None, key: str) -> bool:
    """Whether ``test`` turns true once the ``else`` branch ``branch`` has run, for the same
    inputs: the inverted lazy initialisation ``if X is not None: <use X> else: ...; X = v``
    (litgpt's adapter KV cache), ``if key in cache: ... else: cache[key] = v``; ``A and B``
    when both operands are such tests, ``A or B`` when one is. A later run takes the other
    branch and does not write again, as with :func:`_memo_test` for the ``if X is None:``
    spelling."""
    code = node_code
    if isinstance(test, cst.BooleanOperation):
        left_filled = _filled_test(test.left, branch, container, key)
        right_filled = _filled_test(test.right, branch, container, key)
        return (left_filled and right_filled) if isinstance(test.operator, cst.And) else (left_filled or right_filled)
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    operator, right = test.comparisons[0].operator, test.comparisons[0].comparator
    if container is None and isinstance(operator, cst.IsNot) and code(right) == "None":
        guard = code(test.left)
        return guard == key or assigns_in(branch, guard)
    return container is not None and isinstance(operator, cst.In) and code(test.left) == key and code(right) == container

def _memo_test(test: cst.BaseExpression, body: cst.CSTNode, container: str | None, key: str) -> bool:
    """Whether ``test`` turns false once ``body`` has run, for the same inputs: ``not FLAG``
    or ``X is None`` where the body sets ``FLAG``/``X``, ``key not in cache``, a size compared
    with the cached size the body records; ``A or B`` when both operands are such tests
    (``if self.cos is None or seq_len > self.cached_len:``, rotary caches), ``A and B`` when
    one is."""
    code = node_code
    if isinstance(test, cst.BooleanOperation):
        left_false = _memo_test(test.left, body, container, key)
        right_false = _memo_test(test.right, body, container, key)
        return (left_false and right_false) if isinstance(test.operator, cst.Or) else (left_false or right_false)
    if container is None and isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        guard = code(test.expression)
        return guard == key or assigns_in(body, guard)  # `if not self._initialized: ...; self._initialized = True`
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    operator, right = test.comparisons[0].operator, test.comparisons[0].comparator
    if isinstance(operator, cst.Is) and code(right) == "None":
        guard = code(test.left)
        if (container is None and guard == key) or assigns_in(body, guard):
            return True  # the write itself, or one more field (or item) of the same one-time initialisation
    if container is not None and isinstance(operator, cst.NotIn) and code(test.left) == key and code(right) == container:
        return True
    if isinstance(operator, (cst.GreaterThan, cst.LessThan, cst.NotEqual)):
        # `if seq_len > self.max_seq_len_cached: self.max_seq_len_cached = seq_len` (rotary
        # caches); for an item write, the cached size the same body records
        if any(assigns_in(body, side) for side in (code(test.left), code(right))):
            return True
    if isinstance(operator, (cst.NotEqual, cst.IsNot)):
        # a property of the cached value compared with what it is built for: `self._cached_cos.device
        # != key_device` where the body rebuilds `self._cached_cos` (TinyLLaVA's OpenELM rotary cache)
        return any(_attribute_of_assigned(body, side) for side in (test.left, right))
    return False


def _attribute_of_assigned(body: cst.CSTNode, side: cst.BaseExpression) -> bool:
    """Whether ``side`` is an attribute (``X.device``, ``X.a.dtype``) of a value ``X`` that
    ``body`` assigns."""
    if not isinstance(side, cst.Attribute):
        return False
    base = side.value
    while True:
        if assigns_in(body, node_code(base)):
            return True
        if not isinstance(base, cst.Attribute):
            return False
        base = base.value

def _after_init_guard(frame: Frame, node: cst.CSTNode, target: cst.BaseExpression | None = None) -> bool:
    """Whether ``node`` runs after ``if INITIALIZED: return ...`` at the top of the function
    and the function itself sets ``INITIALIZED`` later: a one-time initialisation (Megatron's
    ``model_parallel_cuda_manual_seed`` tracker); the recomputation returns at the guard."""
    function = frame.function
    if not isinstance(function, cst.FunctionDef) or not isinstance(function.body, cst.IndentedBlock):
        return False
    model = frame.analysis.model
    statements = list(function.body.body)
    top = next((s for s in statements if s is node or contains_node(model, s, node)), None)
    if top is None:
        return False
    guards: list[str] = []
    tested: set[str] = set()
    for statement in statements[: statements.index(top)]:
        if isinstance(statement, cst.If) and statement.orelse is None and exit_guard_body(statement):
            if isinstance(statement.test, (cst.Name, cst.Attribute)):
                guards.append(node_code(statement.test))
            from ckptlint.semantic.walk import iter_tree

            tested |= {node_code(n) for n in iter_tree(statement.test) if isinstance(n, (cst.Name, cst.Attribute))}
    if target is not None:
        written = target.value if isinstance(target, cst.Subscript) else target
        if isinstance(written, (cst.Name, cst.Attribute)) and node_code(written) in tested:
            return True  # `if len(self._streams) > 0: return` then `self._streams[k] = ...` (fairscale FSDP)
    if not guards:
        return False
    return any(assigns_in(function.body, guard) for guard in guards)

def exit_guard_body(statement: cst.If) -> bool:
    body = statement.body.body
    if not body:
        return False
    last = body[-1]
    smalls = last.body if isinstance(last, cst.SimpleStatementLine) else [last]
    return len(body) == 1 and any(isinstance(s, (cst.Return, cst.Raise)) for s in smalls)

def assigns_in(body: cst.CSTNode, target: str) -> bool:
    """Whether ``body`` assigns ``target`` (code text, ``self.pad``) directly in its statements."""
    statements = body.body if isinstance(body, cst.IndentedBlock) else ()
    for statement in statements:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign) and any(node_code(t.target) == target for t in small.targets):
                    return True
    return False

_SHAPE_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "device"})

_SHAPE_CALLS = frozenset({"size", "dim", "len", "int", "tuple", "numel"})

def shape_bookkeeping(node: cst.CSTNode) -> bool:
    """``self.H, self.W = x.shape[-2:]``: recording sizes read from tensors writes the same
    values when recomputed, so it is not a side effect worth reporting."""
    value = getattr(node, "value", None)
    if not isinstance(node, cst.Assign) or value is None:
        return False
    from ckptlint.semantic.walk import iter_tree

    seen_shape = False
    for inner in iter_tree(value):
        if isinstance(inner, cst.Attribute) and inner.attr.value in _SHAPE_ATTRIBUTES:
            seen_shape = True
        elif isinstance(inner, cst.Call):
            func = inner.func
            name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
            if name not in _SHAPE_CALLS:
                return False
            seen_shape = seen_shape or name in ("size", "dim", "len", "numel")
    return seen_shape


def after_last_saved(frame: Frame, node: cst.CSTNode, early_stop: bool) -> bool:
    """Whether the write ``node`` runs after every tensor the recomputation must save, so that
    torch's non-reentrant checkpoint with ``early_stop`` (its default) stops the recomputation
    before it (torch/utils/checkpoint.py 2.13: ``_StopRecomputationError`` once the last
    saved tensor is recomputed; MuseV's ``self.print_idx += 1`` before ``return h``, which ran
    once per step on torch 2.13). Only in the checkpointed function itself (``depth`` 0), and
    only when the statements after it in its block are counter bumps by a number and end with
    ``return`` of names or attributes (nothing after it can save a tensor)."""
    if not early_stop or frame.depth != 0:
        return False
    model = frame.analysis.model
    line = next((a for a in model.ancestors(node) if isinstance(a, cst.SimpleStatementLine)), None)
    block = model.parent(line) if line is not None else None
    if line is None or not isinstance(block, cst.IndentedBlock) or not _inert(line):
        return False
    rest = block.body[block.body.index(line) + 1 :]
    return bool(rest) and all(_inert(s) for s in rest[:-1]) and _plain_return(rest[-1])


def _inert(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(s, cst.AugAssign) and isinstance(s.value, (cst.Integer, cst.Float)) for s in statement.body
    )


def _plain_return(statement: cst.CSTNode) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1 or not isinstance(statement.body[0], cst.Return):
        return False
    value = statement.body[0].value
    values = [e.value for e in value.elements] if isinstance(value, cst.Tuple) else [value]
    return all(v is None or isinstance(v, (cst.Name, cst.Attribute)) for v in values)

"""Reads and writes of state outside a region (the global-state rules, CKP201/CKP202).

Recomputation runs the region's Python code again during backward (twice under the
reentrant variant; under non-reentrant ``early_stop`` the code before the last saved tensor
runs again, torch.utils.checkpoint 2.9). So a region that *writes* outer state does it again
(counters, caches, logs), and a region that *reads* state changed between forward and
backward computes different values; ``determinism_check`` compares only shapes, dtypes and
devices, never values.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

import libcst as cst

from ckptlint.analysis import ModuleAnalysis
from ckptlint.model.options import NOT_LITERAL, literal_value
from ckptlint.model.regions import Frame, Region
from ckptlint.model.semantic import MUTATING_METHODS, Binding, BindingKind, Scope, ScopeKind, base_name

__all__ = ["LOOP_VARIABLE", "OuterRead", "OuterWrite", "mutable_reads", "outer_writes"]

_STATE_KINDS = (BindingKind.ASSIGNMENT, BindingKind.AUGMENTED, BindingKind.WALRUS)


@dataclass(eq=False)
class OuterWrite:
    """A statement or call in a frame that changes state living outside the region."""

    node: cst.CSTNode
    frame: Frame
    what: str

    @property
    def analysis(self) -> ModuleAnalysis:
        return self.frame.analysis


@dataclass(eq=False)
class OuterRead:
    """A read, in a frame, of module-level or closure state that is changed elsewhere."""

    node: cst.Name | cst.Attribute
    frame: Frame
    name: str
    why: str

    @property
    def loop_variable(self) -> bool:
        """The variable of the loop that runs the checkpoint (it differs every iteration)."""
        return self.why.startswith(LOOP_VARIABLE)

    @property
    def late_binding(self) -> bool:
        """A loop variable read by a closure: recomputation sees the last iteration's value."""
        return self.why.startswith(LOOP_VARIABLE) or self.why.endswith(_LOOP_REBINDING)

    @property
    def analysis(self) -> ModuleAnalysis:
        return self.frame.analysis


def _frame_scope(frame: Frame) -> Scope | None:
    return frame.analysis.model.scope_of_definition.get(frame.function)


def _owner(frame: Frame, name: str, at: cst.CSTNode) -> tuple[str, list[Binding]]:
    """Where ``name`` (used at ``at``) lives relative to the frame: ``"local"``,
    ``"parameter"``, ``"self"``, ``"outer"`` (module or closure) or ``"unknown"``."""
    model = frame.analysis.model
    bindings = model.lookup(name, model.scope_of(at))
    if not bindings:
        return "unknown", bindings
    scope = _frame_scope(frame)
    first = bindings[0]
    if first.scope is scope or (scope is not None and _inside(first.scope, scope)):
        if any(frame.is_parameter(b) for b in bindings) and all(
            frame.is_parameter(b) or b.kind is BindingKind.AUGMENTED for b in bindings
        ):
            return ("self" if name == _self_name(frame) else "parameter"), bindings
        return "local", bindings  # rebound in the frame (e.g. `kwargs = kwargs.copy()`): a local object
    if first.kind in (BindingKind.IMPORT, BindingKind.FUNCTION, BindingKind.CLASS):
        return "definition", bindings
    return "outer", bindings


def _inside(scope: Scope, ancestor: Scope) -> bool:
    current: Scope | None = scope
    while current is not None:
        if current is ancestor:
            return True
        current = current.parent
    return False


def outer_writes(region: Region) -> list[OuterWrite]:
    """Every write to outer state in the region's frames, in frame order."""
    found: list[OuterWrite] = []
    functions = {id(frame.function) for frame in region.frames}
    for frame in region.frames:
        found += [w for w in _frame_writes(frame) if not _region_local(w, functions)]
    fresh = _fresh_targets(region)
    return [w for w in found if not _all_fresh(w, fresh)]


def _all_fresh(write: OuterWrite, fresh: set[tuple]) -> bool:
    targets = _plain_targets(write.node)
    if targets is None:
        return False
    return all(_target_key(write.frame, t) in fresh or not _carries(write.frame, write.node, t) for t in targets)


def _plain_targets(node: cst.CSTNode) -> list[cst.BaseExpression] | None:
    """The attribute or name targets of a plain assignment (tuple targets unpacked), or
    ``None`` when it is not one or a target is something else (an item)."""
    if isinstance(node, cst.Assign) and len(node.targets) == 1:
        target = node.targets[0].target
    elif isinstance(node, cst.AnnAssign) and node.value is not None:
        target = node.target
    else:
        return None
    targets = [e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else [target]
    if not all(isinstance(t, (cst.Attribute, cst.Name)) for t in targets):
        return None
    return targets


def _target_key(frame: Frame, target: cst.BaseExpression) -> tuple:
    info = frame.ctx.self_class
    return (id(info) if info is not None else None, _code(target))


def _plain_target_key(frame: Frame, node: cst.CSTNode) -> tuple | None:
    """Whether every target of the plain assignment ``node`` is overwritten fresh elsewhere in
    the region is decided by the caller; this gives the keys, or ``None``."""
    targets = _plain_targets(node)
    return None if targets is None else tuple(_target_key(frame, t) for t in targets)


def _fresh_targets(region: Region) -> set[tuple]:
    """Targets that some frame of the region overwrites without reading them first (Megatron's
    ``dispatch_preprocess``: ``self.routing_map = routing_map``). A later
    ``self.routing_map = gather(self.routing_map)`` in the same region then reads what this
    call wrote, not what the previous call left: the recomputation rebuilds it the same way."""
    fresh: set[tuple] = set()
    for frame in region.frames:
        for node in frame.nodes():
            if _constant_write(frame, node):
                continue  # a reset (`self.prev_features = None`) may run after the read: not this call's data
            for target in _plain_targets(node) or ():
                if not _carries(frame, node, target):
                    fresh.add(_target_key(frame, target))
    return fresh


def _constant_write(frame: Frame, node: cst.CSTNode) -> bool:
    """Whether ``node`` assigns a literal constant (``None``, a bool, a number, a string)."""
    value = getattr(node, "value", None)
    if not isinstance(node, (cst.Assign, cst.AnnAssign)) or value is None:
        return False
    return literal_value(value, frame.analysis.model) is not NOT_LITERAL


def _region_local(write: OuterWrite, functions: set[int]) -> bool:
    """Whether the written object is a variable of a function the region itself runs (a list
    built by ``_rebuild_full_params`` and filled by its nested ``update_p_data``, fairscale
    FSDP): it is created afresh on every call, the recomputation included."""
    node = write.node
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        target = node.func.value
    elif isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
        target = node.targets[0].target if isinstance(node, cst.Assign) else node.target
    else:
        return False
    base = base_name(target)
    if base is None:
        return False
    model = write.analysis.model
    bindings = model.lookup(base, model.scope_of(node))
    if not bindings:
        return False
    scope = bindings[0].scope
    if scope.kind is not ScopeKind.FUNCTION or any(b.declared_in is not None for b in bindings):
        return False
    return id(scope.node) in functions and scope is not _frame_scope(write.frame)


def _frame_writes(frame: Frame) -> Iterator[OuterWrite]:
    scope = _frame_scope(frame)
    info = frame.ctx.self_class
    self_name = _self_name(frame)
    for node in frame.nodes():
        if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            if isinstance(node, cst.AnnAssign) and node.value is None:
                continue
            for target in targets:
                if _written_once(frame, node, target):
                    continue
                if not isinstance(node, cst.AugAssign) and not _carries(frame, node, target):
                    continue  # a per-call overwrite: the recomputation writes the same value again
                if isinstance(node, cst.AugAssign) and isinstance(node.operator, (cst.BitOrAssign, cst.BitAndAssign)):
                    continue  # `flag |= x` is idempotent: running it again with the same x changes nothing
                what = _target_write(frame, scope, target, node)
                if what is not None:
                    yield OuterWrite(node, frame, what)
                    break
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            method = node.func.attr.value
            owner = node.func.value
            base = base_name(owner)
            if base is None:
                continue
            kind, _ = _owner(frame, base, owner)
            if kind == "parameter" and frame.depth > 0:
                continue  # below the checkpointed callable, arguments are mostly the region's own objects
            if method == "setdefault":
                continue  # memoisation: writes a key only when it is missing, so not again on recompute
            if method in MUTATING_METHODS and kind in ("outer", "self", "parameter"):
                if frame.analysis.model.qualified_names(node.func):
                    continue  # a module function such as os.environ.update is resolved; skip modules
                yield OuterWrite(node, frame, f"calls `{_text(frame, owner)}.{method}(...)`, mutating {_describe(kind, base)}")
            elif (
                method.endswith("_")
                and not method.startswith("_")
                and info is not None
                and self_name is not None
                and isinstance(owner, cst.Attribute)
                and isinstance(owner.value, cst.Name)
                and owner.value.value == self_name
                and owner.attr.value in info.buffers
            ):
                yield OuterWrite(node, frame, f"updates the registered buffer `self.{owner.attr.value}` in place (`{method}`)")


def _self_name(frame: Frame) -> str | None:
    """The ``self`` parameter of the frame's function, only when that function is defined
    directly in a class body (a module function reached from a method has no ``self``: its
    first parameter, timm's ``cal_rel_pos_type(attn, ...)``, is the caller's object)."""
    scope = _frame_scope(frame)
    if scope is None or scope.parent is None or scope.parent.kind is not ScopeKind.CLASS:
        return None
    return frame.self_parameter()


def _carries(frame: Frame, node: cst.CSTNode, target: cst.BaseExpression) -> bool:
    """Whether a plain assignment (``=``, not ``+=``) carries state from one call to the next,
    so that the recomputation behaves differently from the forward.

    A plain overwrite of ``self.routing_map`` or of a global writes the value computed from
    this call's inputs; the recomputation computes and writes the same value again, which is
    harmless (Megatron's token dispatchers, fairscale's FSDP flags). It carries only when the
    region also *reads* the target before writing it (a cache: ``if self.cache is not None:
    x = cat([self.cache, x])`` then ``self.cache = x[-2:]``): the recomputation then starts
    from what the forward left behind. A read that only guards an early exit
    (``if INITIALIZED: return``) is a one-time initialisation, not a carry.

    Item assignment (``cache[k] = v``) mutates a container that persists, so it always
    carries (memoisation guards are handled by :func:`_written_once`). Tuple targets carry
    when any element does.
    """
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_carries(frame, node, element.value) for element in target.elements)
    if isinstance(target, cst.Subscript):
        return True
    if not isinstance(target, (cst.Attribute, cst.Name)):
        return False
    text = _code(target)
    model = frame.analysis.model
    if _constant_write(frame, node) or _saved_and_restored(frame, text):
        return False  # a reset to a constant writes the same value on every run
    written_at = frame.analysis.range(node)[0]
    for other in frame.nodes():
        if other is target or not isinstance(other, type(target)) or _code(other) != text:
            continue
        if isinstance(other, cst.Name) and not _is_load(model, other):
            continue
        if _is_store(model, other):
            continue
        inside = _contains(model, node, other)
        if not inside and frame.analysis.range(other)[0] >= written_at:
            continue
        guard = _exit_guard(model, other) if not inside else None
        if guard is not None and not _contains(model, guard, node):
            continue  # `if INITIALIZED: return` before the write: the write is not reached from that read
        return True
    return False


def _saved_and_restored(frame: Frame, text: str) -> bool:
    """Whether the frame saves the target in a local (``orig = self._current_state_name``) and
    assigns it back (``self._current_state_name = orig``, Megatron's RNG tracker ``fork``): the
    writes in between are undone before the frame returns."""
    saved: set[str] = set()
    for node in frame.nodes():
        if not isinstance(node, cst.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0].target
        if isinstance(target, cst.Name) and _code(node.value) == text:
            saved.add(target.value)
        elif isinstance(node.value, cst.Name) and node.value.value in saved and _code(target) == text:
            return True
    return False


def _is_store(model, node: cst.CSTNode) -> bool:  # noqa: ANN001
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


def _exit_guard(model, node: cst.CSTNode) -> cst.If | None:  # noqa: ANN001
    """The ``if`` whose test is where ``node`` is read, when its body ends by leaving
    (``if _INITIALIZED: return``), else ``None``."""
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, cst.If):
            if not _contains(model, ancestor.test, node) and ancestor.test is not node:
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


def _target_write(frame: Frame, scope: Scope | None, target: cst.BaseExpression, node: cst.CSTNode) -> str | None:
    if isinstance(target, cst.Name):
        if scope is not None and target.value in scope.globals:
            return f"rebinds the global `{target.value}`"
        if scope is not None and target.value in scope.nonlocals:
            return f"rebinds the closure variable `{target.value}`"
        return None
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            found = _target_write(frame, scope, element.value, node)
            if found is not None:
                return found
        return None
    if isinstance(target, (cst.Attribute, cst.Subscript)):
        base = base_name(target)
        if base is None or _shape_bookkeeping(node):
            return None
        kind, _ = _owner(frame, base, target)
        if kind in ("outer", "self"):
            verb = "augments" if isinstance(node, cst.AugAssign) else "assigns"
            return f"{verb} `{_text(frame, target)}`, {_describe(kind, base)}"
    return None


def _written_once(frame: Frame, node: cst.CSTNode, target: cst.BaseExpression) -> bool:
    """Lazy initialisation and memoisation: ``if self.pad is None: self.pad = ...`` or
    ``if key not in self.cache: self.cache[key] = ...``. The first run takes the branch; the
    recomputation finds the value there and does not write again (timm's Conv2dSame,
    EfficientFormer's attention-bias cache)."""
    code = _code
    if _after_init_guard(frame, node, target):
        return True
    if isinstance(target, cst.Subscript):
        if len(target.slice) != 1 or not isinstance(target.slice[0].slice, cst.Index):
            return False
        container, key = code(target.value), code(target.slice[0].slice.value)
    elif isinstance(target, (cst.Attribute, cst.Name)):
        container, key = None, code(target)
    else:
        return False
    model = frame.analysis.model
    if _after_init_guard(frame, node, target):
        return True
    child: cst.CSTNode = node
    for ancestor in model.ancestors(node):
        if ancestor is frame.function:
            return False
        came_from, child = child, ancestor
        if not isinstance(ancestor, cst.If) or came_from is not ancestor.body:
            continue  # the else branch runs when the value is already there
        test = ancestor.test
        if container is None and isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            guard = code(test.expression)
            if guard == key or _assigns_in(ancestor.body, guard):
                return True  # `if not self._initialized: ...; self._initialized = True`
            continue
        if not isinstance(test, cst.Comparison):
            continue
        if len(test.comparisons) != 1:
            continue
        operator, right = test.comparisons[0].operator, test.comparisons[0].comparator
        if container is None and isinstance(operator, cst.Is) and code(right) == "None":
            guard = code(test.left)
            if guard == key or _assigns_in(ancestor.body, guard):
                return True  # the write itself, or one more field of the same one-time initialisation
        if container is not None and isinstance(operator, cst.NotIn) and code(test.left) == key and code(right) == container:
            return True
        if (
            container is None
            and isinstance(operator, (cst.GreaterThan, cst.LessThan, cst.NotEqual))
            and key in (code(test.left), code(right))
            and _assigns_in(ancestor.body, key)
        ):
            return True  # `if seq_len > self.max_seq_len_cached: self.max_seq_len_cached = seq_len` (rotary caches)
    return False


def _after_init_guard(frame: Frame, node: cst.CSTNode, target: cst.BaseExpression | None = None) -> bool:
    """Whether ``node`` runs after ``if INITIALIZED: return ...`` at the top of the function
    and the function itself sets ``INITIALIZED`` later: a one-time initialisation (Megatron's
    ``model_parallel_cuda_manual_seed`` tracker); the recomputation returns at the guard."""
    function = frame.function
    if not isinstance(function, cst.FunctionDef) or not isinstance(function.body, cst.IndentedBlock):
        return False
    model = frame.analysis.model
    statements = list(function.body.body)
    top = next((s for s in statements if s is node or _contains(model, s, node)), None)
    if top is None:
        return False
    guards: list[str] = []
    tested: set[str] = set()
    for statement in statements[: statements.index(top)]:
        if isinstance(statement, cst.If) and statement.orelse is None and _exit_guard_body(statement):
            if isinstance(statement.test, (cst.Name, cst.Attribute)):
                guards.append(_code(statement.test))
            from ckptlint.model.walk import iter_tree

            tested |= {_code(n) for n in iter_tree(statement.test) if isinstance(n, (cst.Name, cst.Attribute))}
    if target is not None:
        written = target.value if isinstance(target, cst.Subscript) else target
        if isinstance(written, (cst.Name, cst.Attribute)) and _code(written) in tested:
            return True  # `if len(self._streams) > 0: return` then `self._streams[k] = ...` (fairscale FSDP)
    if not guards:
        return False
    return any(_assigns_in(function.body, guard) for guard in guards)


def _exit_guard_body(statement: cst.If) -> bool:
    body = statement.body.body
    if not body:
        return False
    last = body[-1]
    smalls = last.body if isinstance(last, cst.SimpleStatementLine) else [last]
    return len(body) == 1 and any(isinstance(s, (cst.Return, cst.Raise)) for s in smalls)


def _assigns_in(body: cst.CSTNode, target: str) -> bool:
    """Whether ``body`` assigns ``target`` (code text, ``self.pad``) directly in its statements."""
    statements = body.body if isinstance(body, cst.IndentedBlock) else ()
    for statement in statements:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign) and any(_code(t.target) == target for t in small.targets):
                    return True
    return False


@lru_cache(maxsize=1 << 16)  # asked again and again for the same nodes (CKP202: ~60,000 times a model file)
def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node).strip()


_SHAPE_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "device"})
_SHAPE_CALLS = frozenset({"size", "dim", "len", "int", "tuple", "numel"})


def _shape_bookkeeping(node: cst.CSTNode) -> bool:
    """``self.H, self.W = x.shape[-2:]``: recording sizes read from tensors writes the same
    values when recomputed, so it is not a side effect worth reporting."""
    value = getattr(node, "value", None)
    if not isinstance(node, cst.Assign) or value is None:
        return False
    from ckptlint.model.walk import iter_tree

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


def _describe(kind: str, base: str) -> str:
    return {
        "self": "state of the module (`self`)",
        "parameter": f"the caller's object `{base}`",
        "outer": f"the outer object `{base}`",
    }.get(kind, f"`{base}`")


def _text(frame: Frame, node: cst.CSTNode) -> str:
    text = frame.analysis.module.code_for_node(node).strip()
    return text if len(text) <= 40 else text[:37] + "..."


# ------------------------------------------------------------------ reads (CKP201)
def mutable_reads(region: Region, site_analysis: ModuleAnalysis) -> list[OuterRead]:
    """Reads of module-level or closure variables that can change between the checkpoint
    call and backward (in their module, or in the site's module for ``module.ATTR`` state).

    Module-level state counts when it is rebound (``global``) or mutated while the program
    runs. Closure state (a variable of an enclosing function) counts only when a write can
    run *after* the checkpoint call: later in that function, anywhere in a loop body that
    also contains the call (the loop variable itself included: every recomputation then
    sees the last iteration's value), or in a nested function (``nonlocal``, mutation).
    Writes that run before the call (``use_cache = False`` before the layer loop) are the
    values the forward used too, so they are not reported.
    """
    found: list[OuterRead] = []
    functions = {id(frame.function) for frame in region.frames}
    for frame in region.frames:
        found += list(_frame_reads(frame, region.site.call, site_analysis, functions))
    return found


def _changed(
    binding_list: list[Binding],
    analysis: ModuleAnalysis,
    name: str,
    site_call: cst.Call | None = None,
    region_functions: set[int] | None = None,
    read_attribute: str | None = None,
    read_node: cst.CSTNode | None = None,
) -> str | None:
    """Why the state behind ``name`` changes between the checkpoint call and backward, or
    ``None``.

    ``site_call`` is the checkpoint call when it is in ``analysis``'s module (else
    ``None``); closure state is judged against it (:func:`_closure_change`).

    Module state counts only when a write to it can run between the forward and its
    recomputation: in the recomputed region itself (``region_functions``, ids of the frames'
    function nodes: the recomputation reads what its own first run wrote), or in the code
    that makes the checkpoint call, after the call or in a loop that also makes it. A
    ``global`` rebinding in a configuration setter (``set_use_reentrant``,
    ``initialize_model_parallel``) or an import-time ``try: ...; FLAG = True except
    ImportError: FLAG = False`` runs at start-up, not between a forward and its backward;
    a setter called from code ckptlint cannot order against the call is not reported.
    """
    scope = binding_list[0].scope
    if scope.kind in (ScopeKind.FUNCTION, ScopeKind.LAMBDA):
        return _closure_change(binding_list, analysis, name, site_call, read_attribute, read_node)
    if any(b.kind not in _STATE_KINDS and b.kind is not BindingKind.PARAMETER for b in binding_list):
        return None
    model = analysis.model
    writes: list[tuple[cst.CSTNode, str]] = [
        (b.node, "rebound through `global`" if b.declared_in is not None else "reassigned")
        for b in binding_list
        if b.declared_in is not None or (b is not binding_list[0] and _at_run_time(analysis, b.node))
    ]
    writes += [
        (m.node, "mutated")
        for m in model.mutations
        if m.base == name and _resolves_to(analysis, m, scope) and _at_run_time(analysis, m.node)
    ]
    for node, verb in writes:
        row = analysis.range(node)[0][0]
        function = _enclosing_function(model, node)
        if region_functions and function is not None and id(function) in region_functions:
            if _once_in(model, function, node):
                continue
            return f"{verb} at line {row} in the recomputed region itself"
        if site_call is None:
            continue
        owner = _enclosing_function(model, site_call)
        owner_scope = model.scope_of_definition.get(owner) if owner is not None else model.scope_of(site_call)
        if owner_scope is None:
            continue
        anchor = _anchor(model, site_call, owner_scope) if owner is not None else site_call
        if function is not owner:
            # a setter (`set_scale(0.5)`, defined in this module) called after the checkpoint call
            node = _call_of(model, function, owner if owner is not None else model.module)
            if node is None:
                continue
            verb = f"{verb} by `{function.name.value}()`, called"
        how = _write_after(model, node, anchor, owner_scope) if owner is not None else _module_write_after(model, node, anchor)
        if how == "loop":
            return f"{verb} at line {row} {_LOOP_REBINDING}"
        if how == "after":
            return f"{verb} at line {row}, after the checkpoint call"
    return None


def _call_of(model, function: cst.CSTNode | None, where: cst.CSTNode) -> cst.Call | None:  # noqa: ANN001
    """The last call ``name(...)`` in ``where``'s own code of the module-level function
    ``function``, or ``None``."""
    if not isinstance(function, cst.FunctionDef) or not any(isinstance(a, cst.Module) for a in [model.parent(function)]):
        return None
    from ckptlint.model.walk import iter_tree

    found = None
    for inner in iter_tree(where):
        if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Name) and inner.func.value == function.name.value:
            if _enclosing_function(model, inner) is (where if not isinstance(where, cst.Module) else None):
                found = inner
    return found


def _once_in(model, function: cst.CSTNode, node: cst.CSTNode) -> bool:  # noqa: ANN001
    """Whether ``function`` is a one-time initialiser (``if INITIALIZED: return`` at its top
    level, ``INITIALIZED = True`` later in it, Megatron's ``initialize_rng_tracker``): its
    writes, the ``if force_reset:`` branch included, set up state once, at start-up."""
    if not isinstance(function, cst.FunctionDef) or not isinstance(function.body, cst.IndentedBlock):
        return False
    for statement in function.body.body:
        if (
            isinstance(statement, cst.If)
            and statement.orelse is None
            and _exit_guard_body(statement)
            and isinstance(statement.test, (cst.Name, cst.Attribute))
            and _assigns_in(function.body, _code(statement.test))
        ):
            return True
    return False


def _enclosing_function(model, node: cst.CSTNode) -> cst.CSTNode | None:  # noqa: ANN001
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
            return ancestor
    return None


def _module_write_after(model, node: cst.CSTNode, anchor: cst.CSTNode) -> str | None:  # noqa: ANN001
    """:func:`_write_after` for a checkpoint call in module-level code (a script)."""
    for loop in model.ancestors(anchor):
        if isinstance(loop, (cst.For, cst.While)) and (loop is node or _contains(model, loop, node)):
            return "loop"
    return "after" if model.precedes(anchor, node) and not _contains(model, node, anchor) else None


#: How :func:`_changed` starts the reason for a loop variable read by a closure defined in the
#: loop (the late-binding trap); the rule words its advice for it.
LOOP_VARIABLE = "the variable of the loop that runs the checkpoint"
_LOOP_REBINDING = "in the loop that also runs the checkpoint"

_CLOSURE_WRITES = (*_STATE_KINDS, BindingKind.LOOP, BindingKind.WITH, BindingKind.EXCEPT)


def _written_before_read(model, write: cst.CSTNode, read: cst.CSTNode) -> bool:  # noqa: ANN001
    """Whether ``write`` is a plain statement of the function that contains ``read``, at the
    same or an outer block level, before it (``self.curr_layer = idx`` then
    ``seed = base + self.curr_layer`` in one loop body, DeepSpeed's pipeline)."""
    function = _enclosing_function(model, read)
    if function is None or _enclosing_function(model, write) is not function:
        return False
    statement = next((a for a in model.ancestors(write) if isinstance(a, cst.SimpleStatementLine)), None)
    if statement is None:
        return False
    block = model.parent(statement)
    if not any(a is block for a in model.ancestors(read)):
        return False
    return bool(model.precedes(statement, read)) and not _contains(model, statement, read)


def _other_attribute(mutation, name: str, attribute: str) -> bool:  # noqa: ANN001
    """Whether ``mutation`` assigns an attribute of ``name`` other than ``attribute``
    (``name.other = v`` or ``name.other += v``)."""
    node = mutation.node
    if isinstance(node, cst.Assign):
        targets = [t.target for t in node.targets]
    elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
        targets = [node.target]
    else:
        return False
    for target in targets:
        if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == name):
            return False
        if target.attr.value == attribute:
            return False
    return True


def _closure_change(
    binding_list: list[Binding],
    analysis: ModuleAnalysis,
    name: str,
    site_call: cst.Call | None,
    read_attribute: str | None = None,
    read_node: cst.CSTNode | None = None,
) -> str | None:
    """Why a variable of an enclosing function can differ between the checkpoint call and
    the recomputation in backward, or ``None`` when every write runs before the call.

    The owner function's own code is ordered against the call (:func:`_write_after`); a
    ``nonlocal`` rebinding or a mutation made in a nested function runs whenever that
    function is called, so it counts. When the call is not in the owner function (a factory
    returned the closure), the owner's own writes all ran before the closure escaped.
    """
    model = analysis.model
    scope = binding_list[0].scope
    if any(b.kind in (BindingKind.FUNCTION, BindingKind.CLASS, BindingKind.IMPORT) for b in binding_list):
        return None
    rebinders = [b for b in binding_list if b.declared_in is not None]
    if rebinders:
        return f"rebound through `nonlocal` at line {analysis.range(rebinders[0].node)[0][0]}"
    anchor = _anchor(model, site_call, scope) if site_call is not None else None
    writes = [
        (binding, how)
        for binding in binding_list
        if binding.kind in _CLOSURE_WRITES
        for how in [_write_after(model, binding.node, anchor, scope)]
        if how is not None
    ]
    if writes and all(how == "loop" for _, how in writes) and _same_constant(model, [b for b, _ in writes]):
        # `if use_cache: use_cache = False` in the loop (older transformers): every iteration
        # settles the same constant, which the forward and the recomputation both read
        writes = []
    for binding, how in writes:
        row = analysis.range(binding.node)[0][0]
        if binding.kind is BindingKind.LOOP and how == "loop":
            return LOOP_VARIABLE + f" at line {row}"
        if how == "loop":
            return f"reassigned at line {row} {_LOOP_REBINDING}"
        return f"reassigned at line {row}, after the checkpoint call"
    for mutation in model.mutations:
        if mutation.base != name or not _resolves_to(analysis, mutation, scope):
            continue
        if read_attribute is not None and _other_attribute(mutation, name, read_attribute):
            continue  # `self.curr_layer = ...` does not change what `self.forward_funcs` reads
        if read_node is not None and _written_before_read(model, mutation.node, read_node):
            continue  # the region wrote it earlier in the same call: the recomputation writes it again first
        if mutation.scope.function_scope is not scope:
            how: str | None = "nested"
        else:
            how = _write_after(model, mutation.node, anchor, scope)
        if how is None:
            continue
        row = analysis.range(mutation.node)[0][0]
        # not _LOOP_REBINDING: binding a mutated object as a default argument would not help
        where = {"loop": ", in the loop that runs the checkpoint", "after": ", after the checkpoint call"}
        return f"mutated at line {row}{where.get(how, '')}"
    return None


def _same_constant(model, bindings: list[Binding]) -> bool:  # noqa: ANN001
    """Whether every binding assigns one and the same constant (``None``, a bool, a number, a
    string)."""
    values = []
    for binding in bindings:
        if binding.kind is not BindingKind.ASSIGNMENT or binding.value is None:
            return False
        value = literal_value(binding.value, model)
        if value is NOT_LITERAL or isinstance(value, tuple):
            return False
        values.append(value)
    return all(v == values[0] and type(v) is type(values[0]) for v in values)


def _anchor(model, site_call: cst.Call, owner: Scope) -> cst.CSTNode | None:  # noqa: ANN001
    """The node of ``owner``'s own code that makes the checkpoint call: the call itself, or
    the nested ``def``/``lambda``/class that contains it; ``None`` when the call is not
    inside ``owner``."""
    anchor: cst.CSTNode = site_call
    for ancestor in model.ancestors(site_call):
        if ancestor is owner.node:
            return anchor
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            anchor = ancestor
    return None


def _write_after(model, node: cst.CSTNode, anchor: cst.CSTNode | None, owner: Scope) -> str | None:  # noqa: ANN001
    """How a write ``node`` in ``owner``'s own code can run after ``anchor``: ``"loop"``
    (a ``for``/``while`` of ``owner`` contains both, or the write is that loop's target),
    ``"after"`` (it comes later in the code), or ``None`` (it runs before, or ``anchor``
    is ``None``: the call is not in ``owner``)."""
    if anchor is None:
        return None
    for loop in model.ancestors(anchor):
        if loop is owner.node:
            break
        if isinstance(loop, (cst.For, cst.While)) and (loop is node or _contains(model, loop, node)):
            return "loop"
    return "after" if model.precedes(anchor, node) and not _contains(model, node, anchor) else None


def _contains(model, outer: cst.CSTNode, node: cst.CSTNode) -> bool:  # noqa: ANN001
    return any(a is outer for a in model.ancestors(node))


def _at_run_time(analysis: ModuleAnalysis, node: cst.CSTNode) -> bool:
    """Whether ``node`` runs after import: in a function, or under a ``__main__`` guard."""
    for ancestor in analysis.model.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
            return True
        if isinstance(ancestor, cst.If) and "__name__" in analysis.module.code_for_node(ancestor.test):
            return True
    return False


def _resolves_to(analysis: ModuleAnalysis, mutation, scope: Scope) -> bool:  # noqa: ANN001
    bindings = analysis.model.lookup(mutation.base, mutation.scope)
    return bool(bindings) and bindings[0].scope is scope


def _settled_closure(bindings: list[Binding], frame: Frame, site_analysis: ModuleAnalysis, site_call: cst.CSTNode | None) -> bool:
    """A closure variable of a function that does not run the checkpoint site (``__init__``
    building ``self.upsample = lambda x: upsample_2d(x, kernel=fir_kernel)``): that function
    returned before forward, and nothing (no ``nonlocal``) rebinds the variable later."""
    scope = bindings[0].scope
    if scope.kind is not ScopeKind.FUNCTION or any(b.declared_in is not None for b in bindings):
        return False
    if site_call is None:
        return False
    if frame.analysis is site_analysis and any(a is scope.node for a in site_analysis.model.ancestors(site_call)):
        return False  # the function runs the site: a later rebinding may change the value
    return True


def _frame_reads(
    frame: Frame, site_call: cst.Call, site_analysis: ModuleAnalysis, region_functions: set[int] | None = None
) -> Iterator[OuterRead]:
    model = frame.analysis.model
    here = site_call if site_analysis is frame.analysis else None
    written = _written_nodes(frame)
    seen: set[str] = set()
    for node in frame.nodes():
        if not isinstance(node, cst.Name) or node in written or not _is_load(model, node):
            continue
        kind, bindings = _owner(frame, node.value, node)
        if kind == "outer":
            if _settled_closure(bindings, frame, site_analysis, site_call):
                continue
            parent = model.parent(node)
            attribute = parent.attr.value if isinstance(parent, cst.Attribute) and parent.value is node else None
            why = _changed(bindings, frame.analysis, node.value, here, region_functions, attribute, node)
            if why is not None and node.value not in seen:
                seen.add(node.value)
                yield OuterRead(node, frame, node.value, why)
        elif kind == "definition" and bindings[0].kind is BindingKind.IMPORT:
            parent = model.parent(node)
            if isinstance(parent, cst.Attribute) and parent.value is node and parent not in written:
                why = _module_attribute_changed(site_analysis, frame.analysis, bindings[0], parent.attr.value, site_call)
                key = f"{node.value}.{parent.attr.value}"
                if why is not None and key not in seen:
                    seen.add(key)
                    yield OuterRead(parent, frame, key, why)


def _after_call(model, node: cst.CSTNode, site_call: cst.CSTNode) -> bool:  # noqa: ANN001
    """Whether ``node`` is in the function (or module code) that makes ``site_call`` and can
    run after it: later in the code, or in a loop that also makes the call."""
    owner = _enclosing_function(model, site_call)
    if _enclosing_function(model, node) is not owner:
        return False
    if owner is None:
        return _module_write_after(model, node, site_call) is not None
    scope = model.scope_of_definition.get(owner)
    return scope is not None and _write_after(model, node, _anchor(model, site_call, scope), scope) is not None


def _module_attribute_changed(
    site_analysis: ModuleAnalysis,
    analysis: ModuleAnalysis,
    binding: Binding,
    attr: str,
    site_call: cst.CSTNode | None = None,
) -> str | None:
    """``config.FLAG`` read in the region and assigned (``config.FLAG = ...``) in the code
    that makes the checkpoint call, after the call or in a loop that also makes it."""
    target = binding.target
    for where in {id(site_analysis): site_analysis, id(analysis): analysis}.values():
        for mutation in where.model.mutations:
            if mutation.kind not in ("attribute", "augmented") or not _at_run_time(where, mutation.node):
                continue
            bindings = where.model.lookup(mutation.base, mutation.scope)
            if not bindings or bindings[0].kind is not BindingKind.IMPORT or bindings[0].target != target:
                continue
            node = mutation.node
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [getattr(node, "target", None)]
            if where is site_analysis and site_call is not None and not _after_call(where.model, node, site_call):
                continue  # before the call (or in code not ordered against it): the forward read it too
            if where is not site_analysis:
                continue
            if any(isinstance(t, cst.Attribute) and t.attr.value == attr for t in targets):
                row = where.range(node)[0][0]
                return f"assigned at {_file(where, analysis)}{row}"
    return None


def _file(where: ModuleAnalysis, here: ModuleAnalysis) -> str:
    if where is here:
        return "line "
    from pathlib import Path

    return f"{Path(where.source.path).name}:"


def _written_nodes(frame: Frame) -> set[cst.CSTNode]:
    """Name/Attribute nodes that are (the base of) a write target or of a mutating call."""
    out: set[cst.CSTNode] = set()
    for node in frame.nodes():
        targets: list[cst.CSTNode] = []
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, (cst.For, cst.CompFor)):
            targets = [node.target]
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in MUTATING_METHODS:
            targets = [node.func.value]
        for target in targets:
            stack = [target]
            while stack:
                current = stack.pop()
                out.add(current)
                if isinstance(current, (cst.Attribute, cst.Subscript)):
                    stack.append(current.value)
                elif isinstance(current, (cst.Tuple, cst.List)):
                    stack.extend(e.value for e in current.elements)
    return out


def _is_load(model, node: cst.Name) -> bool:  # noqa: ANN001
    parent = model.parent(node)
    if isinstance(parent, cst.Attribute) and parent.attr is node:
        return False
    if isinstance(parent, cst.Arg) and parent.keyword is node:
        return False
    if isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.ImportAlias, cst.AsName, cst.Param, cst.NameItem)):
        return False
    return True

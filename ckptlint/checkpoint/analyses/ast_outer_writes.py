"""Writes of state outside a region (CKP202), reading an
:class:`~ckptlint.checkpoint.evaluator.ast_region.AstRegion`, into the records of
:mod:`ckptlint.checkpoint.analyses.outer_state`, with the exemptions of :mod:`~ckptlint.checkpoint.analyses.ast_write_exemptions` and
:mod:`~ckptlint.checkpoint.analyses.ast_end_resets`.

A call's arguments are read in source order
(:func:`~ckptlint.checkpoint.sites.ast_options.ordered_arguments`), one subscript index with
:func:`~ckptlint.semantic.ast_subscripts.one_index`; ``None`` is a constant; the names ``ast``
holds as strings (an attribute's, a keyword's) count among what a value reads.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ckptlint.checkpoint.analyses.ast_end_resets import end_resets
from ckptlint.checkpoint.analyses.ast_outer_state import (
    OuterWrite,
    Owner,
    contains_node,
    describe,
    frame_scope,
    frame_self_name,
    frame_text,
    is_load,
    is_store,
    node_code,
    owner_of,
)
from ckptlint.checkpoint.analyses.ast_write_exemptions import (
    after_last_saved,
    balanced_calls,
    constant_write,
    diagnostic_counter,
    exit_guard,
    idempotent_conversion,
    phase_guarded,
    saved_and_restored,
    sets_rng_state,
    shape_bookkeeping,
    written_once,
)
from ckptlint.checkpoint.evaluator.region import MAX_DEPTH
from ckptlint.checkpoint.sites.ast_options import argument_value, literal_value, ordered_arguments
from ckptlint.checkpoint.sites.options import NOT_LITERAL
from ckptlint.semantic.ast_assignments import assignments
from ckptlint.semantic.ast_subscripts import one_index
from ckptlint.semantic.ast_walk import base_name, iter_tree
from ckptlint.semantic.bindings import MUTATING_METHODS, ScopeKind

if TYPE_CHECKING:
    from ckptlint.checkpoint.analyses.ast_outer_state import AstOuterWrite
    from ckptlint.checkpoint.evaluator.ast_class_summary import AstClassInfo
    from ckptlint.checkpoint.evaluator.ast_region import AstFrame, AstRegion
    from ckptlint.semantic.ast_analysis import AstAnalysis
    from ckptlint.semantic.ast_model import AstBinding, AstScope

__all__ = ["outer_writes"]


def outer_writes(region: AstRegion) -> list[AstOuterWrite]:
    """Every write to outer state in the region's frames, in frame order, less the writes that
    a recompute-phase predicate guards, balanced pushes and pops, RNG-tracker bookkeeping the
    site's API restores and statistics the region resets (:mod:`~ckptlint.checkpoint.analyses.ast_end_resets`)."""
    found: list[AstOuterWrite] = []
    functions = {id(frame.function) for frame in region.frames}
    balanced = balanced_calls(region)
    tracker = "tracker" in region.site.api.rng_restored
    reentrant = region.site.runs_reentrant is True  # the forward runs with recording off
    early_stop = _stops_early(region)
    for frame in region.frames:
        rng_code = tracker and sets_rng_state(frame)
        found += [
            w
            for w in _frame_writes(frame)
            if not _region_local(w, functions)
            and id(w.node) not in balanced
            and not rng_code
            and not phase_guarded(frame, w.node, reentrant=reentrant)
            and not after_last_saved(frame, w.node, early_stop)
        ]
    fresh = _fresh_targets(region)
    resets = end_resets(region)
    return [w for w in found if not _all_fresh(w, fresh) and not resets.covers(w)]


def _stops_early(region: AstRegion) -> bool:
    """Whether the site runs the non-reentrant variant of an API that stops early with
    ``early_stop`` on."""
    site = region.site
    option = site.option("early_stop")
    return site.api.stops_early and site.runs_reentrant is False and (option.is_absent or option.is_true)


def _all_fresh(write: AstOuterWrite, fresh: set[tuple]) -> bool:
    targets = _plain_targets(write.node)
    if targets is None:
        return False
    scope = frame_scope(write.frame)
    return all(
        _target_key(write.frame, t) in fresh
        or not _carries(write.frame, write.node, t)
        or _target_write(write.frame, scope, t, write.node) is None  # a local of the frame
        for t in targets
    )


def _plain_targets(node: ast.AST) -> list[ast.expr] | None:
    """The attribute or name targets of a plain assignment (tuple targets unpacked), or
    ``None`` when it is not one or a target is something else (an item)."""
    if not ((isinstance(node, ast.Assign) and len(node.targets) == 1) or (isinstance(node, ast.AnnAssign) and node.value is not None)):
        return None
    targets = [assigned.target for assigned in assignments(node)]
    if not all(isinstance(t, (ast.Attribute, ast.Name)) for t in targets):
        return None
    return targets


def _target_key(frame: AstFrame, target: ast.expr) -> tuple:
    info = frame.ctx.self_class
    return (id(info) if info is not None else None, node_code(frame.analysis, target))


def _fresh_targets(region: AstRegion) -> set[tuple]:
    """Targets that some frame of the region overwrites without reading them first."""
    fresh: set[tuple] = set()
    for frame in region.frames:
        scope = frame_scope(frame)
        for node in frame.nodes():
            targets = _plain_targets(node)
            if not targets or constant_write(frame, node):
                continue  # a reset (`self.prev_features = None`) may run after the read
            for target in targets:
                if _target_write(frame, scope, target, node) is None:
                    continue  # a local of the frame: only writes to outer state are judged
                if not _carries(frame, node, target):
                    fresh.add(_target_key(frame, target))
    return fresh


def _region_local(write: AstOuterWrite, functions: set[int]) -> bool:
    """Whether the written object is a variable of a function the region itself runs."""
    node = write.node
    target: ast.expr
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        target = node.func.value
    elif isinstance(node, ast.Assign):
        target = node.targets[0]
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        target = node.target
    else:
        return False
    base = base_name(target)
    if base is None:
        return False
    model = write.frame.analysis.model
    bindings = model.lookup(base, model.scope_of(node))
    if not bindings:
        return False
    scope = bindings[0].scope
    if scope.kind is not ScopeKind.FUNCTION or any(b.declared_in is not None for b in bindings):
        return False
    return id(scope.node) in functions and scope is not frame_scope(write.frame)


def _frame_writes(frame: AstFrame) -> Iterator[AstOuterWrite]:
    scope = frame_scope(frame)
    info = frame.ctx.self_class
    self_name = frame_self_name(frame)
    model = frame.analysis.model
    for node in frame.nodes():
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            if isinstance(node, ast.AnnAssign) and node.value is None:
                continue
            targets = [assigned.target for assigned in assignments(node)]
            for target in targets:
                what = _target_write(frame, scope, target, node)  # first: most targets are locals
                if what is None or written_once(frame, node, target):
                    continue
                if not isinstance(node, ast.AugAssign) and not _carries(frame, node, target):
                    continue  # a per-call overwrite: the recomputation writes the same value again
                if isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.BitOr, ast.BitAnd)):
                    continue  # `flag |= x` is idempotent
                if isinstance(node, ast.AugAssign) and diagnostic_counter(frame, node):
                    continue  # a counter read only to decide or format log output
                yield OuterWrite(node, frame, what)
                break
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func.attr
            owner = node.func.value
            base = base_name(owner)
            if base is None:
                continue
            kind, _ = owner_of(frame, base, owner)
            if kind is Owner.PARAMETER and frame.depth > 0:
                continue  # below the checkpointed callable, arguments are mostly the region's own objects
            if method == "setdefault":
                continue  # memoisation: writes a key only when it is missing
            arguments = ordered_arguments(node)
            if method == "pop" and len(arguments) == 2 and literal_value(argument_value(arguments[0]), model) is not NOT_LITERAL:
                continue  # `meta.pop("key", None)`: removes one fixed key
            if method in MUTATING_METHODS and kind in (Owner.OUTER, Owner.SELF, Owner.PARAMETER):
                if model.qualified_names(node.func):
                    continue  # a module function such as os.environ.update is resolved; skip modules
                if kind is Owner.SELF and _installed_from_outside(info, owner, self_name):
                    continue  # not known to be a list, dict or set
                yield OuterWrite(node, frame, f"calls `{frame_text(frame, owner)}.{method}(...)`, mutating {describe(kind, base)}")
            elif (
                method.endswith("_")
                and not method.startswith("_")
                and info is not None
                and self_name is not None
                and isinstance(owner, ast.Attribute)
                and isinstance(owner.value, ast.Name)
                and owner.value.id == self_name
                and owner.attr in info.buffers
            ):
                yield OuterWrite(node, frame, f"updates the registered buffer `self.{owner.attr}` in place (`{method}`)")


def _carries(frame: AstFrame, node: ast.AST, target: ast.expr) -> bool:
    """Whether a plain assignment carries state from one call to the next (see
    ``outer_writes._carries``)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_carries(frame, node, e.value if isinstance(e, ast.Starred) else e) for e in target.elts)
    if isinstance(target, ast.Subscript):
        return _item_carries(frame, node, target)
    if not isinstance(target, (ast.Attribute, ast.Name)):
        return False
    analysis = frame.analysis
    text = node_code(analysis, target)
    model = analysis.model
    if constant_write(frame, node) or saved_and_restored(frame, text):
        return False  # a reset to a constant writes the same value on every run
    if idempotent_conversion(analysis, node, text):
        return False  # `self.mask = self.mask.to(x.device)`: a second run converts nothing more
    written_at = analysis.range(node)[0]
    last = target.attr if isinstance(target, ast.Attribute) else target.id
    for other in frame.named(last):
        if other is target or not isinstance(other, type(target)) or node_code(analysis, other) != text:
            continue
        if isinstance(other, ast.Name) and not is_load(model, other):
            continue
        if is_store(model, other):
            continue
        if _read_before(frame, node, other, written_at) and not _only_tests_other_code(frame, node, other):
            return True
    return False


def _only_tests_other_code(frame: AstFrame, node: ast.AST, read: ast.AST) -> bool:
    """Whether ``read`` only decides an ``if`` that neither holds the write ``node`` nor
    assigns anything its value reads; the climb from ``read`` stops where it leaves a
    statement."""
    analysis = frame.analysis
    model = analysis.model
    below: ast.AST = read
    for ancestor in model.ancestors(read):
        if ancestor is frame.function or isinstance(below, ast.stmt):
            return False
        if isinstance(ancestor, ast.If) and below is ancestor.test:
            if contains_node(model, ancestor, node):
                return False
            value = getattr(node, "value", None)
            read_there = _read_texts(analysis, value) if value is not None else set()
            return not any(_assigns_one_of(analysis, n, read_there) for n in iter_tree(ancestor))
        below = ancestor
    return False


def _read_texts(analysis: AstAnalysis, value: ast.AST) -> set[str]:
    """The texts of the names and attributes in ``value``, with the names ``ast`` holds as
    strings (an attribute's name, a keyword's, a parameter's)."""
    found: set[str] = set()
    for inner in iter_tree(value):
        if isinstance(inner, (ast.Name, ast.Attribute)):
            found.add(node_code(analysis, inner))
        if isinstance(inner, ast.Attribute):
            found.add(inner.attr)
        elif isinstance(inner, (ast.keyword, ast.arg)) and inner.arg is not None:
            found.add(inner.arg)  # a keyword's name, a lambda's parameter
    return found


def _assigns_one_of(analysis: AstAnalysis, node: ast.AST, texts: set[str]) -> bool:
    if isinstance(node, ast.Assign):
        return any(node_code(analysis, t) in texts for t in node.targets)
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return node_code(analysis, node.target) in texts
    return False


def _read_before(frame: AstFrame, node: ast.AST, read: ast.AST, written_at: tuple[int, int]) -> bool:
    """Whether ``read`` runs before the write ``node`` (which starts at ``written_at``)
    reaches its target, or is part of it, not behind an exit guard that precedes it."""
    model = frame.analysis.model
    inside = contains_node(model, node, read)
    if not inside and frame.analysis.range(read)[0] >= written_at:
        return False
    guard = exit_guard(model, read) if not inside else None
    return guard is None or contains_node(model, guard, node)


#: Methods that read one item of a mapping (``cache.get("k")``): a read of ``cache["k"]``.
_ITEM_READS = frozenset({"get", "pop", "setdefault"})


def _item_carries(frame: AstFrame, node: ast.AST, target: ast.Subscript) -> bool:
    """Whether the item assignment ``node`` (``C[K] = v``) carries state from one call to
    the next (see ``outer_writes._item_carries``)."""
    container = target.value
    if isinstance(container, ast.Attribute) and container.attr == "__dict__":
        return False
    analysis = frame.analysis
    model = analysis.model
    index = one_index(model, target)
    if index is None:
        return True
    key = literal_value(index, model)
    if key is NOT_LITERAL:
        return True
    if isinstance(container, ast.Attribute):
        last = container.attr
    elif isinstance(container, ast.Name):
        last = container.id
    else:
        return True
    if constant_write(frame, node):
        return False
    text, container_text = node_code(analysis, target), node_code(analysis, container)
    written_at = analysis.range(node)[0]
    for other in frame.named(last):
        if other is container or node_code(analysis, other) != container_text:
            continue
        read = _item_read(analysis, other, text, key)
        if read is not None and not is_store(model, read) and _read_before(frame, node, read, written_at):
            return True
    return False


def _item_read(analysis: AstAnalysis, container: ast.AST, text: str, key: object) -> ast.AST | None:
    """The expression reading item ``key`` of ``container`` (``C[K]`` spelled ``text``, or
    ``C.get(K)``), or ``None``."""
    model = analysis.model
    parent = model.parent(container)
    if isinstance(parent, ast.Subscript) and parent.value is container:
        return parent if node_code(analysis, parent) == text else None
    if isinstance(parent, ast.Attribute) and parent.value is container and parent.attr in _ITEM_READS:
        call = model.parent(parent)
        if isinstance(call, ast.Call) and call.func is parent:
            arguments = ordered_arguments(call)
            if arguments and literal_value(argument_value(arguments[0]), model) == key:
                return call
    return None


def _target_write(frame: AstFrame, scope: AstScope | None, target: ast.expr, node: ast.AST) -> str | None:
    if isinstance(target, ast.Name):
        if scope is not None and target.id in scope.globals:
            return f"rebinds the global `{target.id}`"
        if scope is not None and target.id in scope.nonlocals:
            return f"rebinds the closure variable `{target.id}`"
        return None
    if isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            found = _target_write(frame, scope, element.value if isinstance(element, ast.Starred) else element, node)
            if found is not None:
                return found
        return None
    if isinstance(target, (ast.Attribute, ast.Subscript)):
        base = base_name(target)
        if base is None or shape_bookkeeping(node):
            return None
        kind, bindings = owner_of(frame, base, target)
        verb = "augments" if isinstance(node, ast.AugAssign) else "assigns"
        if kind in (Owner.OUTER, Owner.SELF):
            return f"{verb} `{frame_text(frame, target)}`, {describe(kind, base)}"
        if kind is Owner.PARAMETER and _fixed_slot(frame, target):
            origin = _handed_in(frame, base, bindings)
            if origin is not None:
                return f"{verb} `{frame_text(frame, target)}` of {origin}"
    return None


def _fixed_slot(frame: AstFrame, target: ast.expr) -> bool:
    """``cache["padding"]``, ``cache.state``: one slot of an object, the same on every call."""
    if isinstance(target, ast.Attribute):
        return True
    if not isinstance(target, ast.Subscript):
        return False
    model = frame.analysis.model
    index = one_index(model, target)
    return index is not None and literal_value(index, model) is not NOT_LITERAL


def _handed_in(frame: AstFrame, name: str, bindings: list[AstBinding]) -> str | None:
    """For the parameter ``name`` of ``frame``: what outside the region the object it holds
    comes from, followed up the calls that handed it down (see ``outer_writes._handed_in``)."""
    current, handed = frame, name
    for _ in range(MAX_DEPTH + 1):
        binding = next((b for b in bindings if current.is_parameter(b)), None)
        if binding is None or _star_parameter(current, binding):
            return None
        if current.caller is None:
            return f"the object that the checkpoint call passes as `{handed}`" if handed == name else (
                f"the object that the checkpoint call passes as `{handed}` (handed down as `{name}`)"
            )
        bound = current.ctx.env.get(binding)
        caller = current.caller
        if bound is None or bound[1] is not caller.ctx:
            return None
        expr = bound[0]
        base = base_name(expr)
        if base is None:
            return None
        kind, bindings = owner_of(caller, base, expr)
        if kind in (Owner.SELF, Owner.OUTER):
            owner = "the module's" if kind is Owner.SELF else "the outer object"
            return f"{owner} `{frame_text(caller, expr)}` (handed down as `{name}` by `{caller.via}`)"
        if kind is not Owner.PARAMETER:
            return None
        current, handed = caller, base
    return None


def _star_parameter(frame: AstFrame, binding: AstBinding) -> bool:
    params = frame.function.args
    return any(p is not None and p is binding.node for p in (params.vararg, params.kwarg))


def _installed_from_outside(info: AstClassInfo | None, owner: ast.expr, self_name: str | None) -> bool:
    """Whether ``owner`` is ``self.X`` that its class only ever sets to ``None`` (see
    ``outer_writes._installed_from_outside``)."""
    if info is None or self_name is None:
        return False
    if not (isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name) and owner.value.id == self_name):
        return False
    values = info.attributes.get(owner.attr) or []
    return bool(values) and all(isinstance(v.value, ast.Constant) and v.value.value is None and not v.path for v in values)

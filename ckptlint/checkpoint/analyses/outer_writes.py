"""Writes of state outside a region (CKP202): what a recomputed region changes that lives on after it.

Recomputation runs the region's Python code again during backward (twice under the
reentrant variant; under non-reentrant ``early_stop`` the code before the last saved tensor
runs again, torch.utils.checkpoint 2.9). So a region that *writes* outer state does it again
(counters, caches, logs). Writes the recompute cannot change are left out by
:mod:`ckptlint.checkpoint.analyses.write_exemptions`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.checkpoint.analyses.end_resets import end_resets
from ckptlint.checkpoint.analyses.outer_state import (
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
from ckptlint.checkpoint.analyses.write_exemptions import (
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
from ckptlint.checkpoint.evaluator.denotations import ClassInfo
from ckptlint.checkpoint.evaluator.region import MAX_DEPTH, Frame, Region
from ckptlint.checkpoint.sites.options import NOT_LITERAL, literal_value
from ckptlint.semantic.assignments import assignments
from ckptlint.semantic.bindings import (
    MUTATING_METHODS,
    Binding,
    Scope,
    ScopeKind,
)
from ckptlint.semantic.model import base_name
from ckptlint.semantic.walk import iter_tree

if TYPE_CHECKING:
    from ckptlint.semantic.model import SemanticModel

__all__ = ["outer_writes"]


def outer_writes(region: Region) -> list[OuterWrite]:
    """Every write to outer state in the region's frames, in frame order.

    Not reported: writes under a recompute-phase predicate (``if not is_recomputing():``,
    :data:`~ckptlint.facts.phases.RECOMPUTE_PHASE_PREDICATES`: they run in one phase only, by design),
    pushes and pops that balance within the region (:func:`balanced_calls`), RNG-tracker
    bookkeeping when the site's API saves and restores the tracker around the recompute, and
    statistics the region resets to a constant after writing them
    (:func:`~ckptlint.checkpoint.analyses.end_resets.end_resets`)."""
    found: list[OuterWrite] = []
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

def _stops_early(region: Region) -> bool:
    """Whether the site runs the non-reentrant variant of an API that stops early
    (``CheckpointApi.stops_early``) with ``early_stop`` on (its default; ``early_stop=False``
    or a value not known here turns the exemption off)."""
    site = region.site
    option = site.option("early_stop")
    return site.api.stops_early and site.runs_reentrant is False and (option.is_absent or option.is_true)

def _all_fresh(write: OuterWrite, fresh: set[tuple]) -> bool:
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

def _plain_targets(node: cst.CSTNode) -> list[cst.BaseExpression] | None:
    """The attribute or name targets of a plain assignment (tuple targets unpacked), or
    ``None`` when it is not one or a target is something else (an item)."""
    if not ((isinstance(node, cst.Assign) and len(node.targets) == 1) or (isinstance(node, cst.AnnAssign) and node.value is not None)):
        return None
    targets = [assigned.target for assigned in assignments(node)]
    if not all(isinstance(t, (cst.Attribute, cst.Name)) for t in targets):
        return None
    return targets

def _target_key(frame: Frame, target: cst.BaseExpression) -> tuple:
    info = frame.ctx.self_class
    return (id(info) if info is not None else None, node_code(target))

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
        scope = frame_scope(frame)
        for node in frame.nodes():
            targets = _plain_targets(node)
            if not targets or constant_write(frame, node):
                continue  # a reset (`self.prev_features = None`) may run after the read: not this call's data
            for target in targets:
                if _target_write(frame, scope, target, node) is None:
                    continue  # a local of the frame: only writes to outer state are judged
                if not _carries(frame, node, target):
                    fresh.add(_target_key(frame, target))
    return fresh

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
    return id(scope.node) in functions and scope is not frame_scope(write.frame)

def _frame_writes(frame: Frame) -> Iterator[OuterWrite]:
    scope = frame_scope(frame)
    info = frame.ctx.self_class
    self_name = frame_self_name(frame)
    for node in frame.nodes():
        if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            if isinstance(node, cst.AnnAssign) and node.value is None:
                continue
            # every elementary target, in any form: `(h, probs, self.mapping, self.tokens) =
            # permute(h, tokens=self.tokens)` judges each element on its own (the local `h`
            # read in the value carries nothing)
            targets = [assigned.target for assigned in assignments(node)]
            for target in targets:
                what = _target_write(frame, scope, target, node)  # first: most targets are locals
                if what is None or written_once(frame, node, target):
                    continue
                if not isinstance(node, cst.AugAssign) and not _carries(frame, node, target):
                    continue  # a per-call overwrite: the recomputation writes the same value again
                if isinstance(node, cst.AugAssign) and isinstance(node.operator, (cst.BitOrAssign, cst.BitAndAssign)):
                    continue  # `flag |= x` is idempotent: running it again with the same x changes nothing
                if isinstance(node, cst.AugAssign) and diagnostic_counter(frame, node):
                    continue  # a counter read only to decide or format log output
                yield OuterWrite(node, frame, what)
                break
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            method = node.func.attr.value
            owner = node.func.value
            base = base_name(owner)
            if base is None:
                continue
            kind, _ = owner_of(frame, base, owner)
            if kind is Owner.PARAMETER and frame.depth > 0:
                continue  # below the checkpointed callable, arguments are mostly the region's own objects
            if method == "setdefault":
                continue  # memoisation: writes a key only when it is missing, so not again on recompute
            if method == "pop" and len(node.args) == 2 and literal_value(node.args[0].value, frame.analysis.model) is not NOT_LITERAL:
                continue  # `meta.pop("key", None)`: removes one fixed key; a second run finds it gone
            if method in MUTATING_METHODS and kind in (Owner.OUTER, Owner.SELF, Owner.PARAMETER):
                if frame.analysis.model.qualified_names(node.func):
                    continue  # a module function such as os.environ.update is resolved; skip modules
                if kind is Owner.SELF and _installed_from_outside(info, owner, self_name):
                    continue  # not known to be a list, dict or set: `update` may be anything
                yield OuterWrite(node, frame, f"calls `{frame_text(frame, owner)}.{method}(...)`, mutating {describe(kind, base)}")
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

    Item assignment (``cache[k] = v``) carries unless its key is a literal, where an item is
    an attribute by another spelling (:func:`_item_carries`); memoisation guards are handled
    by :func:`written_once`. Tuple targets carry when any element does.
    """
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_carries(frame, node, element.value) for element in target.elements)
    if isinstance(target, cst.Subscript):
        return _item_carries(frame, node, target)
    if not isinstance(target, (cst.Attribute, cst.Name)):
        return False
    text = node_code(target)
    model = frame.analysis.model
    if constant_write(frame, node) or saved_and_restored(frame, text):
        return False  # a reset to a constant writes the same value on every run
    if idempotent_conversion(node, text):
        return False  # `self.mask = self.mask.to(x.device)`: a second run converts nothing more
    written_at = frame.analysis.range(node)[0]
    last = target.attr.value if isinstance(target, cst.Attribute) else target.value
    for other in frame.named(last):
        if other is target or not isinstance(other, type(target)) or node_code(other) != text:
            continue
        if isinstance(other, cst.Name) and not is_load(model, other):
            continue
        if is_store(model, other):
            continue
        if _read_before(frame, node, other, written_at) and not _only_tests_other_code(frame, node, other):
            return True
    return False


def _only_tests_other_code(frame: Frame, node: cst.CSTNode, read: cst.CSTNode) -> bool:
    """Whether ``read`` only decides an ``if`` that neither holds the write ``node`` nor
    assigns anything its value reads: Megatron's ``if self.prev != get_n(): self.count = 0``
    before ``self.prev = get_n()``. The value written is then the same in both runs; what
    the branch does is judged on its own."""
    model = frame.analysis.model
    below: cst.CSTNode = read
    for ancestor in model.ancestors(read):
        if ancestor is frame.function or isinstance(ancestor, cst.BaseSuite):
            return False
        if isinstance(ancestor, cst.If) and below is ancestor.test:
            if contains_node(model, ancestor, node):
                return False
            value = getattr(node, "value", None)
            read_there = {node_code(n) for n in iter_tree(value) if isinstance(n, (cst.Name, cst.Attribute))} if value else set()
            return not any(
                isinstance(n, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign)) and node_code(n.target) in read_there
                for n in iter_tree(ancestor)
            )
        below = ancestor
    return False


def _read_before(frame: Frame, node: cst.CSTNode, read: cst.CSTNode, written_at: tuple[int, int]) -> bool:
    """Whether ``read`` runs before the write ``node`` (which starts at ``written_at``) reaches
    its target, or is part of it: a read behind ``if INITIALIZED: return`` that precedes the
    write does not reach it (a one-time initialisation)."""
    model = frame.analysis.model
    inside = contains_node(model, node, read)
    if not inside and frame.analysis.range(read)[0] >= written_at:
        return False
    guard = exit_guard(model, read) if not inside else None
    return guard is None or contains_node(model, guard, node)

#: Methods that read one item of a mapping (``cache.get("k")``): a read of ``cache["k"]``.
_ITEM_READS = frozenset({"get", "pop", "setdefault"})


def _item_carries(frame: Frame, node: cst.CSTNode, target: cst.Subscript) -> bool:
    """Whether the item assignment ``node`` (``C[K] = v``, ``target`` the ``C[K]``) carries
    state from one call to the next.

    - ``obj.__dict__[name] = v`` sets an attribute (TransformerEngine's ``fast_setattr``): a
      per-call overwrite, as ``obj.name = v`` is.
    - With a literal key (``self.fp8_meta["recipe"] = recipe``, ``cache[0] = x``) the item is
      one fixed slot, judged as an attribute: a reset to a constant does not carry, and an
      overwrite carries only when the region reads the same item (``C[K]``, ``C.get(K)``)
      before writing it (``C["n"] = C["n"] + 1``, ``C["h"] = cat([C["h"], x])``).
    - Any other key (``cache[self.step] = x``, ``cache[name] = x``) may name another slot on
      every call, so it carries.
    """
    container = target.value
    if isinstance(container, cst.Attribute) and container.attr.value == "__dict__":
        return False
    if len(target.slice) != 1 or not isinstance(target.slice[0].slice, cst.Index):
        return True
    model = frame.analysis.model
    key = literal_value(target.slice[0].slice.value, model)
    if key is NOT_LITERAL:
        return True
    if isinstance(container, cst.Attribute):
        last = container.attr.value
    elif isinstance(container, cst.Name):
        last = container.value
    else:
        return True
    if constant_write(frame, node):
        return False
    text, container_text = node_code(target), node_code(container)
    written_at = frame.analysis.range(node)[0]
    for other in frame.named(last):
        if other is container or node_code(other) != container_text:
            continue
        read = _item_read(model, other, text, key)
        if read is not None and not is_store(model, read) and _read_before(frame, node, read, written_at):
            return True
    return False


def _item_read(model: SemanticModel, container: cst.CSTNode, text: str, key: object) -> cst.CSTNode | None:
    """The expression reading item ``key`` of ``container`` (``C[K]`` spelled ``text``, or
    ``C.get(K)``), or ``None``."""
    parent = model.parent(container)
    if isinstance(parent, cst.Subscript) and parent.value is container:
        return parent if node_code(parent) == text else None
    if isinstance(parent, cst.Attribute) and parent.value is container and parent.attr.value in _ITEM_READS:
        call = model.parent(parent)
        if isinstance(call, cst.Call) and call.func is parent and call.args:
            if literal_value(call.args[0].value, model) == key:
                return call
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
        if base is None or shape_bookkeeping(node):
            return None
        kind, bindings = owner_of(frame, base, target)
        verb = "augments" if isinstance(node, cst.AugAssign) else "assigns"
        if kind in (Owner.OUTER, Owner.SELF):
            return f"{verb} `{frame_text(frame, target)}`, {describe(kind, base)}"
        if kind is Owner.PARAMETER and _fixed_slot(frame, target):
            origin = _handed_in(frame, base, bindings)
            if origin is not None:
                return f"{verb} `{frame_text(frame, target)}` of {origin}"
    return None


def _fixed_slot(frame: Frame, target: cst.BaseExpression) -> bool:
    """``cache["padding"]``, ``cache.state``: one slot of an object, the same on every call
    (an item with a computed key, ``x[mask]``, is left to the tensor code it usually is)."""
    if isinstance(target, cst.Attribute):
        return True
    if not isinstance(target, cst.Subscript) or len(target.slice) != 1 or not isinstance(target.slice[0].slice, cst.Index):
        return False
    return literal_value(target.slice[0].slice.value, frame.analysis.model) is not NOT_LITERAL


def _handed_in(frame: Frame, name: str, bindings: list[Binding]) -> str | None:
    """For the parameter ``name`` of ``frame``: what outside the region the object it holds
    comes from, followed up the calls that handed it down (``self.conv1(h,
    cache=layer_cache["conv1"])`` in a frame whose ``layer_cache`` the checkpoint call
    passes); ``None`` when the region made it (a local of a caller), when it is a ``*args`` /
    ``**kwargs`` container made for the call, or when the call that bound it is not known."""
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


def _star_parameter(frame: Frame, binding: Binding) -> bool:
    function = frame.function
    params = function.params
    return any(isinstance(p, cst.Param) and p is binding.node for p in (params.star_arg, params.star_kwarg))


def _installed_from_outside(info: ClassInfo | None, owner: cst.BaseExpression, self_name: str | None) -> bool:
    """Whether ``owner`` is ``self.X`` that its class only ever sets to ``None`` (fish-speech's
    ``self.kv_cache = None``, a cache object that inference code installs from outside with
    ``block.attention.kv_cache = KVCache(...)``): what ``self.X.update(...)`` then does is not
    known (a ``KVCache.update`` that writes the same keys at the same positions again), so it is
    not taken for a container's mutation."""
    if info is None or self_name is None:
        return False
    if not (isinstance(owner, cst.Attribute) and isinstance(owner.value, cst.Name) and owner.value.value == self_name):
        return False
    values = info.attributes.get(owner.attr.value) or []
    return bool(values) and all(isinstance(v.value, cst.Name) and v.value.value == "None" and not v.path for v in values)

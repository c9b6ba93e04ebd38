"""Reads of state outside a region that may change between forward and backward (CKP201):
the recomputed region then computes different values; ``determinism_check`` compares only
shapes, dtypes and devices, never values (torch.utils.checkpoint 2.9/2.13)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.checkpoint.analyses.outer_state import (
    LOOP_REBINDING,
    LOOP_VARIABLE,
    STATE_KINDS,
    OuterRead,
    Owner,
    contains_node,
    is_load,
    node_code,
    owner_of,
)
from ckptlint.checkpoint.analyses.write_exemptions import (
    assigns_in,
    balanced_calls,
    exit_guard_body,
    memo_fill,
    phase_guarded,
)
from ckptlint.checkpoint.evaluator.region import Frame, Region
from ckptlint.checkpoint.sites.guards import Condition, common, local_parts
from ckptlint.checkpoint.sites.options import NOT_LITERAL, literal_value
from ckptlint.semantic.analysis import ModuleAnalysis
from ckptlint.semantic.assignments import BINDING_NODES, assignments
from ckptlint.semantic.bindings import (
    MUTATING_METHODS,
    Binding,
    BindingKind,
    Scope,
    ScopeKind,
)
from ckptlint.semantic.walk import iter_tree

if TYPE_CHECKING:
    from ckptlint.semantic.bindings import Mutation
    from ckptlint.semantic.model import SemanticModel

__all__ = ["mutable_reads"]


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
    balanced = balanced_calls(region)
    reentrant = region.site.runs_reentrant is True  # the forward runs with recording off
    for frame in region.frames:
        found += [
            read
            for read in _frame_reads(frame, region.site.call, site_analysis, functions, balanced)
            if not phase_guarded(frame, read.node, reentrant=reentrant)
        ]
    return found

def _changed(
    binding_list: list[Binding],
    analysis: ModuleAnalysis,
    name: str,
    site_call: cst.Call | None = None,
    region_functions: set[int] | None = None,
    read_attribute: str | None = None,
    read_node: cst.CSTNode | None = None,
    balanced: set[int] | None = None,
    read_item: object = NOT_LITERAL,
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
    if any(b.kind not in STATE_KINDS and b.kind is not BindingKind.PARAMETER for b in binding_list):
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
        if m.base == name
        and _resolves_to(analysis, m, scope)
        and _at_run_time(analysis, m.node)
        and id(m.node) not in (balanced or ())  # a push the region pops again
        and not _gradient_reset(m)
        and not _other_item(m, name, read_item, model)  # `D["flag"] = True` does not change what `D["n"]` reads
    ]
    for node, verb in writes:
        row = analysis.range(node)[0][0]
        function = _enclosing_function(model, node)
        if region_functions and function is not None and id(function) in region_functions:
            if _once_in(model, function, node) or memo_fill(model, node):
                continue  # a one-time initialiser; a memo fill (`if k not in C: C[k] = v`) the recomputation finds done
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
            called = _call_of(model, function, owner if owner is not None else model.module)
            if called is None or not isinstance(function, cst.FunctionDef):  # _call_of: a FunctionDef's call
                continue
            node = called
            verb = f"{verb} by `{function.name.value}()`, called"
        how = _write_after(model, node, anchor, owner_scope) if owner is not None else _module_write_after(model, node, site_call)
        if how == "loop":
            return f"{verb} at line {row} {LOOP_REBINDING}"
        if how == "after":
            return f"{verb} at line {row}, after the checkpoint call"
    return None

def _call_of(model: SemanticModel, function: cst.CSTNode | None, where: cst.CSTNode) -> cst.Call | None:
    """The last call ``name(...)`` in ``where``'s own code of the module-level function
    ``function``, or ``None``."""
    if not isinstance(function, cst.FunctionDef) or not any(isinstance(a, cst.Module) for a in [model.parent(function)]):
        return None
    from ckptlint.semantic.walk import iter_tree

    found = None
    for inner in iter_tree(where):
        if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Name) and inner.func.value == function.name.value:
            if _enclosing_function(model, inner) is (where if not isinstance(where, cst.Module) else None):
                found = inner
    return found

def _once_in(model: SemanticModel, function: cst.CSTNode, node: cst.CSTNode) -> bool:
    """Whether ``function`` is a one-time initialiser (``if INITIALIZED: return`` at its top
    level, ``INITIALIZED = True`` later in it, Megatron's ``initialize_rng_tracker``): its
    writes, the ``if force_reset:`` branch included, set up state once, at start-up."""
    if not isinstance(function, cst.FunctionDef) or not isinstance(function.body, cst.IndentedBlock):
        return False
    for statement in function.body.body:
        if (
            isinstance(statement, cst.If)
            and statement.orelse is None
            and exit_guard_body(statement)
            and isinstance(statement.test, (cst.Name, cst.Attribute))
            and assigns_in(function.body, node_code(statement.test))
        ):
            return True
    return False

def _enclosing_function(model: SemanticModel, node: cst.CSTNode) -> cst.CSTNode | None:
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
            return ancestor
    return None

def _module_write_after(model: SemanticModel, node: cst.CSTNode, anchor: cst.CSTNode) -> str | None:
    """:func:`_write_after` for a checkpoint call in module-level code (a script)."""
    for loop in model.ancestors(anchor):
        if isinstance(loop, (cst.For, cst.While)) and (loop is node or contains_node(model, loop, node)):
            return "loop"
    return "after" if model.precedes(anchor, node) and not contains_node(model, node, anchor) else None

_CLOSURE_WRITES = (*STATE_KINDS, BindingKind.LOOP, BindingKind.WITH, BindingKind.EXCEPT)

def _written_before_read(model: SemanticModel, write: cst.CSTNode, read: cst.CSTNode) -> bool:
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
    return bool(model.precedes(statement, read)) and not contains_node(model, statement, read)

def _gradient_reset(mutation: Mutation) -> bool:
    """Whether ``mutation`` only assigns the ``.grad`` of its object (``weight.grad = None``,
    zeroing gradients between two backward passes): computing a forward never reads a
    tensor's ``.grad``, so the recomputation computes the same values."""
    node = mutation.node
    if not isinstance(node, cst.Assign):
        return False
    return all(isinstance(t.target, cst.Attribute) and t.target.attr.value == "grad" for t in node.targets)

def _other_attribute(mutation: Mutation, name: str, attribute: str) -> bool:
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

def _other_item(mutation: Mutation, name: str, key: object, model: SemanticModel) -> bool:
    """Whether ``mutation`` only assigns items of ``name`` under literal keys other than the
    literal ``key`` a read takes (``name["other"] = v``); ``False`` when ``key`` is not a literal."""
    if key is NOT_LITERAL or not isinstance(mutation.node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
        return False
    targets = [t.target for t in mutation.node.targets] if isinstance(mutation.node, cst.Assign) else [mutation.node.target]
    for target in targets:
        if not (isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) and target.value.value == name):
            return False
        written = _literal_item(target, model)
        if written is NOT_LITERAL or written == key:
            return False
    return True


def _literal_item(subscript: cst.Subscript, model: SemanticModel) -> object:
    """The literal key of ``C[key]``, or ``NOT_LITERAL``."""
    if len(subscript.slice) != 1 or not isinstance(subscript.slice[0].slice, cst.Index):
        return NOT_LITERAL
    return literal_value(subscript.slice[0].slice.value, model)


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
    returned the closure), the owner's own writes all ran before the closure escaped. A
    mutation under tests of its own function says them ("mutated at line 9, in the loop that
    when `IS_GEMMA2`, in the loop that runs the checkpoint"); one without comes first.
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
            when = _varies_when(analysis, binding) if len(writes) == 1 else ""  # another write may vary always
            return f"reassigned at line {row}{when} {LOOP_REBINDING}"
        return f"reassigned at line {row}, after the checkpoint call"
    found: list[tuple[str, str, Condition]] = []
    for mutation in model.mutations:
        if mutation.base != name or not _resolves_to(analysis, mutation, scope):
            continue
        if read_attribute is not None and _other_attribute(mutation, name, read_attribute):
            continue  # `self.curr_layer = ...` does not change what `self.forward_funcs` reads
        if _gradient_reset(mutation):
            continue  # `weight.grad = None` between the runs: the forward never reads `.grad`
        if read_node is not None and _written_before_read(model, mutation.node, read_node):
            continue  # the region wrote it earlier in the same call: the recomputation writes it again first
        if mutation.scope.function_scope is not scope:
            change: str | None = "nested"
        else:
            change = _write_after(model, mutation.node, anchor, scope)
        if change is None:
            continue
        row = analysis.range(mutation.node)[0][0]
        # not LOOP_REBINDING: binding a mutated object as a default argument would not help
        where = {"loop": ", in the loop that runs the checkpoint", "after": ", after the checkpoint call"}
        found.append((f"mutated at line {row}", where.get(change, ""), local_parts(analysis, mutation.node)))
    if not found:
        return None
    # unsloth's `if IS_GEMMA2: kwargs["use_sliding_window"] = ...`: it changes only then; with
    # several writes, only what they all need (one without tests: nothing); an object handed to
    # a call or another name may be changed there too
    needed = common([parts for _, _, parts in found]) if not _handed_on(model, name, scope) else ()
    at, where_text, _ = found[0]
    return at + (f" when {' and '.join(needed)}" if needed else "") + where_text


def _handed_on(model: SemanticModel, name: str, scope: Scope) -> bool:
    """Whether the object bound to ``name`` in ``scope`` is passed to a call, bound to another
    name or read by a lambda there (so writes ckptlint does not see may change it)."""
    for node in iter_tree(scope.node):
        if isinstance(node, cst.Call) and any(
            isinstance(arg.value, cst.Name) and arg.value.value == name and not arg.star for arg in node.args
        ):
            return True  # (`**kwargs` hands on a copy)
        if type(node) in BINDING_NODES and any(
            isinstance(a.whole, cst.Name) and a.whole.value == name for a in assignments(node)
        ):
            return True
        if isinstance(node, cst.Lambda) and any(isinstance(n, cst.Name) and n.value == name for n in iter_tree(node.body)):
            return True
    return False


def _varies_when(analysis: ModuleAnalysis, binding: Binding) -> str:
    """``, when `T`,`` for a rebinding to ``A if T else C`` whose other branch is a constant
    (unsloth's ``past_key_value = past_key_values[idx] if past_key_values is not None else
    None``: the same ``None`` every iteration unless ``T`` holds), ``, when `not (T)`,`` for
    ``C if T else A``; ``""`` otherwise."""
    value = binding.value
    if not isinstance(value, cst.IfExp):
        return ""
    model = analysis.model
    test = " ".join(analysis.text_of(value.test).split())
    if literal_value(value.orelse, model) is not NOT_LITERAL and literal_value(value.body, model) is NOT_LITERAL:
        return f", when `{test}`,"
    if literal_value(value.body, model) is not NOT_LITERAL and literal_value(value.orelse, model) is NOT_LITERAL:
        return f", when `not ({test})`,"
    return ""


def _same_constant(model: SemanticModel, bindings: list[Binding]) -> bool:
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

def _anchor(model: SemanticModel, site_call: cst.CSTNode, owner: Scope) -> cst.CSTNode | None:
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

def _write_after(model: SemanticModel, node: cst.CSTNode, anchor: cst.CSTNode | None, owner: Scope) -> str | None:
    """How a write ``node`` in ``owner``'s own code can run after ``anchor``: ``"loop"``
    (a ``for``/``while`` of ``owner`` contains both, or the write is that loop's target),
    ``"after"`` (it comes later in the code), or ``None`` (it runs before, or ``anchor``
    is ``None``: the call is not in ``owner``)."""
    if anchor is None:
        return None
    calls = _direct_calls(model, anchor, owner)
    if calls:
        # the checkpoint call is in a nested function: it runs when that function is called,
        # so a write between the `def` and its first call runs before it (Megatron's
        # test_random: `def checkpoint_forward(x): ...`, then `weight = ...`, then the call)
        found = [_write_after(model, node, call, owner) for call in calls]
        return "loop" if "loop" in found else "after" if "after" in found else None
    for loop in model.ancestors(anchor):
        if loop is owner.node:
            break
        if isinstance(loop, (cst.For, cst.While)) and (loop is node or contains_node(model, loop, node)):
            return "loop"
    return "after" if model.precedes(anchor, node) and not contains_node(model, node, anchor) else None

def _direct_calls(model: SemanticModel, anchor: cst.CSTNode, owner: Scope) -> list[cst.Call]:
    """The calls ``name(...)`` in ``owner``'s own code of the nested function ``anchor``,
    when every other use of its name is such a call; else ``[]`` (it escapes: returned,
    passed on, stored; when it then runs is not known, so the ``def`` stays the anchor)."""
    if not isinstance(anchor, cst.FunctionDef) or anchor.decorators:
        return []
    from ckptlint.semantic.walk import iter_tree

    name = anchor.name.value
    calls: list[cst.Call] = []
    for node in iter_tree(owner.node):
        if not isinstance(node, cst.Name) or node.value != name or node is anchor.name:
            continue
        parent = model.parent(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            continue
        if not isinstance(parent, cst.Call) or parent.func is not node:
            return []
        if _enclosing_function(model, parent) is not owner.node:
            return []
        calls.append(parent)
    return calls

def _at_run_time(analysis: ModuleAnalysis, node: cst.CSTNode) -> bool:
    """Whether ``node`` runs after import: in a function, or under a ``__main__`` guard."""
    for ancestor in analysis.model.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
            return True
        if isinstance(ancestor, cst.If) and "__name__" in analysis.module.code_for_node(ancestor.test):
            return True
    return False

def _resolves_to(analysis: ModuleAnalysis, mutation: Mutation, scope: Scope) -> bool:
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
    frame: Frame,
    site_call: cst.Call,
    site_analysis: ModuleAnalysis,
    region_functions: set[int] | None = None,
    balanced: set[int] | None = None,
) -> Iterator[OuterRead]:
    model = frame.analysis.model
    here = site_call if site_analysis is frame.analysis else None
    written = _written_nodes(frame)
    seen: set[str] = set()
    for node in frame.nodes():
        if not isinstance(node, cst.Name) or node in written or not is_load(model, node):
            continue
        kind, bindings = owner_of(frame, node.value, node)
        if kind is Owner.OUTER:
            if _settled_closure(bindings, frame, site_analysis, site_call):
                continue
            parent = model.parent(node)
            attribute = parent.attr.value if isinstance(parent, cst.Attribute) and parent.value is node else None
            item = _literal_item(parent, model) if isinstance(parent, cst.Subscript) and parent.value is node else NOT_LITERAL
            why = _changed(bindings, frame.analysis, node.value, here, region_functions, attribute, node, balanced, item)
            if why is not None and node.value not in seen:
                seen.add(node.value)
                yield OuterRead(node, frame, node.value, why)
        elif kind is Owner.DEFINITION and bindings[0].kind is BindingKind.IMPORT:
            parent = model.parent(node)
            if isinstance(parent, cst.Attribute) and parent.value is node and parent not in written:
                why = _module_attribute_changed(site_analysis, frame.analysis, bindings[0], parent.attr.value, site_call)
                key = f"{node.value}.{parent.attr.value}"
                if why is not None and key not in seen:
                    seen.add(key)
                    yield OuterRead(parent, frame, key, why)

def _after_call(model: SemanticModel, node: cst.CSTNode, site_call: cst.CSTNode) -> bool:
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
    where = site_analysis  # a write elsewhere is not ordered against the call: not judged
    for mutation in where.model.mutations:
        if mutation.kind not in ("attribute", "augmented"):
            continue
        node = mutation.node
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [getattr(node, "target", None)]
        if not any(isinstance(t, cst.Attribute) and t.attr.value == attr for t in targets):
            continue  # the cheap test first: regions read many module attributes (`torch.cat`)
        if not _at_run_time(where, node):
            continue
        bindings = where.model.lookup(mutation.base, mutation.scope)
        if not bindings or bindings[0].kind is not BindingKind.IMPORT or bindings[0].target != target:
            continue
        if site_call is not None and not _after_call(where.model, node, site_call):
            continue  # before the call (or in code not ordered against it): the forward read it too
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

"""Reads of state outside a region that may change between forward and backward (CKP201),
reading an :class:`~ckptlint.checkpoint.evaluator.ast_region.AstRegion`, into the records of
:mod:`ckptlint.checkpoint.analyses.outer_state`.

A name is an ``ast.Name`` (an attribute's name, a keyword's, a parameter's are strings, so
they are never reads); the statement line of a write is the group of statements
:func:`~ckptlint.semantic.ast_lines.statement_lines` finds (a body on its header's line is
none); a node without a position (a ``with`` item, a comprehension) is on the row of its
first child.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ckptlint.checkpoint.analyses.ast_outer_state import (
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
from ckptlint.checkpoint.analyses.ast_write_exemptions import (
    assigns_in,
    balanced_calls,
    exit_guard_body,
    memo_fill,
    phase_guarded,
)
from ckptlint.checkpoint.sites.ast_guards import Condition, common, local_parts
from ckptlint.checkpoint.sites.ast_options import literal_value
from ckptlint.checkpoint.sites.options import NOT_LITERAL
from ckptlint.semantic.ast_assignments import assignments
from ckptlint.semantic.ast_lines import body_on_header, statement_lines
from ckptlint.semantic.ast_subscripts import one_index
from ckptlint.semantic.ast_walk import FUNCTIONS, iter_tree, start
from ckptlint.semantic.bindings import MUTATING_METHODS, BindingKind, ScopeKind

if TYPE_CHECKING:
    from ckptlint.checkpoint.analyses.ast_outer_state import AstOuterRead
    from ckptlint.checkpoint.evaluator.ast_region import AstFrame, AstRegion
    from ckptlint.semantic.ast_analysis import AstAnalysis
    from ckptlint.semantic.ast_model import AstBinding, AstModel, AstMutation, AstScope

__all__ = ["mutable_reads"]

_FUNCTIONS_AND_LAMBDAS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_CLOSURE_WRITES = (*STATE_KINDS, BindingKind.LOOP, BindingKind.WITH, BindingKind.EXCEPT)


def mutable_reads(region: AstRegion, site_analysis: AstAnalysis) -> list[AstOuterRead]:
    """Reads of module-level or closure variables that can change between the checkpoint
    call and backward: module-level state rebound or mutated while the program runs, closure
    state only when a write can run after the checkpoint call (later in the function, in a loop
    around the call, in a nested function)."""
    found: list[AstOuterRead] = []
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


def _row(node: ast.AST) -> int:
    return start(node)[0]  # a node without a position: its first child's


def _changed(
    binding_list: list[AstBinding],
    analysis: AstAnalysis,
    name: str,
    site_call: ast.Call | None = None,
    region_functions: set[int] | None = None,
    read_attribute: str | None = None,
    read_node: ast.AST | None = None,
    balanced: set[int] | None = None,
    read_item: object = NOT_LITERAL,
) -> str | None:
    """Why the state behind ``name`` changes between the checkpoint call and backward, or
    ``None`` (the reason begins with :data:`~ckptlint.checkpoint.analyses.outer_state.LOOP_VARIABLE` for a loop variable)."""
    scope = binding_list[0].scope
    if scope.kind in (ScopeKind.FUNCTION, ScopeKind.LAMBDA):
        return _closure_change(binding_list, analysis, name, site_call, read_attribute, read_node)
    if any(b.kind not in STATE_KINDS and b.kind is not BindingKind.PARAMETER for b in binding_list):
        return None
    model = analysis.model
    writes: list[tuple[ast.AST, str]] = [
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
        and not _other_item(m, name, read_item, model)
    ]
    for node, verb in writes:
        row = _row(node)
        function = _enclosing_function(model, node)
        if region_functions and function is not None and id(function) in region_functions:
            if _once_in(analysis, function, node) or memo_fill(analysis, node):
                continue  # a one-time initialiser; a memo fill the recomputation finds done
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
            if called is None or not isinstance(function, FUNCTIONS):
                continue
            node = called
            verb = f"{verb} by `{function.name}()`, called"
        how = _write_after(model, node, anchor, owner_scope) if owner is not None else _module_write_after(model, node, site_call)
        if how == "loop":
            return f"{verb} at line {row} {LOOP_REBINDING}"
        if how == "after":
            return f"{verb} at line {row}, after the checkpoint call"
    return None


def _call_of(model: AstModel, function: ast.AST | None, where: ast.AST) -> ast.Call | None:
    """The last call ``name(...)`` in ``where``'s own code of the module-level function
    ``function``, or ``None``."""
    if not isinstance(function, FUNCTIONS) or not isinstance(model.parent(function), ast.Module):
        return None
    found = None
    for inner in iter_tree(where):
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == function.name:
            if _enclosing_function(model, inner) is (where if not isinstance(where, ast.Module) else None):
                found = inner
    return found


def _once_in(analysis: AstAnalysis, function: ast.AST, node: ast.AST) -> bool:
    """Whether ``function`` is a one-time initialiser (``if INITIALIZED: return`` at its top
    level, ``INITIALIZED = True`` later in it)."""
    if not isinstance(function, FUNCTIONS) or body_on_header(analysis.model, function.body):
        return False
    for statement in function.body:
        if (
            isinstance(statement, ast.If)
            and not statement.orelse
            and exit_guard_body(analysis.model, statement)
            and isinstance(statement.test, (ast.Name, ast.Attribute))
            and assigns_in(analysis, function.body, node_code(analysis, statement.test))
        ):
            return True
    return False


def _enclosing_function(model: AstModel, node: ast.AST) -> ast.AST | None:
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, _FUNCTIONS_AND_LAMBDAS):
            return ancestor
    return None


def _module_write_after(model: AstModel, node: ast.AST, anchor: ast.AST) -> str | None:
    """:func:`_write_after` for a checkpoint call in module-level code (a script)."""
    for loop in model.ancestors(anchor):
        if isinstance(loop, _LOOPS) and (loop is node or contains_node(model, loop, node)):
            return "loop"
    return "after" if model.precedes(anchor, node) and not contains_node(model, node, anchor) else None


def _statement_line(model: AstModel, node: ast.AST) -> tuple[list[ast.stmt], list[ast.stmt]] | None:
    """The statement line holding ``node``, and the block it is a line of, as ``ast``
    statements: the simple statements joined by ``;`` around the statement holding
    ``node``; ``None`` when that statement is compound (``node`` is in its header) or its
    block follows the header's colon (such a block holds no line)."""
    statement = node if isinstance(node, ast.stmt) else next((a for a in model.ancestors(node) if isinstance(a, ast.stmt)), None)
    if statement is None or hasattr(statement, "body") or isinstance(statement, ast.Match):  # compound
        return None
    block = _block_of(model, statement)
    if block is None or body_on_header(model, block):
        return None
    return next(((line, block) for line in statement_lines(model, block) if any(s is statement for s in line)), None)


def _block_of(model: AstModel, statement: ast.stmt) -> list[ast.stmt] | None:
    parent = model.parent(statement)  # the statement list of it that holds ``statement``
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and any(s is statement for s in block):
            return block
    return None


def _written_before_read(model: AstModel, write: ast.AST, read: ast.AST) -> bool:
    """Whether ``write`` is a plain statement of the function that contains ``read``, at the
    same or an outer block level, before it."""
    function = _enclosing_function(model, read)
    if function is None or _enclosing_function(model, write) is not function:
        return False
    found = _statement_line(model, write)
    if found is None:
        return False
    line, block = found
    members = {id(s) for s in block}
    if not any(id(a) in members for a in model.ancestors(read)):
        return False
    inside = any(s is read or contains_node(model, s, read) for s in line)
    return bool(model.precedes(line[0], read)) and not inside


def _gradient_reset(mutation: AstMutation) -> bool:
    """Whether ``mutation`` only assigns ``.grad`` (``weight.grad = None``)."""
    node = mutation.node
    if not isinstance(node, ast.Assign):
        return False
    return all(isinstance(t, ast.Attribute) and t.attr == "grad" for t in node.targets)


def _other_attribute(mutation: AstMutation, name: str, attribute: str) -> bool:
    """Whether ``mutation`` assigns an attribute of ``name`` other than ``attribute``."""
    node = mutation.node
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    else:
        return False
    for target in targets:
        if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == name):
            return False
        if target.attr == attribute:
            return False
    return True


def _other_item(mutation: AstMutation, name: str, key: object, model: AstModel) -> bool:
    """Whether ``mutation`` only assigns items of ``name`` under literal keys other than the
    literal ``key`` a read takes; ``False`` when ``key`` is not a literal."""
    node = mutation.node
    if key is NOT_LITERAL or not isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        return False
    targets = list(node.targets) if isinstance(node, ast.Assign) else [node.target]
    for target in targets:
        if not (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and target.value.id == name):
            return False
        written = _literal_item(target, model)
        if written is NOT_LITERAL or written == key:
            return False
    return True


def _literal_item(subscript: ast.Subscript, model: AstModel) -> object:
    """The literal key of ``C[key]``, or ``NOT_LITERAL``."""
    index = one_index(model, subscript)
    return NOT_LITERAL if index is None else literal_value(index, model)


def _closure_change(
    binding_list: list[AstBinding],
    analysis: AstAnalysis,
    name: str,
    site_call: ast.Call | None,
    read_attribute: str | None = None,
    read_node: ast.AST | None = None,
) -> str | None:
    """Why a variable of an enclosing function can differ between the checkpoint call and
    the recomputation in backward, or ``None``."""
    model = analysis.model
    scope = binding_list[0].scope
    if any(b.kind in (BindingKind.FUNCTION, BindingKind.CLASS, BindingKind.IMPORT) for b in binding_list):
        return None
    rebinders = [b for b in binding_list if b.declared_in is not None]
    if rebinders:
        return f"rebound through `nonlocal` at line {_row(rebinders[0].node)}"
    anchor = _anchor(model, site_call, scope) if site_call is not None else None
    writes = [
        (binding, how)
        for binding in binding_list
        if binding.kind in _CLOSURE_WRITES
        for how in [_write_after(model, binding.node, anchor, scope)]
        if how is not None
    ]
    if writes and all(how == "loop" for _, how in writes) and _same_constant(model, [b for b, _ in writes]):
        writes = []  # every iteration settles the same constant
    for binding, how in writes:
        row = _row(binding.node)
        if binding.kind is BindingKind.LOOP and how == "loop":
            return LOOP_VARIABLE + f" at line {row}"
        if how == "loop":
            when = _varies_when(analysis, binding) if len(writes) == 1 else ""
            return f"reassigned at line {row}{when} {LOOP_REBINDING}"
        return f"reassigned at line {row}, after the checkpoint call"
    found: list[tuple[str, str, Condition]] = []
    for mutation in model.mutations:
        if mutation.base != name or not _resolves_to(analysis, mutation, scope):
            continue
        if read_attribute is not None and _other_attribute(mutation, name, read_attribute):
            continue
        if _gradient_reset(mutation):
            continue
        if read_node is not None and _written_before_read(model, mutation.node, read_node):
            continue
        if mutation.scope.function_scope is not scope:
            change: str | None = "nested"
        else:
            change = _write_after(model, mutation.node, anchor, scope)
        if change is None:
            continue
        row = _row(mutation.node)
        where = {"loop": ", in the loop that runs the checkpoint", "after": ", after the checkpoint call"}
        found.append((f"mutated at line {row}", where.get(change, ""), local_parts(analysis, mutation.node)))
    if not found:
        return None
    needed = common([parts for _, _, parts in found]) if not _handed_on(model, name, scope) else ()
    at, where_text, _ = found[0]
    return at + (f" when {' and '.join(needed)}" if needed else "") + where_text


def _handed_on(model: AstModel, name: str, scope: AstScope) -> bool:
    """Whether the object bound to ``name`` in ``scope`` is passed to a call, bound to another
    name or read by a lambda there."""
    for node in iter_tree(scope.node):
        if isinstance(node, ast.Call) and (
            any(isinstance(arg, ast.Name) and arg.id == name for arg in node.args)
            or any(k.arg is not None and isinstance(k.value, ast.Name) and k.value.id == name for k in node.keywords)
        ):
            return True  # (`*args` and `**kwargs` hand on a copy)
        if any(isinstance(a.whole, ast.Name) and a.whole.id == name for a in assignments(node)):
            return True
        if isinstance(node, ast.Lambda) and any(isinstance(n, ast.Name) and n.id == name for n in iter_tree(node.body)):
            return True
    return False


def _varies_when(analysis: AstAnalysis, binding: AstBinding) -> str:
    """``, when `T`,`` for a rebinding to ``A if T else C`` whose other branch is a constant,
    ``, when `not (T)`,`` for ``C if T else A``; ``""`` otherwise."""
    value = binding.value
    if not isinstance(value, ast.IfExp):
        return ""
    model = analysis.model
    test = " ".join(analysis.text_of(value.test).split())
    if literal_value(value.orelse, model) is not NOT_LITERAL and literal_value(value.body, model) is NOT_LITERAL:
        return f", when `{test}`,"
    if literal_value(value.body, model) is not NOT_LITERAL and literal_value(value.orelse, model) is NOT_LITERAL:
        return f", when `not ({test})`,"
    return ""


def _same_constant(model: AstModel, bindings: list[AstBinding]) -> bool:
    values = []
    for binding in bindings:
        if binding.kind is not BindingKind.ASSIGNMENT or binding.value is None:
            return False
        value = literal_value(binding.value, model)
        if value is NOT_LITERAL or isinstance(value, tuple):
            return False
        values.append(value)
    return all(v == values[0] and type(v) is type(values[0]) for v in values)


def _anchor(model: AstModel, site_call: ast.AST, owner: AstScope) -> ast.AST | None:
    """The node of ``owner``'s own code that makes the checkpoint call: the call itself, or
    the nested ``def``/``lambda``/class that contains it; ``None`` when the call is not
    inside ``owner``."""
    anchor: ast.AST = site_call
    for ancestor in model.ancestors(site_call):
        if ancestor is owner.node:
            return anchor
        if isinstance(ancestor, (*_FUNCTIONS_AND_LAMBDAS, ast.ClassDef)):
            anchor = ancestor
    return None


def _write_after(model: AstModel, node: ast.AST, anchor: ast.AST | None, owner: AstScope) -> str | None:
    """How a write ``node`` in ``owner``'s own code can run after ``anchor``: ``"loop"``,
    ``"after"`` or ``None`` (it cannot)."""
    if anchor is None:
        return None
    calls = _direct_calls(model, anchor, owner)
    if calls:
        found = [_write_after(model, node, call, owner) for call in calls]
        return "loop" if "loop" in found else "after" if "after" in found else None
    for loop in model.ancestors(anchor):
        if loop is owner.node:
            break
        if isinstance(loop, _LOOPS) and (loop is node or contains_node(model, loop, node)):
            return "loop"
    return "after" if model.precedes(anchor, node) and not contains_node(model, node, anchor) else None


def _direct_calls(model: AstModel, anchor: ast.AST, owner: AstScope) -> list[ast.Call]:
    """The calls ``name(...)`` in ``owner``'s own code of the nested function ``anchor``,
    when every other use of its name is such a call; else ``[]``. Uses that ``ast`` keeps as a
    string (a keyword, a parameter, another ``def``, an import, ``global``) are other uses too."""
    if not isinstance(anchor, FUNCTIONS) or anchor.decorator_list:
        return []
    name = anchor.name
    calls: list[ast.Call] = []
    for node in iter_tree(owner.node):
        if node is not anchor and _spells(node, name):
            return []
        if not isinstance(node, ast.Name) or node.id != name:
            continue
        parent = model.parent(node)
        if not isinstance(parent, ast.Call) or parent.func is not node:
            return []
        if _enclosing_function(model, parent) is not owner.node:
            return []
        calls.append(parent)
    return calls


def _spells(node: ast.AST, name: str) -> bool:
    """Whether ``node`` spells ``name`` as a string that is no call's callee (a definition's
    name, a parameter, a keyword, an import, ``global``)."""
    if isinstance(node, (*FUNCTIONS, ast.ClassDef)):
        return node.name == name
    if isinstance(node, (ast.arg, ast.keyword)):
        return node.arg == name
    if isinstance(node, ast.alias):
        return node.name.split(".")[0] == name or node.asname == name
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")[0] == name
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return name in node.names
    if isinstance(node, ast.ExceptHandler):
        return node.name == name
    return False


def _at_run_time(analysis: AstAnalysis, node: ast.AST) -> bool:
    """Whether ``node`` runs after import: in a function, or under a ``__main__`` guard."""
    for ancestor in analysis.model.ancestors(node):
        if isinstance(ancestor, _FUNCTIONS_AND_LAMBDAS):
            return True
        if isinstance(ancestor, ast.If) and "__name__" in analysis.text_of(ancestor.test):
            return True
    return False


def _resolves_to(analysis: AstAnalysis, mutation: AstMutation, scope: AstScope) -> bool:
    bindings = analysis.model.lookup(mutation.base, mutation.scope)
    return bool(bindings) and bindings[0].scope is scope


def _settled_closure(bindings: list[AstBinding], frame: AstFrame, site_analysis: AstAnalysis, site_call: ast.AST | None) -> bool:
    """A closure variable of a function that does not run the checkpoint site, which nothing
    rebinds later."""
    scope = bindings[0].scope
    if scope.kind is not ScopeKind.FUNCTION or any(b.declared_in is not None for b in bindings):
        return False
    if site_call is None:
        return False
    if frame.analysis is site_analysis and any(a is scope.node for a in site_analysis.model.ancestors(site_call)):
        return False  # the function runs the site: a later rebinding may change the value
    return True


def _frame_reads(
    frame: AstFrame,
    site_call: ast.Call,
    site_analysis: AstAnalysis,
    region_functions: set[int] | None = None,
    balanced: set[int] | None = None,
) -> Iterator[AstOuterRead]:
    analysis = frame.analysis
    model = analysis.model
    here = site_call if site_analysis is analysis else None
    written = _written_nodes(frame)
    seen: set[str] = set()
    for node in frame.nodes():
        if type(node) is not ast.Name or id(node) in written or not is_load(model, node):
            continue
        kind, bindings = owner_of(frame, node.id, node)
        if kind is Owner.OUTER:
            if _settled_closure(bindings, frame, site_analysis, site_call):
                continue
            parent = model.parent(node)
            attribute = parent.attr if isinstance(parent, ast.Attribute) and parent.value is node else None
            item = _literal_item(parent, model) if isinstance(parent, ast.Subscript) and parent.value is node else NOT_LITERAL
            why = _changed(bindings, analysis, node.id, here, region_functions, attribute, node, balanced, item)
            if why is not None and node.id not in seen:
                seen.add(node.id)
                yield OuterRead(node, frame, node.id, why)
        elif kind is Owner.DEFINITION and bindings[0].kind is BindingKind.IMPORT:
            parent = model.parent(node)
            if isinstance(parent, ast.Attribute) and parent.value is node and id(parent) not in written:
                why = _module_attribute_changed(site_analysis, analysis, bindings[0], parent.attr, site_call)
                key = f"{node.id}.{parent.attr}"
                if why is not None and key not in seen:
                    seen.add(key)
                    yield OuterRead(parent, frame, key, why)


def _after_call(model: AstModel, node: ast.AST, site_call: ast.AST) -> bool:
    """Whether ``node`` is in the function (or module code) that makes ``site_call`` and can
    run after it."""
    owner = _enclosing_function(model, site_call)
    if _enclosing_function(model, node) is not owner:
        return False
    if owner is None:
        return _module_write_after(model, node, site_call) is not None
    scope = model.scope_of_definition.get(owner)
    return scope is not None and _write_after(model, node, _anchor(model, site_call, scope), scope) is not None


def _module_attribute_changed(
    site_analysis: AstAnalysis,
    analysis: AstAnalysis,
    binding: AstBinding,
    attr: str,
    site_call: ast.AST | None = None,
) -> str | None:
    """``config.FLAG`` read in the region and assigned in the code that makes the checkpoint
    call, after the call or in a loop that also makes it."""
    target = binding.target
    where = site_analysis  # a write elsewhere is not ordered against the call: not judged
    for mutation in where.model.mutations:
        if mutation.kind not in ("attribute", "augmented"):
            continue
        node = mutation.node
        targets = list(node.targets) if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if not any(isinstance(t, ast.Attribute) and t.attr == attr for t in targets):
            continue  # the cheap test first: regions read many module attributes (`torch.cat`)
        if not _at_run_time(where, node):
            continue
        bindings = where.model.lookup(mutation.base, mutation.scope)
        if not bindings or bindings[0].kind is not BindingKind.IMPORT or bindings[0].target != target:
            continue
        if site_call is not None and not _after_call(where.model, node, site_call):
            continue  # before the call (or in code not ordered against it): the forward read it too
        return f"assigned at {_file(where, analysis)}{_row(node)}"
    return None


def _file(where: AstAnalysis, here: AstAnalysis) -> str:
    if where is here:
        return "line "
    from pathlib import Path

    return f"{Path(where.source.path).name}:"


def _written_nodes(frame: AstFrame) -> set[int]:
    """Ids of the Name/Attribute nodes that are (the base of) a write target or of a
    mutating call."""
    out: set[int] = set()
    for node in frame.nodes():
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.comprehension)):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATING_METHODS:
            targets = [node.func.value]
        for target in targets:
            stack = [target]
            while stack:
                current = stack.pop()
                out.add(id(current))
                if isinstance(current, (ast.Attribute, ast.Subscript, ast.Starred)):
                    stack.append(current.value)
                elif isinstance(current, (ast.Tuple, ast.List)):
                    stack.extend(current.elts)
    return out


"""The conditions that guard a checkpoint site, read from the function and class around it.

mm-style backbones checkpoint only ``if self.with_cp``, ``self.with_cp`` being a constructor
parameter that defaults to ``False``; Hugging Face models only ``if self.gradient_checkpointing
and self.training``; others under a config key (``if self.use_checkpoint and i <
self.checkpoint_num[0]``). The code is wrong whenever the guard holds (users turn such switches
on from configs and command lines exactly when memory runs short), so region rules report it and
say the condition in the message (:func:`site_condition`). Only the linted module is read:
whether any file turns the switch on is not asked (a file's findings depend on its own text and
the modules it imports, never on other text of the project).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.semantic.walk import iter_tree

if TYPE_CHECKING:
    from ckptlint.checkpoint.sites.site import CheckpointSite
    from ckptlint.semantic.analysis import ModuleAnalysis

__all__ = [
    "Condition",
    "caller_parts",
    "condition_parts",
    "format_condition",
    "common",
    "guard_conjuncts",
    "helper_parts",
    "joined",
    "local_parts",
    "node_condition",
    "site_condition",
]


#: Longest condition text shown (longer ones end with an ellipsis).
MAX_CONDITION = 80
#: How many calls up the conditions of a function's callers are read.
MAX_CALLER_DEPTH = 3

#: A condition: its conjuncts, each a text in backquotes (a switch followed by its default).
Condition = tuple[str, ...]


class Stated(str):
    """A conjunct's text already written as it is shown, its backquotes included (an ``import``
    statement that "raises `ImportError`"), rather than an expression to show in backquotes."""


def site_condition(analysis: ModuleAnalysis, site: CheckpointSite) -> str:
    """The message suffix that states when ``site`` runs (:func:`node_condition` at its call)."""
    return node_condition(analysis, site.call)


def node_condition(analysis: ModuleAnalysis, node: cst.CSTNode) -> str:
    """The message suffix that states when ``node`` (of ``analysis``) runs, ``"; this code runs
    only when ... and ..."`` (``""`` when no ``if`` guards it): :func:`format_condition` of
    :func:`condition_parts`."""
    return format_condition(condition_parts(analysis, node))


def format_condition(parts: Condition) -> str:
    """``parts`` as a message suffix."""
    return "; this code runs only when " + " and ".join(parts) if parts else ""


def joined(*conditions: Condition) -> Condition:
    """The parts of all of ``conditions``, in order, each once."""
    parts: list[str] = []
    for condition in conditions:
        parts += [part for part in condition if part not in parts]
    return tuple(parts)


def common(conditions: list[Condition]) -> Condition:
    """The parts every one of ``conditions`` holds, in the first one's order (none when
    ``conditions`` is empty): what holds whichever of several ways the code is reached."""
    if not conditions:
        return ()
    first, *rest = conditions
    return tuple(part for part in first if all(part in other for other in rest))


def helper_parts(analysis: ModuleAnalysis, site: CheckpointSite, depth: int = 0) -> Condition:
    """The tests inside the helper that ``site`` (a ``HELPER_CALL`` of ``analysis``) calls
    around the checkpoint calls it may make there, each followed by ``(inside `helper()`)``
    (PixArt's ``auto_grad_checkpoint`` checkpoints only ``if getattr(module,
    'grad_checkpointing', False)``): the parts all those calls share. A flag parameter the call
    decides (:func:`~ckptlint.checkpoint.sites.helper_sites.parameter_arguments`) is not stated as
    the helper's: a literal already chose the call's branch; an expression the call passes
    (``use_cp=self.with_cp``) is stated as the caller's ("`self.with_cp` is true (it
    defaults to ...)"), at the site's own call only. No default of a parameter the call
    passes is named. Helpers of helpers add their own, to :data:`MAX_CALLER_DEPTH` levels;
    none for other sites."""
    from ckptlint.checkpoint.sites.helper_sites import parameter_arguments, passed_parameters
    from ckptlint.checkpoint.sites.switch_defaults import SwitchReader

    summary = site.helper
    if summary is None or not site.alternatives or depth >= MAX_CALLER_DEPTH:
        return ()
    given = parameter_arguments(site, analysis.model)
    passed = passed_parameters(site)
    function, cls = _function_and_class(analysis, site.call)
    caller = SwitchReader(analysis, function, cls)
    suffix = f" (inside `{summary.qualname}()`)"
    ways: list[Condition] = []
    for alternative in site.alternatives:
        inner = alternative.site
        own = _own_parts(summary.analysis, inner.call, frozenset(given), passed)
        translated: list[str] = []
        for conjunct, _ in guard_conjuncts(summary.analysis, inner.call):
            name = _flag_name(conjunct) or ""
            expr = given.get(name)
            if expr is None or depth > 0 or not _keeps_parameter(summary.node, name):
                continue  # decided, a parameter of a helper in between, or not the caller's value there
            truth = not isinstance(conjunct, cst.UnaryOperation)
            text = _shortened(analysis.text_of(expr))
            stated = caller.part(expr) if truth else None
            part = stated or (f"`{text}`" if truth else f"`not ({text})`")
            if part not in translated:
                translated.append(part)
        ways.append(
            joined(tuple(translated), tuple(part + suffix for part in own), helper_parts(summary.analysis, inner, depth + 1))
        )
    return common(ways)


def _keeps_parameter(function: cst.FunctionDef, name: str) -> bool:
    """Whether ``function`` never rebinds its parameter ``name`` (``use_cp = not use_cp``, a
    loop's ``use_cp = True``) and never calls itself (a recursive call passes its own value):
    its tests of ``name`` read what the caller passed."""
    from ckptlint.checkpoint.sites.switch_defaults import rebinds

    own = function.name.value
    return not rebinds(function, name) and not any(
        (isinstance(node, cst.Name) and node.value == own) or (isinstance(node, cst.Attribute) and node.attr.value == own)
        for node in iter_tree(function.body)
    )


def condition_parts(analysis: ModuleAnalysis, node: cst.CSTNode, depth: int = 0, *, parameters_given: bool = False) -> Condition:
    """When ``node`` (of ``analysis``) runs, as texts with their backquotes: first those under
    which every call of its function runs (:func:`caller_parts`), then the conjuncts of the
    tests (statements and expressions, ``elif`` included) around it in its function
    (:func:`guard_conjuncts`), the switches among them first. A switch is ``self.X`` where
    the class's ``__init__`` assigns ``self.X`` once, from a parameter whose default is
    ``False``, ``None``, ``0`` or ``True``, and no other method assigns it, a parameter of the
    function itself with such a default that the function never rebinds, or a command-line
    flag or a config field whose default the module (or a config class it imports) gives
    (:mod:`~ckptlint.checkpoint.sites.switch_defaults`) -- as "`self.with_cp` is true (it
    defaults to `False`)" (a reader sees whether the code runs by default); a comparison of
    such a switch names its default too; the others are as written (a test the ``else``
    branch needs false reads ``not (...)``); a torch-version check that every release
    ckptlint judges passes is left out."""
    own = local_parts(analysis, node, parameters_given=parameters_given)
    function, _ = _function_and_class(analysis, node)
    if function is None or depth >= MAX_CALLER_DEPTH:
        return own
    return joined(caller_parts(analysis, function, depth), _definition_parts(analysis, function), own)


def _definition_parts(analysis: ModuleAnalysis, function: cst.FunctionDef) -> Condition:
    """The tests around ``function``'s own ``def`` (its body runs only if the ``def`` ran, so
    only when they held): none when the ``def`` sits in a loop of its scope and a test reads a
    name or attribute the loop binds (the function an earlier iteration defined under ``i ==
    0`` stays callable when ``i`` is 1); a test the loop leaves alone holds in every iteration
    (diffusers' ``if torch.is_grad_enabled() and self.gradient_checkpointing: def layer_(...)``)."""
    tests: list[cst.BaseExpression] = []
    for ancestor in analysis.model.ancestors(function):
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.Module)):
            break
        if isinstance(ancestor, cst.If):
            tests.append(ancestor.test)
        if isinstance(ancestor, (cst.For, cst.While)):
            bound = _bound_in_loop(analysis, ancestor)
            if any(_reads_bound(analysis, test, bound) for test in tests):
                return ()
    return _own_parts(analysis, function)


def _bound_in_loop(analysis: ModuleAnalysis, loop: cst.For | cst.While) -> set[str]:
    """The names and attribute texts (``self.x``) a loop's target and body bind."""
    from ckptlint.semantic.assignments import BINDING_NODES, assignments

    bound: set[str] = set()
    targets: list[cst.CSTNode] = [loop.target] if isinstance(loop, cst.For) else []
    for node in iter_tree(loop.body):
        if type(node) in BINDING_NODES:
            targets += [a.target for a in assignments(node)]
    for target in targets:
        for node in iter_tree(target):
            if isinstance(node, cst.Name):
                bound.add(node.value)
            elif isinstance(node, cst.Attribute):
                bound.add(analysis.text_of(node))
    return bound


def _reads_bound(analysis: ModuleAnalysis, test: cst.BaseExpression, bound: set[str]) -> bool:
    """Whether ``test`` reads a name or attribute of ``bound`` (:func:`_bound_in_loop`)."""
    for node in iter_tree(test):
        if isinstance(node, cst.Name) and node.value in bound:
            return True
        if isinstance(node, cst.Attribute) and analysis.text_of(node) in bound:
            return True
    return False


def local_parts(analysis: ModuleAnalysis, node: cst.CSTNode, *, parameters_given: bool = False) -> Condition:
    """The parts of the tests around ``node`` in its own function (:func:`condition_parts`
    without the callers'); with ``parameters_given`` (the function was called with arguments
    the caller chose), a test of one of its parameters names no default."""
    if not parameters_given:
        return _own_parts(analysis, node)
    function, cls = _function_and_class(analysis, node)
    if function is None:
        return _own_parts(analysis, node)
    params = list(function.params.params)[1 if cls is not None else 0 :]  # not `self`: its attributes keep theirs
    names = frozenset(p.name.value for p in (*params, *function.params.kwonly_params))
    return _own_parts(analysis, node, plain=names)


def _own_parts(
    analysis: ModuleAnalysis,
    node: cst.CSTNode,
    skipped: frozenset[str] = frozenset(),
    plain: frozenset[str] = frozenset(),
) -> Condition:
    """The parts of the tests around ``node`` in its own function (:func:`condition_parts`
    without the callers'), the switches first; a conjunct that is one of the names
    ``skipped`` (or ``not`` one) is left out, and one that reads a name of ``plain`` (a
    parameter whose value a call gives) is stated as written, without a default."""
    from ckptlint.checkpoint.sites.switch_defaults import SwitchReader

    function, cls = _function_and_class(analysis, node)
    reader = SwitchReader(analysis, function, cls)
    switches: list[str] = []
    others: list[str] = []
    for conjunct, text in guard_conjuncts(analysis, node):
        if _flag_name(conjunct) in skipped:
            continue
        part = reader.part(conjunct) if conjunct is not None and not _reads_any(conjunct, plain) else None
        if part is not None:
            if part not in switches:
                switches.append(part)
            continue
        shown = text if isinstance(text, Stated) else f"`{_shortened(text)}`"
        if shown not in others:
            others.append(shown)
    return joined(tuple(switches), tuple(others))


def _shortened(text: str) -> str:
    """``text`` on one line, cut to :data:`MAX_CONDITION` characters with an ellipsis."""
    text = " ".join(text.split())
    return text[: MAX_CONDITION - 1] + "\u2026" if len(text) > MAX_CONDITION else text


def _reads_any(expr: cst.BaseExpression, names: frozenset[str]) -> bool:
    """Whether ``expr`` reads one of ``names`` as a plain name."""
    return bool(names) and any(isinstance(node, cst.Name) and node.value in names for node in iter_tree(expr))


def _flag_name(conjunct: cst.BaseExpression | None) -> str | None:
    """``flag`` for a conjunct ``flag`` or ``not flag`` (a bare name), else ``None``."""
    if isinstance(conjunct, cst.UnaryOperation) and isinstance(conjunct.operator, cst.Not):
        conjunct = conjunct.expression
    return conjunct.value if isinstance(conjunct, cst.Name) else None


def caller_parts(analysis: ModuleAnalysis, function: cst.FunctionDef, depth: int = 0) -> Condition:
    """The conditions under which every call of ``function`` runs (the switch one call up:
    ``if self.memory_efficient: out = self.call_checkpoint_bottleneck(x)``), when the module
    shows every call (:func:`~ckptlint.checkpoint.sites.callers.calls_of`): the parts all
    the calls' conditions share; none when a call runs unconditionally."""
    from ckptlint.checkpoint.sites.callers import calls_of

    return common([condition_parts(analysis, call, depth + 1) for call in calls_of(analysis, function) or ()])


def _function_and_class(analysis: ModuleAnalysis, node: cst.CSTNode) -> tuple[cst.FunctionDef | None, cst.ClassDef | None]:
    """The ``def`` around ``node`` (``None`` when a lambda is nearer) and the class above it."""
    function: cst.FunctionDef | cst.Lambda | None = None
    for ancestor in analysis.model.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)) and function is None:
            function = ancestor
        elif isinstance(ancestor, cst.ClassDef):
            return (function if isinstance(function, cst.FunctionDef) else None), ancestor
    return (function if isinstance(function, cst.FunctionDef) else None), None


def guard_conjuncts(analysis: ModuleAnalysis, node: cst.CSTNode) -> list[tuple[cst.BaseExpression | None, str]]:
    """The conditions that must hold for ``node`` to run, outermost first, each as (its
    expression, its text): each conjunct of the test of an ``if`` whose body holds the node, and
    ``not (test)`` (no expression) for one whose ``else`` holds it (``not X`` gives ``X``), up to
    the function around the node. An ``if`` without ``else`` before the node in the same block
    whose body is one ``return``, ``continue`` or ``break`` (``if not self.with_cp: return
    self.block(x)``, :func:`_exits`) guards it the same way: the node runs only when its test is
    false. A ``while`` test bounds a loop (``l < num_layers``, ``True``) and is no switch a user
    turns on: it is left out."""
    from ckptlint.checkpoint.sites.options import torch_version_test

    model = analysis.model
    below: cst.CSTNode = node
    found: list[tuple[cst.BaseExpression | None, str]] = []
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            break
        if isinstance(ancestor, (cst.IndentedBlock, cst.Module)) and below in ancestor.body:
            earlier = ancestor.body[: ancestor.body.index(below)]
            exits = [
                statement.test
                for statement in earlier
                if isinstance(statement, cst.If)
                and statement.orelse is None
                and _exits(statement.body)
                and torch_version_test(statement.test, model) is None
            ]
            found[:0] = [conjunct for test in exits for conjunct in _negated(analysis, test)]
        if isinstance(ancestor, cst.ExceptHandler) and below is ancestor.body:
            found[:0] = [(None, _raised(analysis, ancestor))]
        if isinstance(ancestor, (cst.If, cst.IfExp)) and below is not ancestor.test and torch_version_test(ancestor.test, model) is None:
            test = ancestor.test
            if below is ancestor.body:
                found[:0] = [(c, analysis.text_of(c)) for c in _conjuncts(test)]
            elif isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                found[:0] = [(c, analysis.text_of(c)) for c in _conjuncts(test.expression)]
            else:
                found[:0] = [(None, f"not ({analysis.text_of(test)})")]
        below = ancestor
    return found


def _raised(analysis: ModuleAnalysis, handler: cst.ExceptHandler) -> Stated:
    """What must happen for ``handler`` to run: its ``try`` block raises what it catches (the
    statement of a one-statement block in backquotes, "raises `ImportError`"; "the `try` block
    at line N raises ..." for a block of several statements)."""
    kinds = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type] if handler.type is not None else []
    caught = " or ".join(
        f"`{_shortened(analysis.text_of(kind.value if isinstance(kind, cst.Element) else kind))}`" for kind in kinds
    ) or "an exception"
    statement = next((a for a in analysis.model.ancestors(handler) if isinstance(a, cst.Try)), None)
    body = list(statement.body.body) if statement is not None else []
    if len(body) == 1:
        return Stated(f"`{_shortened(analysis.text_of(body[0]))}` raises {caught}")
    row = analysis.range(statement)[0][0] if statement is not None else 0
    return Stated(f"the `try` block at line {row} raises {caught}")


def _negated(analysis: ModuleAnalysis, test: cst.BaseExpression) -> list[tuple[cst.BaseExpression | None, str]]:
    """What must hold when ``test`` is false: ``not X`` gives the conjuncts of ``X``."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return [(c, analysis.text_of(c)) for c in _conjuncts(test.expression)]
    return [(None, f"not ({analysis.text_of(test)})")]


def _exits(body: cst.BaseSuite) -> bool:
    """Whether a suite is one statement that leaves the block: ``return``, ``continue`` or
    ``break`` (the switch idiom ``if not self.with_cp: return self.f(x)``). A longer body (a
    debug or empty-dataset branch that logs, then returns) and ``raise`` (an error check, which
    every line after it implies) are not read as conditions: they would only lengthen messages."""
    statements = list(body.body)
    if len(statements) != 1:
        return False
    only = statements[0]
    if isinstance(only, cst.SimpleStatementLine):
        if len(only.body) != 1:
            return False
        only = only.body[0]
    return isinstance(only, (cst.Return, cst.Continue, cst.Break))


def _conjuncts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _conjuncts(test.left) + _conjuncts(test.right)
    return [test]

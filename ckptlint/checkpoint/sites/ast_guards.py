"""The conditions that guard a checkpoint site, on CPython's ``ast`` (the rules are in
:mod:`ckptlint.checkpoint.sites.guards`' docstring), reading the sites of
:mod:`~ckptlint.checkpoint.sites.ast_sites` and :mod:`~ckptlint.checkpoint.sites.ast_helper_sites`,
the switches of :mod:`~ckptlint.checkpoint.sites.ast_switch_defaults` and the callers of
:mod:`~ckptlint.checkpoint.sites.ast_callers`. Texts are the source's
(:meth:`~ckptlint.semantic.ast_analysis.AstAnalysis.text_of`); statements on one line
(``a = 1; b = 2``) are grouped into one statement line by where they start and end. The
node-free parts (:func:`~ckptlint.checkpoint.sites.guards.format_condition`, ``joined``,
``common``) live in :mod:`~ckptlint.checkpoint.sites.guards`.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ckptlint.checkpoint.sites.ast_options import torch_version_test
from ckptlint.checkpoint.sites.ast_switch_defaults import SwitchReader, block_statements, identifiers, rebinds
from ckptlint.checkpoint.sites.guards import (
    MAX_CALLER_DEPTH,
    MAX_CONDITION,
    Condition,
    Stated,
    common,
    format_condition,
    joined,
)
from ckptlint.semantic.ast_assignments import assignments
from ckptlint.semantic.ast_lines import statement_lines
from ckptlint.semantic.ast_walk import FUNCTIONS

if TYPE_CHECKING:
    from ckptlint.checkpoint.sites.ast_site_builders import AstSite
    from ckptlint.semantic.ast_analysis import AstAnalysis

__all__ = [
    "caller_parts",
    "common",
    "condition_parts",
    "format_condition",
    "guard_conjuncts",
    "helper_parts",
    "joined",
    "local_parts",
    "node_condition",
    "site_condition",
]

AstFunction = ast.FunctionDef | ast.AsyncFunctionDef
#: The statement fields that hold a block.
_BLOCKS = ("body", "orelse", "finalbody")
#: ``try`` with ``except*`` handlers (Python 3.11 on).
_TRY_STAR: tuple[type, ...] = (ast.TryStar,) if hasattr(ast, "TryStar") else ()  # type: ignore[attr-defined,unused-ignore]


def site_condition(analysis: AstAnalysis, site: AstSite) -> str:
    """The message suffix that states when ``site`` runs (:func:`node_condition` at its call)."""
    return node_condition(analysis, site.call)


def node_condition(analysis: AstAnalysis, node: ast.AST) -> str:
    """The message suffix that states when ``node`` (of ``analysis``) runs, ``"; this code
    runs only when ... and ..."`` (``""`` when no ``if`` guards it)."""
    return format_condition(condition_parts(analysis, node))


def helper_parts(analysis: AstAnalysis, site: AstSite, depth: int = 0) -> Condition:
    """The tests inside the helper that ``site`` (a ``HELPER_CALL`` of ``analysis``) calls
    around the checkpoint calls it may make there (with the
    arguments the call binds to the helper's parameters), read in the helper's own module."""
    from ckptlint.checkpoint.sites.ast_helper_bindings import parameter_arguments, passed_parameters
    from ckptlint.checkpoint.sites.ast_helper_summaries import helper_analysis

    summary = site.helper
    if summary is None or not site.alternatives or depth >= MAX_CALLER_DEPTH:
        return ()
    home = helper_analysis(summary, analysis)
    given = parameter_arguments(site, analysis.model)
    passed = passed_parameters(site)
    function, cls = _function_and_class(analysis, site.call)
    caller = SwitchReader(analysis, function, cls)
    suffix = f" (inside `{summary.qualname}()`)"
    ways: list[Condition] = []
    for alternative in site.alternatives:
        inner = alternative.site
        own = _own_parts(home, inner.call, frozenset(given), passed)
        translated: list[str] = []
        for conjunct, _ in guard_conjuncts(home, inner.call):
            name = _flag_name(conjunct) or ""
            expr = given.get(name)
            if expr is None or depth > 0 or not _keeps_parameter(home, summary.node, name):
                continue  # decided, a parameter of a helper in between, or not the caller's value there
            truth = not isinstance(conjunct, ast.UnaryOp)
            text = _shortened(analysis.text_of(expr))
            stated = caller.part(expr) if truth else None
            part = stated or (f"`{text}`" if truth else f"`not ({text})`")
            if part not in translated:
                translated.append(part)
        ways.append(joined(tuple(translated), tuple(part + suffix for part in own), helper_parts(home, inner, depth + 1)))
    return common(ways)


def _keeps_parameter(analysis: AstAnalysis, function: AstFunction, name: str) -> bool:
    """Whether ``function`` never rebinds its parameter ``name`` and never names itself (an
    identifier of its body, attribute names included, spells its name: a recursive call)."""
    own = function.name
    return not rebinds(analysis, function, name) and not any(text == own for _, text in identifiers(function.body))


def condition_parts(analysis: AstAnalysis, node: ast.AST, depth: int = 0, *, parameters_given: bool = False) -> Condition:
    """When ``node`` (of ``analysis``) runs, as texts with their backquotes: its callers' tests (up
    to :data:`~ckptlint.checkpoint.sites.guards.MAX_CALLER_DEPTH` calls up), its definition's,
    then its own."""
    own = local_parts(analysis, node, parameters_given=parameters_given)
    function, _ = _function_and_class(analysis, node)
    if function is None or depth >= MAX_CALLER_DEPTH:
        return own
    return joined(caller_parts(analysis, function, depth), _definition_parts(analysis, function), own)


def _definition_parts(analysis: AstAnalysis, function: AstFunction) -> Condition:
    """The tests around ``function``'s own ``def`` (none when a loop around it binds what one
    of them reads)."""
    tests: list[ast.expr] = []
    below: ast.AST = function
    for ancestor in analysis.model.ancestors(function):
        if isinstance(ancestor, (*FUNCTIONS, ast.Lambda, ast.ClassDef, ast.Module)):
            break
        if isinstance(ancestor, ast.If) and below is not ancestor.test:
            tests.append(ancestor.test)
        if isinstance(ancestor, (ast.For, ast.AsyncFor, ast.While)):
            bound = _bound_in_loop(analysis, ancestor)
            if any(_reads_bound(analysis, test, bound) for test in tests):
                return ()
        below = ancestor
    return _own_parts(analysis, function)


def _bound_in_loop(analysis: AstAnalysis, loop: ast.For | ast.AsyncFor | ast.While) -> set[str]:
    """The names and attribute texts (``self.x``) a loop's target and body (not its ``else``)
    bind, every identifier of a target counted (:func:`identifiers`)."""
    targets: list[ast.AST] = [loop.target] if isinstance(loop, (ast.For, ast.AsyncFor)) else []
    stack: list[ast.AST] = list(loop.body)
    while stack:
        node = stack.pop()
        targets += [a.target for a in assignments(node)]
        stack.extend(ast.iter_child_nodes(node))
    bound: set[str] = set()
    for target in targets:
        for carrier, name in identifiers(target):
            if isinstance(carrier, ast.Attribute):
                bound.add(analysis.text_of(carrier))
            bound.add(name)
    return bound


def _reads_bound(analysis: AstAnalysis, test: ast.expr, bound: set[str]) -> bool:
    """Whether ``test`` reads a name or attribute of ``bound``."""
    for carrier, name in identifiers(test):
        if name in bound:
            return True
        if isinstance(carrier, ast.Attribute) and analysis.text_of(carrier) in bound:
            return True
    return False


def local_parts(analysis: AstAnalysis, node: ast.AST, *, parameters_given: bool = False) -> Condition:
    """The parts of the tests around ``node`` in its own function; with ``parameters_given``,
    a test of one of its parameters names no default."""
    if not parameters_given:
        return _own_parts(analysis, node)
    function, cls = _function_and_class(analysis, node)
    if function is None:
        return _own_parts(analysis, node)
    params = function.args.args[1 if cls is not None else 0 :]  # not `self`: its attributes keep theirs
    names = frozenset(p.arg for p in (*params, *function.args.kwonlyargs))
    return _own_parts(analysis, node, plain=names)


def _own_parts(
    analysis: AstAnalysis,
    node: ast.AST,
    skipped: frozenset[str] = frozenset(),
    plain: frozenset[str] = frozenset(),
) -> Condition:
    """The parts of the tests around ``node`` in its own function, the switches first (see
    ``guards._own_parts``)."""
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


def _reads_any(expr: ast.expr, names: frozenset[str]) -> bool:
    """Whether ``expr`` holds one of ``names`` as an identifier (:func:`identifiers`)."""
    return bool(names) and any(name in names for _, name in identifiers(expr))


def _flag_name(conjunct: ast.expr | None) -> str | None:
    """``flag`` for a conjunct ``flag`` or ``not flag`` (a bare name), else ``None``."""
    if isinstance(conjunct, ast.UnaryOp) and isinstance(conjunct.op, ast.Not):
        conjunct = conjunct.operand
    return conjunct.id if isinstance(conjunct, ast.Name) else None


def caller_parts(analysis: AstAnalysis, function: AstFunction, depth: int = 0) -> Condition:
    """The conditions under which every call of ``function`` runs, when the module shows
    every call (:func:`~ckptlint.checkpoint.sites.ast_callers.calls_of`)."""
    from ckptlint.checkpoint.sites.ast_callers import calls_of

    return common([condition_parts(analysis, call, depth + 1) for call in calls_of(analysis, function) or ()])


def _function_and_class(analysis: AstAnalysis, node: ast.AST) -> tuple[AstFunction | None, ast.ClassDef | None]:
    """The ``def`` around ``node`` (``None`` when a lambda is nearer) and the class above it."""
    function: ast.AST | None = None
    for ancestor in analysis.model.ancestors(node):
        if isinstance(ancestor, (*FUNCTIONS, ast.Lambda)) and function is None:
            function = ancestor
        elif isinstance(ancestor, ast.ClassDef):
            return (function if isinstance(function, FUNCTIONS) else None), ancestor
    return (function if isinstance(function, FUNCTIONS) else None), None


def guard_conjuncts(analysis: AstAnalysis, node: ast.AST) -> list[tuple[ast.expr | None, str]]:
    """The conditions that must hold for ``node`` to run, outermost first, each as (its
    expression, its text; ``None`` for a text without one, such as an exception raised)."""
    model = analysis.model
    below: ast.AST = node
    found: list[tuple[ast.expr | None, str]] = []
    for ancestor in model.ancestors(node):
        block = _block_holding(ancestor, below)
        if block is not None and block_statements(analysis, block):
            earlier = block[: next(i for i, s in enumerate(block) if s is below)]
            exits = [
                statement.test
                for statement in earlier
                if isinstance(statement, ast.If)
                and not statement.orelse
                and _exits(statement.body)
                and torch_version_test(statement.test, model) is None
            ]
            found[:0] = [conjunct for test in exits for conjunct in _negated(analysis, test)]
        if isinstance(ancestor, (*FUNCTIONS, ast.Lambda, ast.ClassDef)):
            break
        if isinstance(ancestor, ast.ExceptHandler) and block is not None and not isinstance(model.parent(ancestor), _TRY_STAR):
            # an ``except*`` handler is not read (as in earlier releases)
            found[:0] = [(None, _raised(analysis, ancestor))]
        if isinstance(ancestor, (ast.If, ast.IfExp)) and below is not ancestor.test and torch_version_test(ancestor.test, model) is None:
            test = ancestor.test
            in_body = ancestor.body is below if isinstance(ancestor, ast.IfExp) else block is ancestor.body
            if in_body:
                found[:0] = [(c, analysis.text_of(c)) for c in _conjuncts(test)]
            else:
                found[:0] = _negated(analysis, test)
        below = ancestor
    return found


def _block_holding(ancestor: ast.AST, below: ast.AST) -> list[ast.stmt] | None:
    """The statement list of ``ancestor`` that holds ``below`` (by identity), if any."""
    if not isinstance(below, ast.stmt):
        return None
    for name in _BLOCKS:
        block = getattr(ancestor, name, None)
        if type(block) is list and any(s is below for s in block):
            return block
    return None


def _raised(analysis: AstAnalysis, handler: ast.ExceptHandler) -> Stated:
    """What must happen for ``handler`` to run: its ``try`` block raises what it catches."""
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type] if handler.type is not None else []
    caught = " or ".join(f"`{_shortened(analysis.text_of(kind))}`" for kind in kinds) or "an exception"
    statement = next((a for a in analysis.model.ancestors(handler) if isinstance(a, ast.Try)), None)
    body = statement.body if statement is not None else []
    lines = statement_lines(analysis.model, body) if block_statements(analysis, body) else [[s] for s in body]  # `try: a; b`: two
    if len(lines) == 1:
        first, last = lines[0][0], lines[0][-1]
        text = analysis.source.text[analysis.offsets(first)[0] : analysis.offsets(last)[1]]
        return Stated(f"`{_shortened(text)}` raises {caught}")
    row = analysis.start(statement)[0] if statement is not None else 0
    return Stated(f"the `try` block at line {row} raises {caught}")


def _negated(analysis: AstAnalysis, test: ast.expr) -> list[tuple[ast.expr | None, str]]:
    """What must hold when ``test`` is false: ``not X`` gives the conjuncts of ``X``."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return [(c, analysis.text_of(c)) for c in _conjuncts(test.operand)]
    return [(None, f"not ({analysis.text_of(test)})")]


def _exits(body: list[ast.stmt]) -> bool:
    """Whether a block is one statement that leaves it: ``return``, ``continue`` or
    ``break`` (see ``guards._exits``)."""
    return len(body) == 1 and isinstance(body[0], (ast.Return, ast.Continue, ast.Break))


def _conjuncts(test: ast.expr) -> list[ast.expr]:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [c for value in test.values for c in _conjuncts(value)]
    return [test]

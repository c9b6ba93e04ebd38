"""The answers of the analyses CKP201/CKP202 share on ``ast`` (``ast_outer_state``,
``ast_write_exemptions``, ``ast_end_resets``) that the golden answers of
``test_ast_outer_state.py``, ``test_ast_write_exemptions.py`` and ``test_ast_end_resets.py``
record (they were compared with libcst's while it lived), for every node of every frame of a
region, regions built by hand (:func:`hand_regions`) or by the region builder, keyed by region,
frame, kind and 1-based ``(row, col)`` range (a node inside an f-string left out; a
parenthesized tuple's or generator's range read inside its parentheses, as libcst's was):
see ``answers``."""

from __future__ import annotations

import ast
import io
import re
import tokenize
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from ckptlint.checkpoint.analyses import ast_end_resets, ast_outer_state, ast_write_exemptions
from ckptlint.checkpoint.analyses.ast_outer_state import OuterWrite
from ckptlint.checkpoint.evaluator import ast_class_summary
from ckptlint.checkpoint.evaluator.ast_region import AstFrame, AstRegion
from ckptlint.checkpoint.evaluator.ast_regions import AstRegionBuilder
from ckptlint.checkpoint.evaluator.denotations import Context
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.semantic.ast_analysis import AstAnalysis, parse_ast
from ckptlint.semantic.project import AstProject
from ckptlint.text.source import SourceFile

__all__ = ["answers", "hand_regions", "outer_state_answers", "region_answers", "yes_counts"]

Position = tuple[int, int]
Key = tuple[Any, ...]

#: How deep the hand-built regions follow calls below their first frame.
LEVELS = 2


def _functions_in_order(analysis: AstAnalysis) -> list[ast.AST]:
    """Every ``def`` and lambda of the module, a ``def`` before what it holds (its
    decorators too), in the order of the text."""
    found = []
    for node in ast.walk(analysis.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node, *node.decorator_list], key=lambda n: (n.lineno, n.col_offset))
            found.append(((first.lineno, first.col_offset), 0, node))
        elif isinstance(node, ast.Lambda):
            found.append(((node.lineno, node.col_offset), 1, node))
    return [node for *_, node in sorted(found, key=lambda item: (item[0], item[1], _def_depth(analysis, item[2])))]


def _def_depth(analysis: AstAnalysis, node: ast.AST) -> int:
    return sum(1 for _ in analysis.model.ancestors(node))


def hand_regions(analysis: AstAnalysis) -> list[AstRegion]:
    """A region for every ``def`` and lambda of the module: its first frame runs it (depth 0),
    with the methods it calls as ``self.m(...)`` and the module's functions it calls by name
    below it (two levels, one frame per function; ``caller``/``invocation``/``reached_from``
    set); a method's frames get its class's summary as ``self_class``."""
    model = analysis.model
    infos: dict[int, Any] = {}
    module_functions: dict[str, ast.AST] = {}
    for statement in analysis.tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            module_functions[statement.name] = statement

    def ctx_of(function: ast.AST) -> Context:
        parent = model.parent(function)
        if isinstance(parent, ast.ClassDef) and not isinstance(function, ast.Lambda):
            if id(parent) not in infos:
                infos[id(parent)] = ast_class_summary.summarise_class(analysis, parent)
            return Context(analysis, infos[id(parent)])
        return Context(analysis)

    regions = []
    for node in _functions_in_order(analysis):
        region = AstRegion(None, analysis, resolved=True)  # type: ignore[arg-type]
        first = AstFrame(node, ctx_of(node), 0, "entry", reached_from=[(None, None)])  # type: ignore[arg-type]
        region.frames.append(first)
        queue = [first]
        while queue:
            frame = queue.pop(0)
            if frame.depth >= LEVELS:
                continue
            self_name = frame.self_parameter()
            for inner in list(frame.nodes()):
                if not isinstance(inner, ast.Call):
                    continue
                callee = None
                func = inner.func
                info = frame.ctx.self_class
                via = None
                if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == self_name:
                    via = func.attr
                    callee = info.methods.get(via) if info is not None else None
                elif isinstance(func, ast.Name):
                    via = func.id
                    callee = module_functions.get(via)
                if callee is None or via is None:
                    continue
                known = region.frames_of(callee)
                if known:
                    known[0].reached_from.append((frame, inner))
                    continue
                reached = AstFrame(
                    callee, ctx_of(callee), frame.depth + 1, via, caller=frame, invocation=inner, reached_from=[(frame, inner)]  # type: ignore[arg-type]
                )
                region.frames.append(reached)
                queue.append(reached)
        regions.append(region)
    return regions


class _Side:
    """The readings: node categories, ranges and the analyses' functions."""

    #: The modules answering (outer_state, write_exemptions, end_resets) and f-string nodes.
    modules: tuple[Any, Any, Any]
    fstrings: tuple[type, ...]

    def __init__(self, analysis: Any) -> None:
        self.analysis = analysis
        self.module, self.exemptions, self.end_resets = self.modules
        self.in_fstring = _fstring_test(analysis.model, self.fstrings)

    def range(self, node: object) -> tuple[Position, Position]:
        return self.analysis.range(node)  # type: ignore[no-any-return]

    def binding(self, binding: Any) -> tuple:
        return (binding.kind.value, binding.name, binding.scope.kind.value, binding.scope.qualname)


class _AstSide(_Side):
    modules = (ast_outer_state, ast_write_exemptions, ast_end_resets)
    fstrings = (ast.JoinedStr,)

    def range(self, node: object) -> tuple[Position, Position]:
        """``ast``'s range, inside the parentheses of a parenthesized tuple or generator (libcst's)."""
        analysis = self.analysis
        if isinstance(node, (ast.Tuple, ast.GeneratorExp)):
            start, end = analysis.offsets(node)
            text = analysis.source.text
            if text[start] == "(" and text[end - 1] == ")" and _closing(text[start:end]) == end - start - 1:
                inner = re.sub(r"#[^\r\n]*", lambda m: " " * len(m.group()), text[start + 1 : end - 1])
                first = start + 1 + len(inner) - len(inner.lstrip())
                last = end - 1 - (len(inner) - len(inner.rstrip()))
                return analysis.source.position(first), analysis.source.position(last)
        return analysis.range(node)  # type: ignore[no-any-return]

    def category(self, node: object) -> str | None:
        if isinstance(node, ast.Slice) or (isinstance(node, ast.Starred) and isinstance(self.analysis.model.parent(node), ast.Call)):
            return None  # no expression in libcst (a slice, a call's ``*args``)
        parent = self.analysis.model.parent(node)
        bare = isinstance(node, ast.Tuple) and self.range(node) == self.analysis.range(node)
        if bare and isinstance(parent, ast.Subscript) and parent.slice is node:
            return None  # `x[a, b]`: libcst's subscript elements, no tuple
        if isinstance(node, ast.Name):
            return "name"
        if isinstance(node, ast.Constant) and any(node.value is c for c in (True, False, None)):
            return "name"  # a name in libcst's trees
        if isinstance(node, ast.Attribute):
            return "attribute"
        if isinstance(node, (ast.Subscript, ast.Tuple, ast.List, ast.Starred)):
            return "target"
        return "expr" if isinstance(node, ast.expr) else None

    def root_name(self, node: object) -> str | None:
        while isinstance(node, ast.Attribute):
            node = node.value
        return node.id if isinstance(node, ast.Name) else None

    def compound(self, node: object) -> bool:
        return isinstance(node, ast.stmt) and (hasattr(node, "body") or isinstance(node, ast.Match))


def _closing(text: str) -> int | None:
    """Where the parenthesis that opens ``text`` closes (strings and comments skipped)."""
    depth = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.OP and token.string in "([{":
                depth += 1
            elif token.type == tokenize.OP and token.string in ")]}":
                depth -= 1
                if depth == 0:
                    row, column = token.start
                    return sum(len(line) for line in text.splitlines(keepends=True)[: row - 1]) + column
    except (tokenize.TokenError, SyntaxError):
        return None
    return None


def _outer_state_answers(side: _Side, frame: Any) -> Iterator[tuple[Key, object]]:
    """Every answer of the outer-state functions for the nodes of ``frame``."""
    module = side.module
    model = side.analysis.model
    scope = module.frame_scope(frame)
    yield ("frame",), (None if scope is None else (scope.kind.value, scope.qualname), module.frame_self_name(frame))
    nodes = [n for n in frame.nodes() if side.category(n) is not None and not side.in_fstring(n)]
    compounds = [n for n in frame.nodes() if side.compound(n)]
    compounds = compounds if len(compounds) <= 40 else []
    # the code of what holds an f-string is left out: Python 3.12 places its parts apart
    fstrings = [n for n in frame.nodes() if isinstance(n, ast.JoinedStr)]
    holding = {id(a) for f in fstrings for a in model.ancestors(f)} | {id(f) for f in fstrings}
    for node in nodes:
        category = side.category(node)
        where = (category, side.range(node))
        if id(node) not in holding:
            yield ("code", *where), module.node_code(side.analysis, node)
            yield ("text", *where), module.frame_text(frame, node)
        if category != "expr":
            yield ("store", *where), module.is_store(model, node)
        if category == "name" and side.root_name(node) is not None:
            yield ("load", *where), module.is_load(model, node)
        root = side.root_name(node)
        if root is not None:
            owner, bindings = module.owner_of(frame, root, node)
            yield ("owner", *where), (owner.value, [side.binding(b) for b in bindings])
        if compounds:
            yield ("contains", *where), [side.range(c) for c in compounds if module.contains_node(model, c, node)]


_ASSIGNMENTS = ("Assign", "AnnAssign", "AugAssign")


def _write_exemption_answers(side: _Side, frame: Any) -> Iterator[tuple[Key, object]]:
    """Every answer of the write exemptions for the statements, calls, names and ``if``s of
    ``frame``."""
    we = side.exemptions
    on_ast = True
    analysis = side.analysis
    model = analysis.model

    def code(node: object) -> str:
        return ast_outer_state.node_code(analysis, node)  # type: ignore[arg-type]

    yield ("rng",), we.sets_rng_state(frame)
    function_body = frame.function.body
    for node in frame.nodes():
        if side.in_fstring(node):
            continue
        kind = type(node).__name__
        if kind in _ASSIGNMENTS:
            where = ("statement", kind, side.range(node)[0])
            if kind == "Assign":
                targets = list(node.targets) if on_ast else [t.target for t in node.targets]
            else:
                targets = [node.target]
            text = code(targets[0])
            yield ("constant", *where), we.constant_write(frame, node)
            if getattr(node, "value", None) is not None:
                yield ("constant key", *where), repr(we.constant_key(node.value, model))
            yield ("shape", *where), we.shape_bookkeeping(node)
            yield ("memo fill", *where), we.memo_fill(analysis if on_ast else model, node)
            yield ("conversion", *where), we.idempotent_conversion(analysis, node, text) if on_ast else we.idempotent_conversion(node, text)
            yield ("restored", *where), we.saved_and_restored(frame, text)
            yield ("once", *where), [we.written_once(frame, node, target) for target in targets]
            yield ("after saved", *where), we.after_last_saved(frame, node, True)
            yield ("phase", *where), (we.phase_guarded(frame, node), we.phase_guarded(frame, node, reentrant=True))
            if kind == "AugAssign":
                yield ("counter", *where), we.diagnostic_counter(frame, node)
        elif kind == "Call":
            where = ("call", side.range(node))
            yield ("phase", *where), (we.phase_guarded(frame, node), we.phase_guarded(frame, node, reentrant=True))
            yield ("after saved", *where), we.after_last_saved(frame, node, True)
        elif kind in ("Name", "Attribute"):
            if kind == "Name" or side.root_name(node) is not None:
                guard = we.exit_guard(model, node)
                yield ("exit guard", kind, side.range(node)), None if guard is None else side.range(guard.test)
        elif kind == "If":
            where = ("if", side.range(node.test))
            test = code(node.test)
            yield ("exit body", *where), we.exit_guard_body(model, node) if on_ast else we.exit_guard_body(node)
            if on_ast:
                assigned = (we.assigns_in(analysis, node.body, test), we.assigns_in(analysis, function_body, test))
            else:
                assigned = (we.assigns_in(node.body, test), we.assigns_in(function_body, test))
            yield ("assigns", *where), assigned


def _end_reset_answers(side_of: Callable[[Any], _Side], region: Any) -> Iterator[tuple[Key, object]]:
    """The resets of the region (frame, attribute, line index, constant) and, for every
    assignment and method call of its frames, whether they cover it."""
    module = side_of(region.analysis).end_resets
    resets = module.end_resets(region)
    numbers = {id(frame): number for number, frame in enumerate(region.frames)}
    yield ("resets",), [(numbers[id(r.frame)], r.attr, r.index, repr(module._reset_value(r))) for r in resets._resets]
    for number, frame in enumerate(region.frames):
        side = side_of(frame.analysis)
        for node in frame.nodes():
            kind = type(node).__name__
            if kind in _ASSIGNMENTS or (kind == "Call" and type(node.func).__name__ == "Attribute"):
                write = OuterWrite(node, frame, "")
                yield ("covers", number, kind, side.range(node)), resets.covers(write)


def _fstring_test(model: Any, kinds: tuple[type, ...]) -> Callable[[Any], bool]:
    memo: dict[int, bool] = {}

    def inside(node: Any) -> bool:
        key = id(node)
        if key not in memo:
            memo[key] = any(isinstance(a, kinds) for a in model.ancestors(node))
        return memo[key]

    return inside


def answers(regions: list[Any], shown: Callable[[str], str] = str) -> dict[Key, object]:
    """Every answer for ``regions``, keyed by region, frame, kind and where (``shown`` writes
    the file of a balanced call)."""
    sides: dict[int, _Side] = {}

    def side_of(analysis: Any) -> _Side:
        if id(analysis) not in sides:
            sides[id(analysis)] = _AstSide(analysis)
        return sides[id(analysis)]

    found: dict[Key, object] = {}
    for index, region in enumerate(regions):
        balanced = side_of(region.analysis).exemptions.balanced_calls(region)
        calls = {
            (shown(frame.analysis.source.path), side_of(frame.analysis).range(node))
            for frame in region.frames
            for node in frame.nodes()
            if id(node) in balanced
        }
        found[(index, -1, "balanced")] = sorted(calls)
        for key, value in _end_reset_answers(side_of, region):
            found[(index, -1, *key)] = value
        for number, frame in enumerate(region.frames):
            side = side_of(frame.analysis)
            for key, value in _outer_state_answers(side, frame):
                found[(index, number, *key)] = value
            for key, value in _write_exemption_answers(side, frame):
                found[(index, number, *key)] = value
    return found


def _says_yes(value: object) -> bool:
    if isinstance(value, (tuple, list)):
        return any(_says_yes(v) for v in value)
    return value not in (None, False, "None", "")


def outer_state_answers(text: str, module_name: str = "pkg.mod", is_package: bool = False) -> dict[Key, object]:
    """Every answer for the hand-built regions of ``text`` (read as ``mod.py``)."""
    source = SourceFile(path="mod.py", text=text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        analysis = parse_ast(source, module_name, is_package)
    if analysis is None:
        return {}
    return answers(hand_regions(analysis))


def region_answers(
    text: str,
    module_name: str = "pkg.mod",
    is_package: bool = False,
    path: str = "<compared>",
    loader: AstProject | None = None,
    shown: Callable[[str], str] = str,
) -> dict[Key, object]:
    """Every answer for the regions the builder makes of the sites of ``text``; with
    ``loader`` frames follow calls into other modules of the tree."""
    source = SourceFile(path, text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        analysis = parse_ast(source, module_name, is_package)
    if analysis is None:
        return {}
    analysis.project = loader
    builder = AstRegionBuilder(loader)
    found = answers([builder.region(site, analysis) for site in ast_site_index(analysis).sites], shown)
    analysis.release()
    return found


def yes_counts(found: dict[Key, object]) -> Counter[str]:
    """How many answers of each kind say yes."""
    return Counter(key[2] for key, value in found.items() if _says_yes(value))

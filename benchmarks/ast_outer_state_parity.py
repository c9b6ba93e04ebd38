"""The analyses CKP201/CKP202 share, on CPython's ``ast`` against libcst's: the twins of
``outer_state``, ``write_exemptions`` and ``end_resets`` answer the same for every node of
every frame of a region, regions built by hand or by the region builders.

For one text, :func:`compare` parses it both ways and builds, for every ``def`` and lambda
of the module, a region whose first frame runs it (depth 0) with the methods it calls as
``self.m(...)`` and the module's functions it calls by name below it (two levels, one frame
per function, ``caller``/``invocation``/``reached_from`` set): libcst's
:class:`~ckptlint.checkpoint.evaluator.region.Region` first, then the same
:class:`~ckptlint.checkpoint.evaluator.ast_region.AstRegion` (functions matched by where
their name starts, calls by their range); a method's frames get its class's summary as
``self_class`` (one record per class and side). :func:`compare_regions` takes instead the
regions ``RegionBuilder`` and ``AstRegionBuilder`` make of the module's sites (paired by the
range of their call; with a loader per side, frames in other modules of the tree). Each side
then answers, keyed by region, frame, kind and 1-based ``(line, column)`` range (a node inside
an f-string is left out: ``ast`` before 3.12 gives its pieces the whole string's range; a
parenthesized tuple's or generator's range is read inside its parentheses, where libcst's is):

- ``frame``: the frame's scope (kind, qualified name) and ``self`` name;
- ``code``/``text``: ``node_code`` and ``frame_text`` of every expression;
- ``store``: ``is_store`` of every name, attribute, subscript, tuple, list and starred;
- ``load``: ``is_load`` of every name (``True``/``False``/``None`` are names in libcst);
- ``owner``: ``owner_of`` of every name and of every attribute chain on a name (its root), as
  the owner and the bindings' (kind, name, scope);
- ``contains``: for every node, the ranges of the frame's compound statements that
  ``contains_node`` says hold it (frames of at most 40 of them);
- ``balanced`` (per region): the calls ``balanced_calls`` returns; ``rng`` (per frame):
  ``sets_rng_state``;
- for every ``=``, ``+=`` and annotated assignment: ``constant_write``, ``constant_key`` of its
  value, ``shape_bookkeeping``, ``memo_fill``, ``idempotent_conversion`` and
  ``saved_and_restored`` of its first target's code, ``written_once`` of each target,
  ``after_last_saved`` (early stop on), ``phase_guarded`` (plain and reentrant) and, for
  ``+=``, ``diagnostic_counter``; for every call, ``phase_guarded`` and ``after_last_saved``;
- ``exit guard``: ``exit_guard`` of every name and attribute chain (the guard's test range);
- for every ``if``: ``exit_guard_body``, and ``assigns_in`` of its body and of the function's
  body for the code of its test;
- ``resets`` (per region): ``end_resets``' resets (frame index, attribute, line, constant);
  ``covers``: for every assignment and method call, whether the resets cover it.

An answer only libcst gives is one about a node ``ast`` has not (an attribute's or a
keyword's name, the inner ``a and b`` of ``a and b and c``): it is counted apart, not a
mismatch. Over a folder (``python benchmarks/ast_outer_state_parity.py [--regions] TREE
[TREE ...]``): the gated files (``parity_files``), the regions, frames and items compared, the
mismatches and each side's CPU time answering.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import re
import sys
import time
import tokenize
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import libcst as cst

from ckptlint.checkpoint.analyses import (
    ast_end_resets,
    ast_outer_state,
    ast_write_exemptions,
    end_resets,
    outer_state,
    write_exemptions,
)
from ckptlint.checkpoint.evaluator import ast_class_summary, class_summary
from ckptlint.checkpoint.evaluator.ast_region import AstFrame, AstRegion
from ckptlint.checkpoint.evaluator.ast_regions import AstRegionBuilder
from ckptlint.checkpoint.evaluator.denotations import Context
from ckptlint.checkpoint.evaluator.region import Frame, Region
from ckptlint.checkpoint.evaluator.regions import RegionBuilder
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.checkpoint.sites.sites import site_index
from ckptlint.semantic.analysis import ModuleAnalysis
from ckptlint.semantic.ast_analysis import AstAnalysis, parse_ast
from ckptlint.semantic.parse import parse_module_unvalidated, parse_source
from ckptlint.semantic.project import AstProject, Project, module_name_for
from ckptlint.semantic.walk import iter_tree
from ckptlint.text.source import SourceFile

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling parity_files

from ast_site_index_parity import tree_projects
from parity_files import comparable_files

Position = tuple[int, int]
Key = tuple[Any, ...]

#: How deep the hand-built regions follow calls below their first frame.
LEVELS = 2


@dataclass
class Comparison:
    """What :func:`compare` compared (items per kind), the answers only libcst gave (nodes
    ``ast`` has not), the mismatches and each side's seconds of CPU answering."""

    items: Counter[str] = field(default_factory=Counter)
    #: the answers, per kind, that say yes (a true flag, a guard, a key, calls found)
    yes: Counter[str] = field(default_factory=Counter)
    libcst_only: Counter[str] = field(default_factory=Counter)
    mismatches: list[str] = field(default_factory=list)
    regions: int = 0
    frames: int = 0
    cst_seconds: float = 0.0
    ast_seconds: float = 0.0

    def add(self, other: Comparison) -> None:
        for name in ("items", "yes", "libcst_only", "mismatches", "regions", "frames", "cst_seconds", "ast_seconds"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def of(self, kinds: set[str]) -> list[str]:
        """The mismatches of these kinds of answers."""
        return [m for m in self.mismatches if m.split(" ", 1)[0] in kinds]


# ------------------------------------------------------------------ regions by hand
def _cst_def_key(analysis: ModuleAnalysis, node: cst.CSTNode) -> Position:
    return analysis.range(node.name if isinstance(node, cst.FunctionDef) else node)[0]


def _ast_def_key(analysis: AstAnalysis, node: ast.AST) -> Position:
    if isinstance(node, ast.Lambda):
        return analysis.start(node)
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    line = analysis.source.line(node.lineno)
    column = len(line.encode("utf-8")[: node.col_offset].decode("utf-8", "replace"))
    index = line.index(node.name, line.index("def", column) + 3)
    return (node.lineno, index + 1)


def _cst_regions(analysis: ModuleAnalysis) -> list[Region]:
    """A region for every ``def`` and lambda of the module (see the module's docstring)."""
    model = analysis.model
    infos: dict[int, Any] = {}
    module_functions: dict[str, cst.FunctionDef] = {}
    for statement in analysis.module.body:
        if isinstance(statement, cst.FunctionDef):
            module_functions[statement.name.value] = statement

    def ctx_of(function: cst.CSTNode) -> Context:
        parent = model.parent(model.parent(function)) if isinstance(function, cst.FunctionDef) else None
        if isinstance(parent, cst.ClassDef):
            if id(parent) not in infos:
                infos[id(parent)] = class_summary.summarise_class(analysis, parent)
            return Context(analysis, infos[id(parent)])
        return Context(analysis)

    regions = []
    for node in iter_tree(analysis.module):
        if not isinstance(node, (cst.FunctionDef, cst.Lambda)):
            continue
        region = Region(None, analysis, resolved=True)  # type: ignore[arg-type]
        first = Frame(node, ctx_of(node), 0, "entry", reached_from=[(None, None)])
        region.frames.append(first)
        queue = [first]
        while queue:
            frame = queue.pop(0)
            if frame.depth >= LEVELS:
                continue
            self_name = frame.self_parameter()
            for inner in list(frame.nodes()):
                if not isinstance(inner, cst.Call):
                    continue
                callee = None
                func = inner.func
                info = frame.ctx.self_class
                via = None
                if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == self_name:
                    via = func.attr.value
                    callee = info.methods.get(via) if info is not None else None
                elif isinstance(func, cst.Name):
                    via = func.value
                    callee = module_functions.get(via)
                if callee is None or via is None:
                    continue
                known = region.frames_of(callee)
                if known:
                    known[0].reached_from.append((frame, inner))
                    continue
                reached = Frame(callee, ctx_of(callee), frame.depth + 1, via, caller=frame, invocation=inner, reached_from=[(frame, inner)])
                region.frames.append(reached)
                queue.append(reached)
        regions.append(region)
    return regions


def _ast_regions(analysis: AstAnalysis, cst_analysis: ModuleAnalysis, regions: list[Region]) -> list[AstRegion]:
    """The same regions on ``ast``: functions matched by where their name starts, calls by range."""
    functions = {
        _ast_def_key(analysis, node): node
        for node in ast.walk(analysis.tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    }
    calls = {analysis.range(node): node for node in ast.walk(analysis.tree) if isinstance(node, ast.Call)}
    infos: dict[int, Any] = {}

    def ctx_of(function: ast.AST) -> Context:
        parent = analysis.model.parent(function)
        if isinstance(parent, ast.ClassDef) and not isinstance(function, ast.Lambda):
            if id(parent) not in infos:
                infos[id(parent)] = ast_class_summary.summarise_class(analysis, parent)
            return Context(analysis, infos[id(parent)])
        return Context(analysis)

    out = []
    for region in regions:
        twin = AstRegion(None, analysis, resolved=True)  # type: ignore[arg-type]
        made: dict[int, AstFrame] = {}
        for frame in region.frames:
            function = functions[_cst_def_key(cst_analysis, frame.function)]
            caller = made[id(frame.caller)] if frame.caller is not None else None
            invocation = calls[cst_analysis.range(frame.invocation)] if frame.invocation is not None else None
            made[id(frame)] = AstFrame(function, ctx_of(function), frame.depth, frame.via, caller=caller, invocation=invocation)  # type: ignore[arg-type]
            twin.frames.append(made[id(frame)])
        for frame in region.frames:
            made[id(frame)].reached_from = [
                (made[id(caller)] if caller is not None else None, calls[cst_analysis.range(call)] if call is not None else None)
                for caller, call in frame.reached_from
            ]
        out.append(twin)
    return out


# ------------------------------------------------------------------ answers
class _Side:
    """One side's readings: node categories, ranges and the analyses' functions."""

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


class _CstSide(_Side):
    modules = (outer_state, write_exemptions, end_resets)
    fstrings = (cst.FormattedString,)

    def category(self, node: object) -> str | None:
        if isinstance(node, cst.Name):
            return "name"
        if isinstance(node, cst.Attribute):
            return "attribute"
        if isinstance(node, (cst.Subscript, cst.Tuple, cst.List, cst.StarredElement)):
            return "target"
        return "expr" if isinstance(node, cst.BaseExpression) else None

    def root_name(self, node: object) -> str | None:
        while isinstance(node, cst.Attribute):
            node = node.value
        return node.value if isinstance(node, cst.Name) else None

    def compound(self, node: object) -> bool:
        return isinstance(node, cst.BaseCompoundStatement)


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
    for node in nodes:
        category = side.category(node)
        where = (category, side.range(node))
        yield ("code", *where), module.node_code(side.analysis, node) if module is ast_outer_state else module.node_code(node)
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
    on_ast = isinstance(side, _AstSide)
    analysis = side.analysis
    model = analysis.model

    def code(node: object) -> str:
        return ast_outer_state.node_code(analysis, node) if on_ast else outer_state.node_code(node)  # type: ignore[arg-type]

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
                write = outer_state.OuterWrite(node, frame, "")
                yield ("covers", number, kind, side.range(node)), resets.covers(write)


def _fstring_test(model: Any, kinds: tuple[type, ...]) -> Callable[[Any], bool]:
    memo: dict[int, bool] = {}

    def inside(node: Any) -> bool:
        key = id(node)
        if key not in memo:
            memo[key] = any(isinstance(a, kinds) for a in model.ancestors(node))
        return memo[key]

    return inside


def _answers(kind: type[_Side], regions: list[Any], seconds: list[float]) -> dict[Key, object]:
    """Every answer of one side for ``regions``, keyed as the module's docstring says."""
    sides: dict[int, _Side] = {}

    def side_of(analysis: Any) -> _Side:
        if id(analysis) not in sides:
            sides[id(analysis)] = kind(analysis)
        return sides[id(analysis)]

    found: dict[Key, object] = {}
    began = time.process_time()
    for index, region in enumerate(regions):
        balanced = side_of(region.analysis).exemptions.balanced_calls(region)
        calls = {
            (frame.analysis.source.path, side_of(frame.analysis).range(node))
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
    seconds.append(time.process_time() - began)
    return found


def _says_yes(value: object) -> bool:
    if isinstance(value, (tuple, list)):
        return any(_says_yes(v) for v in value)
    return value not in (None, False, "None", "")


def truthy(texts: list[str]) -> Counter[str]:
    """How many answers of each kind say yes over ``texts``."""
    total: Counter[str] = Counter()
    for text in texts:
        total.update(compare(text, "pkg.mod").yes)
    return total


def compare(text: str, module_name: str = "", is_package: bool = False) -> Comparison:
    """Both sides' answers for ``text`` (see the module's docstring)."""
    comparison = Comparison()
    source = SourceFile(path="mod.py", text=text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        analysis = parse_source(source, module_name, is_package)
        twin = parse_ast(source, module_name, is_package)
    if twin is None:
        return comparison
    regions = _cst_regions(analysis)
    return _compared(comparison, regions, _ast_regions(twin, analysis, regions))


def compare_regions(
    text: str,
    module_name: str = "",
    is_package: bool = False,
    path: str = "<compared>",
    project: Project | None = None,
    loader: AstProject | None = None,
) -> Comparison:
    """Both sides' answers for the regions the builders make of the sites of ``text``
    (``RegionBuilder(project).region`` against ``AstRegionBuilder(loader).region``, sites
    paired by the range of their call as ``ast_regions_parity`` pairs them); with ``project``
    and ``loader``, frames follow calls into other modules of the tree."""
    comparison = Comparison()
    source = SourceFile(path, text)
    analysis = ModuleAnalysis(source, parse_module_unvalidated(text), module_name, is_package)
    analysis.project = project
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        twin = parse_ast(source, module_name, is_package)
    if twin is None:
        return comparison
    twin.project = loader
    waiting: dict[tuple, list] = {}
    for site in ast_site_index(twin).sites:
        waiting.setdefault(twin.range(site.call), []).append(site)
    regions, twins = [], []
    builder, ast_builder = RegionBuilder(project), AstRegionBuilder(loader)
    for site in site_index(analysis).sites:
        paired = waiting.get(analysis.range(site.call))
        if paired:
            regions.append(builder.region(site, analysis))
            twins.append(ast_builder.region(paired.pop(0), twin))
    comparison = _compared(comparison, regions, twins)
    analysis.release()
    twin.release()
    return comparison


def _compared(comparison: Comparison, regions: list[Any], twins: list[Any]) -> Comparison:
    """``comparison`` with both sides' answers for these regions (in pairs) compared."""
    comparison.regions += len(regions)
    comparison.frames += sum(len(r.frames) for r in regions)
    seconds: list[float] = []
    expected = _answers(_CstSide, regions, seconds)
    got = _answers(_AstSide, twins, seconds)
    comparison.cst_seconds, comparison.ast_seconds = seconds
    for key, value in got.items():
        kind = key[2]
        comparison.items[kind] += 1
        comparison.yes[kind] += _says_yes(value)
        if key not in expected:
            comparison.mismatches.append(f"{kind} only in ast: {key} = {value!r}")
        elif expected[key] != value:
            comparison.mismatches.append(f"{kind} differs at {key}: libcst {expected[key]!r}, ast {value!r}")
    for key in expected.keys() - got.keys():
        comparison.libcst_only[key[2]] += 1
    return comparison


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--every-file", action="store_true", help="not only the files the gate lets through")
    parser.add_argument("--max-files", type=int, default=None, help="the first N files of each tree")
    parser.add_argument("--regions", action="store_true", help="the builders' regions of the sites, not regions by hand")
    args = parser.parse_args(argv)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    total = Comparison()
    files = 0
    for root in args.trees:
        found, _ = comparable_files(root, args.every_file)
        project, loader = tree_projects()
        for entry in found[: args.max_files]:
            files += 1
            if args.regions:
                name, is_package, home = module_name_for(entry.path)
                project.track(home)
                loader.track(home)
                result = compare_regions(entry.text, name, is_package, str(entry.path), project, loader)
            else:
                result = compare(entry.text, entry.module_name, entry.is_package)
            for mismatch in result.mismatches[:20]:
                print(f"{entry.path}: {mismatch}")
            total.add(result)
    counts = {"files": files, "regions": total.regions, "frames": total.frames, "items": dict(sorted(total.items.items()))}
    counts |= {"yes": dict(sorted(total.yes.items())), "libcst_only": dict(sorted(total.libcst_only.items()))}
    counts |= {"mismatches": len(total.mismatches), "cst_seconds": round(total.cst_seconds, 2), "ast_seconds": round(total.ast_seconds, 2)}
    print(json.dumps(counts, indent=1))
    return 1 if total.mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())

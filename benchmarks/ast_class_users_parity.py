"""Five analyses on CPython's ``ast`` against libcst's: same answers, and what each costs.

The twins compared (``ckptlint/checkpoint/analyses/ast_*.py``): ``ast_function_keywords``,
``ast_class_users``, ``ast_frozen_norms``, ``ast_parent_builds`` and ``ast_path_conditions``.
For one text, :func:`compare` reads the module both ways, finds its sites both ways (libcst's
``site_index``, ``ast``'s ``ast_site_index``: the same sites, paired by form and call range)
and asks each side's builder, in libcst's order:

- for every site: ``frozen_batchnorms`` (layers, owners, flags), ``parent_builds`` (the
  building class, the instance's class, the constructor's bound parameters and where their
  expressions are), ``own_function_keywords`` (name and where the value is),
  ``refused_keywords`` (names) and ``reentrant_call_refuses_keywords``;
- for every class of the module, in the order of its ``class`` line: ``class_users``
  (qualified names, whether complete) and ``parent_freeze``;
- ``path_parts`` for the function and every expression (a range where both trees have one)
  of every frame of a region built by hand for every function of the module (see
  :func:`_plan`): the function's frame, then the frames of the calls it makes of
  module-level ``def``s, of ``def``s nested in it and of ``self.method`` of its class, three
  levels deep; calls of other plain names are unknown, those at the last level cut;
- the same on every frame of every site's region as each side's region builder builds it.

The libcst side asks ``RegionBuilder``, the ``ast`` side ``AstRegionBuilder`` (one each for
the sites' and classes' questions, one each for the regions). Positions are 1-based
``(row, column)`` ranges.

Over a folder (``python benchmarks/ast_class_users_parity.py TREE [TREE ...]``): the files the
gate lets through, each with a loader of the tree around it, with each side's CPU time.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import libcst as cst

from ckptlint.checkpoint.analyses import (
    ast_class_users,
    ast_frozen_norms,
    ast_function_keywords,
    ast_parent_builds,
    ast_path_conditions,
    class_users,
    frozen_norms,
    function_keywords,
    parent_builds,
    path_conditions,
)
from ckptlint.checkpoint.evaluator.ast_region import AstFrame, AstRegion
from ckptlint.checkpoint.evaluator.ast_regions import AstRegionBuilder
from ckptlint.checkpoint.evaluator.denotations import ConstructorEnv, Context
from ckptlint.checkpoint.evaluator.region import Frame, Region
from ckptlint.checkpoint.evaluator.regions import RegionBuilder
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.checkpoint.sites.sites import site_index
from ckptlint.semantic.analysis import ModuleAnalysis
from ckptlint.semantic.ast_analysis import AstAnalysis
from ckptlint.semantic.ast_walk import nodes_of_function
from ckptlint.semantic.parse import parse_module_unvalidated
from ckptlint.semantic.project import AstProject, Project, module_name_for
from ckptlint.semantic.walk import iter_tree
from ckptlint.text.positions import node_offsets
from ckptlint.text.source import SourceFile

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling modules

from parity_files import comparable_files, multiset_mismatches

_TIMES = ("libcst_parse", "libcst_sites", "libcst_analyses", "libcst_paths", "ast_parse", "ast_sites", "ast_analyses", "ast_paths")
KINDS = ("frozen", "parent builds", "own keywords", "refused", "reentrant refuses", "users", "parent freeze", "path parts")
#: Levels of calls a hand-built region follows below its function.
PLAN_DEPTH = 3


@dataclass
class AnalysesComparison:
    """What :func:`compare` compared (answers by kind), how many answers were not empty, and
    where the two sides differ."""

    items: Counter[str] = field(default_factory=Counter)
    answered: Counter[str] = field(default_factory=Counter)
    mismatches: list[str] = field(default_factory=list)
    times: dict[str, float] = field(default_factory=lambda: dict.fromkeys(_TIMES, 0.0))

    def add(self, other: AnalysesComparison) -> None:
        self.items.update(other.items)
        self.answered.update(other.answered)
        self.mismatches += other.mismatches
        for key, value in other.times.items():
            self.times[key] += value


# ------------------------------------------------------------------ positions
class _CstPositions:
    """1-based ranges of libcst nodes, per module analysis."""

    def __init__(self) -> None:
        self._known: dict[int, tuple[object, dict]] = {}

    def offsets(self, analysis: ModuleAnalysis) -> dict:
        known = self._known.get(id(analysis))
        if known is None or known[0] is not analysis:
            known = self._known[id(analysis)] = (analysis, node_offsets(analysis.module))
        return known[1]

    def range(self, analysis: Any, node: object) -> tuple | None:
        found = self.offsets(analysis).get(node)
        if found is None:
            return None
        return (analysis.source.position(found[0]), analysis.source.position(found[1]))


def _freeze(found: frozen_norms.Freeze | None) -> tuple | None:
    return None if found is None else (sorted(found.layers), found.owners, found.flags)


def _env(env: dict, where: Any) -> tuple:
    bound = sorted((binding.name, where(ctx.analysis, expr)) for binding, (expr, ctx) in env.items())
    return (bound, isinstance(env, ConstructorEnv))


def _build(build: Any, where: Any) -> tuple:
    instance = build.instance
    info = instance.info
    return (build.parent.analysis.module_name, build.parent.qualname, info.analysis.module_name, info.qualname, _env(instance.env, where))


# ------------------------------------------------------------------ hand-built regions
def _def_key(analysis: Any, node: object, where: Any) -> tuple:
    """A function's key on both sides: a lambda's range, a ``def``'s qualified name and row."""
    if isinstance(node, (ast.Lambda, cst.Lambda)):
        return ("lambda", where(analysis, node))
    scope = analysis.model.scope_of_definition.get(node)
    row = node.lineno if isinstance(node, ast.AST) else where(analysis, node.name)[0][0]  # type: ignore[attr-defined]
    return ("def", scope.qualname if scope else "?", row)


def _callee(analysis: AstAnalysis, function: Any, call: ast.Call) -> Any:
    """The ``def`` a call in ``function`` runs, as the plan reads it (see the module docstring)."""
    func = call.func
    if isinstance(func, ast.Name):
        if not isinstance(function, ast.Lambda):
            nested = {s.name: s for s in function.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
            if func.id in nested:
                return nested[func.id]
        top = {s.name: s for s in analysis.tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        return top.get(func.id)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and not isinstance(function, ast.Lambda):
        cls = analysis.model.parent(function)
        params = [*function.args.posonlyargs, *function.args.args]
        if isinstance(cls, ast.ClassDef) and params and func.value.id == params[0].arg:
            methods = {s.name: s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
            return methods.get(func.attr)
    return None


def _plan(analysis: AstAnalysis, root: Any, where: Any) -> dict[str, list]:
    """The frames of the hand-built region of ``root`` (read on ``ast``): function keys, depths
    and the ways each is reached (caller index, call range), with the unknown and cut calls."""
    frames: list[list] = [[_def_key(analysis, root, where), 0, [(None, None)], root]]
    index = {id(root): 0}
    unknown: list[tuple] = []
    cut: list[tuple] = []
    position = 0
    while position < len(frames):
        key, depth, _, function = frames[position]
        for node in nodes_of_function(function):
            if not isinstance(node, ast.Call):
                continue
            callee = _callee(analysis, function, node)
            call = where(analysis, node)
            if callee is None:
                if isinstance(node.func, ast.Name):
                    unknown.append((call, position))
                continue
            if depth + 1 > PLAN_DEPTH:
                cut.append((call, position))
                continue
            if id(callee) not in index:
                index[id(callee)] = len(frames)
                frames.append([_def_key(analysis, callee, where), depth + 1, [], callee])
            frames[index[id(callee)]][2].append((position, call))
        position += 1
    return {"frames": [(key, depth, ways) for key, depth, ways, _ in frames], "unknown": unknown, "cut": cut}


def _region(plan: dict[str, list], analysis: Any, functions: dict, calls: dict, contexts: Any, frame_type: Any, region_type: Any) -> Any:
    """The region of ``plan`` on one side (``functions`` and ``calls`` by key and range)."""
    region = region_type(None, analysis, resolved=True)
    for key, depth, _ in plan["frames"]:
        function = functions[key]
        region.frames.append(frame_type(function, contexts(function), depth, key[1] if key[0] == "def" else "<lambda>"))
    for frame, (_, _, ways) in zip(region.frames, plan["frames"], strict=True):
        frame.reached_from = [(None, None) if caller is None else (region.frames[caller], calls[call]) for caller, call in ways]
        frame.caller, frame.invocation = frame.reached_from[0]
    region.unknown_calls = [(calls[call], region.frames[at]) for call, at in plan["unknown"]]
    region.cut_calls = [(calls[call], region.frames[at]) for call, at in plan["cut"]]
    return region


def _path_parts(
    cst_analysis: ModuleAnalysis, ast_analysis: AstAnalysis, positions: _CstPositions, out: tuple[list, list], times: dict[str, float]
) -> None:
    """``path_parts`` of every expression of every frame of every hand-built region (the
    function itself, and each range where both trees have an expression)."""
    cst_where = positions.range
    ast_functions = [n for n in ast.walk(ast_analysis.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]
    cst_functions = {
        _def_key(cst_analysis, n, cst_where): n for n in positions.offsets(cst_analysis) if isinstance(n, (cst.FunctionDef, cst.Lambda))
    }
    cst_calls = {cst_where(cst_analysis, n): n for n in positions.offsets(cst_analysis) if isinstance(n, cst.Call)}
    ast_calls = {ast_analysis.range(n): n for n in ast.walk(ast_analysis.tree) if isinstance(n, ast.Call)}
    cst_builder, ast_builder = RegionBuilder(None), AstRegionBuilder(None)

    def cst_context(function: Any) -> Context:
        parent = cst_analysis.model.parent(cst_analysis.model.parent(function))  # the class body's block
        cls = parent if isinstance(parent, cst.ClassDef) and isinstance(function, cst.FunctionDef) else None
        return Context(cst_analysis, cst_builder.class_info(cst_analysis, cls) if cls is not None else None)

    def ast_context(function: Any) -> Context:
        parent = ast_analysis.model.parent(function)
        cls = parent if isinstance(parent, ast.ClassDef) and not isinstance(function, ast.Lambda) else None
        return Context(ast_analysis, ast_builder.class_info(ast_analysis, cls) if cls is not None else None)

    for root in sorted(ast_functions, key=lambda n: (n.lineno, n.col_offset)):
        plan = _plan(ast_analysis, root, AstAnalysis.range)
        keys = [key for key, _, _ in plan["frames"]]
        if any(key not in cst_functions for key in keys):
            out[0].append(("path parts", "no libcst function", keys))
            continue
        ast_by_key = {_def_key(ast_analysis, f, AstAnalysis.range): f for f in ast_functions}
        cst_region = _region(plan, cst_analysis, cst_functions, cst_calls, cst_context, Frame, Region)
        ast_region = _region(plan, ast_analysis, ast_by_key, ast_calls, ast_context, AstFrame, AstRegion)
        for cst_frame, ast_frame in zip(cst_region.frames, ast_region.frames, strict=True):
            label = (_def_key(ast_analysis, root, AstAnalysis.range), _def_key(ast_analysis, ast_frame.function, AstAnalysis.range))
            _frame_paths(label, (cst_region, cst_frame), (ast_region, ast_frame), positions, out, times)


def _frame_paths(
    label: tuple, cst_pair: tuple, ast_pair: tuple, positions: _CstPositions, out: tuple[list, list], times: dict[str, float]
) -> None:
    """``path_parts`` of a frame's function and of each range where both of its trees have an
    expression among the frame's nodes, asked of its region on each side."""
    (cst_region, cst_frame), (ast_region, ast_frame) = cst_pair, ast_pair
    cst_analysis, ast_analysis = cst_frame.analysis, ast_frame.analysis
    ast_nodes = {_def_key(ast_analysis, ast_frame.function, AstAnalysis.range): ast_frame.function}
    for node in ast_frame.nodes():
        if isinstance(node, ast.expr):
            ast_nodes.setdefault(ast_analysis.range(node), node)
    cst_nodes = {_def_key(cst_analysis, cst_frame.function, positions.range): cst_frame.function}
    for node in cst_frame.nodes():
        if isinstance(node, cst.BaseExpression):
            cst_nodes.setdefault(positions.range(cst_analysis, node), node)
    keys = [k for k in ast_nodes if k in cst_nodes]  # what both have a node at
    begin = time.process_time()
    out[1].extend(("path parts", label, k, ast_path_conditions.path_parts(ast_region, ast_nodes[k], ast_analysis)) for k in keys)
    middle = time.process_time()
    out[0].extend(("path parts", label, k, path_conditions.path_parts(cst_region, cst_nodes[k], cst_analysis)) for k in keys)
    times["ast_paths"] += middle - begin
    times["libcst_paths"] += time.process_time() - middle


def _region_paths(
    pairs: list[tuple],
    cst_analysis: ModuleAnalysis,
    ast_analysis: AstAnalysis,
    loaders: tuple,
    out: tuple[list, list],
    times: dict[str, float],
) -> None:
    """``path_parts`` on every frame of every site's region, as each side's region builder
    builds it (frames paired in order: the builders' parity makes them the same)."""
    positions = _CstPositions()
    cst_builder, ast_builder = RegionBuilder(loaders[0]), AstRegionBuilder(loaders[1])
    for cst_site, ast_site in pairs:
        cst_region = cst_builder.region(cst_site, cst_analysis)
        ast_region = ast_builder.region(ast_site, ast_analysis)
        where = positions.range(cst_analysis, cst_site.call)
        if len(cst_region.frames) != len(ast_region.frames):
            out[0].append(("region paths", where, "the frames differ"))
            continue
        for index, (cst_frame, ast_frame) in enumerate(zip(cst_region.frames, ast_region.frames, strict=True)):
            label = ("region", where, index, _def_key(ast_frame.analysis, ast_frame.function, AstAnalysis.range))
            _frame_paths(label, (cst_region, cst_frame), (ast_region, ast_frame), positions, out, times)


# ------------------------------------------------------------------ one module
def _site_answers(builder: Any, analysis: Any, site: Any, modules: Any, where: Any) -> list[tuple]:
    frozen, builds, keywords = modules
    call = where(analysis, site.call)
    own = keywords.own_function_keywords(site)
    if isinstance(analysis, AstAnalysis):
        own_read = [(arg.arg, where(analysis, arg.value)) for arg in own]
        refused = [arg.arg for arg in keywords.refused_keywords(builder, analysis, site, own)]
    else:
        own_read = [(arg.keyword.value, where(analysis, arg.value)) for arg in own]
        refused = [arg.keyword.value for arg in keywords.refused_keywords(builder, analysis, site, own)]
    return [
        ("frozen", call, _freeze(frozen.frozen_batchnorms(builder, site, analysis))),
        ("parent builds", call, [_build(b, where) for b in builds.parent_builds(builder, site, analysis)]),
        ("own keywords", call, own_read),
        ("refused", call, refused),
        ("reentrant refuses", call, keywords.reentrant_call_refuses_keywords(builder, analysis, site)),
    ]


def _class_answers(builder: Any, analysis: Any, node: Any, modules: Any, where: Any) -> list[tuple]:
    users_module, frozen = modules
    info = builder.class_info(analysis, node)
    users, complete = users_module.class_users(builder, analysis, info)
    key = info.qualname
    return [
        ("users", key, ([u.qualname for u in users], complete)),
        ("parent freeze", key, _freeze(frozen.parent_freeze(builder, info))),
    ]


def _paired(cst_sites: list, ast_sites: list, cst_key: Any, ast_key: Any) -> list[tuple] | None:
    """Each libcst site, in its order, with the ``ast`` site of the same form at the same call
    range (the order of helper calls may differ); ``None`` when the sites are not the same."""
    waiting: dict[tuple, list] = {}
    for site in ast_sites:
        waiting.setdefault((ast_key(site), site.form), []).append(site)
    pairs = []
    for site in cst_sites:
        found = waiting.get((cst_key(site), site.form))
        if not found:
            return None
        pairs.append((site, found.pop(0)))
    return pairs if len(pairs) == len(ast_sites) else None


def compare(
    text: str,
    module_name: str = "",
    is_package: bool = False,
    path: str = "<compared>",
    project: Project | None = None,
    loader: AstProject | None = None,
    hand_built: bool = True,
) -> AnalysesComparison:
    """Ask both sides the questions of the module docstring about ``text`` and compare the
    answers; with ``project`` and ``loader`` (libcst's and ``ast``'s loaders of the tree around
    the file), other modules are read; without ``hand_built``, ``path_parts`` is asked on the
    builders' regions only."""
    result = AnalysesComparison()
    times = result.times
    source = SourceFile(path, text)
    positions = _CstPositions()

    begin = time.process_time()
    cst_analysis = ModuleAnalysis(source, parse_module_unvalidated(text), module_name, is_package)
    cst_analysis.project = project
    _ = cst_analysis.model
    times["libcst_parse"] += time.process_time() - begin
    begin = time.process_time()
    cst_sites = site_index(cst_analysis).sites
    times["libcst_sites"] += time.process_time() - begin

    begin = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ast_analysis = AstAnalysis(source, ast.parse(text), module_name, is_package)
    ast_analysis.project = loader
    _ = ast_analysis.model
    times["ast_parse"] += time.process_time() - begin
    begin = time.process_time()
    ast_sites = ast_site_index(ast_analysis).sites
    times["ast_sites"] += time.process_time() - begin

    cst_where = positions.range
    ast_where = AstAnalysis.range
    pairs = _paired(cst_sites, ast_sites, lambda site: cst_where(cst_analysis, site.call), lambda site: ast_where(ast_analysis, site.call))
    if pairs is None:
        result.mismatches.append("the sites differ")
        return result
    expected: list[tuple] = []
    got: list[tuple] = []

    begin = time.process_time()
    builder = RegionBuilder(project)
    for site, _ in pairs:
        expected += _site_answers(builder, cst_analysis, site, (frozen_norms, parent_builds, function_keywords), cst_where)
    cst_classes = [n for n in iter_tree(cst_analysis.module) if isinstance(n, cst.ClassDef)]
    cst_classes.sort(key=lambda n: cst_where(cst_analysis, n.name))
    for node in cst_classes:
        expected += _class_answers(builder, cst_analysis, node, (class_users, frozen_norms), cst_where)
    times["libcst_analyses"] += time.process_time() - begin

    begin = time.process_time()
    questions = AstRegionBuilder(loader)
    for _, site in pairs:
        got += _site_answers(questions, ast_analysis, site, (ast_frozen_norms, ast_parent_builds, ast_function_keywords), ast_where)
    ast_classes = sorted((n for n in ast.walk(ast_analysis.tree) if isinstance(n, ast.ClassDef)), key=lambda n: (n.lineno, n.col_offset))
    for node in ast_classes:
        got += _class_answers(questions, ast_analysis, node, (ast_class_users, ast_frozen_norms), ast_where)
    times["ast_analyses"] += time.process_time() - begin

    out: tuple[list, list] = ([], [])
    if hand_built:
        _path_parts(cst_analysis, ast_analysis, positions, out, times)
    _region_paths(pairs, cst_analysis, ast_analysis, (project, loader), out, times)
    expected += out[0]
    got += out[1]

    result.items.update(answer[0] for answer in expected)
    result.answered.update(answer[0] for answer in expected if answer[-1] not in (None, [], (), False) and answer[-1] != ([], True))
    result.mismatches += multiset_mismatches(expected, got)
    cst_analysis.release()
    ast_analysis.release()
    return result


# --------------------------------------------------------------------------- corpus runs
def run_tree(root: Path, every_file: bool = False, max_files: int | None = None) -> dict[str, object]:
    """Compare both sides on the (gated) files of ``root`` (the first ``max_files`` in path
    order when given), with loaders of the tree, and sum their CPU times."""
    total = AnalysesComparison()
    compared, skipped = comparable_files(root, every_file)
    compared = compared[:max_files] if max_files is not None else compared
    project = Project()
    loader = AstProject(Project())
    for one in compared:
        name, is_package, home = module_name_for(one.path)
        project.track(home)
        loader.track(home)
        found = compare(one.text, name, is_package, str(one.path), project, loader)
        found.mismatches = [f"{one.path.relative_to(root)}: {m}" for m in found.mismatches]
        total.add(found)
    return {
        "tree": root.name,
        "files": len(compared),
        "skipped": skipped,
        "items": {kind: total.items[kind] for kind in KINDS},
        "answered": {kind: total.answered[kind] for kind in KINDS},
        "mismatches": total.mismatches,
        "cpu_s": {key: round(value, 3) for key, value in total.times.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--all", action="store_true", help="every .py file, not only the gated ones")
    parser.add_argument("--json", type=Path, help="write the numbers here")
    parser.add_argument("--max-files", type=int, help="compare only the first N gated files of each tree")
    args = parser.parse_args(argv)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    reports = []
    for tree in args.trees:
        report = run_tree(tree.resolve(), args.all, args.max_files)
        reports.append(report)
        cpu: dict[str, float] = report["cpu_s"]  # type: ignore[assignment]
        print(
            f"{report['tree']}: {report['files']} files ({report['skipped']} skipped), compared {report['items']}, "
            f"libcst answered {report['answered']}, {len(report['mismatches'])} mismatches; "  # type: ignore[arg-type]
            f"CPU libcst analyses {cpu['libcst_analyses']:.2f} s + paths {cpu['libcst_paths']:.2f} s, "
            f"ast analyses {cpu['ast_analyses']:.2f} s + paths {cpu['ast_paths']:.2f} s"
        )
        for mismatch in report["mismatches"][:30]:  # type: ignore[index]
            print("  ", mismatch)
    if args.json is not None:
        args.json.write_text(json.dumps(reports, indent=2), encoding="utf-8")
    return 1 if any(r["mismatches"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())

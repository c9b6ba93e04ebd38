"""The outer-state analyses on CPython's ``ast`` against libcst's: the reads of
:func:`ckptlint.checkpoint.analyses.ast_outer_reads.mutable_reads` and the writes of
:func:`ckptlint.checkpoint.analyses.ast_outer_writes.outer_writes` against
:func:`~ckptlint.checkpoint.analyses.outer_reads.mutable_reads` and
:func:`~ckptlint.checkpoint.analyses.outer_writes.outer_writes`, and what each costs.

For one text, :func:`compare` reads the module both ways, finds each side's checkpoint sites
(libcst's ``site_index``, ``ast_site_index``), pairs them by the position of their call and,
for every pair, builds regions BY HAND on both sides, the same way: one region for each
function, method and lambda of the module (one frame, depth 0, ``self`` an instance of the
enclosing class), and one region holding them all (the first at depth 0, the others at
depth 1). With ``real=True`` (the ``ast`` region builder present) it compares the regions
the builders make for each site too (``RegionBuilder(project).region`` against
``AstRegionBuilder(loader).region``). Each answer is compared in order as a list of
descriptions: the kind, the frame's index, the node's 1-based start and end, the name, the
reason (``why``/``what``) and the read's flags.

Over a folder (``python benchmarks/ast_outer_access_parity.py TREE [TREE ...]``): the gated
files, each compared with a loader of the tree around it, the CPU time of each side's
analyses summed.
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

import libcst as cst

from ckptlint.checkpoint.analyses import ast_outer_reads, ast_outer_writes, outer_reads, outer_writes
from ckptlint.checkpoint.evaluator import ast_class_summary, class_summary
from ckptlint.checkpoint.evaluator.ast_region import AstFrame, AstRegion
from ckptlint.checkpoint.evaluator.denotations import Context
from ckptlint.checkpoint.evaluator.region import Frame, Region
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.checkpoint.sites.sites import site_index
from ckptlint.semantic.analysis import ModuleAnalysis
from ckptlint.semantic.ast_analysis import AstAnalysis
from ckptlint.semantic.parse import parse_module_unvalidated
from ckptlint.semantic.project import AstProject, Project, module_name_for
from ckptlint.semantic.walk import iter_tree
from ckptlint.text.source import SourceFile

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling modules

from parity_files import comparable_files, multiset_mismatches

_TIMES = ("libcst_analyses", "ast_analyses")
KINDS = ("site", "region", "read", "write")
#: Hand-built regions per module at most (a site times the functions of a big module).
MAX_HAND_REGIONS = 400


@dataclass
class OuterAccessComparison:
    """What :func:`compare` compared (sites, regions, reads and writes found by libcst), and
    where the two sides differ."""

    items: Counter[str] = field(default_factory=Counter)
    mismatches: list[str] = field(default_factory=list)
    times: dict[str, float] = field(default_factory=lambda: dict.fromkeys(_TIMES, 0.0))

    def add(self, other: OuterAccessComparison) -> None:
        self.items.update(other.items)
        self.mismatches += other.mismatches
        for key, value in other.times.items():
            self.times[key] += value


# ------------------------------------------------------------------ the functions of a module
def _cst_functions(analysis: ModuleAnalysis) -> list[tuple[tuple, cst.CSTNode, cst.ClassDef | None]]:
    """``(key, function, class)`` for every ``def`` and lambda, keyed by where the name (a
    lambda: the lambda) starts; ``class`` is the class whose body defines the ``def``."""
    found = []
    for node in iter_tree(analysis.module):
        if isinstance(node, cst.FunctionDef):
            parent = analysis.model.parent(node)
            owner = analysis.model.parent(parent) if isinstance(parent, cst.IndentedBlock) else None
            found.append((analysis.range(node.name)[0], node, owner if isinstance(owner, cst.ClassDef) else None))
        elif isinstance(node, cst.Lambda):
            found.append((analysis.range(node)[0], node, None))
    return sorted(found, key=lambda item: item[0])


def _ast_functions(analysis: AstAnalysis) -> list[tuple[tuple, ast.AST, ast.ClassDef | None]]:
    found = []
    lines = analysis.source.text.splitlines()
    model = analysis.model
    for node in ast.walk(analysis.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            line = lines[node.lineno - 1]
            index = line.find(node.name, line.find("def", node.col_offset) + 3)
            parent = model.parent(node)
            key = (node.lineno, len(line[:index].encode("utf-8")))
            found.append((analysis.source.ast_position(*key), node, parent if isinstance(parent, ast.ClassDef) else None))
        elif isinstance(node, ast.Lambda):
            found.append((analysis.start(node), node, None))
    return sorted(found, key=lambda item: item[0])


# ------------------------------------------------------------------ answers described
def _describe_cst(region: Region) -> list[tuple]:
    out: list[tuple] = []
    index = {id(frame): i for i, frame in enumerate(region.frames)}
    for read in outer_reads.mutable_reads(region, region.analysis):
        where = read.analysis.range(read.node)
        out.append(("read", index[id(read.frame)], where, read.name, read.why, read.loop_variable, read.late_binding))
    for write in outer_writes.outer_writes(region):
        out.append(("write", index[id(write.frame)], write.analysis.range(write.node), write.what))
    return out


def _describe_ast(region: AstRegion) -> list[tuple]:
    out: list[tuple] = []
    index = {id(frame): i for i, frame in enumerate(region.frames)}
    for read in ast_outer_reads.mutable_reads(region, region.analysis):
        where = read.frame.analysis.range(read.node)
        out.append(("read", index[id(read.frame)], where, read.name, read.why, read.loop_variable, read.late_binding))
    for write in ast_outer_writes.outer_writes(region):
        analysis = write.frame.analysis
        out.append(("write", index[id(write.frame)], analysis.range(write.node), write.what))
    return out


def _hand_regions(site: object, analysis: object, functions: list, summarise: object, make_frame: object, make_region: object) -> list:
    """The hand-built regions of one site (see the module docstring)."""
    infos: dict[int, object] = {}

    def frame(function: object, cls: object, depth: int, name: str) -> object:
        info = None
        if cls is not None:
            info = infos.get(id(cls))
            if info is None:
                info = infos[id(cls)] = summarise(analysis, cls)  # type: ignore[operator]
        return make_frame(function, Context(analysis, info), depth, name)  # type: ignore[operator]

    regions = [make_region(site, analysis, [frame(fn, cls, 0, f"f{i}")]) for i, (_, fn, cls) in enumerate(functions)]  # type: ignore[operator]
    if len(functions) > 1:
        every = [frame(fn, cls, 0 if i == 0 else 1, f"f{i}") for i, (_, fn, cls) in enumerate(functions)]
        regions.append(make_region(site, analysis, every))  # type: ignore[operator]
    return regions


def compare(
    text: str,
    module_name: str = "",
    is_package: bool = False,
    path: str = "<compared>",
    project: Project | None = None,
    loader: AstProject | None = None,
    *,
    hand: bool = True,
    real: bool = False,
) -> OuterAccessComparison:
    """Compare both sides' reads and writes on ``text``'s regions (see the module docstring)."""
    result = OuterAccessComparison()
    source = SourceFile(path, text)
    cst_analysis = ModuleAnalysis(source, parse_module_unvalidated(text), module_name, is_package)
    cst_analysis.project = project
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(text)
    ast_analysis = AstAnalysis(source, tree, module_name, is_package)
    ast_analysis.project = loader

    cst_sites = {cst_analysis.range(s.call): s for s in site_index(cst_analysis).sites}
    ast_sites = {ast_analysis.range(s.call): s for s in ast_site_index(ast_analysis).sites}
    result.mismatches += multiset_mismatches(sorted(cst_sites), sorted(ast_sites), "site")
    paired = [(where, cst_sites[where], ast_sites[where]) for where in sorted(cst_sites) if where in ast_sites]
    result.items["site"] += len(paired)
    if hand and paired:
        cst_functions, ast_functions = _cst_functions(cst_analysis), _ast_functions(ast_analysis)
        if [k for k, _, _ in cst_functions] != [k for k, _, _ in ast_functions]:
            result.mismatches.append("functions differ")
        else:
            per_site = max(1, MAX_HAND_REGIONS // max(1, len(paired)))
            cst_functions, ast_functions = cst_functions[:per_site], ast_functions[:per_site]
            for where, cst_site, ast_site in paired:
                cst_regions = _hand_regions(
                    cst_site, cst_analysis, cst_functions, class_summary.summarise_class, Frame,
                    lambda s, a, frames: Region(s, a, frames=frames, resolved=True),
                )  # fmt: skip
                ast_regions = _hand_regions(
                    ast_site, ast_analysis, ast_functions, ast_class_summary.summarise_class, AstFrame,
                    lambda s, a, frames: AstRegion(s, a, frames=frames, resolved=True),
                )  # fmt: skip
                _compare_regions(result, f"{where[0]}", cst_regions, ast_regions)
    if real and paired:
        from ckptlint.checkpoint.evaluator.ast_regions import AstRegionBuilder
        from ckptlint.checkpoint.evaluator.regions import RegionBuilder

        cst_builder, ast_builder = RegionBuilder(project), AstRegionBuilder(loader)
        for where, cst_site, ast_site in paired:
            cst_region = cst_builder.region(cst_site, cst_analysis)
            ast_region = ast_builder.region(ast_site, ast_analysis)
            _compare_regions(result, f"real {where[0]}", [cst_region], [ast_region])
    cst_analysis.release()
    ast_analysis.release()
    return result


def _compare_regions(result: OuterAccessComparison, label: str, cst_regions: list, ast_regions: list) -> None:
    times = result.times
    for number, (cst_region, ast_region) in enumerate(zip(cst_regions, ast_regions, strict=True)):
        begin = time.process_time()
        expected = _describe_cst(cst_region)
        times["libcst_analyses"] += time.process_time() - begin
        begin = time.process_time()
        got = _describe_ast(ast_region)
        times["ast_analyses"] += time.process_time() - begin
        result.items["region"] += 1
        result.items.update(item[0] for item in expected)
        if expected != got:
            result.mismatches += [f"site {label} region {number}: {m}" for m in multiset_mismatches(expected, got)] or [
                f"site {label} region {number}: order differs"
            ]


# --------------------------------------------------------------------------- corpus runs
def run_tree(root: Path, every_file: bool = False, max_files: int | None = None, real: bool = False) -> dict[str, object]:
    """Compare both sides on the (gated) files of ``root`` (the first ``max_files`` in path
    order when given), with loaders of the tree, and sum their CPU times."""
    total = OuterAccessComparison()
    compared, skipped = comparable_files(root, every_file)
    compared = compared[:max_files] if max_files is not None else compared
    project = Project()
    loader = AstProject(Project())
    for one in compared:
        name, is_package, home = module_name_for(one.path)
        project.track(home)
        loader.project.track(home)
        loader.evict()
        try:
            found = compare(one.text, name, is_package, str(one.path), project, loader, real=real)
        except Exception as error:  # noqa: BLE001 - a crash is a mismatch to report, not the end of the run
            found = OuterAccessComparison(mismatches=[f"crash: {type(error).__name__}: {error}"])
        found.mismatches = [f"{one.path.relative_to(root)}: {m}" for m in found.mismatches]
        total.add(found)
    return {
        "tree": root.name,
        "files": len(compared),
        "skipped": skipped,
        "items": {kind: total.items[kind] for kind in KINDS},
        "mismatches": total.mismatches,
        "cpu_s": {key: round(value, 3) for key, value in total.times.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--all", action="store_true", help="every .py file, not only the gated ones")
    parser.add_argument("--json", type=Path, help="write the numbers here")
    parser.add_argument("--max-files", type=int, help="compare only the first N gated files of each tree")
    parser.add_argument("--real", action="store_true", help="also the regions the builders make")
    args = parser.parse_args(argv)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    reports = []
    for tree in args.trees:
        report = run_tree(tree.resolve(), args.all, args.max_files, args.real)
        reports.append(report)
        cpu: dict[str, float] = report["cpu_s"]  # type: ignore[assignment]
        print(
            f"{report['tree']}: {report['files']} files ({report['skipped']} skipped), compared {report['items']}, "
            f"{len(report['mismatches'])} mismatches; "  # type: ignore[arg-type]
            f"CPU libcst {cpu['libcst_analyses']:.2f} s, ast {cpu['ast_analyses']:.2f} s"
        )
        for mismatch in report["mismatches"][:30]:  # type: ignore[index]
            print("  ", mismatch)
    if args.json is not None:
        args.json.write_text(json.dumps(reports, indent=2), encoding="utf-8")
    return 1 if any(r["mismatches"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())

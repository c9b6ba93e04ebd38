"""The conditions findings state, on CPython's ``ast`` against libcst's: same texts, and what each costs.

For one text, :func:`compare` reads the module both ways and compares, as strings:

- ``site_condition`` of every site both finders give at the same call (libcst:
  :func:`ckptlint.checkpoint.sites.sites.site_index`; ``ast``: ``direct_sites`` and
  ``ast_helper_sites.helper_sites`` of the module), matched by the call's range; the sites
  one side alone gives are counted as left out;
  and the condition a finding states there (joined with ``helper_parts``, as ``rules.base``
  joins them);
- ``node_condition`` of every call of the module, matched by range, and its condition with
  the function's parameters given (``condition_parts(..., parameters_given=True)``, what a
  region's condition reads);
- the same of every statement inside a function (a sample of the other nodes), matched by
  where it starts (a decorated ``def`` or ``class`` starts at its decorator in
  libcst, at ``def`` in ``ast``: those are left out).

With a project (``project``: a :class:`~ckptlint.semantic.project.Project` whose roots hold the
module), libcst's analysis reads other modules through it and the ``ast`` one through an
:class:`~ckptlint.semantic.project.AstProject` around it (``loader``), so that inherited
switches and config classes of other modules are compared too.

Over a folder (``python benchmarks/ast_conditions_parity.py TREE [TREE ...]``): the files the
gate lets through, each compared with the tree as project, and the CPU time of each side's
conditions (sites, parse and model not counted), summed over files.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import libcst as cst

from ckptlint.checkpoint.sites import ast_guards, guards
from ckptlint.checkpoint.sites.ast_helper_sites import helper_sites
from ckptlint.checkpoint.sites.ast_sites import direct_sites
from ckptlint.checkpoint.sites.sites import site_index
from ckptlint.semantic.analysis import ModuleAnalysis
from ckptlint.semantic.ast_analysis import parse_ast
from ckptlint.semantic.parse import parse_module_unvalidated
from ckptlint.semantic.project import AstProject, Project
from ckptlint.semantic.walk import iter_tree
from ckptlint.text.source import SourceFile

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling modules

from parity_files import comparable_files

Position = tuple[int, int]
_TIMES = ("libcst_conditions", "ast_conditions")
_STATEMENTS = (cst.BaseSmallStatement, cst.BaseCompoundStatement)


@dataclass
class ConditionComparison:
    """What :func:`compare` compared and where the two readings differ."""

    sites: int = 0  # sites matched and compared
    calls: int = 0  # calls compared
    statements: int = 0  # statements inside functions compared
    stated: int = 0  # of the compared items, those with a condition (a non-empty text)
    named: int = 0  # of those, the ones that name a switch's default
    left_out: Counter[str] = field(default_factory=Counter)
    mismatches: list[str] = field(default_factory=list)
    times: dict[str, float] = field(default_factory=lambda: dict.fromkeys(_TIMES, 0.0))

    def add(self, other: ConditionComparison) -> None:
        self.sites += other.sites
        self.calls += other.calls
        self.statements += other.statements
        self.stated += other.stated
        self.named += other.named
        self.left_out.update(other.left_out)
        self.mismatches += other.mismatches
        for key, value in other.times.items():
            self.times[key] += value


def _cst_in_function(analysis: ModuleAnalysis, node: cst.CSTNode) -> bool:
    return any(isinstance(a, cst.FunctionDef) for a in analysis.model.ancestors(node))


def _undecorated(node: object) -> bool:
    return not getattr(node, "decorators", None) and not getattr(node, "decorator_list", None)


def _readings(side: ModuleType, analysis: object, kind: str, one: object) -> tuple[str, str]:
    """What one side says of ``one``: for a site, ``site_condition`` and the condition a
    finding states (``condition_parts`` joined with ``helper_parts``, as ``rules.base``
    does); for another node, ``node_condition`` and the condition with the function's
    parameters given by its caller (``condition_parts(..., parameters_given=True)``)."""
    if kind == "site":
        stated = side.joined(side.condition_parts(analysis, one.call), side.helper_parts(analysis, one))  # type: ignore[attr-defined]
        return side.site_condition(analysis, one), side.format_condition(stated)
    given = side.condition_parts(analysis, one, parameters_given=True)
    return side.node_condition(analysis, one), side.format_condition(given)


def compare(
    text: str,
    module_name: str = "",
    is_package: bool = False,
    path: str = "<compared>",
    project: Project | None = None,
    loader: AstProject | None = None,
) -> ConditionComparison:
    """Read the conditions of ``text`` both ways and compare them (see the module docstring)."""
    result = ConditionComparison()
    source = SourceFile(path, text)
    analysis = ModuleAnalysis(source, parse_module_unvalidated(text), module_name, is_package)
    analysis.project = project
    tree = parse_ast(source, module_name, is_package)
    assert tree is not None
    tree.project = loader

    index = site_index(analysis)
    cst_sites = {analysis.range(site.call): site for site in index.sites}
    cst_calls = {analysis.range(n): n for n in iter_tree(analysis.module) if isinstance(n, cst.Call)}
    cst_statements = {
        analysis.range(n)[0]: n
        for n in iter_tree(analysis.module)
        if isinstance(n, _STATEMENTS) and _undecorated(n) and _cst_in_function(analysis, n)
    }
    found = direct_sites(tree.model)
    ast_sites = {tree.range(site.call): site for site in [*found, *helper_sites(tree.model, found).sites]}
    ast_calls = {tree.range(n): n for n in ast.walk(tree.tree) if isinstance(n, ast.Call)}
    ast_statements = {
        tree.start(n): n
        for n in ast.walk(tree.tree)
        if isinstance(n, ast.stmt) and _undecorated(n) and tree.model.enclosing(n, ast.FunctionDef, ast.AsyncFunctionDef)
    }
    result.left_out["site only libcst finds"] += len(cst_sites.keys() - ast_sites.keys())
    result.left_out["site only ast finds"] += len(ast_sites.keys() - cst_sites.keys())
    result.left_out["call at a range the other side lacks"] += len(cst_calls.keys() ^ ast_calls.keys())
    result.left_out["statement at a start the other side lacks"] += len(cst_statements.keys() ^ ast_statements.keys())

    pairs: list[tuple[str, Position, object, object]] = []
    pairs += [("site", key[0], cst_sites[key], ast_sites[key]) for key in sorted(cst_sites.keys() & ast_sites.keys())]
    pairs += [("call", key[0], cst_calls[key], ast_calls[key]) for key in sorted(cst_calls.keys() & ast_calls.keys())]
    pairs += [("statement", key, cst_statements[key], ast_statements[key]) for key in sorted(cst_statements.keys() & ast_statements.keys())]

    begin = time.process_time()
    expected = [_readings(guards, analysis, kind, one) for kind, _, one, _ in pairs]
    result.times["libcst_conditions"] += time.process_time() - begin
    begin = time.process_time()
    got = [_readings(ast_guards, tree, kind, other) for kind, _, _, other in pairs]
    result.times["ast_conditions"] += time.process_time() - begin

    for (kind, where, _, _), left, right in zip(pairs, expected, got, strict=True):
        setattr(result, kind + "s", getattr(result, kind + "s") + 1)
        result.stated += bool(left[0])
        result.named += "defaults to" in left[0]
        if left != right:
            result.mismatches.append(f"{kind} at {where}: libcst {left!r} ast {right!r}")
    analysis.release()
    tree.release()
    return result


# --------------------------------------------------------------------------- corpus runs
def run_tree(root: Path, every_file: bool = False, with_project: bool = True) -> dict[str, object]:
    """Compare both readings on the (gated) files of ``root`` and sum their CPU times."""
    total = ConditionComparison()
    compared, skipped = comparable_files(root, every_file)
    project = Project([root]) if with_project else None
    loader = AstProject(project) if project is not None else None
    for one in compared:
        if project is not None and loader is not None:
            project.track(root)
            loader.evict()
        found = compare(one.text, one.module_name, one.is_package, str(one.path), project, loader)
        found.mismatches = [f"{one.path.relative_to(root)}: {m}" for m in found.mismatches]
        total.add(found)
    return {
        "tree": root.name,
        "files": len(compared),
        "skipped": skipped,
        "sites": total.sites,
        "calls": total.calls,
        "statements": total.statements,
        "stated": total.stated,
        "named": total.named,
        "left_out": dict(total.left_out),
        "mismatches": total.mismatches,
        "cpu_s": {key: round(value, 3) for key, value in total.times.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--all", action="store_true", help="every .py file, not only the gated ones")
    parser.add_argument("--alone", action="store_true", help="each module alone, no project around it")
    parser.add_argument("--json", type=Path, help="write the numbers here")
    args = parser.parse_args(argv)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    reports = []
    for tree in args.trees:
        report = run_tree(tree.resolve(), args.all, not args.alone)
        reports.append(report)
        cpu: dict[str, float] = report["cpu_s"]  # type: ignore[assignment]
        print(
            f"{report['tree']}: {report['files']} files ({report['skipped']} skipped), {report['sites']} sites, "
            f"{report['calls']} calls, {report['statements']} statements compared "
            f"({report['stated']} with a condition, {report['named']} naming a default), "
            f"left out {report['left_out']}, {len(report['mismatches'])} mismatches; "  # type: ignore[arg-type]
            f"CPU libcst {cpu['libcst_conditions']:.2f} s, ast {cpu['ast_conditions']:.2f} s"
        )
        for mismatch in report["mismatches"][:30]:  # type: ignore[index]
            print("  ", mismatch)
    if args.json is not None:
        args.json.write_text(json.dumps(reports, indent=2), encoding="utf-8")
    return 1 if any(r["mismatches"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())

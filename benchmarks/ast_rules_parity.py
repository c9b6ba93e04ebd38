"""The rules on CPython's ``ast`` against libcst's: for each ported code, the libcst rule run
as the linter runs it (one :class:`~ckptlint.rules.base.RuleContext` for the module, rules in
code order, ``ctx.code`` set per rule, the target versions given, none by default) and its
twin run the same way (:class:`~ckptlint.rules.ast_base.AstRuleContext` over ``parse_ast``
of the same text).

The diagnostics are compared in ORDER, before noqa and per-file-ignores (what the linter
filters next reads the code, path and ``noqa_row`` only): code, message, path, start, end,
``noqa_row`` and the fix (applicability, message, every edit's positions and text byte for
byte, the fallback fix). A rule that raises on one side and not the other, or another
exception, is a mismatch.

``compare(text, module_name)`` reads one module alone; ``compare_in_tree`` reads a file of a
tree as a run reads it (one :class:`Project` per side, ``AstProject`` over the other,
``ast_site_index_parity.tree_projects``). ``python benchmarks/ast_rules_parity.py TREE [TREE ...]
[--json OUT]`` prints, per tree, the files, diagnostics (by code), fixes, mismatches and the
CPU time of each side (parse, model, rules: the rules' time holds the sites and the other
modules they read).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling parity scripts

from ast_site_index_parity import tree_projects
from parity_files import comparable_files

from ckptlint.config.declarations import parse_target_version_option
from ckptlint.facts.versions import TargetVersion
from ckptlint.rules import ALL_RULES, RuleContext
from ckptlint.rules.ast_base import AstRuleContext
from ckptlint.rules.ast_discovery import ast_rules
from ckptlint.semantic.analysis import ModuleAnalysis
from ckptlint.semantic.ast_analysis import AstAnalysis, parse_ast
from ckptlint.semantic.parse import parse_module_unvalidated
from ckptlint.semantic.project import AstProject, Project, module_name_for
from ckptlint.text.diagnostics import Diagnostic, Fix
from ckptlint.text.source import SourceFile

_TIMES = ("libcst_parse", "libcst_model", "libcst_rules", "ast_parse", "ast_model", "ast_rules")
AST_RULES = ast_rules()
#: Whether the region builder on ``ast`` is there (twins that ask ``ctx.regions`` need it).
REGIONS = importlib.util.find_spec("ckptlint.checkpoint.evaluator.ast_regions") is not None
#: The codes compared: those with a twin that can run here.
PORTED: tuple[str, ...] = tuple(code for code, rule in AST_RULES.items() if REGIONS or not rule.reads_regions)


@dataclass
class RulesComparison:
    """What was compared and where the two sides differ."""

    files: int = 0
    diagnostics: Counter[str] = field(default_factory=Counter)  # libcst's, by code
    fixes: int = 0  # libcst's diagnostics with a fix
    edits: int = 0
    mismatches: list[str] = field(default_factory=list)
    times: dict[str, float] = field(default_factory=lambda: dict.fromkeys(_TIMES, 0.0))

    def add(self, other: RulesComparison) -> None:
        self.files += other.files
        self.diagnostics.update(other.diagnostics)
        self.fixes += other.fixes
        self.edits += other.edits
        self.mismatches += other.mismatches
        for key, value in other.times.items():
            self.times[key] += value


def fix_reading(fix: Fix | None) -> tuple | None:
    """Every field of ``fix``: applicability, message, edits (positions and text), fallback."""
    if fix is None:
        return None
    edits = tuple((e.start, e.end, e.content) for e in fix.edits)
    return (fix.applicability.value, fix.message, edits, fix_reading(fix.fallback))


def reading(diagnostic: Diagnostic) -> tuple:
    """Every field of ``diagnostic`` the linter reads after the rules."""
    d = diagnostic
    return (d.code, d.message, d.path, d.start, d.end, d.noqa_row, d.cell, fix_reading(d.fix))


def _run(ctx: RuleContext | AstRuleContext, rules: dict[str, type], codes: Iterable[str]) -> list[tuple]:
    """Each rule's diagnostics in code order, as the linter runs them; a rule that raises adds
    ``("raised", code, exception type)`` where its findings would be."""
    found: list[Diagnostic] = []
    ctx._sink = found.append
    out: list[tuple] = []
    for code in sorted(codes):
        ctx.code = code
        try:
            rules[code]().check(ctx)
        except Exception as exc:  # noqa: BLE001 - compared, not raised
            out += [reading(d) for d in found]
            out.append(("raised", code, type(exc).__name__, traceback.format_exc(limit=-3)))
            found.clear()
            continue
        out += [reading(d) for d in found]
        found.clear()
    return out


def _compare_outputs(result: RulesComparison, expected: list[tuple], got: list[tuple]) -> None:
    for item in expected:
        if item[0] == "raised":
            continue
        result.diagnostics[item[0]] += 1
        if item[-1] is not None:
            result.fixes += 1
            result.edits += len(item[-1][2])
    strip = [_without_trace(e) for e in expected], [_without_trace(g) for g in got]
    if strip[0] == strip[1]:
        return
    for index in range(max(len(expected), len(got))):
        left = expected[index] if index < len(expected) else None
        right = got[index] if index < len(got) else None
        if _without_trace(left) != _without_trace(right):
            result.mismatches.append(f"diagnostic {index} differs: libcst {left!r}, ast {right!r}")
            break


def _without_trace(item: tuple | None) -> tuple | None:
    return item[:3] if item is not None and item[0] == "raised" else item


def _parse_ast(source: SourceFile, module_name: str, is_package: bool) -> AstAnalysis | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return parse_ast(source, module_name, is_package)


def compare(
    text: str,
    module_name: str = "",
    codes: Iterable[str] | None = None,
    is_package: bool = False,
    path: str = "<compared>",
    target_versions: tuple[TargetVersion, ...] = (),
) -> RulesComparison:
    """Compare the libcst rules of ``codes`` (default: every ported one) with their twins on
    ``text`` read alone (no linted tree), the project declaring ``target_versions``."""
    codes = PORTED if codes is None else tuple(codes)
    result = RulesComparison(files=1)
    source = SourceFile(path, text)
    analysis = ModuleAnalysis(source, parse_module_unvalidated(text), module_name, is_package)
    twin = _parse_ast(source, module_name, is_package)
    if twin is None:
        result.mismatches.append("ast refuses the file")
        return result
    expected = _run(RuleContext(analysis, None, lambda d: None, target_versions), ALL_RULES, codes)  # type: ignore[arg-type]
    got = _run(AstRuleContext(twin, None, lambda d: None, target_versions), AST_RULES, codes)  # type: ignore[arg-type]
    _compare_outputs(result, expected, got)
    return result


def compare_site_queries(text: str, module_name: str = "", is_package: bool = False) -> tuple[int, list[str]]:
    """What both contexts answer for each site of ``text`` read alone, in order: the
    condition under which it runs and whether it recomputes nothing (``recomputes_nothing``,
    building the region of a reentrant site); the sites compared and the mismatches."""
    from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
    from ckptlint.checkpoint.sites.sites import site_index

    source = SourceFile("<compared>", text)
    analysis = ModuleAnalysis(source, parse_module_unvalidated(text), module_name, is_package)
    twin = _parse_ast(source, module_name, is_package)
    if twin is None:
        return 0, ["ast refuses the file"]
    ctx, twin_ctx = RuleContext(analysis, None, lambda d: None), AstRuleContext(twin, None, lambda d: None)
    expected = [(ctx.condition(s), ctx.recomputes_nothing(s)) for s in site_index(analysis).sites]
    got = [(twin_ctx.condition(s), twin_ctx.recomputes_nothing(s)) for s in ast_site_index(twin).sites]
    if expected == got:
        return len(expected), []
    return len(expected), [f"site answers differ: libcst {expected!r}, ast {got!r}"]


def compare_region_conditions(text: str, module_name: str = "") -> tuple[int, list[str]]:
    """``region_condition`` of both contexts for every call of the linted module that the
    region of each site (``site_regions``, in order) runs, keyed by the call's range; the
    calls compared and the mismatches."""
    import ast

    import libcst as cst

    source = SourceFile("<compared>", text)
    analysis = ModuleAnalysis(source, parse_module_unvalidated(text), module_name, False)
    twin = _parse_ast(source, module_name, False)
    if twin is None:
        return 0, ["ast refuses the file"]
    ctx, twin_ctx = RuleContext(analysis, None, lambda d: None), AstRuleContext(twin, None, lambda d: None)
    expected = [
        sorted({where.range(n): ctx.region_condition(site, n) for f in region.frames if (where := f.analysis) is analysis
                for n in f.nodes() if isinstance(n, cst.Call)}.items())
        for site, region in ctx.site_regions()
    ]
    got = [
        sorted({where.range(n): twin_ctx.region_condition(site, n) for f in region.frames if (where := f.analysis) is twin
                for n in f.nodes() if isinstance(n, ast.Call)}.items())
        for site, region in twin_ctx.site_regions()
    ]
    calls = sum(len(items) for items in expected)
    if expected == got:
        return calls, []
    return calls, [f"region conditions differ: libcst {expected!r}, ast {got!r}"]


def compare_in_tree(
    path: Path,
    text: str,
    cst_project: Project,
    ast_project: AstProject,
    result: RulesComparison,
    codes: Iterable[str] | None = None,
    target_versions: tuple[TargetVersion, ...] = (),
) -> None:
    """Compare the rules on the file at ``path`` (its text ``text``) as a run of the linter
    reads it, ``cst_project`` and ``ast_project`` loading the tree's other modules."""
    codes = PORTED if codes is None else tuple(codes)
    times = result.times
    module_name, is_package, home = module_name_for(path)
    source = SourceFile(str(path), text)
    result.files += 1

    cst_project.track(home)
    begin = time.process_time()
    module = parse_module_unvalidated(text)
    times["libcst_parse"] += time.process_time() - begin
    analysis = ModuleAnalysis(source, module, module_name, is_package)
    begin = time.process_time()
    _ = analysis.model
    times["libcst_model"] += time.process_time() - begin
    begin = time.process_time()
    expected = _run(RuleContext(analysis, cst_project, lambda d: None, target_versions), ALL_RULES, codes)  # type: ignore[arg-type]
    times["libcst_rules"] += time.process_time() - begin

    ast_project.track(home)
    begin = time.process_time()
    twin = _parse_ast(source, module_name, is_package)
    times["ast_parse"] += time.process_time() - begin
    if twin is None:
        result.mismatches.append("ast refuses the file")
        return
    begin = time.process_time()
    _ = twin.model
    times["ast_model"] += time.process_time() - begin
    begin = time.process_time()
    got = _run(AstRuleContext(twin, ast_project, lambda d: None, target_versions), AST_RULES, codes)  # type: ignore[arg-type]
    times["ast_rules"] += time.process_time() - begin
    _compare_outputs(result, expected, got)


def run_tree(
    root: Path, every_file: bool = False, codes: Iterable[str] | None = None, target_versions: tuple[TargetVersion, ...] = ()
) -> dict[str, object]:
    """:func:`compare_in_tree` on each gated file of ``root``, one project per side for the
    whole tree, CPU times summed."""
    total = RulesComparison()
    compared, skipped = comparable_files(root, every_file)
    cst_project, ast_project = tree_projects()
    for one in compared:
        found = RulesComparison()
        compare_in_tree(one.path, one.text, cst_project, ast_project, found, codes, target_versions)
        found.mismatches = [f"{one.path.relative_to(root)}: {m}" for m in found.mismatches]
        total.add(found)
    return {
        "tree": root.name,
        "files": total.files,
        "skipped": skipped,
        "diagnostics": dict(sorted(total.diagnostics.items())),
        "fixes": total.fixes,
        "edits": total.edits,
        "mismatches": total.mismatches,
        "cpu_s": {key: round(value, 3) for key, value in total.times.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--all", action="store_true", help="every .py file, not only the gated ones")
    parser.add_argument("--codes", help="comma-separated codes (default: every ported one)")
    parser.add_argument("--target-version", action="append", default=[], help="LIBRARY=VERSION or a requirement, as the CLI takes")
    parser.add_argument("--json", type=Path, help="write the numbers here")
    args = parser.parse_args(argv)
    codes = tuple(args.codes.split(",")) if args.codes else None
    targets = tuple(parse_target_version_option(text) for text in args.target_version)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    reports = []
    for tree in args.trees:
        report = run_tree(tree.resolve(), args.all, codes, targets)
        reports.append(report)
        cpu: dict[str, float] = report["cpu_s"]  # type: ignore[assignment]
        cst_total = cpu["libcst_parse"] + cpu["libcst_model"] + cpu["libcst_rules"]
        ast_total = cpu["ast_parse"] + cpu["ast_model"] + cpu["ast_rules"]
        print(
            f"{report['tree']}: {report['files']} files ({report['skipped']} skipped), diagnostics "
            f"{report['diagnostics']}, {report['fixes']} fixes ({report['edits']} edits), "
            f"{len(report['mismatches'])} mismatches; "  # type: ignore[arg-type]
            f"CPU libcst {cst_total:.2f} s (rules {cpu['libcst_rules']:.2f}), ast {ast_total:.2f} s "
            f"(rules {cpu['ast_rules']:.2f})"
        )
        for mismatch in report["mismatches"][:30]:  # type: ignore[index]
            print("  ", mismatch)
    if args.json is not None:
        args.json.write_text(json.dumps(reports, indent=2), encoding="utf-8")
    return 1 if any(r["mismatches"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())

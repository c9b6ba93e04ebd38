"""Stage 1 whole on CPython's ``ast`` against libcst's: ``ast_site_index`` against ``site_index``.

For each gated file of a tree, read as a run of the linter reads it (one :class:`Project` per
side for the whole tree, rooted at each file's import root: ``module_name_for``), it compares:

- the sites, in ORDER: each read as ``ast_sites_parity`` reads it (API, form, call range,
  variant, hidden arguments, every option, a policy's selected classes), plus the API's
  qualified names and source, the callable's start (``_where``), the inputs and forwarded
  keywords (``ast_helper_sites_parity._arg``), the partial site a bound call goes through,
  the save misuse and misspellings (``ast_misuse_parity``'s readings) and, for a call of a
  helper, ``ast_helper_sites_parity``'s reading of it (helper, alternatives read in the
  helper's module, literal flags, bound inputs);
- the module's helpers, in order (``ast_helper_sites_parity._helper_reading``);
- the positions of the calls of ``torch.utils.checkpoint`` itself and of
  ``torch.distributed.checkpoint`` functions;
- the files each side records as read (``Project.accessed``) and the import roots each
  project knows afterwards (namespace packages' folders the search adds).

``python benchmarks/ast_site_index_parity.py TREE [TREE ...] [--json OUT]`` prints, per tree,
the files, sites (home-made, helper calls), helpers, reads, mismatches and the CPU time of each
side's parse, model and sites (the sites' time holds the reading of the other modules).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling parity scripts

from ast_helper_sites_parity import _arg, _helper_reading, _site_reading, _where
from ast_misuse_parity import _ast_argument, _cst_argument, _misspelling_reading, _misuse_reading
from ast_sites_parity import _reading as site_reading
from parity_files import comparable_files, multiset_mismatches

from ckptlint.checkpoint.sites import ast_helper_sites, helper_sites
from ckptlint.checkpoint.sites.ast_options import literal_value as ast_literal_value
from ckptlint.checkpoint.sites.ast_site_index import AstSiteIndex, ast_site_index
from ckptlint.checkpoint.sites.misspelling import Misspelling
from ckptlint.checkpoint.sites.options import literal_value as cst_literal_value
from ckptlint.checkpoint.sites.site import CheckpointSite, SiteForm, SiteIndex
from ckptlint.checkpoint.sites.sites import site_index
from ckptlint.facts.apis import ApiKind
from ckptlint.semantic.analysis import ModuleAnalysis
from ckptlint.semantic.ast_analysis import AstAnalysis, parse_ast
from ckptlint.semantic.parse import parse_module_unvalidated
from ckptlint.semantic.project import AstProject, Project, module_name_for
from ckptlint.text.positions import node_offsets
from ckptlint.text.source import SourceFile

Position = tuple[int, int]
Where = Callable[[object], Position]
_TIMES = ("libcst_parse", "libcst_model", "libcst_sites", "ast_parse", "ast_model", "ast_sites")


@dataclass
class IndexComparison:
    """What :func:`compare_in_tree` compared and where the two sides differ."""

    files: int = 0
    sites: int = 0  # libcst's sites compared
    forms: Counter[str] = field(default_factory=Counter)  # of those: by form / home-made
    helpers: int = 0  # libcst's helpers of the linted modules
    calls: int = 0  # calls of torch.utils.checkpoint itself and torch.distributed.checkpoint
    reads: int = 0  # files libcst records as read
    mismatches: list[str] = field(default_factory=list)
    times: dict[str, float] = field(default_factory=lambda: dict.fromkeys(_TIMES, 0.0))

    def add(self, other: IndexComparison) -> None:
        self.files += other.files
        self.sites += other.sites
        self.forms.update(other.forms)
        self.helpers += other.helpers
        self.calls += other.calls
        self.reads += other.reads
        self.mismatches += other.mismatches
        for key, value in other.times.items():
            self.times[key] += value


@dataclass
class _Side:
    """How one side reads positions: start and end of a node of the linted module, the start
    and literal reader of a node of a helper's module, and the misuse readers."""

    start: Where
    end: Where
    helper_where: Callable[[object], tuple[Where, Callable[[object], object]]]
    span: Callable[[object], object]
    renamed: Callable[[Misspelling], tuple]
    argument: Callable
    flags: Callable[[CheckpointSite], frozenset[str]]
    bound: Callable[[CheckpointSite], bool]


def _full_reading(site: CheckpointSite, side: _Side) -> tuple:
    """Every field of ``site`` (see the module docstring)."""
    function = None if site.api.kind is ApiKind.POLICY else _where(site.function, side.start)
    binding = side.start(site.binding.call) if site.binding is not None else None
    helper = None
    if site.form is SiteForm.HELPER_CALL and site.helper is not None:
        helper = _site_reading(site, side.start, side.end, side.flags(site), side.bound(site), side.helper_where(site.helper)[0])
    return (
        site_reading(site, side.start, side.end),
        site.api.qualified_names,
        site.api.source,
        function,
        tuple(_arg(arg, side.start) for arg in site.inputs),
        tuple(_arg(arg, side.start) for arg in site.function_keywords),
        binding,
        _misuse_reading(site.save_misuse, side.span, side.argument),  # type: ignore[arg-type]
        tuple(_misspelling_reading(m, side.span, side.renamed, side.argument) for m in site.misspellings),  # type: ignore[arg-type]
        helper,
    )


def _ordered_mismatches(expected: list[tuple], got: list[tuple], what: str) -> list[str]:
    """Multiset differences, else the first place the order differs."""
    found = multiset_mismatches(expected, got, what)
    if not found and expected != got:
        index = next(i for i, (a, b) in enumerate(zip(expected, got, strict=False)) if a != b)
        found.append(f"{what} order differs at {index}: libcst {expected[index]!r}, ast {got[index]!r}")
    return found


def _cst_side(source: SourceFile, analysis: ModuleAnalysis) -> _Side:
    offsets = node_offsets(analysis.model.module)

    def start(node: object) -> Position:
        return source.position(offsets[node][0])  # type: ignore[index]

    def end(node: object) -> Position:
        return source.position(offsets[node][1])  # type: ignore[index]

    def span(node: object) -> object:
        return "tuple" if isinstance(node, cst.Tuple) else (start(node), end(node))

    def renamed(found: Misspelling) -> tuple:
        return ("keyword" if isinstance(found.node, cst.Name) else "key", span(found.node))

    def helper_where(helper: object) -> tuple[Where, Callable[[object], object]]:
        module = helper.analysis  # type: ignore[attr-defined]
        return (lambda n: module.range(n)[0]), (lambda n: cst_literal_value(n, module.model))

    return _Side(
        start, end, helper_where, span, renamed, _cst_argument,
        lambda s: helper_sites.literal_flags(s, analysis.model), helper_sites.inputs_bound,
    )


def _ast_side(source: SourceFile, analysis: AstAnalysis, loader: AstProject | None) -> _Side:
    by_model = {id(a.model): a for a in loader._analyses.values() if a is not None} if loader is not None else {}
    by_model[id(analysis.model)] = analysis

    def span(node: object) -> object:
        return "tuple" if isinstance(node, ast.Tuple) else analysis.range(node)  # type: ignore[arg-type]

    def renamed(found: Misspelling) -> tuple:
        node = found.node
        if isinstance(node, ast.keyword):
            begin = source.ast_position(node.lineno, node.col_offset)
            stop = source.ast_position(node.lineno, node.col_offset + len(found.written.encode("utf-8")))
            return ("keyword", (begin, stop))
        return ("key", span(node))

    def helper_where(helper: object) -> tuple[Where, Callable[[object], object]]:
        module = by_model.get(id(helper.analysis))  # type: ignore[attr-defined]
        if module is None:
            return (lambda n: (-1, -1)), (lambda n: None)
        return module.start, (lambda n: ast_literal_value(n, module.model))  # type: ignore[arg-type,return-value]

    return _Side(
        analysis.start, analysis.end, helper_where, span, renamed, _ast_argument,  # type: ignore[arg-type]
        lambda s: ast_helper_sites.literal_flags(s, analysis.model), ast_helper_sites.inputs_bound,  # type: ignore[arg-type]
    )


def compare_in_tree(
    path: Path, text: str, cst_project: Project, ast_project: AstProject, result: IndexComparison
) -> None:
    """Compare ``site_index`` of the file at ``path`` (its text ``text``) with ``cst_project``
    as its loader and ``ast_site_index`` with ``ast_project`` (over another :class:`Project`),
    as a run of the linter reads it (see the module docstring)."""
    times = result.times
    module_name, is_package, home = module_name_for(path)
    source = SourceFile(str(path), text)
    result.files += 1

    cst_project.track(home)
    begin = time.process_time()
    module = parse_module_unvalidated(text)
    times["libcst_parse"] += time.process_time() - begin
    analysis = ModuleAnalysis(source, module, module_name, is_package)
    analysis.project = cst_project
    begin = time.process_time()
    _ = analysis.model
    times["libcst_model"] += time.process_time() - begin
    begin = time.process_time()
    index = site_index(analysis)
    times["libcst_sites"] += time.process_time() - begin
    cst_reads = [str(p) for p in cst_project.accessed()]

    ast_project.track(home)
    begin = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        analysis_ast = parse_ast(source, module_name, is_package)
    times["ast_parse"] += time.process_time() - begin
    if analysis_ast is None:
        result.mismatches.append("ast refuses the file")
        return
    analysis_ast.project = ast_project
    begin = time.process_time()
    _ = analysis_ast.model
    times["ast_model"] += time.process_time() - begin
    begin = time.process_time()
    found = ast_site_index(analysis_ast)
    times["ast_sites"] += time.process_time() - begin
    ast_reads = [str(p) for p in ast_project.project.accessed()]

    _compare_indexes(result, index, found, _cst_side(source, analysis), _ast_side(source, analysis_ast, ast_project))
    result.mismatches += multiset_mismatches(cst_reads, ast_reads, "read")
    result.reads += len(cst_reads)
    result.mismatches += _ordered_mismatches(
        [str(r) for r in cst_project.roots], [str(r) for r in ast_project.project.roots], "import root"
    )


def tree_projects() -> tuple[Project, AstProject]:
    """One project per side for a run over a tree, both caches with the same bounds (so both
    drop the same modules between two linted files and read them again alike)."""
    cst_project = Project()
    ast_project = AstProject(Project())
    assert (ast_project.max_modules, ast_project.max_chars) == (cst_project.max_modules, cst_project.max_chars)
    return cst_project, ast_project


def compare_alone(text: str, module_name: str = "", is_package: bool = False, path: str = "<compared>") -> IndexComparison:
    """Compare ``site_index`` and ``ast_site_index`` of ``text`` read alone (no linted tree)."""
    result = IndexComparison(files=1)
    source = SourceFile(path, text)
    analysis = ModuleAnalysis(source, parse_module_unvalidated(text), module_name, is_package)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        analysis_ast = parse_ast(source, module_name, is_package)
    if analysis_ast is None:
        result.mismatches.append("ast refuses the file")
        return result
    index, found = site_index(analysis), ast_site_index(analysis_ast)
    _compare_indexes(result, index, found, _cst_side(source, analysis), _ast_side(source, analysis_ast, None))
    return result


def _compare_indexes(result: IndexComparison, index: SiteIndex, found: AstSiteIndex, cst_side: _Side, ast_side: _Side) -> None:
    """Sites, helpers and module/dcp calls of both indexes, in order (see the module docstring)."""
    expected = [_full_reading(site, cst_side) for site in index.sites]
    got = [_full_reading(site, ast_side) for site in found.sites]  # type: ignore[arg-type]
    result.mismatches += _ordered_mismatches(expected, got, "site")
    result.sites += len(expected)
    for site in index.sites:
        result.forms["home-made" if site.api.kind is ApiKind.HOME_MADE else site.form.value] += 1
    expected = [(name, _helper_reading(h, *cst_side.helper_where(h))) for name, h in index.helpers.items()]
    got = [(name, _helper_reading(h, *ast_side.helper_where(h))) for name, h in found.helpers.items()]  # type: ignore[arg-type]
    result.mismatches += _ordered_mismatches(expected, got, "helper")
    result.helpers += len(expected)
    for what, cst_calls, ast_calls in (
        ("module call", index.module_calls, found.module_calls),
        ("dcp call", index.dcp_calls, found.dcp_calls),
    ):
        expected = [(cst_side.start(c), cst_side.end(c)) for c in cst_calls]
        got = [(ast_side.start(c), ast_side.end(c)) for c in ast_calls]
        result.mismatches += _ordered_mismatches(expected, got, what)
        result.calls += len(expected)


def run_tree(root: Path, every_file: bool = False) -> dict[str, object]:
    """:func:`compare_in_tree` on each gated file of ``root``, one :class:`Project` per side for
    the whole tree (as a run of the linter keeps one), CPU times summed."""
    total = IndexComparison()
    compared, skipped = comparable_files(root, every_file)
    cst_project, ast_project = tree_projects()
    for one in compared:
        found = IndexComparison()
        compare_in_tree(one.path, one.text, cst_project, ast_project, found)
        found.mismatches = [f"{one.path.relative_to(root)}: {m}" for m in found.mismatches]
        total.add(found)
    return {
        "tree": root.name,
        "files": total.files,
        "skipped": skipped,
        "sites": total.sites,
        "forms": dict(sorted(total.forms.items())),
        "helpers": total.helpers,
        "calls": total.calls,
        "reads": total.reads,
        "mismatches": total.mismatches,
        "cpu_s": {key: round(value, 3) for key, value in total.times.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--all", action="store_true", help="every .py file, not only the gated ones")
    parser.add_argument("--json", type=Path, help="write the numbers here")
    args = parser.parse_args(argv)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    reports = []
    for tree in args.trees:
        report = run_tree(tree.resolve(), args.all)
        reports.append(report)
        cpu: dict[str, float] = report["cpu_s"]  # type: ignore[assignment]
        cst_total = cpu["libcst_parse"] + cpu["libcst_model"] + cpu["libcst_sites"]
        ast_total = cpu["ast_parse"] + cpu["ast_model"] + cpu["ast_sites"]
        print(
            f"{report['tree']}: {report['files']} files ({report['skipped']} skipped), {report['sites']} sites "
            f"{report['forms']}, {report['helpers']} helpers, {report['calls']} module/dcp calls, "
            f"{report['reads']} reads, {len(report['mismatches'])} mismatches; "  # type: ignore[arg-type]
            f"CPU libcst {cst_total:.2f} s (sites {cpu['libcst_sites']:.2f}), ast {ast_total:.2f} s "
            f"(sites {cpu['ast_sites']:.2f})"
        )
        for mismatch in report["mismatches"][:30]:  # type: ignore[index]
            print("  ", mismatch)
    if args.json is not None:
        args.json.write_text(json.dumps(reports, indent=2), encoding="utf-8")
    return 1 if any(r["mismatches"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())

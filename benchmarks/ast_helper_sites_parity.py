"""Helpers and the sites of their calls on CPython's ``ast`` against libcst's: same records, and what each costs.

For one text, :func:`compare` reads the module both ways, for the module alone (no linted tree
around it, so only helpers of the same module are called):

- libcst: :func:`ckptlint.checkpoint.sites.sites.site_index` of the module, its ``helpers``
  and its ``SiteForm.HELPER_CALL`` sites; kept when every checkpoint call a helper makes is a
  site the ``ast`` finder covers (``ast_sites_parity.covered``, or a covered helper call),
  the others counted as left out;
- ``ast``: :func:`ckptlint.checkpoint.sites.ast_helper_sites.helper_sites` of its ``AstModel``.

A helper is read as: its qualified name, module, parameter, whether it is a method, its
positional and keyword-only parameters, each default (name, where its expression starts, its
literal value), ``*``/``**`` names, level, whether it uses its ``**`` elsewhere, ``describe()``,
and each checkpoint call it makes (the call's start, API, guards, plans, input plan). A helper
call site is read as ``ast_sites_parity`` reads a site (API, form, call start and end, variant,
hidden ``**`` options, every option's state, value, origin and where it starts), plus the
helper's qualified name, where the checkpointed callable starts, each input (its ``*`` and
where its value starts), the keywords forwarded to the function, the options the call
decides, the alternatives it can reach (start, guards, plans), ``literal_flags`` and
``inputs_bound``. Both are compared as multisets.

Over a folder (``python benchmarks/ast_helper_sites_parity.py TREE [TREE ...]``): the files
the gate lets through, each compared, and the CPU time of each side's parse, model and sites
(libcst's whole ``site_index``; ``ast``'s direct sites and helper sites), summed over files.

With ``--tree`` (:func:`compare_in_tree`), each gated file is read as the linter reads it, in
its tree: a ``Project`` rooted at its import root (``module_name_for``), libcst's
``site_index`` of the project's analysis against ``ast_helper_calls.module_helper_sites`` of
an ``AstProject``'s over another ``Project``, so helpers of other modules are called; compared
are the module's helpers and ``HELPER_CALL`` sites (a helper's checkpoint calls at their
places in its module), its home-made records read with the tree, and the set of files each
side records as read (``Project.accessed``). libcst's ``Recogniser`` is kept within the module
(:func:`recogniser_within_the_module`; ``--whole-recogniser`` lets it follow the tree: its
extra reads and recognised calls then show as mismatches until it is ported). CPU times
include parsing the other modules each side reads.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from ckptlint.checkpoint.sites import ast_helper_calls, ast_helper_sites, ast_homemade, helper_sites, homemade, reach
from ckptlint.checkpoint.sites.ast_options import literal_value as ast_literal_value
from ckptlint.checkpoint.sites.ast_sites import direct_sites
from ckptlint.checkpoint.sites.options import literal_value as cst_literal_value
from ckptlint.checkpoint.sites.site import CheckpointSite, HelperCall, HelperSummary, SiteForm
from ckptlint.checkpoint.sites.sites import site_index
from ckptlint.semantic.analysis import ModuleAnalysis
from ckptlint.semantic.ast_analysis import AstAnalysis
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.model import SemanticModel
from ckptlint.semantic.parse import parse_module_unvalidated
from ckptlint.semantic.project import AstProject, Project, module_name_for
from ckptlint.text.positions import node_offsets
from ckptlint.text.source import SourceFile

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling modules

from ast_homemade_parity import _readings as homemade_readings
from ast_sites_parity import _reading as site_reading
from ast_sites_parity import covered
from parity_files import comparable_files, multiset_mismatches

Position = tuple[int, int]
_TIMES = ("libcst_parse", "libcst_model", "libcst_sites", "ast_parse", "ast_model", "ast_sites")


@dataclass
class HelperComparison:
    """What :func:`compare` compared and where the two readings differ."""

    helpers: int = 0  # libcst's helpers compared
    sites: int = 0  # libcst's helper-call sites compared
    alternatives: int = 0  # the checkpoint calls those sites can reach
    reads: int = 0  # files libcst records as read (compared with ast's)
    home_made: int = 0  # home-made implementations and helpers read with the tree, compared
    home_made_bases: int = 0  # implementations found only through a base class of another module
    levels: Counter[int] = field(default_factory=Counter)  # helpers compared, by level
    left_out: Counter[str] = field(default_factory=Counter)
    mismatches: list[str] = field(default_factory=list)
    times: dict[str, float] = field(default_factory=lambda: dict.fromkeys(_TIMES, 0.0))

    def add(self, other: HelperComparison) -> None:
        self.helpers += other.helpers
        self.sites += other.sites
        self.alternatives += other.alternatives
        self.reads += other.reads
        self.home_made += other.home_made
        self.home_made_bases += other.home_made_bases
        self.levels.update(other.levels)
        self.left_out.update(other.left_out)
        self.mismatches += other.mismatches
        for key, value in other.times.items():
            self.times[key] += value


def _where(node: object, position: Callable[[object], Position]) -> Position | None:
    # a parenthesized tuple starts at its parenthesis in ``ast``, inside it in libcst
    return None if node is None or type(node) in (ast.Tuple, cst.Tuple) else position(node)


def _arg(arg: object, position: Callable[[object], Position]) -> tuple:
    """An input or forwarded keyword: its ``*``, its keyword and where its value starts."""
    if isinstance(arg, cst.Arg):
        return (arg.star, arg.keyword.value if arg.keyword is not None else None, _where(arg.value, position))
    if isinstance(arg, ast.Starred):
        return ("*", None, _where(arg.value, position))
    if isinstance(arg, ast.keyword):
        return ("**" if arg.arg is None else "", arg.arg, _where(arg.value, position))
    return ("", None, _where(arg, position))


def _call_reading(call: HelperCall, position: Callable[[object], Position]) -> tuple:
    return (position(call.site.call), call.site.api.name, call.guards, tuple(sorted(call.plans.items())), call.inputs)


def _helper_reading(helper: HelperSummary, position: Callable[[object], Position], literal: Callable[[object], object]) -> tuple:
    defaults = tuple((name, _where(node, position), repr(literal(node))) for name, node in helper.defaults.items())
    return (
        "helper",
        helper.qualname,
        helper.module,
        helper.parameter,
        helper.method,
        helper.params,
        helper.keyword_only,
        defaults,
        helper.var_positional,
        helper.var_keyword,
        helper.level,
        helper.keywords_elsewhere,
        helper.describe(),
        tuple(_call_reading(call, position) for call in helper.calls),
    )


def _site_reading(
    site: CheckpointSite,
    position: Callable[[object], Position],
    end: Callable[[object], Position],
    flags: frozenset[str],
    bound: bool,
    helper_position: Callable[[object], Position] | None = None,
) -> tuple:
    """``helper_position``: positions in the helper's module (default ``position``)."""
    assert site.helper is not None
    return (
        "helper call",
        site_reading(site, position, end),
        site.helper.qualname,
        _where(site.function, position),
        tuple(_arg(arg, position) for arg in site.inputs),
        tuple(_arg(arg, position) for arg in site.function_keywords),
        tuple(sorted(site.caller_options)),
        tuple(_call_reading(call, helper_position or position) for call in site.alternatives),
        tuple(sorted(flags)),
        bound,
    )


def _covered_helpers(helpers: dict[str, HelperSummary], model: SemanticModel) -> set[str]:
    """The helpers all of whose checkpoint calls the ``ast`` reading can see: sites ``covered``
    or calls of such a helper (helpers of a level below first)."""
    ok: set[str] = set()
    for name, helper in sorted(helpers.items(), key=lambda item: item[1].level):
        if all(_site_covered(call.site, ok, model) for call in helper.calls):
            ok.add(name)
    return ok


def _site_covered(site: CheckpointSite, ok: set[str], model: SemanticModel) -> bool:
    if site.form is SiteForm.HELPER_CALL:
        return site.helper is not None and site.helper.qualname in ok
    return covered(site, model)


def compare(text: str, module_name: str = "", is_package: bool = False, path: str = "<compared>") -> HelperComparison:
    """Read the helpers of ``text`` and their calls both ways and compare them (see the module docstring)."""
    result = HelperComparison()
    times = result.times
    source = SourceFile(path, text)

    begin = time.process_time()
    module = parse_module_unvalidated(text)
    times["libcst_parse"] += time.process_time() - begin
    analysis = ModuleAnalysis(source, module, module_name, is_package)
    begin = time.process_time()
    cst_model = analysis.model
    times["libcst_model"] += time.process_time() - begin
    begin = time.process_time()
    index = site_index(analysis)
    times["libcst_sites"] += time.process_time() - begin

    begin = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(text)
    times["ast_parse"] += time.process_time() - begin
    begin = time.process_time()
    ast_model = AstModel.build(tree, module_name, is_package, text)
    times["ast_model"] += time.process_time() - begin
    begin = time.process_time()
    found = ast_helper_sites.helper_sites(ast_model, direct_sites(ast_model))
    times["ast_sites"] += time.process_time() - begin

    cst_helper_sites = [s for s in index.sites if s.form is SiteForm.HELPER_CALL]
    if not (index.helpers or found.helpers or cst_helper_sites or found.sites):
        analysis.release()
        ast_model.release()
        return result

    offsets = node_offsets(module)

    def cst_position(node: object) -> Position:
        return source.position(offsets[node][0])  # type: ignore[index]

    def cst_end(node: object) -> Position:
        return source.position(offsets[node][1])  # type: ignore[index]

    def ast_position(node: object) -> Position:
        return source.ast_position(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def ast_end(node: object) -> Position:
        return source.ast_position(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    ok = _covered_helpers(index.helpers, cst_model)
    expected: list[tuple] = []
    for name, helper in index.helpers.items():
        if name in ok:
            expected.append(_helper_reading(helper, cst_position, lambda n: cst_literal_value(n, cst_model)))
            result.helpers += 1
            result.levels[helper.level] += 1
        else:
            result.left_out["helper whose checkpoint call only libcst sees"] += 1
    for site in cst_helper_sites:
        if site.helper is not None and site.helper.qualname in ok:
            flags = helper_sites.literal_flags(site, cst_model)
            expected.append(_site_reading(site, cst_position, cst_end, flags, helper_sites.inputs_bound(site)))
            result.sites += 1
            result.alternatives += len(site.alternatives)
        else:
            result.left_out["call of such a helper"] += 1
    # what libcst leaves out is left out here too (its other calls may be seen on ``ast``)
    hidden = set(index.helpers) - ok
    got: list[tuple] = [
        _helper_reading(helper, ast_position, lambda n: ast_literal_value(n, ast_model))  # type: ignore[arg-type]
        for name, helper in found.helpers.items()
        if name not in hidden
    ]
    for site in found.sites:
        if site.helper is not None and site.helper.qualname in hidden:
            continue
        flags = ast_helper_sites.literal_flags(site, ast_model)
        got.append(_site_reading(site, ast_position, ast_end, flags, ast_helper_sites.inputs_bound(site)))  # type: ignore[arg-type]
    result.mismatches += multiset_mismatches(expected, got)
    analysis.release()
    ast_model.release()
    return result


# --------------------------------------------------------------------------- in a tree
@contextmanager
def recogniser_within_the_module() -> Iterator[None]:
    """libcst's ``Recogniser`` as it reads a module alone (no API, home-made implementation
    or ``TrainingArguments`` class imported from another module followed there: not ported
    yet), but for the home-made implementations of the module (read with the tree: a base
    class of another module) and the import roots of namespace packages, which
    ``HelperResolver`` asks it for; the helper resolver keeps the loader."""
    init, root = reach.Recogniser.__init__, reach.Recogniser.namespace_root

    def alone(self: reach.Recogniser, model: SemanticModel, project: object, path: str | None = None) -> None:
        init(self, model, project, path)  # home-made implementations read with the tree
        self._tree = project  # type: ignore[attr-defined]
        self.project = None

    def namespace_root(self: reach.Recogniser, qualified: str) -> None:
        self.project = self._tree  # type: ignore[attr-defined]
        try:
            root(self, qualified)
        finally:
            self.project = None

    reach.Recogniser.__init__ = alone  # type: ignore[method-assign,assignment]
    reach.Recogniser.namespace_root = namespace_root  # type: ignore[method-assign]
    try:
        yield
    finally:
        reach.Recogniser.__init__ = init  # type: ignore[method-assign]
        reach.Recogniser.namespace_root = root  # type: ignore[method-assign]


def _covered_helper(helper: HelperSummary, memo: dict[int, bool]) -> bool:
    """Whether every checkpoint call ``helper`` (of any module) makes is one the ``ast``
    reading sees: a covered site of its module or a call of such a helper."""
    known = memo.get(id(helper))
    if known is None:
        memo[id(helper)] = False  # a cycle covers nothing
        model = helper.analysis.model
        known = memo[id(helper)] = all(
            _covered_helper(call.site.helper, memo)
            if call.site.form is SiteForm.HELPER_CALL and call.site.helper is not None
            else call.site.form is not SiteForm.HELPER_CALL and covered(call.site, model)
            for call in helper.calls
        )
    return known


def compare_in_tree(path: Path, *, whole_recogniser: bool = False, partial: bool = False) -> HelperComparison:
    """Lint-like reading of the file at ``path`` with a project rooted as the linter roots it
    (``module_name_for``), both ways: libcst's ``site_index`` with a ``Project`` (its
    ``Recogniser`` kept within the module unless ``whole_recogniser``), ``ast``'s
    ``module_helper_sites`` with an ``AstProject`` over another ``Project``; compares the
    module's helpers, its ``HELPER_CALL`` sites (the helpers' own checkpoint calls read in
    their modules) and the files each side records as read (the file itself left out).
    ``partial``: libcst parses the modules it reaches partially (the names asked for and what
    they need: a run of a few files); as it then follows fewer calls of those modules, only
    a file it reads and ``ast`` does not is a mismatch (``ast`` reads a superset)."""
    result = HelperComparison()
    times = result.times
    path = Path(os.path.abspath(path))
    root = module_name_for(path)[2]

    cst_project = Project(partial=partial)
    cst_project.partial_reached = partial
    cst_project.track(root)
    begin = time.process_time()
    analysis = cst_project.analysis_for_file(path)
    times["libcst_parse"] += time.process_time() - begin
    ast_project = Project()
    ast_project.track(root)
    loader = AstProject(ast_project)
    begin = time.process_time()
    ast_analysis = loader.ast_analysis_for_file(path)
    times["ast_parse"] += time.process_time() - begin
    if analysis is None or ast_analysis is None:
        result.left_out["file one parser refuses"] += 1
        return result
    begin = time.process_time()
    if whole_recogniser:
        index = site_index(analysis)
    else:
        with recogniser_within_the_module():
            index = site_index(analysis)
    times["libcst_sites"] += time.process_time() - begin
    cst_read = sorted(str(p) for p in cst_project.accessed() if p != path)
    begin = time.process_time()
    found = ast_helper_calls.module_helper_sites(ast_analysis)
    times["ast_sites"] += time.process_time() - begin
    ast_read = sorted(str(p) for p in ast_project.accessed() if p != path)
    if partial:  # libcst's parses of reached modules see fewer calls to follow; ast reads whole modules
        result.mismatches += [m for m in multiset_mismatches(cst_read, ast_read, "file read") if " only in libcst: " in m]
        result.left_out["file read only on ast (whole modules)"] += len(set(ast_read) - set(cst_read))
    else:
        result.mismatches += multiset_mismatches(cst_read, ast_read, "file read")
    result.reads += len(cst_read)

    by_model = {id(a.model): a for a in loader._analyses.values() if a is not None}

    def cst_where(helper: HelperSummary) -> tuple[Callable[[object], Position], Callable[[object], object]]:
        module = helper.analysis
        return (lambda n: module.range(n)[0]), (lambda n: cst_literal_value(n, module.model))

    def ast_where(helper: HelperSummary) -> tuple[Callable[[object], Position], Callable[[object], object]]:
        module = by_model[id(helper.analysis)]
        return module.start, (lambda n: ast_literal_value(n, module.model))  # type: ignore[arg-type,return-value]

    memo: dict[int, bool] = {}
    expected: list[tuple] = []
    hidden: set[tuple[str, str]] = set()
    for name, helper in index.helpers.items():
        if _covered_helper(helper, memo):
            expected.append(_helper_reading(helper, *cst_where(helper)))
            result.helpers += 1
            result.levels[helper.level] += 1
        else:
            hidden.add((helper.module, name))
            result.left_out["helper whose checkpoint call only libcst sees"] += 1
    cst_model = analysis.model
    for site in index.sites:
        if site.form is not SiteForm.HELPER_CALL or site.helper is None:
            continue
        if not _covered_helper(site.helper, memo):
            hidden.add((site.helper.module, site.helper.qualname))
            result.left_out["call of such a helper"] += 1
            continue
        flags = helper_sites.literal_flags(site, cst_model)
        position, end = (lambda n: analysis.range(n)[0]), (lambda n: analysis.range(n)[1])
        reading = _site_reading(site, position, end, flags, helper_sites.inputs_bound(site), cst_where(site.helper)[0])
        expected.append((site.helper.module, *reading))
        result.sites += 1
        result.alternatives += len(site.alternatives)
        if site.helper.module != cst_model.module_name:
            result.left_out["(compared) call of another module's helper"] += 1
    got: list[tuple] = [
        _helper_reading(helper, *ast_where(helper))  # type: ignore[arg-type]
        for name, helper in found.helpers.items()
        if (helper.module, name) not in hidden
    ]
    for site in found.sites:  # type: ignore[assignment]
        if site.helper is None or (site.helper.module, site.helper.qualname) in hidden:
            continue
        flags = ast_helper_sites.literal_flags(site, ast_analysis.model)  # type: ignore[arg-type]
        reading = _site_reading(
            site, ast_analysis.start, ast_analysis.end, flags, ast_helper_sites.inputs_bound(site),  # type: ignore[arg-type]
            ast_where(site.helper)[0],
        )
        got.append((site.helper.module, *reading))
    result.mismatches += multiset_mismatches(expected, got)
    result.mismatches += _home_made_mismatches(analysis, cst_project, ast_analysis, loader, result)
    return result


def _home_made_mismatches(
    analysis: ModuleAnalysis, cst_project: Project, ast_analysis: AstAnalysis, loader: AstProject, result: HelperComparison
) -> list[str]:
    """The home-made implementations and helpers of the linted module read with the tree
    (``home_made(model, loader)``) both ways, every field as ``ast_homemade_parity`` reads
    them (a re-run call in a base class's module at its place there)."""
    cst_found = homemade.home_made(analysis.model, cst_project)
    ast_found = ast_homemade.home_made(ast_analysis.model, loader)
    if not (cst_found.implementations or ast_found.implementations):
        return []
    cst_modules = [analysis, *(a for a in cst_project._analyses.values() if a is not None and a is not analysis)]

    def cst_span(node: object) -> tuple[Position, Position]:
        for module in cst_modules:
            try:
                return module.range(node)  # type: ignore[arg-type]
            except KeyError:
                continue
        raise KeyError(node)

    ast_modules = {id(n): a for a in loader._analyses.values() if a is not None for n in ast.walk(a.tree)}

    def ast_span(node: object) -> tuple[Position, Position]:
        return ast_modules[id(node)].range(node)  # type: ignore[arg-type]

    expected = homemade_readings(cst_found, lambda n: cst_span(n)[0], lambda n: cst_span(n)[1])
    got = homemade_readings(ast_found, lambda n: ast_span(n)[0], lambda n: ast_span(n)[1])  # type: ignore[arg-type]
    result.home_made += len(expected)
    result.home_made_bases += len(set(cst_found.implementations) - set(homemade.home_made(analysis.model).implementations))
    return multiset_mismatches(expected, got, "home-made")


def run_tree_linted(root: Path, whole_recogniser: bool = False, partial: bool = False) -> dict[str, object]:
    """:func:`compare_in_tree` on each gated file of ``root`` (helpers of the whole tree)."""
    total = HelperComparison()
    compared, skipped = comparable_files(root)
    for one in compared:
        found = compare_in_tree(one.path, whole_recogniser=whole_recogniser, partial=partial)
        found.mismatches = [f"{one.path.relative_to(root)}: {m}" for m in found.mismatches]
        total.add(found)
    return {
        "tree": root.name,
        "files": len(compared),
        "skipped": skipped,
        "helpers": total.helpers,
        "levels": dict(sorted(total.levels.items())),
        "sites": total.sites,
        "alternatives": total.alternatives,
        "reads": total.reads,
        "home_made": total.home_made,
        "home_made_bases": total.home_made_bases,
        "left_out": dict(total.left_out),
        "mismatches": total.mismatches,
        "cpu_s": {key: round(value, 3) for key, value in total.times.items()},
    }


# --------------------------------------------------------------------------- corpus runs
def run_tree(root: Path, every_file: bool = False) -> dict[str, object]:
    """Compare both readings on the (gated) files of ``root`` and sum their CPU times."""
    total = HelperComparison()
    compared, skipped = comparable_files(root, every_file)
    for one in compared:
        found = compare(one.text, one.module_name, one.is_package, str(one.path))
        found.mismatches = [f"{one.path.relative_to(root)}: {m}" for m in found.mismatches]
        total.add(found)
    return {
        "tree": root.name,
        "files": len(compared),
        "skipped": skipped,
        "helpers": total.helpers,
        "levels": dict(sorted(total.levels.items())),
        "sites": total.sites,
        "alternatives": total.alternatives,
        "left_out": dict(total.left_out),
        "mismatches": total.mismatches,
        "cpu_s": {key: round(value, 3) for key, value in total.times.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--all", action="store_true", help="every .py file, not only the gated ones")
    parser.add_argument("--json", type=Path, help="write the numbers here")
    parser.add_argument("--tree", action="store_true", help="lint each gated file in its tree (helpers of other modules)")
    parser.add_argument("--whole-recogniser", action="store_true", help="with --tree: libcst's Recogniser follows the tree too")
    parser.add_argument("--partial", action="store_true", help="with --tree: libcst parses reached modules partially")
    args = parser.parse_args(argv)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    reports = []
    for tree in args.trees:
        report = (
            run_tree_linted(tree.resolve(), args.whole_recogniser, args.partial) if args.tree else run_tree(tree.resolve(), args.all)
        )
        reports.append(report)
        cpu: dict[str, float] = report["cpu_s"]  # type: ignore[assignment]
        print(
            f"{report['tree']}: {report['files']} files ({report['skipped']} skipped), {report['helpers']} helpers "
            f"(by level {report['levels']}), {report['sites']} helper-call sites ({report['alternatives']} alternatives) "
            f"compared, {report.get('reads', '-')} files read, {report.get('home_made', '-')} home-made records "
            f"({report.get('home_made_bases', '-')} through a base elsewhere), left out {report['left_out']}, "
            f"{len(report['mismatches'])} mismatches; "  # type: ignore[arg-type]
            f"CPU libcst sites {cpu['libcst_sites']:.2f} s, ast sites {cpu['ast_sites']:.2f} s"
        )
        for mismatch in report["mismatches"][:30]:  # type: ignore[index]
            print("  ", mismatch)
    if args.json is not None:
        args.json.write_text(json.dumps(reports, indent=2), encoding="utf-8")
    return 1 if any(r["mismatches"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())

"""Checkpoint sites on CPython's ``ast`` against libcst's: same sites, same files read, and what each costs.

For one text, :func:`compare` finds the sites of the module alone both ways and compares them
as multisets:

- libcst: :func:`ckptlint.checkpoint.sites.sites.site_index` of the module (no linted tree
  around it), kept when the ``ast`` finder covers the site (:func:`covered`): every site but
  helper calls (``SiteForm.HELPER_CALL``) and home-made implementations and helpers
  (``ApiKind.HOME_MADE``), which other bricks port;
- ``ast``: :func:`ckptlint.checkpoint.sites.ast_sites.direct_sites`, every site.

It compares the gradient hooks that re-run the model too (``hook_recompute`` and
``ast_hook_recompute``: hook name, registration, re-runs in order, autocast restored).

Each site is read as: the API's name, the form, the call's 1-based ``(line, column)`` start
and end, the variant (``Reentrancy``), whether a ``**`` argument hides options, for every
option its state, value (``repr`` and type), origin and where the expression giving it starts
(but for a tuple, which ``ast`` starts at its parenthesis and libcst inside it), and for a
policy site the ranges of the class expressions its region expression calls.

With ``--tree``, each file is compared with a loader of the linted tree around it, rooted as the
linter roots it (:func:`compare_in_tree`: one :class:`Project` per side for the whole tree):
libcst's ``site_index`` with ``analysis.project`` set against
:func:`~ckptlint.checkpoint.sites.ast_sites.module_sites` with an :class:`AstProject`, and the
files each side records as read (``Project.accessed``). The libcst reads compared are those of
its finder with home-made implementations read for the module alone and without helper calls
(what the ``ast`` finder covers); a file whose ``ast`` reads are not all among libcst's full
reads is counted apart (``reads_beyond_full``).

Over a folder (``python benchmarks/ast_sites_parity.py [--tree] TREE [TREE ...]``): the files
the gate lets through, each compared, and the CPU time of each side's parse, model and sites
(with ``--tree``, the sites' time holds the reading of the other modules), summed over the
files (one process, the sides one after the other for each file).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from ckptlint.checkpoint.sites import homemade, reach
from ckptlint.checkpoint.sites.ast_hook_recompute import hook_recomputes as ast_hook_recomputes
from ckptlint.checkpoint.sites.ast_sites import direct_sites, module_sites
from ckptlint.checkpoint.sites.hook_recompute import hook_recomputes as cst_hook_recomputes
from ckptlint.checkpoint.sites.site import CheckpointSite, SiteForm
from ckptlint.checkpoint.sites.sites import collect_sites, site_index
from ckptlint.facts.apis import HF_ENABLE_METHODS, INSTANCE_METHOD_APIS, METHOD_APIS, ApiKind, api_for
from ckptlint.semantic.analysis import ModuleAnalysis
from ckptlint.semantic.ast_analysis import parse_ast
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.model import SemanticModel
from ckptlint.semantic.parse import parse_module_unvalidated
from ckptlint.semantic.project import AstProject, Project, module_name_for
from ckptlint.text.positions import node_offsets
from ckptlint.text.source import SourceFile

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling parity_files

from parity_files import comparable_files, multiset_mismatches

Position = tuple[int, int]


@dataclass
class SiteComparison:
    """What :func:`compare` compared and where the two finders differ."""

    sites: int = 0  # sites compared (libcst's, of the covered forms)
    hooks: int = 0  # gradient hooks that re-run the model (libcst's)
    reads: int = 0  # files recorded as read (libcst's, in a linted tree)
    reads_beyond: int = 0  # files whose ast reads are not all among libcst's full reads
    reached: int = 0  # compared calls whose callee's qualified names name no API (subclasses, the tree)
    policy_regions: int = 0  # compared policy sites whose selected classes are known
    left_out: Counter[str] = field(default_factory=Counter)  # libcst's sites of other forms, by form
    mismatches: list[str] = field(default_factory=list)
    times: dict[str, float] = field(default_factory=lambda: dict.fromkeys(_TIMES, 0.0))

    def add(self, other: SiteComparison) -> None:
        self.sites += other.sites
        self.hooks += other.hooks
        self.reads += other.reads
        self.reads_beyond += other.reads_beyond
        self.reached += other.reached
        self.policy_regions += other.policy_regions
        self.left_out.update(other.left_out)
        self.mismatches += other.mismatches
        for key, value in other.times.items():
            self.times[key] += value


_TIMES = ("libcst_parse", "libcst_model", "libcst_sites", "libcst_hooks", "ast_parse", "ast_model", "ast_sites", "ast_hooks")


_SELF_KINDS = (ApiKind.FUNCTION, ApiKind.LIBRARY_FUNCTION)


def covered(site: CheckpointSite, model: SemanticModel) -> bool:
    """Whether the ``ast`` finder covers ``site`` (see the module docstring): every site but
    those of helper calls and of home-made implementations or helpers (``model``, the
    module's, is not needed any more: kept for the callers)."""
    return site.form is not SiteForm.HELPER_CALL and site.api.kind is not ApiKind.HOME_MADE


def _left_out_form(site: CheckpointSite) -> str:
    return site.form.value if site.form is SiteForm.HELPER_CALL else "home-made"


def _reading(
    site: CheckpointSite,
    position: Callable[[object], Position],
    end: Callable[[object], Position],
) -> tuple:
    options = []
    for name, value in sorted(site.options.items()):
        # a parenthesized tuple starts at its parenthesis in ``ast``, inside it in libcst
        where = None if value.node is None or type(value.node) in (ast.Tuple, cst.Tuple) else position(value.node)
        shown = (repr(value.value), type(value.value).__name__)
        options.append((name, value.state.value, shown, value.origin.value, where))
    return (
        site.api.name,
        site.form.value,
        position(site.call),
        end(site.call),
        site.reentrancy.value,
        site.hidden_arguments,
        tuple(options),
        _function_reading(site, position, end),
    )


def _function_reading(site: CheckpointSite, position: Callable[[object], Position], end: Callable[[object], Position]) -> object:
    """A policy site's region expression as the ranges of the class expressions it calls (built
    by both finders from the source's nodes); ``None`` for other sites and an unknown selection."""
    if site.api.kind is not ApiKind.POLICY or site.function is None:
        return None
    function = site.function
    calls = [e.value for e in function.elements] if isinstance(function, cst.List) else function.elts  # type: ignore[attr-defined]
    return tuple((position(c.func), end(c.func)) for c in calls)


def _positions(source: SourceFile, module: cst.Module) -> tuple[Callable[[object], Position], ...]:
    """Start and end of a libcst node, then of an ``ast`` node, 1-based ``(line, column)``."""
    offsets = node_offsets(module)

    def cst_position(node: object) -> Position:
        return source.position(offsets[node][0])  # type: ignore[index]

    def cst_end(node: object) -> Position:
        return source.position(offsets[node][1])  # type: ignore[index]

    def ast_position(node: object) -> Position:
        return source.ast_position(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def ast_end(node: object) -> Position:
        return source.ast_position(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    return cst_position, cst_end, ast_position, ast_end


def _reached(site: CheckpointSite, model: SemanticModel) -> bool:
    """A call whose API neither its callee's qualified names nor its method name give: a
    ``TrainingArguments`` subclass, a name followed into another module of the tree."""
    func = site.call.func
    if site.form is not SiteForm.CALL or api_for(model.qualified_names(func)) is not None:
        return False
    return not (isinstance(func, cst.Attribute) and func.attr.value in (*HF_ENABLE_METHODS, *METHOD_APIS, *_INSTANCE_METHODS)) and not (
        isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"
    )


_INSTANCE_METHODS = frozenset(method for method, _ in INSTANCE_METHOD_APIS.values())


def _compare_sites(
    result: SiteComparison, cst_sites: list[CheckpointSite], ast_sites: list, source: SourceFile, model: SemanticModel
) -> None:
    module = model.module
    cst_position, cst_end, ast_position, ast_end = _positions(source, module)
    expected = []
    for site in cst_sites:
        if covered(site, model):
            expected.append(_reading(site, cst_position, cst_end))
            result.policy_regions += site.api.kind is ApiKind.POLICY and site.function is not None
            result.reached += _reached(site, model)
        else:
            result.left_out[_left_out_form(site)] += 1
    got = [_reading(site, ast_position, ast_end) for site in ast_sites]
    result.sites += len(expected)
    result.mismatches += multiset_mismatches(expected, got, "site")


def _compare_hooks(result: SiteComparison, cst_model: SemanticModel, ast_model: AstModel, source: SourceFile) -> None:
    """The gradient hooks that re-run the model (``hook_recompute``), both ways, in order:
    hook name, registration range, re-runs' ranges (in order), autocast restored."""
    cst_position, cst_end, ast_position, ast_end = _positions(source, cst_model.module)
    begin = time.process_time()
    cst_hooks = cst_hook_recomputes(cst_model)
    result.times["libcst_hooks"] += time.process_time() - begin
    begin = time.process_time()
    ast_hooks = ast_hook_recomputes(ast_model)
    result.times["ast_hooks"] += time.process_time() - begin
    expected = [
        (h.hook.name.value, cst_position(h.registration), cst_end(h.registration),
         tuple((cst_position(c), cst_end(c)) for c in h.reruns), h.restores_autocast)
        for h in cst_hooks
    ]
    got = [
        (h.hook.name, ast_position(h.registration), ast_end(h.registration),
         tuple((ast_position(c), ast_end(c)) for c in h.reruns), h.restores_autocast)
        for h in ast_hooks
    ]
    result.hooks += len(expected)
    if expected != got:
        result.mismatches += multiset_mismatches(expected, got, "hook") or [f"hook order: {expected} != {got}"]


def compare(text: str, module_name: str = "", is_package: bool = False, path: str = "<compared>") -> SiteComparison:
    """Find the sites of ``text`` both ways, for the module alone, and compare them (see the
    module docstring); the gradient hooks that re-run the model too."""
    result = SiteComparison()
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
    cst_sites = site_index(analysis).sites
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
    ast_sites = direct_sites(ast_model)
    times["ast_sites"] += time.process_time() - begin

    _compare_sites(result, cst_sites, ast_sites, source, cst_model)
    _compare_hooks(result, cst_model, ast_model, source)
    analysis.release()
    ast_model.release()
    return result


# --------------------------------------------------------------------------- linted trees
@contextmanager
def _home_made_module_alone() -> Iterator[None]:
    """libcst's recogniser reading home-made implementations of the module alone (their
    ``autograd.Function`` bases are not followed into other modules): the reads left are
    those of the parts the ``ast`` finder covers."""
    saved = reach.home_made
    reach.home_made = lambda model, loader=None: homemade.home_made(model)  # type: ignore[assignment]
    try:
        yield
    finally:
        reach.home_made = saved


def compare_in_tree(
    path: Path, text: str, cst_project: Project, reach_project: Project, ast_project: AstProject, result: SiteComparison
) -> None:
    """Compare the sites of the file at ``path`` (its text ``text``) found with a loader of the
    linted tree around it, and the files each side records as read: libcst's ``site_index``
    with ``analysis.project`` set to ``cst_project``, and ``module_sites`` with an
    :class:`AstProject` (``ast_project``, over another :class:`Project`). The reads compared
    are those of libcst's finder with home-made implementations read for the module alone
    and no helper calls (what the ``ast`` finder covers), run with ``reach_project``, a third
    :class:`Project` (the helper calls' search adds import roots to ``cst_project``: a
    namespace package's folder); a file whose full libcst reads miss one of the ``ast``
    side's is counted in ``result.reads_beyond``."""
    times = result.times
    module_name, is_package, home = module_name_for(path)
    source = SourceFile(str(path), text)

    cst_project.track(home)
    begin = time.process_time()
    module = parse_module_unvalidated(text)
    times["libcst_parse"] += time.process_time() - begin
    analysis = ModuleAnalysis(source, module, module_name, is_package)
    analysis.project = cst_project
    begin = time.process_time()
    cst_model = analysis.model
    times["libcst_model"] += time.process_time() - begin
    # not ``remember``ed as the linter does: the reach-only run reads the linted module again
    # as another module would be read, like the ``ast`` side
    begin = time.process_time()
    cst_sites = site_index(analysis).sites
    times["libcst_sites"] += time.process_time() - begin
    full_reads = set(cst_project.accessed())
    reach_project.track(home)
    with _home_made_module_alone():
        collect_sites(cst_model, reach_project, str(path))
    reach_reads = set(reach_project.accessed())

    ast_project.project.track(home)
    ast_project.evict()
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
    ast_sites = module_sites(analysis_ast)
    times["ast_sites"] += time.process_time() - begin
    ast_reads = set(ast_project.project.accessed())

    _compare_sites(result, cst_sites, ast_sites, source, cst_model)
    result.reads += len(reach_reads)
    result.mismatches += multiset_mismatches(sorted(map(str, reach_reads)), sorted(map(str, ast_reads)), "read")
    if not ast_reads <= full_reads:
        result.reads_beyond += 1


def run_project_tree(root: Path, every_file: bool = False) -> dict[str, object]:
    """Compare both finders on the (gated) files of ``root`` with a loader of the tree around
    each file (one :class:`Project` per side for the whole tree, as a run of the linter keeps
    one), and sum their CPU times."""
    total = SiteComparison()
    compared, skipped = comparable_files(root, every_file)
    cst_project, reach_project = Project(), Project()
    ast_project = AstProject(Project())
    for one in compared:
        found = SiteComparison()
        compare_in_tree(one.path, one.text, cst_project, reach_project, ast_project, found)
        found.mismatches = [f"{one.path.relative_to(root)}: {m}" for m in found.mismatches]
        total.add(found)
    return _report(root, compared, skipped, total)


# --------------------------------------------------------------------------- corpus runs
def run_tree(root: Path, every_file: bool = False) -> dict[str, object]:
    """Compare both finders on the (gated) files of ``root``, each module alone, and sum their CPU times."""
    total = SiteComparison()
    compared, skipped = comparable_files(root, every_file)
    for one in compared:
        found = compare(one.text, one.module_name, one.is_package, str(one.path))
        found.mismatches = [f"{one.path.relative_to(root)}: {m}" for m in found.mismatches]
        total.add(found)
    return _report(root, compared, skipped, total)


def _report(root: Path, compared: list, skipped: int, total: SiteComparison) -> dict[str, object]:
    return {
        "tree": root.name,
        "files": len(compared),
        "skipped": skipped,
        "sites": total.sites,
        "hooks": total.hooks,
        "reads": total.reads,
        "reads_beyond_full": total.reads_beyond,
        "reached": total.reached,
        "policy_regions": total.policy_regions,
        "left_out": dict(total.left_out),
        "mismatches": total.mismatches,
        "cpu_s": {key: round(value, 3) for key, value in total.times.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--all", action="store_true", help="every .py file, not only the gated ones")
    parser.add_argument("--json", type=Path, help="write the numbers here")
    parser.add_argument("--tree", action="store_true", help="with a loader of the linted tree around each file")
    args = parser.parse_args(argv)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    reports = []
    for tree in args.trees:
        report = (run_project_tree if args.tree else run_tree)(tree.resolve(), args.all)
        reports.append(report)
        cpu: dict[str, float] = report["cpu_s"]  # type: ignore[assignment]
        cst_total = cpu["libcst_parse"] + cpu["libcst_model"] + cpu["libcst_sites"]
        ast_total = cpu["ast_parse"] + cpu["ast_model"] + cpu["ast_sites"]
        print(
            f"{report['tree']}: {report['files']} files ({report['skipped']} skipped), {report['sites']} sites compared, "
            f"({report['reached']} reached, {report['policy_regions']} policy regions), "
            f"{report['hooks']} hooks, {report['reads']} reads (ast beyond libcst's full reads in "
            f"{report['reads_beyond_full']} files), hook CPU libcst {cpu['libcst_hooks']:.2f} s ast {cpu['ast_hooks']:.2f} s, "
            f"left out {report['left_out']}, {len(report['mismatches'])} mismatches; "  # type: ignore[arg-type]
            f"CPU libcst parse {cpu['libcst_parse']:.2f} s + model {cpu['libcst_model']:.2f} s + sites "
            f"{cpu['libcst_sites']:.2f} s = {cst_total:.2f} s; ast parse {cpu['ast_parse']:.2f} s + model "
            f"{cpu['ast_model']:.2f} s + sites {cpu['ast_sites']:.2f} s = {ast_total:.2f} s "
            f"({cst_total / max(ast_total, 1e-9):.1f}x)"
        )
        for mismatch in report["mismatches"][:30]:  # type: ignore[index]
            print("  ", mismatch)
    if args.json is not None:
        args.json.write_text(json.dumps(reports, indent=2), encoding="utf-8")
    return 1 if any(r["mismatches"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())

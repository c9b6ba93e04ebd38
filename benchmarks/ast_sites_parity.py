"""Checkpoint sites of direct API calls on CPython's ``ast`` against libcst's: same sites, and what each costs.

For one text, :func:`compare` finds the sites both ways and compares them as multisets:

- libcst: :func:`ckptlint.checkpoint.sites.sites.site_index` of the module (no linted tree
  around it), kept when the site is of a form the ``ast`` finder covers (:func:`covered`):
  a direct call (``SiteForm.CALL``) whose callee's qualified names name an API of
  :mod:`ckptlint.facts.apis`, or whose method name is ``gradient_checkpointing_enable`` /
  ``activation_checkpointing_enable`` or an API whatever the receiver
  (``_gradient_checkpointing_func``, ``activation_checkpoint_func``), or a method of an
  instance of an API class (``ckpt.checkpoint`` after ``ckpt = CheckpointWithoutOutput()``),
  or ``self.attr(...)`` where the class stores a checkpoint function in ``self.attr``; and
  ``functools.partial(API, ...)`` bindings and calls through them.
  Left out: helper calls, home-made implementations and whatever the finder recognises by following other modules (re-exports,
  ``TrainingArguments`` subclasses).
- ``ast``: :func:`ckptlint.checkpoint.sites.ast_sites.direct_sites`, every site.

Each site is read as: the API's name, the form, the call's 1-based ``(line, column)`` start
and end, the variant (``Reentrancy``), whether a ``**`` argument hides options, and for every
option its state, value (``repr`` and type), origin and where the expression giving it starts
(but for a tuple, which ``ast`` starts at its parenthesis and libcst inside it).

Over a folder (``python benchmarks/ast_sites_parity.py TREE [TREE ...]``): the files the gate
lets through, each compared, and the CPU time of each side's parse, model and sites, summed
over the files (one process, the sides one after the other for each file).
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

from ckptlint.checkpoint.sites.ast_sites import direct_sites
from ckptlint.checkpoint.sites.site import CheckpointSite, SiteForm
from ckptlint.checkpoint.sites.sites import site_index
from ckptlint.facts.apis import HF_ENABLE_METHODS, INSTANCE_METHOD_APIS, METHOD_APIS, ApiKind, api_for
from ckptlint.semantic.analysis import ModuleAnalysis
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.model import SemanticModel
from ckptlint.semantic.parse import parse_module_unvalidated
from ckptlint.text.positions import node_offsets
from ckptlint.text.source import SourceFile

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling parity_files

from parity_files import comparable_files, multiset_mismatches

Position = tuple[int, int]


@dataclass
class SiteComparison:
    """What :func:`compare` compared and where the two finders differ."""

    sites: int = 0  # sites compared (libcst's, of the covered forms)
    left_out: Counter[str] = field(default_factory=Counter)  # libcst's sites of other forms, by form
    mismatches: list[str] = field(default_factory=list)
    times: dict[str, float] = field(default_factory=lambda: dict.fromkeys(_TIMES, 0.0))

    def add(self, other: SiteComparison) -> None:
        self.sites += other.sites
        self.left_out.update(other.left_out)
        self.mismatches += other.mismatches
        for key, value in other.times.items():
            self.times[key] += value


_TIMES = ("libcst_parse", "libcst_model", "libcst_sites", "ast_parse", "ast_model", "ast_sites")


_SELF_KINDS = (ApiKind.FUNCTION, ApiKind.LIBRARY_FUNCTION)


def covered(site: CheckpointSite, model: SemanticModel) -> bool:
    """Whether the ``ast`` finder covers ``site`` (see the module docstring)."""
    if site.form in (SiteForm.PARTIAL, SiteForm.BOUND_CALL):
        return True
    if site.form is not SiteForm.CALL or site.api.kind is ApiKind.HOME_MADE:
        return False
    func = site.call.func
    if api_for(model.qualified_names(func)) is not None:
        return True
    if not isinstance(func, cst.Attribute):
        return False
    method = func.attr.value
    if method in HF_ENABLE_METHODS or method in METHOD_APIS:
        return True
    # a method of an instance of an API class (no other recognition gives these APIs when
    # no linted tree is around the module)
    if any(site.api is api and method == name for name, api in INSTANCE_METHOD_APIS.values()):
        return True
    # ``self.attr(...)`` where the class stores a checkpoint function in ``self.attr``
    return isinstance(func.value, cst.Name) and func.value.value == "self" and site.api.kind in _SELF_KINDS


def _left_out_form(site: CheckpointSite) -> str:
    if site.form is not SiteForm.CALL:
        return site.form.value
    return "home-made" if site.api.kind is ApiKind.HOME_MADE else "call recognised through the tree"


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
    )


def compare(text: str, module_name: str = "", is_package: bool = False, path: str = "<compared>") -> SiteComparison:
    """Find the sites of ``text`` both ways and compare them (see the module docstring)."""
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
    ast_model = AstModel.build(tree, module_name, is_package)
    times["ast_model"] += time.process_time() - begin
    begin = time.process_time()
    ast_sites = direct_sites(ast_model)
    times["ast_sites"] += time.process_time() - begin

    offsets = node_offsets(module)

    def cst_position(node: object) -> Position:
        return source.position(offsets[node][0])  # type: ignore[index]

    def cst_end(node: object) -> Position:
        return source.position(offsets[node][1])  # type: ignore[index]

    def ast_position(node: object) -> Position:
        return source.ast_position(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def ast_end(node: object) -> Position:
        return source.ast_position(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    expected = []
    for site in cst_sites:
        if covered(site, cst_model):
            expected.append(_reading(site, cst_position, cst_end))
        else:
            result.left_out[_left_out_form(site)] += 1
    got = [_reading(site, ast_position, ast_end) for site in ast_sites]
    result.sites = len(expected)
    result.mismatches += multiset_mismatches(expected, got, "site")
    analysis.release()
    ast_model.release()
    return result


# --------------------------------------------------------------------------- corpus runs
def run_tree(root: Path, every_file: bool = False) -> dict[str, object]:
    """Compare both finders on the (gated) files of ``root`` and sum their CPU times."""
    total = SiteComparison()
    compared, skipped = comparable_files(root, every_file)
    for one in compared:
        found = compare(one.text, one.module_name, one.is_package, str(one.path))
        found.mismatches = [f"{one.path.relative_to(root)}: {m}" for m in found.mismatches]
        total.add(found)
    return {
        "tree": root.name,
        "files": len(compared),
        "skipped": skipped,
        "sites": total.sites,
        "left_out": dict(total.left_out),
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
            f"{report['tree']}: {report['files']} files ({report['skipped']} skipped), {report['sites']} sites compared, "
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

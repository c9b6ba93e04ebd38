"""Home-made recompute functions on CPython's ``ast`` against libcst's: the same records, and what each costs.

For one text, :func:`compare` reads the module both ways, for the module alone (no linted tree
around it, so no base class is followed into another module):

- libcst: :func:`ckptlint.checkpoint.sites.homemade.home_made` of the module's model;
- ``ast``: :func:`ckptlint.checkpoint.sites.ast_homemade.home_made` of its ``AstModel``;

and compares the implementations and the helpers, in order, every field: the key, the
qualified name, the class's (or function's) 1-based ``(line, column)`` start and end, the index
of the stored callable, each re-run call's start and end in order, whether RNG and autocast
are restored, the message label of the re-run, and the whole API row (``repr``); for a helper
its parameter, index and implementation.

Over a folder (``python benchmarks/ast_homemade_parity.py TREE [TREE ...]``): the files the
gate lets through, each compared, and the CPU time of each side's parse, model and home-made
reading, summed over the files (one process, the sides one after the other for each file).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ckptlint.checkpoint.sites import ast_homemade, homemade
from ckptlint.semantic.analysis import ModuleAnalysis
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.parse import parse_module_unvalidated
from ckptlint.text.positions import node_offsets
from ckptlint.text.source import SourceFile

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling parity_files

from parity_files import comparable_files

Position = tuple[int, int]
_TIMES = ("libcst_parse", "libcst_model", "libcst_homemade", "ast_parse", "ast_model", "ast_homemade")


@dataclass
class HomeMadeComparison:
    """What :func:`compare` compared and where the two readings differ."""

    implementations: int = 0  # libcst's implementations compared
    helpers: int = 0  # libcst's helpers compared
    reruns: int = 0  # libcst's re-run calls compared
    mismatches: list[str] = field(default_factory=list)
    times: dict[str, float] = field(default_factory=lambda: dict.fromkeys(_TIMES, 0.0))

    def add(self, other: HomeMadeComparison) -> None:
        self.implementations += other.implementations
        self.helpers += other.helpers
        self.reruns += other.reruns
        self.mismatches += other.mismatches
        for key, value in other.times.items():
            self.times[key] += value


def _span(node: object, position: Callable[[object], Position], end: Callable[[object], Position]) -> tuple:
    return position(node), end(node)


def _readings(found: homemade.HomeMade, position: Callable[[object], Position], end: Callable[[object], Position]) -> list:
    out: list[tuple] = []
    for key, impl in found.implementations.items():
        reruns = tuple(_span(call, position, end) for call in impl.reruns)
        out.append(
            (
                "implementation",
                key,
                impl.qualified,
                _span(impl.node, position, end),
                impl.function_index,
                reruns,
                impl.restores_rng,
                impl.restores_autocast,
                impl.rerun_label,
                repr(impl.api),
            )
        )
    for key, helper in found.helpers.items():
        out.append(
            (
                "helper",
                key,
                helper.qualified,
                _span(helper.node, position, end),
                helper.parameter,
                helper.index,
                helper.implementation.qualified,
                repr(helper.api),
            )
        )
    return out


def compare(text: str, module_name: str = "", is_package: bool = False, path: str = "<compared>") -> HomeMadeComparison:
    """Read the home-made implementations of ``text`` both ways and compare them (see the module docstring)."""
    result = HomeMadeComparison()
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
    cst_found = homemade.home_made(cst_model)
    times["libcst_homemade"] += time.process_time() - begin

    begin = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(text)
    times["ast_parse"] += time.process_time() - begin
    begin = time.process_time()
    ast_model = AstModel.build(tree, module_name, is_package, text)
    times["ast_model"] += time.process_time() - begin
    begin = time.process_time()
    ast_found = ast_homemade.home_made(ast_model)
    times["ast_homemade"] += time.process_time() - begin

    offsets = node_offsets(module) if cst_found.implementations or ast_found.implementations else {}

    def cst_position(node: object) -> Position:
        return source.position(offsets[node][0])  # type: ignore[index]

    def cst_end(node: object) -> Position:
        return source.position(offsets[node][1])  # type: ignore[index]

    def ast_position(node: object) -> Position:
        return source.ast_position(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def ast_end(node: object) -> Position:
        return source.ast_position(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    expected = _readings(cst_found, cst_position, cst_end)
    got = _readings(ast_found, ast_position, ast_end)  # type: ignore[arg-type]
    result.implementations = len(cst_found.implementations)
    result.helpers = len(cst_found.helpers)
    result.reruns = sum(len(i.reruns) for i in cst_found.implementations.values())
    if expected != got:
        for item in expected:
            if item not in got:
                result.mismatches.append(f"only in libcst: {item!r}")
        for item in got:
            if item not in expected:
                result.mismatches.append(f"only in ast: {item!r}")
        if not result.mismatches:
            result.mismatches.append(f"same records in another order: libcst {[i[1] for i in expected]}, ast {[i[1] for i in got]}")
    analysis.release()
    ast_model.release()
    return result


# --------------------------------------------------------------------------- corpus runs
def run_tree(root: Path, every_file: bool = False) -> dict[str, object]:
    """Compare both readings on the (gated) files of ``root`` and sum their CPU times."""
    total = HomeMadeComparison()
    compared, skipped = comparable_files(root, every_file)
    for one in compared:
        found = compare(one.text, one.module_name, one.is_package, str(one.path))
        found.mismatches = [f"{one.path.relative_to(root)}: {m}" for m in found.mismatches]
        total.add(found)
    return {
        "tree": root.name,
        "files": len(compared),
        "skipped": skipped,
        "implementations": total.implementations,
        "helpers": total.helpers,
        "reruns": total.reruns,
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
        print(
            f"{report['tree']}: {report['files']} files ({report['skipped']} skipped), "
            f"{report['implementations']} implementations, {report['helpers']} helpers, {report['reruns']} re-runs compared, "
            f"{len(report['mismatches'])} mismatches; CPU libcst parse {cpu['libcst_parse']:.2f} s + model "  # type: ignore[arg-type]
            f"{cpu['libcst_model']:.2f} s + home-made {cpu['libcst_homemade']:.3f} s; ast parse {cpu['ast_parse']:.2f} s + "
            f"model {cpu['ast_model']:.2f} s + home-made {cpu['ast_homemade']:.3f} s "
            f"(home-made alone {cpu['libcst_homemade'] / max(cpu['ast_homemade'], 1e-9):.1f}x)"
        )
        for mismatch in report["mismatches"][:30]:  # type: ignore[index]
            print("  ", mismatch)
    if args.json is not None:
        args.json.write_text(json.dumps(reports, indent=2), encoding="utf-8")
    return 1 if any(r["mismatches"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())

"""Misspelled checkpoint options (CKP003) and save misuses (CKP301) of the sites found on
CPython's ``ast`` against libcst's.

For one text, :func:`compare` finds the sites both ways (libcst's
:func:`ckptlint.checkpoint.sites.sites.site_index`, kept when ``ast_sites_parity.covered`` says
the ``ast`` finder covers their form; ``ast``'s
:func:`ckptlint.checkpoint.sites.ast_sites.direct_sites`) and compares, as multisets, one reading
per site: the API's name, the form, the call's 1-based ``(line, column)`` start and end, then

- its save misuse, or ``None``: the reason, the ``SaveForm``, the range of ``saved`` and of
  ``destination`` (or ``None``), and each of ``arguments`` read as (keyword name, star, range
  of the passed expression);
- its misspellings in order: ``written``, ``option``, the ratio (to 9 digits), the renamed
  node (``keyword`` and the name's range: libcst's keyword ``Name``, ``ast``'s
  ``ast.keyword`` whose name starts it and is ``written`` long; or ``key`` and the dict key
  string's range), the argument as above (or ``None``), the value's range.

A parenthesized tuple starts at its parenthesis in ``ast`` and inside it in libcst: such a
range is read as ``"tuple"``.

Over a folder (``python benchmarks/ast_misuse_parity.py TREE [TREE ...]``): the files the gate
lets through (``parity_files``), each compared; prints the sites compared, the misuses and
misspellings each side found, and every mismatch.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from ckptlint.checkpoint.sites.ast_sites import direct_sites
from ckptlint.checkpoint.sites.site import CheckpointSite, Misspelling, SaveMisuse
from ckptlint.checkpoint.sites.sites import site_index
from ckptlint.semantic.analysis import ModuleAnalysis
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.parse import parse_module_unvalidated
from ckptlint.text.positions import node_offsets
from ckptlint.text.source import SourceFile

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling parity_files, ast_sites_parity

from ast_sites_parity import covered
from parity_files import comparable_files, multiset_mismatches

Position = tuple[int, int]
Range = Callable[[object], object]


@dataclass
class MisuseComparison:
    """What :func:`compare` compared and where the two sides differ."""

    sites: int = 0  # sites compared (libcst's, of the covered forms)
    misuses: Counter[str] = field(default_factory=Counter)  # by side: save misuses found
    misspellings: Counter[str] = field(default_factory=Counter)  # by side: misspellings found
    mismatches: list[str] = field(default_factory=list)

    def add(self, other: MisuseComparison) -> None:
        self.sites += other.sites
        self.misuses.update(other.misuses)
        self.misspellings.update(other.misspellings)
        self.mismatches += other.mismatches


def _cst_argument(arg: cst.Arg, span: Range) -> tuple:
    keyword = arg.keyword.value if arg.keyword is not None else None
    return (keyword, arg.star, span(arg.value))


def _ast_argument(arg: ast.AST, span: Range) -> tuple:
    if isinstance(arg, ast.keyword):
        return (arg.arg, "" if arg.arg is not None else "**", span(arg.value))
    if isinstance(arg, ast.Starred):
        return (None, "*", span(arg.value))
    return (None, "", span(arg))


def _misuse_reading(misuse: SaveMisuse | None, span: Range, argument: Callable[[object, Range], tuple]) -> tuple | None:
    if misuse is None:
        return None
    return (
        misuse.reason,
        misuse.form.value,
        span(misuse.saved) if misuse.saved is not None else None,
        span(misuse.destination) if misuse.destination is not None else None,
        tuple(argument(arg, span) for arg in misuse.arguments),
    )


def _misspelling_reading(
    found: Misspelling, span: Range, renamed: Callable[[Misspelling], tuple], argument: Callable[[object, Range], tuple]
) -> tuple:
    return (
        found.written,
        found.option,
        round(found.ratio, 9),
        renamed(found),
        argument(found.arg, span) if found.arg is not None else None,
        span(found.value),
    )


def _reading(site: CheckpointSite, span: Range, renamed: Callable[[Misspelling], tuple], argument: Callable) -> tuple:
    return (
        site.api.name,
        site.form.value,
        span(site.call),
        _misuse_reading(site.save_misuse, span, argument),
        tuple(_misspelling_reading(m, span, renamed, argument) for m in site.misspellings),
    )


def compare(text: str, module_name: str = "", is_package: bool = False, path: str = "<compared>") -> MisuseComparison:
    """Find the sites of ``text`` both ways and compare their misuses and misspellings (see the
    module docstring)."""
    result = MisuseComparison()
    source = SourceFile(path, text)
    module = parse_module_unvalidated(text)
    analysis = ModuleAnalysis(source, module, module_name, is_package)
    cst_model = analysis.model
    cst_sites = [site for site in site_index(analysis).sites if covered(site, cst_model)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(text)
    ast_model = AstModel.build(tree, module_name, is_package, text)
    ast_sites = direct_sites(ast_model)

    offsets = node_offsets(module)

    def cst_span(node: object) -> object:
        if isinstance(node, cst.Tuple):
            return "tuple"
        start, end = offsets[node]  # type: ignore[index]
        return (source.position(start), source.position(end))

    def ast_span(node: object) -> object:
        if isinstance(node, ast.Tuple):
            return "tuple"
        return (
            source.ast_position(node.lineno, node.col_offset),  # type: ignore[attr-defined]
            source.ast_position(node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
        )

    def cst_renamed(found: Misspelling) -> tuple:
        kind = "keyword" if isinstance(found.node, cst.Name) else "key"
        return (kind, cst_span(found.node))

    def ast_renamed(found: Misspelling) -> tuple:
        node = found.node
        if isinstance(node, ast.keyword):
            begin = source.ast_position(node.lineno, node.col_offset)
            end = source.ast_position(node.lineno, node.col_offset + len(found.written.encode("utf-8")))
            return ("keyword", (begin, end))
        return ("key", ast_span(node))

    expected = [_reading(site, cst_span, cst_renamed, _cst_argument) for site in cst_sites]
    got = [_reading(site, ast_span, ast_renamed, _ast_argument) for site in ast_sites]
    result.sites = len(expected)
    for side, sites in (("libcst", cst_sites), ("ast", ast_sites)):
        result.misuses[side] += sum(site.save_misuse is not None for site in sites)  # type: ignore[attr-defined]
        result.misspellings[side] += sum(len(site.misspellings) for site in sites)  # type: ignore[attr-defined]
    result.mismatches += multiset_mismatches(expected, got)
    analysis.release()
    ast_model.release()
    return result


# --------------------------------------------------------------------------- corpus runs
def run_tree(root: Path, every_file: bool = False) -> dict[str, object]:
    """Compare both sides on the (gated) files of ``root``."""
    total = MisuseComparison()
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
        "misuses": dict(total.misuses),
        "misspellings": dict(total.misspellings),
        "mismatches": total.mismatches,
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
        print(
            f"{report['tree']}: {report['files']} files ({report['skipped']} skipped), {report['sites']} sites compared, "
            f"save misuses {report['misuses']}, misspellings {report['misspellings']}, "
            f"{len(report['mismatches'])} mismatches"  # type: ignore[arg-type]
        )
        for mismatch in report["mismatches"][:30]:  # type: ignore[index]
            print("  ", mismatch)
    if args.json is not None:
        args.json.write_text(json.dumps(reports, indent=2), encoding="utf-8")
    return 1 if any(r["mismatches"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())

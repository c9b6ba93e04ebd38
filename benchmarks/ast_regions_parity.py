"""Regions on CPython's ``ast`` against libcst's: ``AstRegionBuilder`` against ``RegionBuilder``.

For one text, :func:`compare` reads the module both ways, finds its sites (libcst's
``site_index``, ``ast``'s ``ast_site_index``; paired by the range of the call) and asks one
builder per side, in the same order, for every site:

- ``region`` and ``deep_region``: resolved, partial, ``seen_whole()``, ran out; the entries
  (described as ``ast_evaluation_parity`` describes values); the frames in order (the ``def``
  or lambda, its depth and ``via``, the index of the caller frame, the invocation's position,
  every ``reached_from`` as (frame index, call position)); each frame's walked nodes (the calls,
  attributes and names its ``nodes()`` yields, by position: libcst's names kept where ``ast``
  has a name, as ``tests/analysis/test_ast_region.py`` compares them); the layers (described),
  the layer calls (layer index, invocation, frame index), the unknown and cut calls (call,
  frame index) and the opaque calls (with the file);
- ``signature`` of the site's callable (keywords, ``**``, the ``def``'s name);
- ``decide``, ``literal`` and ``runs`` of every ``if`` statement's and expression's test in the
  region's frames, in the frame's context, and ``assigned_outside`` (the class's ``__init__``)
  of every attribute a method's frame reads on ``self``;
- the builder's other queries: ``values`` of the callable (plain, and classes only with a
  small budget), ``receivers`` of its ``forward``, and for each instance among the entries,
  ``held``, ``method_signature`` of ``forward`` and ``mro``.

Over a folder (``python benchmarks/ast_regions_parity.py TREE [TREE ...]``): the gated files
with sites, each compared with one loader of the tree per side (libcst's ``Project``, an
``AstProject`` over another), so regions follow classes and functions into other modules; the
CPU time of each side's site index and region queries, summed.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling modules

from ast_evaluation_parity import _AstSide, _CstSide, _norm
from ast_site_index_parity import tree_projects
from parity_files import comparable_files

from ckptlint.checkpoint.evaluator.ast_regions import AstRegionBuilder
from ckptlint.checkpoint.evaluator.denotations import InstanceValue
from ckptlint.checkpoint.evaluator.regions import RegionBuilder
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.checkpoint.sites.sites import site_index
from ckptlint.semantic.analysis import ModuleAnalysis
from ckptlint.semantic.ast_analysis import parse_ast
from ckptlint.semantic.parse import parse_module_unvalidated
from ckptlint.semantic.project import AstProject, Project, module_name_for
from ckptlint.text.source import SourceFile

_TIMES = ("libcst_sites", "libcst_regions", "ast_sites", "ast_regions")
_WALKED = {cst.Call: "call", cst.Attribute: "attribute", cst.Name: "name", ast.Call: "call", ast.Attribute: "attribute", ast.Name: "name"}
_IFS = (cst.If, cst.IfExp, ast.If, ast.IfExp)


@dataclass
class RegionComparison:
    """What :func:`compare` compared and where the two sides differ."""

    files: int = 0
    sites: int = 0
    resolved: int = 0
    frames: int = 0
    walked: int = 0
    decisions: int = 0
    unpaired: int = 0
    ran_out: int = 0
    mismatches: list[str] = field(default_factory=list)
    times: dict[str, float] = field(default_factory=lambda: dict.fromkeys(_TIMES, 0.0))

    def add(self, other: RegionComparison) -> None:
        for name in ("files", "sites", "resolved", "frames", "walked", "decisions", "unpaired", "ran_out"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.mismatches += other.mismatches
        for key, value in other.times.items():
            self.times[key] += value


class _CstReader(_CstSide):
    def position(self, analysis: object, node: object) -> tuple:
        """The node's range; for a call the site finder made up around a class of a
        wrapping policy (``ast``'s copies the class's location), its callee's range."""
        try:
            return super().position(analysis, node)
        except KeyError:
            if isinstance(node, cst.Call):
                return self.position(analysis, node.func)
            return ("not in the module",)


class _AstReader(_AstSide):
    def position(self, analysis: object, node: object) -> tuple:
        try:
            return super().position(analysis, node)
        except AttributeError:
            return ("not in the module",)


def _def_name(node: object) -> str:
    name = getattr(node, "name", None)
    if name is None:
        return "<lambda>"
    return name if isinstance(name, str) else name.value


def _region_reading(region: object, side: _CstReader | _AstReader) -> dict[str, object]:
    """A region read field by field (see the module docstring); ``walked`` per frame."""
    frames = region.frames  # type: ignore[attr-defined]
    index = {id(frame): i for i, frame in enumerate(frames)}

    def where(node: object, frame: object) -> object:
        if node is None:
            return None
        return side.position(frame.analysis if frame is not None else region.analysis, node)[0]  # type: ignore[attr-defined]

    def frame_index(frame: object) -> int | None:
        return None if frame is None else index.get(id(frame), -1)

    reading: dict[str, object] = {
        "status": (region.resolved, region.partial, region.seen_whole(), region.ran_out),  # type: ignore[attr-defined]
        "entries": [side.describe(v) for v in region.entries],  # type: ignore[attr-defined]
        "layers": [side.describe(v) for v in region.layers],  # type: ignore[attr-defined]
    }
    layer_index = {id(layer): i for i, layer in enumerate(region.layers)}  # type: ignore[attr-defined]
    reading["layer calls"] = [
        (layer_index.get(id(c.layer)), where(c.invocation, c.frame), frame_index(c.frame))
        for c in region.layer_calls  # type: ignore[attr-defined]
    ]
    for name in ("unknown_calls", "cut_calls"):
        reading[name] = [(where(call, frame), frame_index(frame)) for call, frame in getattr(region, name)]
    reading["opaque_calls"] = [(where(call, frame), frame_index(frame), str(path)) for call, frame, path in region.opaque_calls]  # type: ignore[attr-defined]
    reading["frames"] = [
        (
            side.def_key(frame.analysis, frame.function),
            frame.depth,
            frame.via,
            frame_index(frame.caller),
            where(frame.invocation, frame.caller),
            [(frame_index(f), where(call, f)) for f, call in frame.reached_from],
        )
        for frame in frames
    ]
    reading["walked"] = [
        [(_WALKED[type(n)], side.position(frame.analysis, n)[0]) for n in frame.nodes() if type(n) in _WALKED] for frame in frames
    ]
    return reading


def _decisions(region: object, builder: object, side: _CstReader | _AstReader) -> list[tuple]:
    """``decide``, ``literal`` and ``runs`` of every ``if`` test walked in the region's frames;
    for a method's frame, ``assigned_outside`` its class's ``__init__`` of each attribute read
    on ``self``."""
    out: list[tuple] = []
    for i, frame in enumerate(region.frames):  # type: ignore[attr-defined]
        ctx = frame.ctx
        self_name = frame.self_parameter()
        info = ctx.self_class
        init = builder.method(info, "__init__") if info is not None else None  # type: ignore[attr-defined]
        attrs: dict[str, None] = {}
        for node in frame.nodes():
            if isinstance(node, _IFS):
                test = node.test  # type: ignore[attr-defined]
                position = side.position(frame.analysis, test)[0]
                literal = _norm(builder.literal(test, ctx))  # type: ignore[attr-defined]
                out.append((i, position, builder.decide(test, ctx), literal, builder.runs(node, ctx)))  # type: ignore[attr-defined]
            elif self_name is not None and isinstance(node, (cst.Attribute, ast.Attribute)):
                owner = node.value
                if (owner.value if isinstance(owner, cst.Name) else getattr(owner, "id", None)) == self_name:
                    attrs.setdefault(node.attr if isinstance(node, ast.Attribute) else node.attr.value)
        for attr in attrs:
            out.append((i, attr, builder.assigned_outside(frame.analysis, attr, init[0] if init else None)))  # type: ignore[attr-defined]
    return out


def _signature(found: object) -> object:
    if found is None:
        return None
    return (sorted(found.keywords), found.var_keyword, _def_name(found.node))  # type: ignore[attr-defined]


def _site_readings(sites: list, analysis: object, builder: object, side: _CstReader | _AstReader) -> list[dict[str, object]]:
    """Every reading of every site, asked in the sites' order."""
    out = []
    for site in sites:
        region = builder.region(site, analysis)  # type: ignore[attr-defined]
        deep = builder.deep_region(site, analysis)  # type: ignore[attr-defined]
        reading = {
            "region": _region_reading(region, side),
            "deep": _region_reading(deep, side),
            "signature": _signature(builder.signature(site.function, analysis)),  # type: ignore[attr-defined]
            "decisions": _decisions(region, builder, side),
            "queries": _queries(site, region, analysis, builder, side),
        }
        out.append(reading)
    return out


def _queries(site: object, region: object, analysis: object, builder: object, side: _CstReader | _AstReader) -> list:
    """The builder's other answers about the site: the values of its callable (plain,
    classes only with a small budget), the receivers of its ``forward``, and for each instance
    it may be, what the instance holds and its ``forward``'s signature."""
    out: list = []
    function = site.function  # type: ignore[attr-defined]
    if function is not None:
        out.append([side.describe(v) for v in builder.values(function, analysis)])  # type: ignore[attr-defined]
        out.append([side.describe(v) for v in builder.values(function, analysis, 200, classes_only=True)])  # type: ignore[attr-defined]
        out.append([side.describe(v) for v in builder.receivers(function, "forward", analysis)])  # type: ignore[attr-defined]
    for entry in region.entries:  # type: ignore[attr-defined]
        if isinstance(entry, InstanceValue):
            out.append([side.describe(v) for v in builder.held(entry)])  # type: ignore[attr-defined]
            out.append(_signature(builder.method_signature(entry, "forward")))  # type: ignore[attr-defined]
            out.append([one.qualname for one in builder.mro(entry.info)])  # type: ignore[attr-defined]
    return out


def _walked_alike(expected: list, got: list) -> list:
    """libcst's walked nodes of each frame without the names ``ast`` has none at (an
    attribute's, a keyword's, a parameter's)."""
    if len(expected) != len(got):
        return expected
    kept = []
    for cst_frame, ast_frame in zip(expected, got, strict=True):
        names = {position for kind, position in ast_frame if kind == "name"}
        kept.append([(kind, position) for kind, position in cst_frame if kind != "name" or position in names])
    return kept


def _compare_readings(where: str, expected: dict, got: dict, result: RegionComparison) -> None:
    for which in ("region", "deep"):
        left, right = dict(expected[which]), got[which]
        left["walked"] = _walked_alike(left["walked"], right["walked"])  # type: ignore[arg-type]
        for key, value in left.items():
            if value != right[key]:
                result.mismatches.append(f"{where} {which} {key}: libcst {value!r} != ast {right[key]!r}")
    for key in ("signature", "decisions", "queries"):
        if expected[key] != got[key]:
            result.mismatches.append(f"{where} {key}: libcst {expected[key]!r} != ast {got[key]!r}")


# ------------------------------------------------------------------ one module
def compare(
    text: str,
    module_name: str = "",
    is_package: bool = False,
    path: str = "<compared>",
    project: Project | None = None,
    loader: AstProject | None = None,
) -> RegionComparison:
    """Build both sides' regions of every site of ``text`` and compare them (see the module
    docstring); with ``project`` and ``loader`` (the loaders of the tree around the file),
    regions follow imported names into other modules."""
    result = RegionComparison(files=1)
    times = result.times
    source = SourceFile(path, text)
    cst_analysis = ModuleAnalysis(source, parse_module_unvalidated(text), module_name, is_package)
    cst_analysis.project = project
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ast_analysis = parse_ast(source, module_name, is_package)
    if ast_analysis is None:
        result.mismatches.append("ast refuses the file")
        return result
    ast_analysis.project = loader
    cst_side, ast_side = _CstReader(None), _AstReader(None)

    begin = time.process_time()
    cst_sites = site_index(cst_analysis).sites
    times["libcst_sites"] += time.process_time() - begin
    begin = time.process_time()
    ast_sites = ast_site_index(ast_analysis).sites
    times["ast_sites"] += time.process_time() - begin

    by_call: dict[tuple, list] = {}
    for site in ast_sites:
        by_call.setdefault(ast_side.position(ast_analysis, site.call), []).append(site)
    paired_cst, paired_ast = [], []
    for site in cst_sites:
        waiting = by_call.get(cst_side.position(cst_analysis, site.call))
        if waiting:
            paired_cst.append(site)
            paired_ast.append(waiting.pop(0))
        else:
            result.unpaired += 1
    result.unpaired += sum(len(rest) for rest in by_call.values())

    begin = time.process_time()
    expected = _site_readings(paired_cst, cst_analysis, RegionBuilder(project), cst_side)
    times["libcst_regions"] += time.process_time() - begin
    begin = time.process_time()
    got = _site_readings(paired_ast, ast_analysis, AstRegionBuilder(loader), ast_side)
    times["ast_regions"] += time.process_time() - begin

    for site, one, other in zip(paired_cst, expected, got, strict=True):
        result.sites += 1
        result.resolved += bool(one["region"]["status"][0])  # type: ignore[index]
        result.ran_out += bool(one["region"]["status"][3])  # type: ignore[index]
        result.frames += len(one["region"]["frames"]) + len(one["deep"]["frames"])  # type: ignore[arg-type]
        result.walked += sum(len(w) for w in one["region"]["walked"])  # type: ignore[union-attr]
        result.decisions += len(one["decisions"])  # type: ignore[arg-type]
        _compare_readings(f"site {cst_side.position(cst_analysis, site.call)[0]}", one, other, result)
    cst_analysis.release()
    ast_analysis.release()
    return result


# --------------------------------------------------------------------------- corpus runs
def run_tree(root: Path, every_file: bool = False, max_files: int | None = None) -> dict[str, object]:
    """Compare both builders on the gated files of ``root`` (the first ``max_files`` in path
    order when given), one loader of the tree per side, CPU times summed."""
    total = RegionComparison()
    compared, skipped = comparable_files(root, every_file)
    compared = compared[:max_files] if max_files is not None else compared
    project, loader = tree_projects()
    for one in compared:
        name, is_package, home = module_name_for(one.path)
        project.track(home)
        loader.track(home)
        found = compare(one.text, name, is_package, str(one.path), project, loader)
        found.mismatches = [f"{one.path.relative_to(root)}: {m}" for m in found.mismatches]
        total.add(found)
    return {
        "tree": root.name,
        "files": total.files,
        "skipped": skipped,
        "sites": total.sites,
        "resolved": total.resolved,
        "frames": total.frames,
        "walked": total.walked,
        "decisions": total.decisions,
        "unpaired": total.unpaired,
        "ran_out": total.ran_out,
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
            f"{report['tree']}: {report['files']} files ({report['skipped']} skipped), {report['sites']} sites "
            f"({report['resolved']} resolved, {report['ran_out']} ran out, {report['unpaired']} unpaired), {report['frames']} frames, "
            f"{report['walked']} walked nodes, {report['decisions']} decisions, {len(report['mismatches'])} mismatches; "  # type: ignore[arg-type]
            f"CPU libcst sites {cpu['libcst_sites']:.2f} s regions {cpu['libcst_regions']:.2f} s, "
            f"ast sites {cpu['ast_sites']:.2f} s regions {cpu['ast_regions']:.2f} s"
        )
        for mismatch in report["mismatches"][:30]:  # type: ignore[index]
            print("  ", mismatch[:600])
    if args.json is not None:
        args.json.write_text(json.dumps(reports, indent=2), encoding="utf-8")
    return 1 if any(r["mismatches"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())

"""The reads and writes of outer state on ``ast`` (``ast_outer_reads.mutable_reads``,
``ast_outer_writes.outer_writes``) that the golden answers of ``test_ast_outer_reads.py`` and
``test_ast_outer_writes.py`` record (they were compared with libcst's while it lived), on
regions built by hand for every site (one per function, method and lambda of the module, one
frame each; one holding them all) and on the builder's region of every site: per region, in
order, the kind, the frame's index, the node's 1-based start and end, the name, the reason and
the read's flags."""

from __future__ import annotations

import ast
import warnings
from collections import Counter

from ckptlint.checkpoint.analyses import ast_outer_reads, ast_outer_writes
from ckptlint.checkpoint.evaluator import ast_class_summary
from ckptlint.checkpoint.evaluator.ast_region import AstFrame, AstRegion
from ckptlint.checkpoint.evaluator.ast_regions import AstRegionBuilder
from ckptlint.checkpoint.evaluator.denotations import Context
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.semantic.ast_analysis import AstAnalysis
from ckptlint.text.source import SourceFile

__all__ = ["outer_access_answers"]

#: Hand-built regions per module at most (a site times the functions of a big module).
MAX_HAND_REGIONS = 400


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


def outer_access_answers(text: str, module_name: str = "pkg.mod") -> tuple[list[tuple], Counter[str]]:
    """``(site start, region label, descriptions)`` of every region of every site of ``text``
    (hand-built ones labelled by number, then the builder's, ``"real"``) that holds a read or
    a write, and how many sites, regions, reads and writes there were."""
    source = SourceFile("<compared>", text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(text)
    analysis = AstAnalysis(source, tree, module_name, False)
    sites = {analysis.range(s.call): s for s in ast_site_index(analysis).sites}
    found: list[tuple] = []
    counts: Counter[str] = Counter(site=len(sites))

    def add(where: tuple, label: object, region: AstRegion) -> None:
        described = _describe_ast(region)
        counts["region"] += 1
        counts.update(item[0] for item in described)
        if described:
            found.append((where[0], label, described))

    if sites:
        functions = _ast_functions(analysis)[: max(1, MAX_HAND_REGIONS // len(sites))]
        for where in sorted(sites):
            regions = _hand_regions(
                sites[where], analysis, functions, ast_class_summary.summarise_class, AstFrame,
                lambda s, a, frames: AstRegion(s, a, frames=frames, resolved=True),
            )  # fmt: skip
            for number, region in enumerate(regions):
                add(where, number, region)
        builder = AstRegionBuilder(None)
        for where in sorted(sites):
            add(where, "real", builder.region(sites[where], analysis))
    analysis.release()
    return found, counts

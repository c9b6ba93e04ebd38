"""The randomness, grad-mode, layer-switch and reentrant-backward analyses on CPython's ``ast``
against libcst's: ``ast_grad_mode``, ``ast_layer_switches``, ``ast_randomness`` and
``ast_reentrant_backward`` of ``ckptlint.checkpoint.analyses``.

For one text, :func:`compare` reads the module both ways and compares, as positions (1-based
``(row, column)`` start and end), strings and flags:

- ``grad mode``: :func:`grad_mode_at` of every call of the module (mode, the context's node,
  its qualified name, whether it is a decorator);
- ``region``: for every function and lambda of the module, a region built by hand around it
  (one frame, its ``self`` the enclosing class, a builder of each side's evaluator deciding
  branches; the layers its calls construct or run as layer calls), twice: sites passing
  tensors positionally, and passing them only by keyword (the function's parameters keyword
  parameters): :func:`random_ops` (in order: node, module, name, frame, active, tensor, layer),
  :func:`device_moved_ops` (op and reason), :func:`unpreserved_sources` (node, module, what);
- ``layer``: :func:`layer_switched_on` of every layer call of those regions;
- ``site``: for every checkpoint site of the module (libcst's and ``ast``'s paired by call
  position), :func:`may_skip_backward` and :func:`never_backward` on a region whose entries
  are the values of the checkpointed callable and whose frames are their functions and
  ``forward`` methods (``self`` bound by the constructor call that made the instance), and
  that region's random ops and the switches of its layer calls (a layer checkpointed itself
  among them);
- ``real ...``: for every site, the region each side's region builder builds
  (``RegionBuilder`` and ``AstRegionBuilder``): ``may_skip_backward``/``never_backward``,
  the random ops, device moves, unpreserved sources and, for every layer call,
  :func:`layer_switched_on` (where it runs, the layer, its constructor call).

Over a folder (``python benchmarks/ast_randomness_parity.py TREE [TREE ...] [--max-files N]``):
the gated files, each with a loader of the tree around it, with the CPU time of each side's
analyses (regions and evaluations included), summed.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import libcst as cst

from ckptlint.checkpoint.analyses import (
    ast_grad_mode,
    ast_layer_switches,
    ast_randomness,
    ast_reentrant_backward,
    grad_mode,
    layer_switches,
    randomness,
    reentrant_backward,
)
from ckptlint.checkpoint.evaluator.ast_class_summary import find_method as ast_find_method
from ckptlint.checkpoint.evaluator.ast_region import AstFrame, AstLayerCall, AstRegion
from ckptlint.checkpoint.evaluator.ast_regions import AstRegionBuilder
from ckptlint.checkpoint.evaluator.class_summary import find_method
from ckptlint.checkpoint.evaluator.denotations import Context, FunctionValue, InstanceValue, LayerUse
from ckptlint.checkpoint.evaluator.region import Frame, LayerCall, Region
from ckptlint.checkpoint.evaluator.regions import QUERY_BUDGET, RegionBuilder
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.checkpoint.sites.sites import site_index
from ckptlint.semantic.analysis import ModuleAnalysis
from ckptlint.semantic.ast_analysis import AstAnalysis
from ckptlint.semantic.bindings import ScopeKind
from ckptlint.semantic.parse import parse_module_unvalidated
from ckptlint.semantic.project import AstProject, Project, module_name_for
from ckptlint.semantic.walk import iter_tree
from ckptlint.text.positions import node_offsets
from ckptlint.text.source import SourceFile

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling modules

from parity_files import comparable_files, multiset_mismatches

_TIMES = ("libcst_parse", "libcst_model", "libcst_analyses", "ast_parse", "ast_model", "ast_analyses")
KINDS = (
    "grad mode", "region", "random op", "device move", "source", "layer", "site",
    "real region", "real random op", "real device move", "real source", "real layer", "real site",
)


@dataclass
class RandomnessComparison:
    """What :func:`compare` compared (libcst's items, by kind) and where the two sides differ."""

    items: Counter[str] = field(default_factory=Counter)
    mismatches: list[str] = field(default_factory=list)
    times: dict[str, float] = field(default_factory=lambda: dict.fromkeys(_TIMES, 0.0))

    def add(self, other: RandomnessComparison) -> None:
        self.items.update(other.items)
        self.mismatches += other.mismatches
        for key, value in other.times.items():
            self.times[key] += value


@dataclass
class _StandInSite:
    """What :func:`device_moved_ops` reads of a site, for the regions built by hand."""

    inputs: tuple[Any, ...] = ()
    function_keywords: tuple[Any, ...] = ()


# ------------------------------------------------------------------ the two sides
class _Side:
    """One side: its tree's nodes of interest, regions built by hand, answers described."""

    functions: tuple[type, ...] = ()

    def __init__(self, analysis: Any, builder: Any) -> None:
        self.analysis = analysis
        self.builder = builder
        self.out: list[tuple] = []

    # positions and keys
    def where(self, node: object, analysis: Any = None) -> tuple: ...
    def def_key(self, node: object, analysis: Any = None) -> tuple: ...
    def calls(self) -> list[Any]: ...
    def function_nodes(self) -> list[Any]: ...
    def sites(self) -> list[Any]: ...
    def frame(self, function: Any, ctx: Any, via: str) -> Any: ...
    def layer_call(self, layer: LayerUse, invocation: Any, frame: Any) -> Any: ...
    def region(self, site: Any, frames: list[Any], layer_calls: list[Any], entries: list[Any]) -> Any: ...
    def class_of(self, function: Any) -> Any: ...
    def forward_of(self, info: Any) -> Any: ...

    def in_tree(self, node: object, analysis: Any) -> bool: ...
    def elements(self, node: Any) -> list[Any]: ...

    def node_where(self, node: object, analysis: Any) -> tuple | None:
        """Where ``node`` is in ``analysis``'s module; a call made by the site finders (the
        classes of a wrap policy called: ``Block()``) by where its callee is."""
        if node is None:
            return None
        kind = type(node).__name__
        if kind == "Tuple":  # a parenthesized tuple starts at its parenthesis in ``ast``, inside it in libcst
            elements = self.elements(node)
            return ("tuple", len(elements), self.node_where(elements[0], analysis) if elements else None)
        if kind == "GeneratorExp":  # its parentheses are its own in ``ast``, not in libcst
            return ("generator", self.node_where(node.elt, analysis))  # type: ignore[attr-defined]
        if not self.in_tree(node, analysis) and hasattr(node, "func"):
            return (analysis.module_name, "made call of", *self.where(node.func, analysis))
        return (analysis.module_name, *self.where(node, analysis))

    # what is asked
    def ask_grad_modes(self, module: Any) -> None:
        for call in self.calls():
            found = module.grad_mode_at(call, self.analysis.model)
            self.out.append(("grad mode", self.where(call), found.mode.value, self.node_where(found.node, self.analysis),
                             found.name, found.decorator))

    def context(self, function: Any, keyword_params: frozenset[str] = frozenset()) -> Any:
        return Context(self.analysis, self.class_of(function), keyword_params=keyword_params)

    def called_layers(self, frame: Any) -> list[Any]:
        """The layers the calls of ``frame`` run or construct, as layer calls."""
        found = []
        for node in frame.nodes():
            if type(node).__name__ != "Call":
                continue
            with self.builder.budget.query(QUERY_BUDGET):
                values = self.builder.evaluator.called(node.func, frame.ctx)
            found += [self.layer_call(v, node, frame) for v in values if isinstance(v, LayerUse)]
        return found

    def ask_regions(self, analyses: Any, layers: Any, parameters: Any) -> None:
        for function in self.function_nodes():
            key = self.def_key(function)
            for keyword_only in (False, True):
                names = parameters(function) if keyword_only else frozenset()
                frame = self.frame(function, self.context(function, names), "f")
                layer_calls = self.called_layers(frame)
                site = _StandInSite((), ("x",)) if keyword_only else _StandInSite()
                region = self.region(site, [frame], layer_calls, [])
                ops = analyses.random_ops(region)
                self.out.append(("region", key, keyword_only, [self.describe_op(op) for op in ops]))
                moved = analyses.device_moved_ops(region)
                self.out.append(("device move", key, keyword_only, [(self.describe_op(op), why) for op, why in moved]))
                sources = analyses.unpreserved_sources(region)
                self.out.append(("source", key, keyword_only, [
                    (self.node_where(s.node, s.analysis), s.what) for s in sources
                ]))
                if not keyword_only:
                    for call in layer_calls:
                        on = layers.layer_switched_on(call.layer, self.builder)
                        self.out.append(("layer", key, self.where(call.invocation), call.layer.qualified, on))

    def describe_op(self, op: Any) -> tuple:
        frame = None if op.frame is None else (self.def_key(op.frame.function, op.frame.analysis), op.frame.depth)
        layer = None if op.layer is None else (op.layer.qualified, self.node_where(op.layer.call, op.layer.analysis))
        return (self.node_where(op.node, op.analysis), op.name, frame, op.active, self.node_where(op.tensor, op.analysis), layer)

    def ask_sites(self, backward: Any, analyses: Any, layers: Any) -> None:
        for site in self.sites():
            skip = backward.may_skip_backward(site)
            entries: list[Any] = []
            frames: list[Any] = []
            layer_calls: list[Any] = []
            if site.function is not None:
                ctx = Context(self.analysis, self.builder.evaluator.enclosing_class(self.analysis, site.call))
                with self.builder.budget.query(QUERY_BUDGET):
                    entries = self.builder.evaluator.values(site.function, ctx)
                for value in entries:
                    if isinstance(value, FunctionValue):
                        frames.append(self.frame(value.node, value.ctx, "entry"))
                    elif isinstance(value, InstanceValue):
                        method = self.forward_of(value.info)
                        if method is not None:
                            forward_ctx = Context(method[1].analysis, value.info, self_env=value.env, open_call=True)
                            frames.append(self.frame(method[0], forward_ctx, "forward"))
                    elif isinstance(value, LayerUse):
                        layer_calls.append(self.layer_call(value, None, None))
            for frame in frames:
                layer_calls += self.called_layers(frame)
            region = self.region(site, frames, layer_calls, entries)
            region.resolved = bool(entries)
            where = self.where(site.call)
            self.out.append(("site", where, skip, backward.never_backward(site, region)))
            self.out.append(("site region", where, [self.describe_op(op) for op in analyses.random_ops(region)]))
            for call in layer_calls:
                on = layers.layer_switched_on(call.layer, self.builder)
                invocation = None if call.invocation is None else self.node_where(call.invocation, call.frame.analysis)
                self.out.append(("layer", where, invocation, call.layer.qualified, on))


    def ask_real_regions(self, backward: Any, analyses: Any, layers: Any) -> None:
        """The analyses on each site's region as the region builder builds it."""
        for site in self.sites():
            region = self.builder.region(site, self.analysis)
            where = self.where(site.call)
            self.out.append(("real site", where, backward.may_skip_backward(site), backward.never_backward(site, region)))
            self.out.append(("real region", where, [self.describe_op(op) for op in analyses.random_ops(region)]))
            moved = analyses.device_moved_ops(region)
            self.out.append(("real device move", where, [(self.describe_op(op), why) for op, why in moved]))
            sources = analyses.unpreserved_sources(region)
            self.out.append(("real source", where, [(self.node_where(s.node, s.analysis), s.what) for s in sources]))
            for call in region.layer_calls:
                layer = call.layer
                invocation = None if call.frame is None else self.node_where(call.invocation, call.frame.analysis)
                made = self.node_where(layer.call, layer.analysis)
                on = layers.layer_switched_on(layer, self.builder)
                self.out.append(("real layer", where, invocation, layer.qualified, made, on))


class _CstSide(_Side):
    def __init__(self, analysis: ModuleAnalysis, project: Project | None) -> None:
        super().__init__(analysis, RegionBuilder(project))
        self.offsets = node_offsets(analysis.module)
        self._others: dict[int, tuple[ModuleAnalysis, dict]] = {}

    def where(self, node: object, analysis: Any = None) -> tuple:
        analysis = self.analysis if analysis is None else analysis
        offsets = self.offsets
        if analysis is not self.analysis:
            known = self._others.get(id(analysis))
            if known is None or known[0] is not analysis:
                known = self._others[id(analysis)] = (analysis, node_offsets(analysis.module))
            offsets = known[1]
        start, end = offsets[node]
        return (analysis.source.position(start), analysis.source.position(end))

    def in_tree(self, node: object, analysis: Any) -> bool:
        return node in analysis.model.parents

    def elements(self, node: Any) -> list[Any]:
        return [element.value for element in node.elements]

    def def_key(self, node: object, analysis: Any = None) -> tuple:
        analysis = self.analysis if analysis is None else analysis
        if isinstance(node, cst.Lambda):
            return (analysis.module_name, "lambda", self.where(node, analysis))
        scope = analysis.model.scope_of_definition.get(node)
        return (analysis.module_name, scope.qualname if scope else "?", self.where(node.name, analysis)[0][0])  # type: ignore[attr-defined]

    def calls(self) -> list[cst.Call]:
        return [node for node in self.offsets if isinstance(node, cst.Call)]

    def function_nodes(self) -> list[cst.FunctionDef | cst.Lambda]:
        return [node for node in iter_tree(self.analysis.module) if isinstance(node, (cst.FunctionDef, cst.Lambda))]

    def sites(self) -> list[Any]:
        return [site for site in site_index(self.analysis).sites if site.call in self.offsets]

    def frame(self, function: Any, ctx: Any, via: str) -> Frame:
        return Frame(function, ctx, 0, via, self.builder)

    def layer_call(self, layer: LayerUse, invocation: Any, frame: Any) -> LayerCall:
        return LayerCall(layer, invocation, frame)

    def region(self, site: Any, frames: list[Any], layer_calls: list[Any], entries: list[Any]) -> Region:
        return Region(site, self.analysis, frames, [c.layer for c in layer_calls], layer_calls, True, entries)

    def class_of(self, function: Any) -> Any:
        scope = self.analysis.model.scope_of(function)
        if isinstance(function, cst.FunctionDef) and scope.kind is ScopeKind.CLASS and isinstance(scope.node, cst.ClassDef):
            return self.builder.class_info(self.analysis, scope.node)
        return self.builder.evaluator.enclosing_class(self.analysis, function)

    def forward_of(self, info: Any) -> Any:
        return find_method(info, "forward")


class _AstSide(_Side):
    def __init__(self, analysis: AstAnalysis, loader: AstProject | None) -> None:
        super().__init__(analysis, AstRegionBuilder(loader))

    def where(self, node: object, analysis: Any = None) -> tuple:
        return (self.analysis if analysis is None else analysis).range(node)  # type: ignore[no-any-return]

    def in_tree(self, node: object, analysis: Any) -> bool:
        return node in analysis.model.parents

    def elements(self, node: Any) -> list[Any]:
        return list(node.elts)

    def def_key(self, node: object, analysis: Any = None) -> tuple:
        analysis = self.analysis if analysis is None else analysis
        if isinstance(node, ast.Lambda):
            return (analysis.module_name, "lambda", self.where(node, analysis))
        scope = analysis.model.scope_of_definition.get(node)
        return (analysis.module_name, scope.qualname if scope else "?", node.lineno)  # type: ignore[attr-defined]

    def calls(self) -> list[ast.Call]:
        return [node for node in ast.walk(self.analysis.tree) if isinstance(node, ast.Call)]

    def function_nodes(self) -> list[Any]:
        kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
        return [node for node in ast.walk(self.analysis.tree) if isinstance(node, kinds)]

    def sites(self) -> list[Any]:
        return list(ast_site_index(self.analysis).sites)

    def frame(self, function: Any, ctx: Any, via: str) -> AstFrame:
        return AstFrame(function, ctx, 0, via, self.builder)

    def layer_call(self, layer: LayerUse, invocation: Any, frame: Any) -> AstLayerCall:
        return AstLayerCall(layer, invocation, frame)

    def region(self, site: Any, frames: list[Any], layer_calls: list[Any], entries: list[Any]) -> AstRegion:
        return AstRegion(site, self.analysis, frames, [c.layer for c in layer_calls], layer_calls, True, entries)

    def class_of(self, function: Any) -> Any:
        scope = self.analysis.model.scope_of(function)
        methods = (ast.FunctionDef, ast.AsyncFunctionDef)
        if isinstance(function, methods) and scope.kind is ScopeKind.CLASS and isinstance(scope.node, ast.ClassDef):
            return self.builder.evaluator.class_info(self.analysis, scope.node)
        return self.builder.evaluator.enclosing_class(self.analysis, function)

    def forward_of(self, info: Any) -> Any:
        return ast_find_method(info, "forward")


def _cst_parameters(function: cst.FunctionDef | cst.Lambda) -> frozenset[str]:
    params = function.params
    return frozenset(p.name.value for p in [*params.posonly_params, *params.params, *params.kwonly_params])


def _ast_parameters(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> frozenset[str]:
    args = function.args
    return frozenset(a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs])


# ------------------------------------------------------------------ one module
def compare(
    text: str,
    module_name: str = "",
    is_package: bool = False,
    path: str = "<compared>",
    project: Project | None = None,
    loader: AstProject | None = None,
) -> RandomnessComparison:
    """Ask both sides' analyses what the module docstring lists and compare the answers; with
    ``project`` and ``loader`` (libcst's and ``ast``'s loaders of the tree around the file),
    sites and values follow other modules."""
    result = RandomnessComparison()
    times = result.times
    source = SourceFile(path, text)

    begin = time.process_time()
    module = parse_module_unvalidated(text)
    times["libcst_parse"] += time.process_time() - begin
    cst_analysis = ModuleAnalysis(source, module, module_name, is_package)
    cst_analysis.project = project
    begin = time.process_time()
    cst_analysis.model  # noqa: B018 - built here to time it
    times["libcst_model"] += time.process_time() - begin

    begin = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(text)
    times["ast_parse"] += time.process_time() - begin
    ast_analysis = AstAnalysis(source, tree, module_name, is_package)
    ast_analysis.project = loader
    begin = time.process_time()
    ast_analysis.model  # noqa: B018 - built here to time it
    times["ast_model"] += time.process_time() - begin

    begin = time.process_time()
    cst_side = _CstSide(cst_analysis, project)
    cst_side.ask_grad_modes(grad_mode)
    cst_side.ask_regions(randomness, layer_switches, _cst_parameters)
    cst_side.ask_sites(reentrant_backward, randomness, layer_switches)
    cst_side.ask_real_regions(reentrant_backward, randomness, layer_switches)
    times["libcst_analyses"] += time.process_time() - begin

    begin = time.process_time()
    ast_side = _AstSide(ast_analysis, loader)
    ast_side.ask_grad_modes(ast_grad_mode)
    ast_side.ask_regions(ast_randomness, ast_layer_switches, _ast_parameters)
    ast_side.ask_sites(ast_reentrant_backward, ast_randomness, ast_layer_switches)
    ast_side.ask_real_regions(ast_reentrant_backward, ast_randomness, ast_layer_switches)
    times["ast_analyses"] += time.process_time() - begin

    for reading in cst_side.out:
        kind = reading[0]
        if kind in ("region", "site region", "real region"):  # one per region, and its random ops
            result.items[kind.replace("site ", "")] += 1
            result.items[kind.replace("region", "random op").replace("site ", "")] += len(reading[-1])
        elif kind in ("device move", "source", "real device move", "real source"):  # the ops and sources found
            result.items[kind] += len(reading[-1])
        else:
            result.items[kind] += 1
    result.mismatches += multiset_mismatches(cst_side.out, ast_side.out)
    cst_analysis.release()
    ast_analysis.release()
    return result


# --------------------------------------------------------------------------- corpus runs
def run_tree(root: Path, every_file: bool = False, max_files: int | None = None) -> dict[str, object]:
    """Compare both sides on the (gated) files of ``root`` (the first ``max_files`` in path
    order when given), with loaders of the tree, and sum their CPU times."""
    total = RandomnessComparison()
    compared, skipped = comparable_files(root, every_file)
    compared = compared[:max_files] if max_files is not None else compared
    project = Project()
    loader = AstProject(Project())
    for one in compared:
        name, is_package, home = module_name_for(one.path)
        project.track(home)
        loader.project.track(home)
        loader.evict()
        found = compare(one.text, name, is_package, str(one.path), project, loader)
        found.mismatches = [f"{one.path.relative_to(root)}: {m}" for m in found.mismatches]
        total.add(found)
    return {
        "tree": root.name,
        "files": len(compared),
        "skipped": skipped,
        "items": {kind: total.items[kind] for kind in KINDS},
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
            f"{report['tree']}: {report['files']} files ({report['skipped']} skipped), compared {report['items']}, "
            f"{len(report['mismatches'])} mismatches; "  # type: ignore[arg-type]
            f"CPU libcst analyses {cpu['libcst_analyses']:.2f} s, ast analyses {cpu['ast_analyses']:.2f} s"
        )
        for mismatch in report["mismatches"][:30]:  # type: ignore[index]
            print("  ", mismatch)
    if args.json is not None:
        args.json.write_text(json.dumps(reports, indent=2), encoding="utf-8")
    return 1 if any(r["mismatches"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())

"""The answers of the randomness, grad-mode, layer-switch and reentrant-backward analyses on
``ast`` (``ast_grad_mode``, ``ast_layer_switches``, ``ast_randomness``,
``ast_reentrant_backward``) that the golden answers of ``test_ast_randomness.py`` record (they
were compared with libcst's while it lived): the grad mode at every call; for every function
and lambda, a region built by hand around it (positional and keyword-only sites): random ops,
device moves, unpreserved sources and the switches of its layer calls; for every site,
``may_skip_backward``/``never_backward`` and the random ops of a region of the callable's
values; and the same on the region builder's region of every site. Positions are 1-based
``(row, col)`` ranges."""

from __future__ import annotations

import ast
import warnings
from collections import Counter
from dataclasses import dataclass
from typing import Any

from ckptlint.checkpoint.analyses import ast_grad_mode, ast_layer_switches, ast_randomness, ast_reentrant_backward
from ckptlint.checkpoint.evaluator.ast_class_summary import find_method as ast_find_method
from ckptlint.checkpoint.evaluator.ast_region import AstFrame, AstLayerCall, AstRegion
from ckptlint.checkpoint.evaluator.ast_regions import QUERY_BUDGET, AstRegionBuilder
from ckptlint.checkpoint.evaluator.denotations import Context, FunctionValue, InstanceValue, LayerUse
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.semantic.ast_analysis import AstAnalysis
from ckptlint.semantic.bindings import ScopeKind
from ckptlint.semantic.project import AstProject
from ckptlint.text.source import SourceFile

__all__ = ["randomness_answers"]


@dataclass
class _StandInSite:
    """What :func:`device_moved_ops` reads of a site, for the regions built by hand."""

    inputs: tuple[Any, ...] = ()
    function_keywords: tuple[Any, ...] = ()


class _Side:
    """The tree's nodes of interest, regions built by hand, answers described (:class:`_AstSide`
    says how nodes look)."""

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


def _ast_parameters(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> frozenset[str]:
    args = function.args
    return frozenset(a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs])


def randomness_answers(
    text: str, module_name: str = "pkg.mod", is_package: bool = False, path: str = "<compared>", loader: AstProject | None = None
) -> tuple[list[tuple], Counter[str]]:
    """Every answer about ``text`` (sorted) and how many regions, random ops, device moves,
    sources, layers and sites they hold; with ``loader`` sites and values follow other modules."""
    source = SourceFile(path, text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(text)
    analysis = AstAnalysis(source, tree, module_name, is_package)
    analysis.project = loader
    side = _AstSide(analysis, loader)
    side.ask_grad_modes(ast_grad_mode)
    side.ask_regions(ast_randomness, ast_layer_switches, _ast_parameters)
    side.ask_sites(ast_reentrant_backward, ast_randomness, ast_layer_switches)
    side.ask_real_regions(ast_reentrant_backward, ast_randomness, ast_layer_switches)
    items: Counter[str] = Counter()
    for reading in side.out:
        kind = reading[0]
        if kind in ("region", "site region", "real region"):  # one per region, and its random ops
            items[kind.replace("site ", "")] += 1
            items[kind.replace("region", "random op").replace("site ", "")] += len(reading[-1])
        elif kind in ("device move", "source", "real device move", "real source"):  # the ops and sources found
            items[kind] += len(reading[-1])
        else:
            items[kind] += 1
    analysis.release()
    return sorted(side.out, key=repr), items

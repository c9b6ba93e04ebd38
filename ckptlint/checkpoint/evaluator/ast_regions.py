"""Regions: the code a checkpoint site recomputes, built by :class:`AstRegionBuilder`.

For a checkpoint site the builder resolves the checkpointed callable to the code that runs
again during backward: functions and methods of the module, lambdas, ``functools.partial``,
factory closures (the factory's parameters bound to the call's arguments); ``nn.Module``
instances reached through ``self.block``, ``self.layers[i]``, a loop variable over
``self.blocks`` or ``checkpoint_sequential``'s ``functions``, attributes followed to their
assignments in the class and then to the class's ``forward`` (base classes of the tree
searched); classes and functions imported from other files of the linted tree, loaded lazily;
calls made inside the region, to :data:`~ckptlint.checkpoint.evaluator.region.MAX_DEPTH`
levels. torch's own layers are known by :mod:`ckptlint.facts.torch_facts`. Whatever cannot be
resolved is unknown and produces no finding. Resolution is bounded (depth, visited set, the
budgets :data:`~ckptlint.checkpoint.evaluator.regions.REGION_BUDGET`, ``QUERY_BUDGET``,
``FILE_BUDGET``, ``DEEP_DEPTH``), so it terminates on recursive or cyclic code. Branches of
``if`` that the bound arguments (or their defaults) decide are pruned from frames, returns and
``append`` calls; undecided ones stay.

The builder (one per linted module, ``RuleContext.regions``) is composed of an
:class:`~ckptlint.checkpoint.evaluator.budget.EvaluationBudget`, a
:class:`~ckptlint.checkpoint.evaluator.ast_literals.LiteralDecisions`,
:class:`~ckptlint.checkpoint.evaluator.ast_imports.ImportResolver` and
:class:`~ckptlint.checkpoint.evaluator.ast_evaluation.ExpressionEvaluator`, over an
:class:`~ckptlint.semantic.ast_analysis.AstAnalysis` and an
:class:`~ckptlint.semantic.project.AstProject` loader. It builds the records of
:mod:`ckptlint.checkpoint.evaluator.ast_region` for the sites of
:func:`~ckptlint.checkpoint.sites.ast_site_index.ast_site_index`.

A call's arguments are its ``args`` and ``keywords``, bound in source order; a helper summary
holds its module's :class:`~ckptlint.semantic.ast_model.AstModel` (the analysis around it is
looked up: the site's module or the loader's).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import TYPE_CHECKING

from ckptlint.checkpoint.evaluator.ast_arguments import bind_arguments, signature_of
from ckptlint.checkpoint.evaluator.ast_class_summary import class_mro, find_method, layer_base
from ckptlint.checkpoint.evaluator.ast_evaluation import ExpressionEvaluator
from ckptlint.checkpoint.evaluator.ast_imports import ImportResolver
from ckptlint.checkpoint.evaluator.ast_literals import LiteralDecisions
from ckptlint.checkpoint.evaluator.ast_region import AstFrame, AstLayerCall, AstPending, AstRegion
from ckptlint.checkpoint.evaluator.budget import EvaluationBudget
from ckptlint.checkpoint.evaluator.denotations import (
    ContainerValue,
    Context,
    FunctionValue,
    InstanceValue,
    LayerUse,
    TorchValue,
    Value,
    attribute_owners,
    describe_value,
    replace_ctx,
)
from ckptlint.checkpoint.evaluator.region import MAX_DEPTH
from ckptlint.checkpoint.evaluator.regions import DEEP_DEPTH, FILE_BUDGET, QUERY_BUDGET, REGION_BUDGET
from ckptlint.checkpoint.sites.ast_helper_sites import inputs_bound
from ckptlint.checkpoint.sites.ast_helper_summaries import helper_analysis
from ckptlint.checkpoint.sites.ast_options import argument_value, literal_value
from ckptlint.checkpoint.sites.helper_sites import MAX_LEVELS
from ckptlint.facts.apis import ApiKind
from ckptlint.facts.torch_facts import LayerKind
from ckptlint.semantic.ast_analysis import AstAnalysis
from ckptlint.semantic.ast_walk import nodes_of_function
from ckptlint.semantic.bindings import BindingKind
from ckptlint.semantic.callables import Signature

if TYPE_CHECKING:
    from ckptlint.checkpoint.evaluator.ast_class_summary import AstClassInfo, AstMethod
    from ckptlint.checkpoint.sites.ast_helper_summaries import AstHelperSummary
    from ckptlint.checkpoint.sites.ast_options import AstArg
    from ckptlint.checkpoint.sites.ast_site_builders import AstSite
    from ckptlint.semantic.ast_analysis import AstModuleLoader

    AstContext = Context[AstAnalysis, ast.expr, ast.AST]

__all__ = ["AstRegionBuilder", "describe_value"]

#: One way a site checkpoints: the values of the callable, the arguments it is called with
#: (``None``: not seen) and the context they are evaluated in.
_Entry = tuple[list[Value], "tuple[AstArg, ...] | None", "AstContext"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _bind(value: Value, args: tuple[AstArg, ...], caller: AstContext) -> AstContext:
    """:func:`bind_arguments` with a call's arguments as one tuple (positional and keyword)."""
    positional = [a for a in args if not isinstance(a, ast.keyword)]
    keywords = [a for a in args if isinstance(a, ast.keyword)]
    return bind_arguments(value, positional, keywords, caller)  # type: ignore[arg-type]


class AstRegionBuilder:
    """Resolves regions and answers the evaluator's questions, one bounded query each; caches
    regions for one linted module's lifetime.

    Attributes:
        project: the loader other modules are read from (``None``: the file alone).
        budget: the evaluation steps left to the module's queries, and the query's memo.
        decisions: literal values and branch decisions.
        imports: the modules of the tree that imported names come from.
        evaluator: what an expression denotes."""

    def __init__(self, project: AstModuleLoader | None, max_depth: int = MAX_DEPTH) -> None:
        self.project = project
        self.max_depth = max_depth
        self._deeper: AstRegionBuilder | None = None
        self.budget = EvaluationBudget(FILE_BUDGET)
        self.decisions = LiteralDecisions()
        self.imports = ImportResolver(project)
        self.evaluator = ExpressionEvaluator(self.budget, self.decisions, self.imports)
        self._regions: dict[object, AstRegion] = {}
        self._kept: list[InstanceValue] = []

    # ------------------------------------------------------------------ queries
    def region(self, site: AstSite, analysis: AstAnalysis, built: InstanceValue | None = None) -> AstRegion:
        """The region of ``site`` (a site of ``analysis``'s module), built once, within
        :data:`REGION_BUDGET` steps; with ``built``, the region an instance of the site's class
        made by a constructor call recomputes. Its status is ``resolved`` (the callable is
        known), partial (it calls code ckptlint cannot see) or neither (unknown)."""
        key = site if built is None else (site, id(built))
        found = self._regions.get(key)
        if found is None:
            with self.budget.query(REGION_BUDGET):
                found = self._build(site, analysis, built)
                found.ran_out = self.budget.ran_out
            self._regions[key] = found
            if built is not None:
                self._kept.append(built)  # its id stays its own while the region is kept
        return found

    def deep_region(self, site: AstSite, analysis: AstAnalysis) -> AstRegion:
        """The region of ``site`` followed :data:`DEEP_DEPTH` calls deep, by a builder of its own."""
        if self._deeper is None:
            self._deeper = AstRegionBuilder(self.project, DEEP_DEPTH)
        return self._deeper.region(site, analysis)

    def held(self, instance: InstanceValue) -> list[Value]:
        """What an instance of a class of the tree holds, containers opened, within
        :data:`QUERY_BUDGET` steps."""
        with self.budget.query(QUERY_BUDGET):
            return self.evaluator.held(instance)

    def values(
        self,
        expr: ast.expr,
        analysis: AstAnalysis,
        budget: int = 0,
        classes_only: bool = False,
        complete: bool = False,
    ) -> list[Value]:
        """The abstract values ``expr`` (a node of ``analysis``'s module) may denote, evaluated
        where it is written; ``[]`` = unknown."""
        with self.imports.classes_only(classes_only), self.budget.query(budget or QUERY_BUDGET, complete):
            return self.evaluator.values(expr, Context(analysis, self.enclosing_class(analysis, expr)))

    def receivers(
        self, expr: ast.expr, name: str, analysis: AstAnalysis, budget: int = 0, classes_only: bool = False
    ) -> list[Value]:
        """The objects that answer ``expr.name``: :meth:`values` of ``expr`` (a complete query),
        a forwarding wrapper replaced by what it wraps."""
        values = self.values(expr, analysis, budget, classes_only, complete=True)
        return [owner for value in values for owner in attribute_owners(value, name)]

    def method_signature(self, value: Value, name: str) -> Signature | None:
        """The signature of method ``name`` (``self`` bound) of an instance of a class of the
        tree, when the class or a base class of the tree defines it; else ``None``."""
        if not isinstance(value, InstanceValue):
            return None
        method = find_method(value.info, name)
        if method is None:
            return None
        return signature_of(FunctionValue(method[0], Context(method[1].analysis), bound_method=True))

    def signature(self, expr: ast.expr | None, analysis: AstAnalysis) -> Signature | None:
        """What the callable ``expr`` (written in ``analysis``'s module) accepts; ``None`` when
        something is unknown."""
        if expr is None:
            return None
        with self.budget.query(QUERY_BUDGET):
            values = self.evaluator.values(expr, Context(analysis, self.enclosing_class(analysis, expr)))
        if not values:
            return None
        signatures: list[Signature] = []
        for value in values:
            if isinstance(value, InstanceValue):
                method = find_method(value.info, "forward")
                if method is None:
                    return None
                value = FunctionValue(method[0], Context(method[1].analysis), bound_method=True)
            found = signature_of(value) if isinstance(value, FunctionValue) else None
            if found is None:
                return None
            signatures.append(found)
        keywords = frozenset(k for s in signatures for k in s.keywords)
        return Signature(keywords, any(s.var_keyword for s in signatures), signatures[0].node)

    def literal(self, expr: ast.expr | None, ctx: AstContext) -> object:
        """The Python value ``expr`` has when evaluated in ``ctx``, or ``NOT_LITERAL``."""
        return self.decisions.literal(expr, ctx)

    def decide(self, test: ast.expr, ctx: AstContext) -> bool | None:
        """Whether the branch condition ``test`` is true in ``ctx``; ``None`` when not decided."""
        return self.decisions.decide(test, ctx)

    def runs(self, node: ast.AST, ctx: AstContext) -> bool:
        """Whether ``node`` can run when its function runs in ``ctx``."""
        return self.decisions.runs(node, ctx)

    def assigned_outside(self, analysis: AstAnalysis, attr: str, init: AstMethod | None) -> bool:
        """Whether ``<anything>.<attr> = ...`` (or ``+=``) appears in ``analysis``'s module
        outside the function ``init``."""
        return self.decisions.assigned_outside(analysis, attr, init)

    def method(self, info: AstClassInfo, name: str) -> tuple[AstMethod, AstClassInfo] | None:
        """Method ``name`` of the class ``info`` or of the first class of the tree in its
        method order that defines it, with that class; ``None`` when none does."""
        return find_method(info, name)

    def mro(self, info: AstClassInfo) -> list[AstClassInfo]:
        """``info`` and its base classes of the tree, nearest first."""
        return class_mro(info)

    def class_info(self, analysis: AstAnalysis, node: ast.ClassDef) -> AstClassInfo:
        """The summary of class ``node`` of ``analysis``."""
        return self.evaluator.class_info(analysis, node)

    def enclosing_class(self, analysis: AstAnalysis, node: ast.AST) -> AstClassInfo | None:
        """The class whose method contains ``node`` (``self``'s class there)."""
        return self.evaluator.enclosing_class(analysis, node)

    # ------------------------------------------------------------------ building
    def _build(self, site: AstSite, analysis: AstAnalysis, built: InstanceValue | None) -> AstRegion:
        region = AstRegion(site, analysis)
        if site.function is None:
            return region
        if built is not None:
            ctx: AstContext = Context(analysis, built.info, self_env=built.env)
        else:
            ctx = Context(analysis, self.enclosing_class(analysis, site.call))
        entries = self._entries(site, ctx, 0)
        # torch's own code alone is no resolution: a torch wrapper may hold anything
        region.resolved = any(not isinstance(v, TorchValue) for values, _, _ in entries for v in values)
        region.entries = [v for values, _, _ in entries for v in values]
        visited: dict[tuple[int, int], AstFrame] = {}
        work = [AstPending(v, 0, describe_value(v), args, where, None, None) for values, args, where in entries for v in values]
        while work:
            item = work.pop(0)
            value = item.value
            if isinstance(value, FunctionValue):
                key = (id(value.node), id(value.ctx.self_class))
                seen = visited.get(key)
                if seen is not None:
                    seen.reached_from.append((item.frame, item.invocation))
                    continue
                if item.args is not None:
                    frame_ctx = _bind(value, item.args, item.caller)
                else:
                    frame_ctx = replace_ctx(value.ctx, open_call=True)  # called with arguments not seen
                frame = AstFrame(value.node, frame_ctx, item.depth, item.via, self, item.frame, item.invocation)
                frame.reached_from.append((item.frame, item.invocation))
                visited[key] = frame
                region.frames.append(frame)
                if item.depth >= self.max_depth:
                    region.cut_calls += [
                        (node, frame) for node in frame.nodes() if isinstance(node, ast.Call) and _names_code(node.func, frame)
                    ]
                    continue
                for node in frame.nodes():
                    if isinstance(node, ast.Call):
                        self._follow(node, frame, item, region, work)
            elif isinstance(value, InstanceValue):
                self._instance(value, item, site, region, work)
            elif isinstance(value, LayerUse):
                if value.fact.kind is not LayerKind.CONTAINER:
                    region.layers.append(value)
                    region.layer_calls.append(AstLayerCall(value, item.invocation, item.frame))
            elif isinstance(value, ContainerValue):
                for element in value.elements:
                    work.append(AstPending(element, item.depth, item.via, item.args, item.caller, item.invocation, item.frame))
        return region

    def _follow(self, node: ast.Call, frame: AstFrame, item: AstPending, region: AstRegion, work: list[AstPending]) -> None:
        """The callees of call ``node`` made in ``frame`` (reached by ``item``): queued, or the
        call recorded as unknown or opaque."""
        callees = self.evaluator.called(node.func, frame.ctx)
        if not callees and _names_code(node.func, frame):
            region.unknown_calls.append((node, frame))
        elif not callees and (path := _imported_from_tree(node.func, frame, self.project)) is not None:
            region.opaque_calls.append((node, frame, path))
        args: tuple[AstArg, ...] = (*node.args, *node.keywords)
        for callee in callees:
            via = f"{item.via} -> {describe_value(callee)}"
            work.append(AstPending(callee, item.depth + 1, via, args, frame.ctx, node, frame))

    def _instance(self, value: InstanceValue, item: AstPending, site: AstSite, region: AstRegion, work: list[AstPending]) -> None:
        """A module instance reached by ``item``: its ``forward`` (or the API's rerun method)
        queued, or the torch layer it subclasses recorded."""
        # a reversible recompute re-runs each block through its own method (backward_pass)
        entry = site.api.rerun_method if item.depth == 0 and site.api.rerun_method else "forward"
        info: AstClassInfo = value.info
        method = find_method(info, entry)
        layer = layer_base(info)
        if method is not None:
            node, owner = method
            forward = FunctionValue(node, Context(owner.analysis, value.info, self_env=value.env), True)
            work.append(AstPending(forward, item.depth, item.via, item.args, item.caller, item.invocation, item.frame))
            if layer is None or layer[1].kind is not LayerKind.RUNNING_STATS or not _keeps_layer_forward(node):
                return
            # a BatchNorm subclass with its own forward (timm's BatchNormAct2d) still updates
            # the running statistics
        elif layer is None:
            return
        use = LayerUse(layer[0], layer[1], None, Context(value.info.analysis))
        region.layers.append(use)
        region.layer_calls.append(AstLayerCall(use, item.invocation, item.frame))

    def _entries(self, site: AstSite, ctx: AstContext, level: int) -> list[_Entry]:
        """What ``site`` (evaluated in ``ctx``) checkpoints: ``(values, arguments, where the
        arguments are evaluated)`` per way, helpers followed with their parameters bound."""
        function_args = site.inputs + site.function_keywords if site.api.kind is ApiKind.FUNCTION else None
        helper = site.helper
        if helper is None or level >= MAX_LEVELS:
            if site.function is None:
                return []
            values = self.evaluator.values(site.function, ctx, 0)
            if site.api.kind is ApiKind.SEQUENTIAL:
                values = _checkpointed_segments(values, site, ctx.analysis)
            return [(values, function_args, ctx)]
        direct = all(
            isinstance(c.site.function, ast.Name) and c.site.function.id == helper.parameter and c.site.helper is None
            for c in site.alternatives
        )
        if level == 0 and direct and site.function is not None:
            return [(self.evaluator.values(site.function, ctx, 0), function_args if inputs_bound(site) else None, ctx)]
        where: AstContext = Context(self._helper_analysis(helper, ctx), ctx.self_class if helper.method else None)
        value = FunctionValue(helper.node, where, bound_method=helper.method)
        bound = bind_arguments(value, list(site.call.args), list(site.call.keywords), ctx)
        out: list[_Entry] = []
        for alternative in site.alternatives:
            out += self._entries(alternative.site, bound, level + 1)
        return out

    def _helper_analysis(self, helper: AstHelperSummary, ctx: AstContext) -> AstAnalysis:
        """The analysis of the module ``helper`` is written in
        (:func:`~ckptlint.checkpoint.sites.ast_helper_summaries.helper_analysis`)."""
        return helper_analysis(helper, ctx.analysis, self.project)


def _keeps_layer_forward(forward: AstMethod) -> bool:
    """Whether a torch layer subclass's own ``forward`` still runs the layer's training
    behaviour: it calls ``super()`` or reads ``self.training``."""
    for node in nodes_of_function(forward):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super":
            return True
        if isinstance(node, ast.Attribute) and node.attr == "training":
            return True
    return False


def _checkpointed_segments(values: list[Value], site: AstSite, analysis: AstAnalysis) -> list[Value]:
    """``checkpoint_sequential(functions, segments, input)`` recomputes every segment but the
    last: keep only those elements when the count is known."""
    if len(values) != 1 or not isinstance(values[0], ContainerValue) or not values[0].exact:
        return values
    elements = values[0].elements
    positional = site.arguments.positional
    segments_arg: AstArg | None = positional[1] if len(positional) > 1 else site.arguments.keywords.get("segments")
    if segments_arg is None:
        return values
    segments = literal_value(argument_value(segments_arg), analysis.model)
    if not isinstance(segments, int) or isinstance(segments, bool) or segments < 1:
        return values
    size = len(elements) // segments
    if size == 0:
        return values
    return [ContainerValue(elements[: size * (segments - 1)], exact=True)]


def _imported_from_tree(func: ast.expr, frame: AstFrame, project: AstModuleLoader | None) -> Path | None:
    """The file of the module of the linted tree that ``func`` names something of, by its
    qualified names; ``None`` otherwise."""
    if project is None:
        return None
    model = frame.analysis.model
    if func not in model.parents:
        return None
    for name in model.qualified_names(func):
        module = name.rpartition(".")[0]
        while module:
            found = project.file_for_module(module)
            if found is not None:
                return found
            module = module.rpartition(".")[0]
    return None


def _names_code(func: ast.expr, frame: AstFrame) -> bool:
    """Whether calling ``func`` runs code of the program that ckptlint should be able to see:
    a plain name that is not a builtin or an import, or ``self.attr``."""
    model = frame.analysis.model
    if isinstance(func, ast.Name):
        if func not in model.parents:
            return False
        bindings = model.lookup(func.id, model.scope_of(func))
        return bool(bindings) and all(b.kind is not BindingKind.IMPORT for b in bindings)
    self_name = frame.self_parameter()
    return self_name is not None and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == self_name

"""Regions: the code a checkpoint site recomputes.

For a :class:`~ckptlint.checkpoint.sites.sites.CheckpointSite`, the :class:`RegionBuilder` resolves the
checkpointed callable to the code that runs again during backward:

- functions and methods of the module (``fn``, ``self._forward``, nested defs), lambdas,
  ``functools.partial(f, ...)``, factory closures (``make_forward(layer)`` returning an inner
  def, with the factory's parameters bound to the call's arguments);
- ``nn.Module`` instances reached through ``self.block``, ``self.layers[i]``, a loop variable
  over ``self.blocks`` (``enumerate``/``zip`` too), or ``checkpoint_sequential``'s
  ``functions``: attributes are followed to their assignments in the class (``__init__``),
  through ``nn.Sequential``/``nn.ModuleList``/``nn.ModuleDict``, lists built with ``append``,
  and comprehensions, then to the class's ``forward`` (searching base classes of the tree);
- classes and functions imported from other files of the linted tree, loaded lazily through
  :class:`~ckptlint.semantic.project.Project` (per-class summaries are cached);
- calls made inside the region, to :data:`MAX_DEPTH` levels.

torch's own layers are known by :mod:`ckptlint.facts.torch_facts`. Whatever cannot be resolved is
unknown and produces no finding. Resolution is bounded (depth, visited set, value count), so it
terminates on recursive or cyclic code.

The :class:`RegionBuilder` is ckptlint's evaluator, composed of objects with one job each: an
:class:`~ckptlint.checkpoint.evaluator.budget.EvaluationBudget` (steps per query and per file,
the query's memo), :class:`~ckptlint.checkpoint.evaluator.literals.LiteralDecisions` (literal
values, which branch runs), an :class:`~ckptlint.checkpoint.evaluator.imports.ImportResolver`
(the modules of the tree that imported names come from) and an
:class:`~ckptlint.checkpoint.evaluator.evaluation.ExpressionEvaluator` (what an expression
denotes, class summaries). The builder runs each question as one bounded query and builds
regions. Its entry points, for rules and for new site kinds (one builder per linted module,
``RuleContext.regions``):

- :meth:`RegionBuilder.values`: expression ``X`` written in module ``A`` -> the abstract
  values it may denote (:class:`FunctionValue`, :class:`ClassValue`, :class:`InstanceValue`,
  :class:`LayerUse`, :class:`ContainerValue`, :class:`TorchValue`, ...; ``[]`` = unknown);
- :meth:`RegionBuilder.literal` / :meth:`RegionBuilder.decide`: expression in a
  :class:`Context` (bindings of the call being followed) -> Python value / branch taken;
- :meth:`RegionBuilder.signature`: callable expression -> the keywords it accepts;
- :meth:`RegionBuilder.region`: a :class:`~ckptlint.checkpoint.sites.sites.CheckpointSite` -> its
  :class:`Region`: frames, layers, and a status: ``resolved`` (the callable is known),
  ``partial`` (it calls code ckptlint cannot see, :attr:`Region.unknown_calls`), or neither
  (unknown). A site kind plugs in by setting ``site.function`` to the callable expression;
  for ``ApiKind.FUNCTION`` sites ``site.inputs``/``site.function_keywords`` are bound to its
  parameters, other kinds are treated as called with arguments not seen.

Branches of ``if`` that the bound arguments (or their defaults) decide are pruned from frames,
returns and ``append`` calls; undecided ones stay.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.checkpoint.evaluator.arguments import bind_arguments, signature_of
from ckptlint.checkpoint.evaluator.budget import EvaluationBudget
from ckptlint.checkpoint.evaluator.class_summary import class_mro, find_method, layer_base
from ckptlint.checkpoint.evaluator.denotations import (
    ClassInfo,
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
from ckptlint.checkpoint.evaluator.evaluation import ExpressionEvaluator
from ckptlint.checkpoint.evaluator.imports import ImportResolver
from ckptlint.checkpoint.evaluator.literals import LiteralDecisions
from ckptlint.checkpoint.evaluator.region import MAX_DEPTH, Frame, LayerCall, Pending, Region
from ckptlint.checkpoint.sites.helper_sites import MAX_LEVELS, inputs_bound
from ckptlint.checkpoint.sites.options import literal_value
from ckptlint.checkpoint.sites.site import CheckpointSite
from ckptlint.facts.apis import ApiKind
from ckptlint.facts.torch_facts import LayerKind
from ckptlint.semantic.bindings import BindingKind
from ckptlint.semantic.callables import Signature
from ckptlint.semantic.walk import nodes_of_function

if TYPE_CHECKING:
    from ckptlint.semantic.analysis import ModuleAnalysis
    from ckptlint.semantic.project import Project

__all__ = ["RegionBuilder"]


#: Evaluation steps (expressions evaluated) one query may take: a region, or one
#: ``values``/``signature`` question. Past it the rest is unknown (never a finding by
#: itself). Measured with memoisation: the largest region of sd-scripts takes 653 steps,
#: of ColossalAI 432; ``values``/``signature`` queries there at most 188.
REGION_BUDGET = 20_000

QUERY_BUDGET = 2_000

#: Evaluation steps all queries of one linted module may take together (one
#: :class:`RegionBuilder`): past it every query is cut off at once, so no file is
#: pathologically slow; what is cut off is unknown, as past :data:`REGION_BUDGET`.
FILE_BUDGET = 100_000

#: Levels of calls a region is followed to where a finding needs every way its frames are
#: reached (:meth:`RegionBuilder.deep_region`).
DEEP_DEPTH = MAX_DEPTH + 3

#: One way a site checkpoints: the values of the callable, the arguments it is called with
#: (``None``: not seen) and the context they are evaluated in.
_Entry = tuple[list[Value], "tuple[cst.Arg, ...] | None", Context]


class RegionBuilder:
    """Resolves regions and answers the evaluator's questions for rules and analyses, one
    bounded query each; caches regions (and, through its parts, class summaries) for one
    linted module's lifetime, sharing the project's module cache.

    Attributes:
        project: the project other modules are loaded from (``None``: the file alone).
        budget: the evaluation steps left to the module's queries, and the query's memo.
        decisions: literal values and branch decisions.
        imports: the modules of the tree that imported names come from.
        evaluator: what an expression denotes."""

    def __init__(self, project: Project | None, max_depth: int = MAX_DEPTH) -> None:
        self.project = project
        self.max_depth = max_depth
        self._deeper: RegionBuilder | None = None
        self.budget = EvaluationBudget(FILE_BUDGET)
        self.decisions = LiteralDecisions()
        self.imports = ImportResolver(project)
        self.evaluator = ExpressionEvaluator(self.budget, self.decisions, self.imports)
        self._regions: dict[object, Region] = {}
        self._kept: list[InstanceValue] = []

    # ------------------------------------------------------------------ queries
    def region(self, site: CheckpointSite, analysis: ModuleAnalysis, built: InstanceValue | None = None) -> Region:
        """The region of ``site`` (a site of ``analysis``'s module), built once, within
        :data:`REGION_BUDGET` steps. With ``built``, an instance of the site's class (or of a
        subclass) that a constructor call made (:meth:`held`), the region it recomputes: its
        ``self`` is that instance, so ``__init__``'s parameters hold what the call passed;
        without, ``self`` is an instance built with ``__init__``'s defaults."""
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

    def deep_region(self, site: CheckpointSite, analysis: ModuleAnalysis) -> Region:
        """The region of ``site`` followed :data:`DEEP_DEPTH` calls deep, by a builder of its
        own (its own steps): asked only where a finding needs every way a frame is reached
        and the region of :meth:`region` was cut at its depth."""
        if self._deeper is None:
            self._deeper = RegionBuilder(self.project, DEEP_DEPTH)
        return self._deeper.region(site, analysis)

    def held(self, instance: InstanceValue) -> list[Value]:
        """What an instance of a class of the tree holds, containers opened
        (:meth:`ExpressionEvaluator.held`), within :data:`QUERY_BUDGET` steps."""
        with self.budget.query(QUERY_BUDGET):
            return self.evaluator.held(instance)

    def values(
        self,
        expr: cst.BaseExpression,
        analysis: ModuleAnalysis,
        budget: int = 0,
        classes_only: bool = False,
        complete: bool = False,
    ) -> list[Value]:
        """The abstract values ``expr`` (a node of ``analysis``'s module) may denote, evaluated
        where it is written (``self`` is an instance of the enclosing class): functions,
        classes, instances of classes of the tree, torch layers, containers, modules. An
        empty list means unknown. Bounded like regions (depth, value count, steps: ``budget``,
        default :data:`QUERY_BUDGET`; a small one keeps a cheap question from loading the
        files that deep call chains reach). With ``classes_only``, other modules are loaded
        only for imported CapWords names (classes, by convention), never for functions or
        modules, so the question costs at most the files of those classes. With ``complete``,
        what is not known is an opaque value among the others
        (:meth:`EvaluationBudget.query`)."""
        with self.imports.classes_only(classes_only), self.budget.query(budget or QUERY_BUDGET, complete):
            return self.evaluator.values(expr, Context(analysis, self.enclosing_class(analysis, expr)))

    def receivers(
        self, expr: cst.BaseExpression, name: str, analysis: ModuleAnalysis, budget: int = 0, classes_only: bool = False
    ) -> list[Value]:
        """The objects that answer ``expr.name`` (``expr`` a node of ``analysis``'s module):
        :meth:`values` of ``expr``, where a library's wrapper that forwards ``name`` to the model
        it wraps (``engine, *_ = deepspeed.initialize(model=critic)``) is replaced by what the
        model may be. The query is complete (:meth:`EvaluationBudget.query`): what is not known
        is an opaque value among the others, so an answer of classes of the tree is whole.
        ``budget`` and ``classes_only`` as for :meth:`values`."""
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

    def signature(self, expr: cst.BaseExpression | None, analysis: ModuleAnalysis) -> Signature | None:
        """What the callable ``expr`` (written in ``analysis``'s module) accepts, resolved by
        the same evaluator as regions: a ``def``, a lambda, ``self.method``, a factory's
        returned closure, ``functools.partial``, and a module instance (``self.block``, a
        loop variable over ``self.blocks``), whose ``forward`` is called (``self`` is bound).

        Every value ``expr`` may denote must resolve; the result accepts a keyword when any
        of them does (so "accepts" never reports a keyword wrongly as refused). ``None`` when
        something is unknown (a parameter without default, a torch layer, a decorated
        ``def``, whose wrapper may take other arguments)."""
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

    def literal(self, expr: cst.BaseExpression | None, ctx: Context) -> object:
        """The Python value ``expr`` has when evaluated in ``ctx``, or ``NOT_LITERAL``
        (:meth:`LiteralDecisions.literal`)."""
        return self.decisions.literal(expr, ctx)

    def decide(self, test: cst.BaseExpression, ctx: Context) -> bool | None:
        """Whether the branch condition ``test`` is true in ``ctx``; ``None`` when not decided
        (:meth:`LiteralDecisions.decide`)."""
        return self.decisions.decide(test, ctx)

    def runs(self, node: cst.CSTNode, ctx: Context) -> bool:
        """Whether ``node`` can run when its function runs in ``ctx`` (:meth:`LiteralDecisions.runs`)."""
        return self.decisions.runs(node, ctx)

    def assigned_outside(self, analysis: ModuleAnalysis, attr: str, init: cst.FunctionDef | None) -> bool:
        """Whether ``<anything>.<attr> = ...`` (or ``+=``) appears in ``analysis``'s module
        outside the function ``init`` (:meth:`LiteralDecisions.assigned_outside`)."""
        return self.decisions.assigned_outside(analysis, attr, init)

    def method(self, info: ClassInfo, name: str) -> tuple[cst.FunctionDef, ClassInfo] | None:
        """Method ``name`` of the class ``info``, its own or that of the first class of the tree
        in its method order that defines it, with that class; ``None`` when none does."""
        return find_method(info, name)

    def mro(self, info: ClassInfo) -> list[ClassInfo]:
        """``info`` and its base classes of the tree, nearest first (bases that are not
        classes of the tree are left out)."""
        return class_mro(info)

    def class_info(self, analysis: ModuleAnalysis, node: cst.ClassDef) -> ClassInfo:
        """The summary of class ``node`` of ``analysis`` (:meth:`ExpressionEvaluator.class_info`)."""
        return self.evaluator.class_info(analysis, node)

    def enclosing_class(self, analysis: ModuleAnalysis, node: cst.CSTNode) -> ClassInfo | None:
        """The class whose method contains ``node`` (``self``'s class there)."""
        return self.evaluator.enclosing_class(analysis, node)

    # ------------------------------------------------------------------ building
    def _build(self, site: CheckpointSite, analysis: ModuleAnalysis, built: InstanceValue | None) -> Region:
        region = Region(site, analysis)
        if site.function is None:
            return region
        if built is not None:
            ctx = Context(analysis, built.info, self_env=built.env)
        else:
            ctx = Context(analysis, self.enclosing_class(analysis, site.call))
        entries = self._entries(site, ctx, 0)
        # torch's own code alone is no resolution: a torch wrapper may hold anything
        region.resolved = any(not isinstance(v, TorchValue) for values, _, _ in entries for v in values)
        region.entries = [v for values, _, _ in entries for v in values]
        visited: dict[tuple[int, int], Frame] = {}
        work = [Pending(v, 0, describe_value(v), args, where, None, None) for values, args, where in entries for v in values]
        while work:
            item = work.pop(0)
            value = item.value
            if isinstance(value, FunctionValue):
                key = (id(value.node), id(value.ctx.self_class))
                seen = visited.get(key)
                if seen is not None:
                    seen.reached_from.append((item.frame, item.invocation))
                    continue
                frame_ctx = value.ctx
                if item.args is not None:
                    frame_ctx = bind_arguments(value, item.args, item.caller)
                else:
                    frame_ctx = replace_ctx(frame_ctx, open_call=True)  # called with arguments not seen
                frame = Frame(value.node, frame_ctx, item.depth, item.via, self, item.frame, item.invocation)
                frame.reached_from.append((item.frame, item.invocation))
                visited[key] = frame
                region.frames.append(frame)
                if item.depth >= self.max_depth:
                    region.cut_calls += [
                        (node, frame) for node in frame.nodes() if isinstance(node, cst.Call) and _names_code(node.func, frame)
                    ]
                    continue
                for node in frame.nodes():
                    if isinstance(node, cst.Call):
                        callees = self.evaluator.called(node.func, frame_ctx)
                        if not callees and _names_code(node.func, frame):
                            region.unknown_calls.append((node, frame))
                        elif not callees and (path := _imported_from_tree(node.func, frame, self.project)) is not None:
                            region.opaque_calls.append((node, frame, path))
                        for callee in callees:
                            work.append(
                                Pending(
                                    callee,
                                    item.depth + 1,
                                    f"{item.via} -> {describe_value(callee)}",
                                    tuple(node.args),
                                    frame_ctx,
                                    node,
                                    frame,
                                )
                            )
            elif isinstance(value, InstanceValue):
                # a reversible recompute re-runs each block through its own method (backward_pass)
                entry = site.api.rerun_method if item.depth == 0 and site.api.rerun_method else "forward"
                method = find_method(value.info, entry)
                if method is not None:
                    node, owner = method
                    forward = FunctionValue(node, Context(owner.analysis, value.info, self_env=value.env), True)
                    work.append(Pending(forward, item.depth, item.via, item.args, item.caller, item.invocation, item.frame))
                    layer = layer_base(value.info)
                    if layer is not None and layer[1].kind is LayerKind.RUNNING_STATS and _keeps_layer_forward(node):
                        # a BatchNorm subclass with its own forward (timm's BatchNormAct2d)
                        # still updates the running statistics
                        use = LayerUse(layer[0], layer[1], None, Context(value.info.analysis))
                        region.layers.append(use)
                        region.layer_calls.append(LayerCall(use, item.invocation, item.frame))
                else:
                    layer = layer_base(value.info)
                    if layer is not None:
                        use = LayerUse(layer[0], layer[1], None, Context(value.info.analysis))
                        region.layers.append(use)
                        region.layer_calls.append(LayerCall(use, item.invocation, item.frame))
            elif isinstance(value, LayerUse):
                if value.fact.kind is not LayerKind.CONTAINER:
                    region.layers.append(value)
                    region.layer_calls.append(LayerCall(value, item.invocation, item.frame))
            elif isinstance(value, ContainerValue):
                for element in value.elements:
                    work.append(Pending(element, item.depth, item.via, item.args, item.caller, item.invocation, item.frame))
        return region

    def _entries(self, site: CheckpointSite, ctx: Context, level: int) -> list[_Entry]:
        """What ``site`` (evaluated in ``ctx``) checkpoints: ``(values, arguments, where the
        arguments are evaluated)`` per way. A call of a helper is followed into the helper
        with its parameters bound to the call's arguments (``checkpoint(create_custom_forward(
        model), *args)`` there), through helpers of helpers, each checkpoint call the helper
        may make; when the helper passes its parameter itself, the call's argument is the
        callable and the call's inputs (when known) its arguments."""
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
            isinstance(c.site.function, cst.Name) and c.site.function.value == helper.parameter and c.site.helper is None
            for c in site.alternatives
        )
        if level == 0 and direct and site.function is not None:
            return [(self.evaluator.values(site.function, ctx, 0), function_args if inputs_bound(site) else None, ctx)]
        where = Context(helper.analysis, ctx.self_class if helper.method else None)
        bound = bind_arguments(FunctionValue(helper.node, where, bound_method=helper.method), tuple(site.call.args), ctx)
        out: list[_Entry] = []
        for alternative in site.alternatives:
            out += self._entries(alternative.site, bound, level + 1)
        return out


def _keeps_layer_forward(forward: cst.FunctionDef) -> bool:
    """Whether a torch layer subclass's own ``forward`` still runs the layer's training
    behaviour: it calls ``super()`` (``super().forward(x)``) or reads ``self.training``
    (``F.batch_norm(..., self.training or not self.track_running_stats, ...)``)."""
    for node in nodes_of_function(forward):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "super":
            return True
        if isinstance(node, cst.Attribute) and node.attr.value == "training":
            return True
    return False


def _checkpointed_segments(values: list[Value], site: CheckpointSite, analysis: ModuleAnalysis) -> list[Value]:
    """``checkpoint_sequential(functions, segments, input)`` recomputes every segment but the
    last (torch.utils.checkpoint, 2.9): keep only those elements when the count is known."""
    if len(values) != 1 or not isinstance(values[0], ContainerValue) or not values[0].exact:
        return values
    elements = values[0].elements
    segments_arg = site.arguments.positional[1] if len(site.arguments.positional) > 1 else site.arguments.keywords.get("segments")
    if segments_arg is None:
        return values
    segments = literal_value(segments_arg.value, analysis.model)
    if not isinstance(segments, int) or isinstance(segments, bool) or segments < 1:
        return values
    size = len(elements) // segments
    if size == 0:
        return values
    return [ContainerValue(elements[: size * (segments - 1)], exact=True)]


def _imported_from_tree(func: cst.BaseExpression, frame: Frame, project: Project | None) -> Path | None:
    """The file of the module of the linted tree that ``func`` names something of (``m3.f3``,
    ``f3`` after ``from .m3 import f3``), by its qualified names; ``None`` otherwise."""
    if project is None:
        return None
    model = frame.analysis.model
    if func not in model.scopes:
        return None
    for name in model.qualified_names(func):
        module = name.rpartition(".")[0]
        while module:
            found = project.file_for_module(module)
            if found is not None:
                return found
            module = module.rpartition(".")[0]
    return None


def _names_code(func: cst.BaseExpression, frame: Frame) -> bool:
    """Whether calling ``func`` runs code of the program that ckptlint should be able to
    see: a plain name that is not a builtin or an import (``module(*inputs)``, ``fn(x)``),
    or ``self.attr`` (a submodule); not method calls on other values (``x.view``)."""
    model = frame.analysis.model
    if isinstance(func, cst.Name):
        if func not in model.scopes:
            return False
        bindings = model.lookup(func.value, model.scope_of(func))
        return bool(bindings) and all(b.kind is not BindingKind.IMPORT for b in bindings)
    self_name = frame.self_parameter()
    return self_name is not None and isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == self_name

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

The :class:`RegionBuilder` is ckptlint's evaluator. Its entry points, for rules and for new
site kinds (one builder per linted module, ``RuleContext.regions``):

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

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.checkpoint.evaluator.class_summary import summarise_class
from ckptlint.semantic.walk import nodes_of_function
from ckptlint.checkpoint.evaluator.denotations import (
    ClassInfo,
    ContainerValue,
    Context,
    FunctionValue,
    InstanceValue,
    LayerUse,
    TorchValue,
    Value,
    describe_value,
    replace_ctx,
)
from ckptlint.checkpoint.evaluator.evaluation import ExpressionEvaluation
from ckptlint.checkpoint.sites.helper_sites import MAX_LEVELS, inputs_bound
from ckptlint.checkpoint.evaluator.literals import LiteralDecisions
from ckptlint.checkpoint.sites.options import literal_value
from ckptlint.checkpoint.evaluator.region import MAX_DEPTH, Frame, LayerCall, Pending, Region
from ckptlint.checkpoint.sites.site import CheckpointSite
from ckptlint.facts.apis import ApiKind
from ckptlint.facts.torch_facts import (
    LayerKind,
)
from ckptlint.semantic.bindings import Binding, BindingKind, ScopeKind
from ckptlint.semantic.callables import Signature

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

def _count_steps(used: int) -> None:
    from ckptlint import perf

    perf.add("evaluation_steps", used)

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
    return (
        self_name is not None
        and isinstance(func, cst.Attribute)
        and isinstance(func.value, cst.Name)
        and func.value.value == self_name
    )

class RegionBuilder(LiteralDecisions, ExpressionEvaluation):
    """Resolves regions; caches class summaries and regions for the run (one per linted
    module's lifetime, sharing the project's module cache)."""

    def __init__(self, project: Project | None) -> None:
        self.project = project
        self._classes: dict[cst.ClassDef, ClassInfo] = {}
        self._regions: dict[CheckpointSite, Region] = {}
        self._outside: dict[tuple[int, str], list[cst.CSTNode]] = {}
        self._beside: dict[tuple[int, str], frozenset[str]] = {}
        self._steps: int | None = None
        self._file_steps = FILE_BUDGET  # left to this builder's queries together
        self._classes_only = False
        #: ``_values`` results of the current query, by (expression, context) identity
        self._memo: dict[tuple[int, int], tuple[Context, cst.BaseExpression, list[Value]]] = {}

    # ------------------------------------------------------------------ public
    def region(self, site: CheckpointSite, analysis: ModuleAnalysis) -> Region:
        """The region of ``site`` (cached)."""
        found = self._regions.get(site)
        if found is None:
            with self._budget(REGION_BUDGET):
                found = self._build(site, analysis)
            self._regions[site] = found
        return found

    @contextmanager
    def _budget(self, steps: int) -> Iterator[None]:
        """Bound the evaluation steps of one query (nested queries share the outer bound)."""
        if self._steps is not None:
            yield
            return
        allowed = min(steps, self._file_steps)
        self._steps = allowed
        try:
            yield
        finally:
            used = allowed - max(self._steps, 0)
            self._file_steps -= used
            _count_steps(used)
            self._steps = None
            self._memo.clear()

    def values(
        self, expr: cst.BaseExpression, analysis: ModuleAnalysis, budget: int = 0, classes_only: bool = False
    ) -> list[Value]:
        """The abstract values ``expr`` (a node of ``analysis``'s module) may denote, evaluated
        where it is written (``self`` is an instance of the enclosing class): functions,
        classes, instances of classes of the tree, torch layers, containers, modules. An
        empty list means unknown. Bounded like regions (depth, value count, steps: ``budget``,
        default :data:`QUERY_BUDGET`; a small one keeps a cheap question from loading the
        files that deep call chains reach). With ``classes_only``, other modules are loaded
        only for imported CapWords names (classes, by convention), never for functions or
        modules, so the question costs at most the files of those classes."""
        self._classes_only = classes_only
        try:
            with self._budget(budget or QUERY_BUDGET):
                return self._values(expr, Context(analysis, self.enclosing_class(analysis, expr)), 0)
        finally:
            self._classes_only = False

    def method_signature(self, value: Value, name: str) -> Signature | None:
        """The signature of method ``name`` (``self`` bound) of an instance of a class of the
        tree, when the class or a base class of the tree defines it; else ``None``."""
        if not isinstance(value, InstanceValue):
            return None
        method = self._method(value.info, name)
        if method is None:
            return None
        return _signature_of(FunctionValue(method[0], Context(method[1].analysis), bound_method=True))

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
        with self._budget(QUERY_BUDGET):
            values = self._values(expr, Context(analysis, self.enclosing_class(analysis, expr)), 0)
        if not values:
            return None
        keywords: set[str] = set()
        var_keyword = False
        node: cst.CSTNode | None = None
        for value in values:
            if isinstance(value, InstanceValue):
                method = self._method(value.info, "forward")
                if method is None:
                    return None
                value = FunctionValue(method[0], Context(method[1].analysis), bound_method=True)
            found = _signature_of(value) if isinstance(value, FunctionValue) else None
            if found is None:
                return None
            keywords |= found.keywords
            var_keyword = var_keyword or found.var_keyword
            node = node or found.node
        return Signature(frozenset(keywords), var_keyword, node)

    def method(self, info: ClassInfo, name: str) -> tuple[cst.FunctionDef, ClassInfo] | None:
        """Method ``name`` of the class ``info``, its own or that of the first class of the tree
        in its method order that defines it, with that class; ``None`` when none does."""
        return self._method(info, name)

    def mro(self, info: ClassInfo) -> list[ClassInfo]:
        """``info`` and its base classes of the tree, nearest first (bases that are not
        classes of the tree are left out)."""
        return self._mro(info)

    def assigned_outside(self, analysis: ModuleAnalysis, attr: str, init: cst.FunctionDef | None) -> bool:
        """Whether ``<anything>.<attr> = ...`` (or ``+=``) appears in ``analysis``'s module
        outside the function ``init``."""
        return self._assigned_outside(analysis, attr, init)

    def class_info(self, analysis: ModuleAnalysis, node: cst.ClassDef) -> ClassInfo:
        info = self._classes.get(node)
        if info is None:
            info = summarise_class(analysis, node)
            self._classes[node] = info
            info.bases = [v for base in node.bases for v in self._values(base.value, Context(analysis), 0)]
        return info

    def enclosing_class(self, analysis: ModuleAnalysis, node: cst.CSTNode) -> ClassInfo | None:
        """The class whose method contains ``node`` (``self``'s class there)."""
        function = analysis.model.enclosing(node, cst.FunctionDef)
        while function is not None:
            scope = analysis.model.scope_of(function)
            if scope.kind is ScopeKind.CLASS and isinstance(scope.node, cst.ClassDef):
                return self.class_info(analysis, scope.node)
            function = analysis.model.enclosing(function, cst.FunctionDef)
        return None

    # ------------------------------------------------------------------ building
    def _build(self, site: CheckpointSite, analysis: ModuleAnalysis) -> Region:
        region = Region(site, analysis)
        if site.function is None:
            return region
        ctx = Context(analysis, self.enclosing_class(analysis, site.call))
        entries = self._entries(site, ctx, 0)
        # torch's own code alone is no resolution: a torch wrapper may hold anything
        region.resolved = any(not isinstance(v, TorchValue) for values, _, _ in entries for v in values)
        visited: set[tuple[int, int]] = set()
        work = [Pending(v, 0, describe_value(v), args, where, None, None) for values, args, where in entries for v in values]
        while work:
            item = work.pop(0)
            value = item.value
            if isinstance(value, FunctionValue):
                key = (id(value.node), id(value.ctx.self_class))
                if key in visited:
                    continue
                visited.add(key)
                frame_ctx = value.ctx
                if item.args is not None:
                    frame_ctx = self._bind(value, item.args, item.caller)
                else:
                    frame_ctx = replace_ctx(frame_ctx, open_call=True)  # called with arguments not seen
                frame = Frame(value.node, frame_ctx, item.depth, item.via, self)
                region.frames.append(frame)
                if item.depth >= MAX_DEPTH:
                    continue
                for node in frame.nodes():
                    if isinstance(node, cst.Call):
                        callees = self._called(node.func, frame_ctx)
                        if not callees and _names_code(node.func, frame):
                            region.unknown_calls.append((node, frame))
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
                method = self._method(value.info, entry)
                if method is not None:
                    node, owner = method
                    forward = FunctionValue(node, Context(owner.analysis, value.info, self_env=value.env), True)
                    work.append(Pending(forward, item.depth, item.via, item.args, item.caller, item.invocation, item.frame))
                    layer = self._layer_base(value.info)
                    if layer is not None and layer[1].kind is LayerKind.RUNNING_STATS and _keeps_layer_forward(node):
                        # a BatchNorm subclass with its own forward (timm's BatchNormAct2d)
                        # still updates the running statistics
                        use = LayerUse(layer[0], layer[1], None, Context(value.info.analysis))
                        region.layers.append(use)
                        region.layer_calls.append(LayerCall(use, item.invocation, item.frame))
                else:
                    layer = self._layer_base(value.info)
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

    def _entries(
        self, site: CheckpointSite, ctx: Context, level: int
    ) -> list[tuple[list[Value], tuple[cst.Arg, ...] | None, Context]]:
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
            values = self._values(site.function, ctx, 0)
            if site.api.kind is ApiKind.SEQUENTIAL:
                values = _checkpointed_segments(values, site, ctx.analysis)
            return [(values, function_args, ctx)]
        direct = all(
            isinstance(c.site.function, cst.Name) and c.site.function.value == helper.parameter and c.site.helper is None
            for c in site.alternatives
        )
        if level == 0 and direct and site.function is not None:
            return [(self._values(site.function, ctx, 0), function_args if inputs_bound(site) else None, ctx)]
        where = Context(helper.analysis, ctx.self_class if helper.method else None)  # type: ignore[arg-type]
        bound = self._bind(FunctionValue(helper.node, where, bound_method=helper.method), tuple(site.call.args), ctx)
        out: list[tuple[list[Value], tuple[cst.Arg, ...] | None, Context]] = []
        for alternative in site.alternatives:
            out += self._entries(alternative.site, bound, level + 1)
        return out

    def _bind(self, value: FunctionValue, args: tuple[cst.Arg, ...], caller: Context) -> Context:
        """A context for calling ``value`` with ``args`` (evaluated in ``caller``)."""
        function = value.node
        params = list(function.params.posonly_params) + list(function.params.params)
        if value.bound_method and params:
            params = params[1:]
        env = dict(value.ctx.env)
        keyword_params: set[str] = set()
        scope = value.ctx.analysis.model.scope_of_definition.get(function)
        if scope is None:
            return value.ctx
        positional = [a for a in args if a.keyword is None and not a.star]
        starred = any(a.star for a in args if a.keyword is None)
        for param, arg in zip(params, positional):
            binding = _param_binding(scope, param)
            if binding is not None and not starred:
                env[binding] = (arg.value, caller)
        for arg in args:
            if arg.keyword is None:
                continue
            name = arg.keyword.value
            keyword_params.add(name)
            for param in params + list(function.params.kwonly_params):
                if param.name.value == name:
                    binding = _param_binding(scope, param)
                    if binding is not None:
                        env[binding] = (arg.value, caller)
        return Context(
            value.ctx.analysis,
            value.ctx.self_class,
            env,
            frozenset(keyword_params),
            value.ctx.self_env,
            value.ctx.open_call or any(a.star for a in args),  # a partial's bound arguments are not seen
            function,
        )

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

def _signature_of(value: FunctionValue) -> Signature | None:
    """The keywords a function value takes (``None`` for a decorated ``def``)."""
    function = value.node
    if isinstance(function, cst.FunctionDef) and function.decorators:
        return None
    params = function.params
    named = list(params.params)
    if value.bound_method and not params.posonly_params:
        named = named[1:]
    keywords = frozenset(p.name.value for p in named + list(params.kwonly_params))
    return Signature(keywords, isinstance(params.star_kwarg, cst.Param), function)

def _param_binding(scope, param: cst.Param) -> Binding | None:  # noqa: ANN001
    for binding in scope.bindings.get(param.name.value, ()):
        if binding.kind is BindingKind.PARAMETER and binding.node is param:
            return binding
    return None

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

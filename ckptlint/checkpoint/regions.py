"""Regions: the code a checkpoint site recomputes.

For a :class:`~ckptlint.checkpoint.sites.CheckpointSite`, the :class:`RegionBuilder` resolves the
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
- :meth:`RegionBuilder.region`: a :class:`~ckptlint.checkpoint.sites.CheckpointSite` -> its
  :class:`Region`: frames, layers, and a status: ``resolved`` (the callable is known),
  ``partial`` (it calls code ckptlint cannot see, :attr:`Region.unknown_calls`), or neither
  (unknown). A site kind plugs in by setting ``site.function`` to the callable expression;
  for ``ApiKind.FUNCTION`` sites ``site.inputs``/``site.function_keywords`` are bound to its
  parameters, other kinds are treated as called with arguments not seen.

Branches of ``if`` that the bound arguments (or their defaults) decide are pruned from frames,
returns and ``append`` calls; undecided ones stay.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.checkpoint.options import NOT_LITERAL, literal_value
from ckptlint.checkpoint.site import CheckpointSite
from ckptlint.facts.apis import PARTIAL_QUALIFIED_NAMES, ApiKind
from ckptlint.facts.torch_facts import (
    CONTAINER_CLASSES,
    NORM_FACTORIES,
    LayerFact,
    LayerKind,
    NormFactory,
    layer_fact,
)
from ckptlint.semantic.bindings import Binding, BindingKind, ScopeKind
from ckptlint.semantic.callables import Signature
from ckptlint.semantic.walk import child_nodes

if TYPE_CHECKING:
    from ckptlint.semantic.analysis import ModuleAnalysis
    from ckptlint.semantic.project import Project

__all__ = [
    "ClassInfo",
    "Context",
    "Frame",
    "LayerCall",
    "LayerUse",
    "MAX_DEPTH",
    "Region",
    "RegionBuilder",
    "site_label",
]

#: Levels of calls followed below the checkpointed callable (its own body is level 0).
MAX_DEPTH = 3
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
_MAX_EVAL_DEPTH = 12
_MAX_VALUES = 64


def _count_steps(used: int) -> None:
    from ckptlint import perf

    perf.add("evaluation_steps", used)


# ---------------------------------------------------------------------------- values
@dataclass(eq=False, repr=False)
class Context:
    """Where an expression is evaluated: its module, the class ``self`` is an instance of,
    and the arguments bound to parameters of enclosing functions (factory closures)."""

    analysis: ModuleAnalysis
    self_class: ClassInfo | None = None
    env: dict[Binding, tuple[cst.BaseExpression, Context]] = field(default_factory=dict)
    keyword_params: frozenset[str] = frozenset()
    self_env: dict[Binding, tuple[cst.BaseExpression, Context]] = field(default_factory=dict)
    #: The call that bound ``env`` had ``*``/``**`` arguments, or its arguments are not
    #: known: a parameter it does not bind is not known to hold its default.
    open_call: bool = False
    #: The function whose call bound ``env`` (its unbound parameters hold their defaults);
    #: parameters of other enclosing functions were bound by calls not seen.
    bound: cst.CSTNode | None = None


class Value:
    """Something an expression may evaluate to."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {_describe(self)}>"


class OpaqueValue(Value):
    """A value that exists but is not understood (``nn.Linear(4, 4)``): it keeps the
    positions of container elements (``checkpoint_sequential`` segments) exact."""


class TorchValue(OpaqueValue):
    """Something of torch (``nn.Linear``, ``nn.Linear(4, 4)``, ``torch.matmul``) that is
    none of the layers the torchfacts tables describe: known, with no random draws or
    running statistics of its own. Attributes and calls of it are torch values too."""


@dataclass(eq=False, repr=False)
class ModuleValue(Value):
    """A module of the linted tree (``from . import blocks``, ``import pkg.blocks as pb``),
    by dotted name: its attributes are parsed when asked for (:meth:`Project.analysis_for_names`)."""

    module: str


@dataclass(eq=False, repr=False)
class FunctionValue(Value):
    node: cst.FunctionDef | cst.Lambda
    ctx: Context
    bound_method: bool = False  # reached as ``obj.method``: the first parameter is bound


@dataclass(eq=False, repr=False)
class ClassValue(Value):
    info: ClassInfo


@dataclass(eq=False, repr=False)
class InstanceValue(Value):
    """An instance of a class of the tree; ``env`` binds ``__init__``'s parameters to the
    constructor call's arguments, so ``self.norm = norm_layer(c)`` follows what was passed."""

    info: ClassInfo
    env: dict[Binding, tuple[cst.BaseExpression, Context]] = field(default_factory=dict)


@dataclass(eq=False, repr=False)
class LayerClassValue(Value):
    qualified: str
    fact: LayerFact


@dataclass(eq=False, repr=False)
class LayerUse(Value):
    """A torch layer instance: its table entry and the constructor call that made it."""

    qualified: str
    fact: LayerFact
    call: cst.Call | None
    ctx: Context

    @property
    def analysis(self) -> ModuleAnalysis:
        return self.ctx.analysis

    def switched_on(self) -> bool | None:
        """Whether the behaviour (randomness, running statistics) is on: ``False`` when the
        constructor turns it off with a literal (``Dropout(0.0)``,
        ``BatchNorm2d(c, track_running_stats=False)``), ``None`` when it is an expression."""
        if self.fact.switch is None:
            return True
        keyword, position, default = self.fact.switch
        value: object = default
        if self.call is not None:
            arg = _argument(self.call, keyword, position)
            if arg is not None:
                value = literal_value(arg.value, self.ctx.analysis.model)
                if value is NOT_LITERAL:
                    return None
        if isinstance(value, bool) or isinstance(self.fact.off_when, bool):
            return value != self.fact.off_when
        try:
            return float(value) != float(self.fact.off_when)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None


@dataclass(eq=False, repr=False)
class ContainerValue(Value):
    """``nn.Sequential``/``nn.ModuleList``/a list: ``elements`` in order when ``exact``."""

    elements: list[Value]
    exact: bool = True
    sequential: bool = True
    #: For a dict literal: ``(key, value)`` pairs (the key as a literal, or NOT_LITERAL), so
    #: ``REGISTRY["bn"]`` and ``REGISTRY.get(cfg["type"])`` select by key.
    keyed: list[tuple[object, Value]] | None = None

    def select(self, key: object) -> list[Value] | None:
        """The values under ``key`` (a literal): for a keyed dict, those of equal keys
        (``[]`` when absent); for an exact sequence and an ``int``, that element; ``None``
        when the selection is not known (then every element may be meant)."""
        if key is NOT_LITERAL:
            return None
        if self.keyed is not None:
            if any(k is NOT_LITERAL for k, _ in self.keyed):
                return None
            return [v for k, v in self.keyed if k == key]
        if self.exact and self.sequential and isinstance(key, int) and not isinstance(key, bool):
            if -len(self.elements) <= key < len(self.elements):
                return [self.elements[key]]
        return None


def _argument(call: cst.Call, keyword: str, position: int) -> cst.Arg | None:
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg
    if any(a.star == "*" for a in call.args):
        return None
    return positional[position] if len(positional) > position else None


# ---------------------------------------------------------------------------- classes
@dataclass(eq=False, repr=False)
class ClassInfo:
    """The per-class summary regions need: methods, attribute assignments, buffers."""

    analysis: ModuleAnalysis
    node: cst.ClassDef
    qualname: str
    methods: dict[str, cst.FunctionDef] = field(default_factory=dict)
    attributes: dict[str, list[tuple[cst.BaseExpression, cst.FunctionDef | None]]] = field(default_factory=dict)
    appended: dict[str, list[tuple[cst.BaseExpression, cst.FunctionDef]]] = field(default_factory=dict)
    buffers: set[str] = field(default_factory=set)
    bases: list[Value] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.node.name.value


def _self_name(method: cst.FunctionDef) -> str | None:
    params = list(method.params.posonly_params) + list(method.params.params)
    if not params:
        return None
    for decorator in method.decorators:
        if isinstance(decorator.decorator, cst.Name) and decorator.decorator.value == "staticmethod":
            return None
    return params[0].name.value


def _summarise_class(analysis: ModuleAnalysis, node: cst.ClassDef) -> ClassInfo:
    scope = analysis.model.scope_of_definition.get(node)
    info = ClassInfo(analysis, node, scope.qualname if scope else node.name.value)
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    for statement in body:
        if isinstance(statement, cst.FunctionDef):
            info.methods[statement.name.value] = statement
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign):
                    for target in small.targets:
                        if isinstance(target.target, cst.Name):
                            info.attributes.setdefault(target.target.value, []).append((small.value, None))
                elif isinstance(small, cst.AnnAssign) and small.value is not None and isinstance(small.target, cst.Name):
                    info.attributes.setdefault(small.target.value, []).append((small.value, None))
    for method in info.methods.values():
        self_name = _self_name(method)
        if self_name is None:
            continue
        for inner in _nodes_of_function(method):
            _record_self_write(info, inner, self_name, method)
    return info


def _is_self_attribute(expr: cst.BaseExpression, self_name: str) -> str | None:
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == self_name:
        return expr.attr.value
    return None


def _record_self_write(info: ClassInfo, node: cst.CSTNode, self_name: str, method: cst.FunctionDef) -> None:
    if isinstance(node, cst.Assign):
        for target in node.targets:
            attr = _is_self_attribute(target.target, self_name)
            if attr is not None:
                info.attributes.setdefault(attr, []).append((node.value, method))
            elif isinstance(target.target, cst.Attribute):
                # `self.mid = nn.Module(); self.mid.block_1 = Block(...)` (diffusers' KVAE,
                # ldm-style VAEs): recorded under "mid.block_1"
                outer = _is_self_attribute(target.target.value, self_name)
                if outer is not None:
                    info.attributes.setdefault(f"{outer}.{target.target.attr.value}", []).append((node.value, method))
    elif isinstance(node, cst.AnnAssign) and node.value is not None:
        attr = _is_self_attribute(node.target, self_name)
        if attr is not None:
            info.attributes.setdefault(attr, []).append((node.value, method))
    elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        method_name = node.func.attr.value
        owner = node.func.value
        if method_name in ("register_buffer", "register_parameter", "add_module", "register_module") and (
            isinstance(owner, cst.Name) and owner.value == self_name
        ):
            if len(node.args) >= 1:
                key = literal_value(node.args[0].value, info.analysis.model)
                if not isinstance(key, str) and method_name in ("add_module", "register_module"):
                    key = _dynamic_key(info.analysis, node.args[0].value)
                if isinstance(key, str):
                    if method_name == "register_buffer":
                        info.buffers.add(key)
                    elif len(node.args) >= 2 and method_name != "register_parameter":
                        info.attributes.setdefault(key, []).append((node.args[1].value, method))
        attr = _is_self_attribute(owner, self_name)
        if attr is not None and method_name in ("append", "extend", "insert", "add_module", "update"):
            for arg in node.args:
                info.appended.setdefault(attr, []).append((arg.value, method))
    elif isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "setattr":
        if len(node.args) >= 3 and isinstance(node.args[0].value, cst.Name) and node.args[0].value.value == self_name:
            key = literal_value(node.args[1].value, info.analysis.model)
            if isinstance(key, str):
                info.attributes.setdefault(key, []).append((node.args[2].value, method))


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


def _dynamic_key(analysis: ModuleAnalysis, expr: cst.BaseExpression) -> str:
    """An attribute name known only at run time, keyed by the code that computes it
    (``self.norm1_name``): ``add_module`` and ``getattr`` with the same code meet there."""
    return "\0" + analysis.module.code_for_node(expr).strip()


def _is_property(method: cst.FunctionDef) -> bool:
    for decorator in method.decorators:
        target = decorator.decorator
        name = target.attr.value if isinstance(target, cst.Attribute) else target.value if isinstance(target, cst.Name) else ""
        if name in ("property", "cached_property"):
            return True
    return False


def _nodes_of_function(
    function: cst.FunctionDef | cst.Lambda, decide: Callable[[cst.BaseExpression], bool | None] | None = None
) -> Iterator[cst.CSTNode]:
    """Every node of ``function``'s body, not entering nested defs and classes (which run
    only when called). With ``decide`` (a branch condition -> ``True``/``False``/``None``
    for undecided), the branch of an ``if`` statement or expression that cannot run is
    skipped."""
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Global, cst.Nonlocal, cst.Import, cst.ImportFrom)):
            continue
        if decide is not None and isinstance(node, (cst.If, cst.IfExp)):
            taken = decide(node.test)
            if taken is not None:
                branch = node.body if taken else node.orelse
                stack.extend(b for b in (branch, node.test) if b is not None)
                continue
        children = [child for _, child in child_nodes(node)]
        children.reverse()
        stack.extend(children)


# ---------------------------------------------------------------------------- regions
@dataclass(eq=False, repr=False)
class Frame:
    """One function body that runs on recompute.

    Attributes:
        function: the ``FunctionDef`` or ``Lambda``.
        ctx: its evaluation context (module, ``self`` class, bound arguments).
        depth: 0 for the checkpointed callable, +1 for each call below it.
        via: how it was reached, for messages (``"Block.forward"``).
    """

    function: cst.FunctionDef | cst.Lambda
    ctx: Context
    depth: int
    via: str
    builder: RegionBuilder | None = None
    _decisions: dict[int, bool | None] = field(default_factory=dict, repr=False)
    #: The nodes walked so far (in walk order) and the walk producing the rest (``None``
    #: once it is exhausted): every rule walks the frames of every region, and the walk
    #: (with its branch decisions, memoised above) gives the same nodes each time.
    _walked: list[cst.CSTNode] = field(default_factory=list, repr=False)
    _walk: Iterator[cst.CSTNode] | None = field(default=None, repr=False)
    _started: bool = field(default=False, repr=False)

    @property
    def analysis(self) -> ModuleAnalysis:
        return self.ctx.analysis

    def nodes(self) -> Iterator[cst.CSTNode]:
        """The nodes that run when the frame runs (nested defs excluded, and the branches
        of ``if`` that the bound arguments decide against: :meth:`RegionBuilder.decide`).

        The walk is done once per frame, lazily: a later call yields the nodes already
        walked and continues the same walk where the earlier ones stopped, so branch
        decisions are taken at the same moments as without the cache."""
        if not self._started:
            self._started = True
            self._walk = self._nodes()
        return self._replay()

    def _replay(self) -> Iterator[cst.CSTNode]:
        walked = self._walked
        index = 0
        while True:
            if index < len(walked):
                yield walked[index]
                index += 1
                continue
            walk = self._walk
            if walk is None:
                return
            node = next(walk, None)
            if node is None:
                self._walk = None
                return
            walked.append(node)

    def _nodes(self) -> Iterator[cst.CSTNode]:
        builder = self.builder
        if builder is None:
            return _nodes_of_function(self.function)
        ctx = self.ctx
        decisions = self._decisions

        def decide(test: cst.BaseExpression) -> bool | None:
            key = id(test)
            if key not in decisions:
                decisions[key] = builder.decide(test, ctx)
            return decisions[key]

        return _nodes_of_function(self.function, decide)

    def is_parameter(self, binding: Binding) -> bool:
        return binding.kind is BindingKind.PARAMETER and binding.scope.node is self.function

    def self_parameter(self) -> str | None:
        if isinstance(self.function, cst.FunctionDef) and self.ctx.self_class is not None:
            return _self_name(self.function)
        return None


@dataclass(eq=False, repr=False)
class LayerCall:
    """A torch layer run in the region: ``invocation`` is the call that runs it inside
    ``frame`` (``None`` when the layer is the checkpointed callable itself)."""

    layer: LayerUse
    invocation: cst.Call | None
    frame: Frame | None


@dataclass(eq=False, repr=False)
class _Pending:
    value: Value
    depth: int
    via: str
    args: tuple[cst.Arg, ...] | None
    caller: Context
    invocation: cst.Call | None
    frame: Frame | None


@dataclass(eq=False, repr=False)
class Region:
    """What a checkpoint site recomputes.

    Attributes:
        site: the site; analysis: the module it is in.
        frames: function bodies that run again, in the order they were reached.
        layers: torch layers that run again (dropout, BatchNorm, containers' elements).
        resolved: whether the checkpointed callable was resolved to code or layers at all.
        unknown_calls: calls made in its frames whose callee is not known, with the frame
            (below :data:`MAX_DEPTH`, calls are not followed and not listed).
    """

    site: CheckpointSite
    analysis: ModuleAnalysis
    frames: list[Frame] = field(default_factory=list)
    layers: list[LayerUse] = field(default_factory=list)
    layer_calls: list[LayerCall] = field(default_factory=list)
    resolved: bool = False
    unknown_calls: list[tuple[cst.Call, Frame]] = field(default_factory=list)

    @property
    def partial(self) -> bool:
        """Resolved, but it calls code ckptlint cannot see (:attr:`unknown_calls`: a
        parameter or closure variable bound to something unknown, ``self.attr`` built by a
        library outside the tree); such code may draw random numbers or keep state."""
        return self.resolved and bool(self.unknown_calls)

    @property
    def label(self) -> str:
        return site_label(self.site, self.analysis, self.analysis)

    def constructs(self, layer: LayerUse) -> bool:
        """Whether ``layer`` is created inside the region itself (a fresh module each call,
        e.g. ``lambda x: nn.BatchNorm1d(d)(x)``), so no state carries over."""
        if layer.call is None:
            return False
        functions = {id(frame.function) for frame in self.frames}
        model = layer.analysis.model
        return any(id(a) in functions for a in model.ancestors(layer.call) if isinstance(a, (cst.FunctionDef, cst.Lambda)))


def site_label(site: CheckpointSite, site_analysis: ModuleAnalysis, reported_in: ModuleAnalysis) -> str:
    """``model.py:42``: where the site is, relative to the folder of the file a finding is
    reported in (stable whatever the working directory)."""
    row = site_analysis.range(site.call)[0][0]
    here = Path(reported_in.source.path).parent
    target = Path(site_analysis.source.path)
    try:
        shown = os.path.relpath(target, here) if target.is_absolute() and here.is_absolute() else target.name
    except ValueError:
        shown = target.name
    return f"{Path(shown).as_posix()}:{row}"


class RegionBuilder:
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

    def class_info(self, analysis: ModuleAnalysis, node: cst.ClassDef) -> ClassInfo:
        info = self._classes.get(node)
        if info is None:
            info = _summarise_class(analysis, node)
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
        values = self._values(site.function, ctx, 0)
        if site.api.kind is ApiKind.SEQUENTIAL:
            values = _checkpointed_segments(values, site, analysis)
        # torch's own code alone is no resolution: a torch wrapper may hold anything
        region.resolved = any(not isinstance(v, TorchValue) for v in values)
        visited: set[tuple[int, int]] = set()
        site_args = site.inputs + site.function_keywords if site.api.kind is ApiKind.FUNCTION else None
        work = [_Pending(v, 0, _describe(v), site_args, ctx, None, None) for v in values]
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
                    frame_ctx = _replace_ctx(frame_ctx, open_call=True)  # called with arguments not seen
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
                                _Pending(
                                    callee,
                                    item.depth + 1,
                                    f"{item.via} -> {_describe(callee)}",
                                    tuple(node.args),
                                    frame_ctx,
                                    node,
                                    frame,
                                )
                            )
            elif isinstance(value, InstanceValue):
                method = self._method(value.info, "forward")
                if method is not None:
                    node, owner = method
                    forward = FunctionValue(node, Context(owner.analysis, value.info, self_env=value.env), True)
                    work.append(_Pending(forward, item.depth, item.via, item.args, item.caller, item.invocation, item.frame))
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
                    work.append(_Pending(element, item.depth, item.via, item.args, item.caller, item.invocation, item.frame))
        return region

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
            any(a.star for a in args),
            function,
        )

    # ------------------------------------------------------------------ literals and branches
    def literal(self, expr: cst.BaseExpression | None, ctx: Context, depth: int = 0) -> object:
        """The Python value ``expr`` has when evaluated in ``ctx``, or :data:`NOT_LITERAL`.

        Beyond :func:`~ckptlint.checkpoint.options.literal_value` (constants, names bound to equal
        constants), a parameter is followed to the argument the call bound to it (``ctx.env``)
        or, when the call passed nothing for it, to its default (not after a call with
        ``*``/``**`` arguments or unseen arguments, ``ctx.open_call``; ``__init__``'s
        parameters always fall back to defaults, as region values do); a local name assigned
        once is followed to its value; ``self.attr`` assigned once in the class is followed
        to that value with the constructor's bindings; ``==``, ``!=``, ``is``, ``is not``,
        ``in``, ``not in``, ``not``, ``and`` and ``or`` are computed when their operands are
        known.
        """
        if expr is None or depth > _MAX_EVAL_DEPTH:
            return NOT_LITERAL
        if isinstance(expr, cst.SimpleString):
            return _string_literal(expr.value)
        model = ctx.analysis.model
        if isinstance(expr, cst.Name):
            if expr.value in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[expr.value]
            if expr not in model.scopes:
                return NOT_LITERAL
            bindings = model.lookup(expr.value, model.scope_of(expr))
            if not bindings and expr.value in _BUILTIN_TYPES:
                return _BuiltinType(expr.value)
            if len(bindings) != 1:
                return literal_value(expr, model) if bindings else NOT_LITERAL
            binding = bindings[0]
            if binding in ctx.env:
                arg, arg_ctx = ctx.env[binding]
                return self.literal(arg, arg_ctx, depth + 1)
            if binding.kind is BindingKind.PARAMETER and isinstance(binding.node, cst.Param):
                function = binding.scope.node
                is_init = isinstance(function, cst.FunctionDef) and function.name.value == "__init__"
                if binding.node.default is None:
                    return NOT_LITERAL
                if not is_init and (ctx.open_call or function is not ctx.bound):
                    return NOT_LITERAL
                if binding.node.star:
                    return NOT_LITERAL
                return self.literal(binding.node.default, Context(ctx.analysis, ctx.self_class), depth + 1)
            if binding.kind is BindingKind.ASSIGNMENT and binding.value is not None:
                return self.literal(binding.value, ctx, depth + 1)
            return NOT_LITERAL
        if isinstance(expr, cst.Attribute):
            if isinstance(expr.value, cst.Name) and ctx.self_class is not None and expr.value in model.scopes:
                function = model.enclosing(expr, cst.FunctionDef)
                if isinstance(function, cst.FunctionDef) and _self_name(function) == expr.value.value:
                    assigned = [
                        (value, info, method)
                        for info in self._mro(ctx.self_class)
                        for value, method in info.attributes.get(expr.attr.value, ())
                    ]
                    if (
                        len(assigned) == 1
                        and _constructor_setting(assigned[0][0], assigned[0][2])
                        and not self._assigned_outside(assigned[0][1].analysis, expr.attr.value, assigned[0][2])
                    ):
                        value, info, _ = assigned[0]
                        owner_ctx = Context(info.analysis, ctx.self_class, ctx.self_env, self_env=ctx.self_env)
                        return self.literal(value, owner_ctx, depth + 1)
            return NOT_LITERAL
        if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1:
            left = self.literal(expr.left, ctx, depth + 1)
            target = expr.comparisons[0]
            right = self.literal(target.comparator, ctx, depth + 1)
            if left is NOT_LITERAL or right is NOT_LITERAL:
                return NOT_LITERAL
            return _compare(target.operator, left, right)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            inner = self.literal(expr.expression, ctx, depth + 1)
            return NOT_LITERAL if inner is NOT_LITERAL else not inner
        if isinstance(expr, cst.BooleanOperation):
            left = self.literal(expr.left, ctx, depth + 1)
            is_and = isinstance(expr.operator, cst.And)
            if left is not NOT_LITERAL and bool(left) is not is_and:
                return left  # `False and ...`, `True or ...`: decided by the left operand
            right = self.literal(expr.right, ctx, depth + 1)
            if left is NOT_LITERAL:
                # `x and False` is falsy and `x or True` truthy whatever x is
                if right is not NOT_LITERAL and bool(right) is not is_and:
                    return bool(right)
                return NOT_LITERAL
            return right
        if isinstance(expr, cst.Dict):
            mapping: dict[object, object] = {}
            for element in expr.elements:
                if not isinstance(element, cst.DictElement):
                    return NOT_LITERAL
                key = self.literal(element.key, ctx, depth + 1)
                if not isinstance(key, (str, int)):
                    return NOT_LITERAL
                mapping[key] = self.literal(element.value, ctx, depth + 1)
            return mapping  # values may be NOT_LITERAL: a key read from it is then unknown
        if isinstance(expr, cst.Call) and len(expr.args) in (1, 2) and not any(a.star or a.keyword for a in expr.args):
            called = model.qualified_names(expr.func) if expr.func in model.scopes else frozenset()
            if "builtins.type" in called and len(expr.args) == 1:
                value = self.literal(expr.args[0].value, ctx, depth + 1)
                if value is NOT_LITERAL or isinstance(value, (dict, _BuiltinType)):
                    return NOT_LITERAL
                return _BuiltinType(type(value).__name__)
            if "builtins.isinstance" in called and len(expr.args) == 2:
                value = self.literal(expr.args[0].value, ctx, depth + 1)
                kinds = self.literal(expr.args[1].value, ctx, depth + 1)
                kinds = kinds if isinstance(kinds, tuple) else (kinds,)
                if value is NOT_LITERAL or isinstance(value, (dict, _BuiltinType)):
                    return NOT_LITERAL
                if not kinds or not all(isinstance(k, _BuiltinType) for k in kinds):
                    return NOT_LITERAL
                return any(isinstance(value, _BUILTIN_TYPES[k.name]) for k in kinds)  # type: ignore[union-attr]
        if isinstance(expr, cst.Call) and "builtins.dict" in model.qualified_names(expr.func):
            if any(a.keyword is None for a in expr.args):
                return NOT_LITERAL
            return {a.keyword.value: self.literal(a.value, ctx, depth + 1) for a in expr.args if a.keyword}
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
            container = self.literal(expr.value, ctx, depth + 1)
            key = self.literal(expr.slice[0].slice.value, ctx, depth + 1)
            if isinstance(container, dict) and isinstance(key, (str, int)):
                return container.get(key, NOT_LITERAL)
            return NOT_LITERAL
        if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
            items = [self.literal(e.value, ctx, depth + 1) for e in expr.elements]
            if any(i is NOT_LITERAL for i in items) or any(isinstance(e, cst.StarredElement) for e in expr.elements):
                return NOT_LITERAL
            if isinstance(expr, cst.List):
                return list(items)
            if isinstance(expr, cst.Set):
                try:
                    return frozenset(items)
                except TypeError:  # unhashable items
                    return NOT_LITERAL
            return tuple(items)
        return literal_value(expr, model)

    def _assigned_outside(self, analysis: ModuleAnalysis, attr: str, init: cst.FunctionDef | None) -> bool:
        """Whether ``<anything>.<attr> = ...`` (or ``+=``) appears in the module outside ``init``."""
        if attr in analysis.unparsed_attribute_writes:
            return True  # written in a statement a partial parse left out (never inside `init`)
        key = (id(analysis), attr)
        found = self._outside.get(key)
        if found is None:
            found = []
            for mutation in analysis.model.mutations:
                node = mutation.node
                if mutation.kind not in ("attribute", "augmented"):
                    continue
                targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [getattr(node, "target", None)]
                if any(isinstance(t, cst.Attribute) and t.attr.value == attr for t in targets):
                    found.append(node)
            self._outside[key] = found
        return any(not any(a is init for a in analysis.model.ancestors(node)) for node in found)

    def decide(self, test: cst.BaseExpression, ctx: Context) -> bool | None:
        """Whether the branch condition ``test`` is true (``True``/``False``) when evaluated
        in ``ctx``, or ``None`` when it is not decided (then both branches may run)."""
        value = self.literal(test, ctx)
        if value is NOT_LITERAL:
            return None
        try:
            return bool(value)
        except Exception:  # noqa: BLE001 - a literal whose truth cannot be taken
            return None

    def runs(self, node: cst.CSTNode, ctx: Context) -> bool:
        """Whether ``node`` can run when its function runs in ``ctx``: ``False`` when it sits
        in a branch of an ``if`` (statement or expression) that ``ctx`` decides against."""
        model = ctx.analysis.model
        below = node
        for ancestor in model.ancestors(node):
            if isinstance(ancestor, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return True
            if isinstance(ancestor, (cst.If, cst.IfExp)) and below is not ancestor.test:
                taken = self.decide(ancestor.test, ctx)
                if taken is not None and (below is ancestor.body) is not taken:
                    return False
            below = ancestor
        return True

    # ------------------------------------------------------------------ evaluation
    def _called(self, func: cst.BaseExpression, ctx: Context) -> list[Value]:
        """What calling ``func`` runs (functions, module instances, layers)."""
        out: list[Value] = []
        for value in self._values(func, ctx, 0):
            if isinstance(value, ClassValue):
                continue  # constructing an object is not running its forward
            if isinstance(value, LayerClassValue):
                continue
            out.append(value)
        return out

    def _values(self, expr: cst.BaseExpression, ctx: Context, depth: int) -> list[Value]:
        if depth > _MAX_EVAL_DEPTH:
            return []
        key = (id(expr), id(ctx))
        known = self._memo.get(key)
        if known is not None and known[0] is ctx and known[1] is expr:
            return known[2]
        if self._steps is not None:
            if self._steps <= 0:
                return []
            self._steps -= 1
        found = self._evaluate(expr, ctx, depth)[:_MAX_VALUES]
        self._memo[key] = (ctx, expr, found)
        return found

    def _evaluate(self, expr: cst.BaseExpression, ctx: Context, depth: int) -> list[Value]:
        model = ctx.analysis.model
        if isinstance(expr, (cst.Name, cst.Attribute)):
            layer = layer_fact(model.qualified_names(expr)) if expr in model.scopes else None
            if layer is not None:
                return [LayerClassValue(*layer)]
        if isinstance(expr, cst.Name):
            return self._name(expr, ctx, depth)
        if isinstance(expr, cst.Attribute):
            nested = self._nested_self_attribute(expr, ctx, depth)
            if nested:
                return nested
            out: list[Value] = []
            for base in self._values(expr.value, ctx, depth + 1):
                out += self._attribute(base, expr.attr.value, depth)
            return out
        if isinstance(expr, cst.Subscript):
            out = []
            key: object = NOT_LITERAL
            if len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Slice):
                # `self.resnets[1:]` (diffusers' `zip(self.attentions, self.resnets[1:])`): a
                # container again, exactly sliced when the bounds are literals
                bounds = expr.slice[0].slice
                parts = [self.literal(b, ctx, depth + 1) if b is not None else None for b in (bounds.lower, bounds.upper, bounds.step)]
                known = all(p is None or (isinstance(p, int) and not isinstance(p, bool)) for p in parts)
                for base in self._values(expr.value, ctx, depth + 1):
                    if isinstance(base, ContainerValue) and base.sequential:
                        if known and base.exact:
                            out.append(ContainerValue(base.elements[slice(*parts)], exact=True))  # type: ignore[misc]
                        else:
                            out.append(ContainerValue(list(base.elements), exact=False))
                return out
            if len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
                key = self.literal(expr.slice[0].slice.value, ctx, depth + 1)
            for base in self._values(expr.value, ctx, depth + 1):
                if isinstance(base, ContainerValue):
                    selected = base.select(key)
                    out += base.elements if selected is None else selected
            return out
        if isinstance(expr, cst.Call):
            return self._call(expr, ctx, depth)
        if isinstance(expr, cst.Lambda):
            return [FunctionValue(expr, ctx)]
        if isinstance(expr, (cst.List, cst.Tuple)):
            items = [(e.value, isinstance(e, cst.StarredElement)) for e in expr.elements]
            return [self._container(items, ctx, depth)]
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
            return [ContainerValue(self._values(expr.elt, ctx, depth + 1), exact=False)]
        if isinstance(expr, cst.Dict):
            elements: list[Value] = []
            keyed: list[tuple[object, Value]] | None = []
            for element in expr.elements:
                if isinstance(element, cst.DictElement):
                    found = self._values(element.value, ctx, depth + 1)
                    elements += found
                    if keyed is not None:
                        key = self.literal(element.key, ctx, depth + 1)
                        keyed += [(key, value) for value in found]
                else:
                    keyed = None  # `**other`: keys not known
            return [ContainerValue(elements, exact=False, sequential=False, keyed=keyed)]
        if isinstance(expr, cst.IfExp):
            return self._values(expr.body, ctx, depth + 1) + self._values(expr.orelse, ctx, depth + 1)
        if isinstance(expr, cst.BooleanOperation):
            return self._values(expr.left, ctx, depth + 1) + self._values(expr.right, ctx, depth + 1)
        return []

    def _nested_self_attribute(self, expr: cst.Attribute, ctx: Context, depth: int) -> list[Value]:
        """``self.mid.block_1`` where the class assigns ``self.mid.block_1 = ...`` itself
        (on a plain ``nn.Module()`` holder); ``[]`` otherwise."""
        inner = expr.value
        if ctx.self_class is None or not isinstance(inner, cst.Attribute) or not isinstance(inner.value, cst.Name):
            return []
        model = ctx.analysis.model
        if inner.value not in model.scopes:
            return []
        function = model.enclosing(expr, cst.FunctionDef)
        if not isinstance(function, cst.FunctionDef) or _self_name(function) != inner.value.value:
            return []
        key = f"{inner.attr.value}.{expr.attr.value}"
        out: list[Value] = []
        for info in self._mro(ctx.self_class):
            owner_ctx = Context(info.analysis, ctx.self_class, ctx.self_env, self_env=ctx.self_env)
            for value, _ in info.attributes.get(key, ()):
                out += self._values(value, owner_ctx, depth + 1)
        return out

    def _container(self, items: list[tuple[cst.BaseExpression, bool]], ctx: Context, depth: int) -> ContainerValue:
        """A container of ``items`` (expression, starred?) in order."""
        out: list[Value] = []
        exact = True
        for expr, starred in items:
            found = self._values(expr, ctx, depth + 1)
            if starred:
                exact = False
                out += [e for v in found if isinstance(v, ContainerValue) for e in v.elements]
                continue
            if not found:
                found = [OpaqueValue()]
            elif len(found) != 1:
                exact = False
            out += found
        return ContainerValue(out, exact)

    def _name(self, expr: cst.Name, ctx: Context, depth: int) -> list[Value]:
        model = ctx.analysis.model
        out: list[Value] = []
        bindings = model.lookup(expr.value, model.scope_of(expr))
        for binding in bindings:
            out += self._binding(binding, ctx, depth)
        if not bindings and model.star_imports:
            out += self._star_imported(ctx.analysis, expr.value, depth)
        return out

    def _star_imported(self, analysis: ModuleAnalysis, name: str, depth: int) -> list[Value]:
        """``name`` bound by ``from .layers import *`` from a module of the linted tree
        (the last star import that binds it wins, as in Python; ``__all__`` is not read)."""
        if self.project is None or depth > _MAX_EVAL_DEPTH:
            return []
        for module in reversed(analysis.model.star_imports):
            other = self.project.analysis_for_names(module, (name,))
            if other is None or other.source.path == analysis.source.path:
                continue
            bindings = other.model.module_scope.bindings.get(name)
            if bindings:
                return [v for b in bindings for v in self._binding(b, Context(other), depth + 1)]
            if other.model.star_imports:
                found = self._star_imported(other, name, depth + 1)
                if found:
                    return found
        return []

    def _binding(self, binding: Binding, ctx: Context, depth: int) -> list[Value]:
        analysis = ctx.analysis
        if binding in ctx.env:
            arg, arg_ctx = ctx.env[binding]
            return self._values(arg, arg_ctx, depth + 1)
        kind = binding.kind
        if kind is BindingKind.FUNCTION and isinstance(binding.node, cst.FunctionDef):
            self_class = ctx.self_class
            if binding.scope.kind is ScopeKind.CLASS:
                self_class = None
            return [FunctionValue(binding.node, Context(analysis, self_class, ctx.env, self_env=ctx.self_env))]
        if kind is BindingKind.CLASS and isinstance(binding.node, cst.ClassDef):
            return [ClassValue(self.class_info(analysis, binding.node))]
        if kind is BindingKind.IMPORT and binding.target:
            return self._imported(binding.target, depth, analysis)
        if kind is BindingKind.ASSIGNMENT and binding.value is not None:
            values = self._values(binding.value, ctx, depth + 1)
            return self._with_appends(values, binding, ctx, depth)
        if kind is BindingKind.ASSIGNMENT and isinstance(binding.node, cst.Assign):
            return self._unpacked(binding, ctx, depth)
        if kind is BindingKind.LOOP:
            return self._loop_element(binding, ctx, depth)
        if kind is BindingKind.PARAMETER and isinstance(binding.scope.node, cst.FunctionDef):
            function = binding.scope.node
            if _self_name(function) == binding.name and binding.scope.parent is not None:
                if binding.scope.parent.kind is ScopeKind.CLASS:
                    info = ctx.self_class
                    if info is None and isinstance(binding.scope.parent.node, cst.ClassDef):
                        info = self.class_info(analysis, binding.scope.parent.node)
                    return [InstanceValue(info, ctx.self_env)] if info is not None else []
            default = binding.node.default if isinstance(binding.node, cst.Param) else None
            if default is not None:  # not bound by a call we follow: the default is what runs
                return self._values(default, Context(analysis, ctx.self_class, self_env=ctx.self_env), depth + 1)
            annotation = binding.node.annotation if isinstance(binding.node, cst.Param) else None
            if annotation is not None:  # `layer: ExpertBlock`: an instance of the annotated class of the tree
                return [
                    InstanceValue(v.info)
                    for v in self._values(annotation.annotation, Context(analysis), depth + 1)
                    if isinstance(v, ClassValue)
                ]
        return []

    def _with_appends(self, values: list[Value], binding: Binding, ctx: Context, depth: int) -> list[Value]:
        """A list assigned empty and filled with ``append``/``extend``/``+= [...]`` in the same scope."""
        containers = [v for v in values if isinstance(v, ContainerValue)]
        if not containers:
            return values
        model = ctx.analysis.model
        extra: list[Value] = []
        for mutation in model.mutations:
            if mutation.base != binding.name or mutation.kind != "method" or mutation.scope is not binding.scope:
                continue
            call = mutation.node
            if isinstance(call, cst.Call) and mutation.method in ("append", "insert", "extend"):
                if not self.runs(call, ctx):
                    continue
                for arg in call.args[-1:]:
                    found = self._values(arg.value, ctx, depth + 1)
                    if mutation.method == "extend":
                        found = [e for v in found if isinstance(v, ContainerValue) for e in v.elements]
                    extra += found
        for other in binding.scope.bindings.get(binding.name, ()):
            node = other.node
            # `stages += [Stage(...)]` in a loop (timm's LeViT): the same as `extend`
            if other.kind is BindingKind.AUGMENTED and isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.AddAssign):
                if self.runs(node, ctx):
                    found = self._values(node.value, ctx, depth + 1)
                    extra += [e for v in found if isinstance(v, ContainerValue) for e in v.elements]
        if not extra:
            return values
        return [
            ContainerValue(v.elements + extra, exact=False, sequential=v.sequential) if isinstance(v, ContainerValue) else v
            for v in values
        ]

    def _unpacked(self, binding: Binding, ctx: Context, depth: int) -> list[Value]:
        """``name, layer = build_norm_layer(...)``: the element of an exactly known tuple
        (a function's ``return a, b``, a tuple literal) at the name's position."""
        node = binding.node
        assert isinstance(node, cst.Assign)
        out: list[Value] = []
        for target in node.targets:
            path = _target_path(target.target, binding.name)
            if not path:
                continue
            values = self._values(node.value, ctx, depth + 1)
            for index in path:
                values = [
                    v.elements[index]
                    for v in values
                    if isinstance(v, ContainerValue) and v.exact and index < len(v.elements)
                ]
            out += values
        return out

    def _loop_element(self, binding: Binding, ctx: Context, depth: int) -> list[Value]:
        loop = binding.node
        if not isinstance(loop, (cst.For, cst.CompFor)):
            return []
        path = _target_path(loop.target, binding.name)
        if path is None:
            return []
        iterable = loop.iter
        model = ctx.analysis.model
        for _ in range(4):
            if not path:
                break
            if isinstance(iterable, cst.Name) and iterable in model.scopes:
                # `blocks = list(zip(self.resnets, self.attentions))` then
                # `for i, (resnet, attn) in enumerate(blocks)` (diffusers' UNet blocks)
                bindings = model.lookup(iterable.value, model.scope_of(iterable))
                if len(bindings) != 1 or bindings[0].kind is not BindingKind.ASSIGNMENT or bindings[0].value is None:
                    return []
                iterable = bindings[0].value
            if not isinstance(iterable, cst.Call):
                return []
            names = model.qualified_names(iterable.func)
            positional = [a for a in iterable.args if a.keyword is None and not a.star]
            if names & {"builtins.list", "builtins.tuple"} and len(positional) == 1:
                iterable = positional[0].value
            elif "builtins.enumerate" in names and path[0] == 1 and positional:
                iterable, path = positional[0].value, path[1:]
            elif "builtins.zip" in names and path[0] < len(positional):
                iterable, path = positional[path[0]].value, path[1:]
            else:
                return []
        if path:
            return []
        out: list[Value] = []
        for value in self._values(iterable, ctx, depth + 1):
            if isinstance(value, ContainerValue):
                out += value.elements
        return out

    def _attribute(self, base: Value, name: str, depth: int) -> list[Value]:
        if isinstance(base, TorchValue):
            return [base]
        if isinstance(base, ModuleValue):
            analysis = self.project.analysis_for_names(base.module, (name,)) if self.project is not None else None
            if analysis is None:
                return []
            values = [
                v
                for binding in analysis.model.module_scope.bindings.get(name, ())
                for v in self._binding(binding, Context(analysis), depth + 1)
            ]
            if not values and self.project is not None and analysis.module_name:
                submodule = f"{analysis.module_name}.{name}"
                if self.project.module_parses(submodule):
                    values = [ModuleValue(submodule)]
            return values
        if isinstance(base, InstanceValue):
            method = self._method(base.info, name)
            if method is not None:
                node, owner = method
                method_ctx = Context(owner.analysis, base.info, self_env=base.env)
                if _is_property(node):  # `self.norm1` is what the property returns
                    return [
                        v
                        for ret in _returns(node, lambda test, c=method_ctx: self.decide(test, c))
                        if ret.value is not None
                        for v in self._values(ret.value, method_ctx, depth + 1)
                    ]
                return [FunctionValue(node, method_ctx, bound_method=True)]
            out: list[Value] = []
            extra: list[Value] = []
            for info in self._mro(base.info):
                owner_ctx = Context(info.analysis, base.info, base.env, self_env=base.env)
                for expr, _ in info.attributes.get(name, ()):
                    out += self._values(expr, owner_ctx, depth + 1)
                for expr, _ in info.appended.get(name, ()):
                    extra += self._values(expr, owner_ctx, depth + 1)
            if extra:
                containers = [v for v in out if isinstance(v, ContainerValue)] or [ContainerValue([])]
                out = [v for v in out if not isinstance(v, ContainerValue)] + [
                    ContainerValue(c.elements + extra, exact=False, sequential=c.sequential) for c in containers
                ]
            return out
        if isinstance(base, ClassValue):
            method = self._method(base.info, name)
            if method is not None:
                return [FunctionValue(method[0], Context(method[1].analysis))]
        return []

    def _call(self, call: cst.Call, ctx: Context, depth: int) -> list[Value]:
        model = ctx.analysis.model
        names = model.qualified_names(call.func) if call.func in model.scopes else frozenset()
        for name in names:
            factory = NORM_FACTORIES.get(name)
            if factory is not None:
                return self._norm_factory(factory, call, ctx, depth)
        if "builtins.getattr" in names and len(call.args) >= 2 and not any(a.star for a in call.args):
            return self._getattr(call, ctx, depth)
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "get" and 1 <= len(call.args) <= 2:
            bases = [b for b in self._values(call.func.value, ctx, depth + 1) if isinstance(b, ContainerValue)]
            if bases and all(b.keyed is not None for b in bases):
                key = self.literal(call.args[0].value, ctx, depth + 1)
                out: list[Value] = []
                for base in bases:
                    selected = base.select(key)
                    out += base.elements if selected is None else selected
                    if not selected and len(call.args) == 2:
                        out += self._values(call.args[1].value, ctx, depth + 1)
                return out
        if names & PARTIAL_QUALIFIED_NAMES and call.args:
            bound = {a.keyword.value for a in call.args if a.keyword is not None}
            return [
                v
                for v in self._values(call.args[0].value, ctx, depth + 1)
                if isinstance(v, (FunctionValue, ClassValue))
                # `partial(nn.BatchNorm2d, eps=1e-3)` as a `norm_layer=` factory; not when the
                # partial sets the switch (`track_running_stats=False`), read from the final call
                or (isinstance(v, LayerClassValue) and not (v.fact.switch and v.fact.switch[0] in bound))
            ]
        if names & CONTAINER_CLASSES:
            args = [a for a in call.args if a.keyword is None]
            if any(n.endswith(".Sequential") for n in names):
                return [self._container([(a.value, a.star == "*") for a in args], ctx, depth)]
            if len(args) == 1 and not args[0].star:
                inner = self._values(args[0].value, ctx, depth + 1)
                return [v for v in inner if isinstance(v, ContainerValue)][:1] or [ContainerValue([], exact=False)]
            return [ContainerValue([], exact=not args)]
        out: list[Value] = []
        for callee in self._values(call.func, ctx, depth + 1):
            if isinstance(callee, ClassValue):
                out.append(InstanceValue(callee.info, self._constructor_env(callee.info, call, ctx)))
            elif isinstance(callee, LayerClassValue):
                out.append(LayerUse(callee.qualified, callee.fact, call, ctx))
            elif isinstance(callee, TorchValue):
                out.append(callee)
                # torch wrappers of a module (checkpoint_wrapper, DDP, torch.compile) run it
                first = next((a for a in call.args if a.keyword is None and not a.star), None)
                if first is not None:
                    out += [
                        v
                        for v in self._values(first.value, ctx, depth + 1)
                        if isinstance(v, (InstanceValue, ContainerValue, LayerUse))
                    ]
            elif isinstance(callee, FunctionValue) and isinstance(callee.node, cst.FunctionDef):
                inner_ctx = self._bind(callee, tuple(call.args), ctx)
                for ret in _returns(callee.node, lambda test, c=inner_ctx: self.decide(test, c)):
                    if ret.value is not None:
                        out += self._values(ret.value, inner_ctx, depth + 1)
        return out

    def _norm_factory(self, factory: NormFactory, call: cst.Call, ctx: Context, depth: int) -> list[Value]:
        """A norm layer built from a config (``build_norm_layer(dict(type='BN'), c)``): the
        layer ``cfg['type']`` names, when the config is known; an opaque value for a known
        type without training behaviour (GroupNorm, LayerNorm); nothing when unknown."""
        keyword, position = factory.config
        arg = _argument(call, keyword, position)
        if arg is None:
            return []
        layer: Value | None = None
        config = self.literal(arg.value, ctx, depth + 1)
        if isinstance(config, dict) and isinstance(config.get("type"), str):
            qualified = factory.types.get(config["type"])
            if qualified is None:
                return []
            fact = layer_fact({qualified})
            layer = LayerUse(fact[0], fact[1], call, ctx) if fact is not None else OpaqueValue()
        else:
            for value in self._config_types(arg.value, ctx, depth + 1):
                layer = LayerUse(value.qualified, value.fact, call, ctx)
                break
        if layer is None:
            return []
        return [ContainerValue([OpaqueValue(), layer])] if factory.returns_pair else [layer]

    def _config_types(self, expr: cst.BaseExpression, ctx: Context, depth: int) -> list[LayerClassValue]:
        """The torch layer classes given as ``type=`` of a ``dict(type=nn.BatchNorm2d, ...)``
        config (followed through names and parameters like :meth:`literal`)."""
        if depth > _MAX_EVAL_DEPTH:
            return []
        model = ctx.analysis.model
        if isinstance(expr, cst.Name) and expr in model.scopes:
            bindings = model.lookup(expr.value, model.scope_of(expr))
            if len(bindings) != 1:
                return []
            binding = bindings[0]
            if binding in ctx.env:
                arg, arg_ctx = ctx.env[binding]
                return self._config_types(arg, arg_ctx, depth + 1)
            if isinstance(binding.node, cst.Param) and binding.node.default is not None:
                return self._config_types(binding.node.default, Context(ctx.analysis, ctx.self_class), depth + 1)
            if binding.kind is BindingKind.ASSIGNMENT and binding.value is not None:
                return self._config_types(binding.value, ctx, depth + 1)
            return []
        if isinstance(expr, cst.Call) and "builtins.dict" in model.qualified_names(expr.func):
            for arg in expr.args:
                if arg.keyword is not None and arg.keyword.value == "type":
                    return [v for v in self._values(arg.value, ctx, depth + 1) if isinstance(v, LayerClassValue)]
        return []

    def _getattr(self, call: cst.Call, ctx: Context, depth: int) -> list[Value]:
        """``getattr(obj, name)``: the attribute when ``name`` is known, or, for a name only
        known at run time, what ``self.add_module(<same expression>, module)`` stored (the
        mm-style ``@property def norm1(self): return getattr(self, self.norm1_name)``)."""
        key = self.literal(call.args[1].value, ctx, depth + 1)
        name = key if isinstance(key, str) else _dynamic_key(ctx.analysis, call.args[1].value)
        out: list[Value] = []
        for base in self._values(call.args[0].value, ctx, depth + 1):
            out += self._attribute(base, name, depth + 1)
        return out

    def _imported(self, qualified: str, depth: int, importer: ModuleAnalysis | None = None) -> list[Value]:
        layer = layer_fact({qualified})
        if layer is not None:
            return [LayerClassValue(*layer)]
        if qualified == "torch" or qualified.startswith("torch."):
            # torch's own code: its random and stateful layers and functions are in the
            # torchfacts tables, so whatever else it is, it is known and plain
            return [TorchValue()]
        if self.project is None or depth > _MAX_EVAL_DEPTH:
            return []
        if self._classes_only and not qualified.rsplit(".", 1)[-1][:1].isupper():
            return []
        if self.project.module_parses(qualified):
            return [ModuleValue(qualified)]
        parts = qualified.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            rest = parts[cut:]
            prefix = ".".join(parts[:cut])
            analysis = self.project.analysis_for_names(prefix, [rest[0], *self._imported_beside(importer, prefix)])
            if analysis is None:
                continue
            values: list[Value] = []
            for binding in analysis.model.module_scope.bindings.get(rest[0], ()):
                values += self._binding(binding, Context(analysis), depth + 1)
            for attr in rest[1:]:
                values = [v for base in values for v in self._attribute(base, attr, depth + 1)]
            return values
        return []

    def _imported_beside(self, importer: ModuleAnalysis | None, module: str) -> frozenset[str]:
        """The names ``importer`` imports from ``module`` (``from .norm import A, B``): asked
        for together, so that a module parsed partially for ``A`` is not parsed again for
        ``B`` (see :meth:`Project.analysis_for_names`)."""
        if importer is None:
            return frozenset()
        key = (id(importer), module)
        found = self._beside.get(key)
        if found is None:
            start = module + "."
            found = frozenset(
                b.target[len(start) :].split(".", 1)[0]
                for bindings in importer.model.module_scope.bindings.values()
                for b in bindings
                if b.kind is BindingKind.IMPORT and b.target and b.target.startswith(start)
            )
            self._beside[key] = found
        return found

    def _constructor_env(
        self, info: ClassInfo, call: cst.Call, ctx: Context
    ) -> dict[Binding, tuple[cst.BaseExpression, Context]]:
        """``__init__``'s parameters bound to the arguments of ``call`` (evaluated in ``ctx``)."""
        init = self._method(info, "__init__")
        if init is None:
            return {}
        node, owner = init
        bound = self._bind(FunctionValue(node, Context(owner.analysis, info), bound_method=True), tuple(call.args), ctx)
        return bound.env

    def _method(self, info: ClassInfo, name: str) -> tuple[cst.FunctionDef, ClassInfo] | None:
        for owner in self._mro(info):
            node = owner.methods.get(name)
            if node is not None:
                return node, owner
        return None

    def _mro(self, info: ClassInfo) -> list[ClassInfo]:
        order: list[ClassInfo] = []
        stack = [info]
        while stack and len(order) < 16:
            current = stack.pop(0)
            if current in order:
                continue
            order.append(current)
            stack += [b.info for b in current.bases if isinstance(b, ClassValue)]
        return order

    def _layer_base(self, info: ClassInfo) -> tuple[str, LayerFact] | None:
        for owner in self._mro(info):
            for base in owner.bases:
                if isinstance(base, LayerClassValue) and base.fact.kind is not LayerKind.CONTAINER:
                    return base.qualified, base.fact
        return None


def _constructor_setting(value: cst.BaseExpression, method: cst.FunctionDef | None) -> bool:
    """Whether ``self.<attr> = value`` records how the object was built: assigned in
    ``__init__`` from its arguments (not a literal, which is typically a switch flipped
    from outside, like ``self.save_attention = False``), and never assigned elsewhere in the
    module (``model.block.<attr> = ...``)."""
    if method is None or method.name.value != "__init__":
        return False
    if isinstance(value, (cst.SimpleString, cst.Integer, cst.Float, cst.ConcatenatedString)):
        return False
    if isinstance(value, cst.Name) and value.value in ("True", "False", "None"):
        return False
    return True


def _keeps_layer_forward(forward: cst.FunctionDef) -> bool:
    """Whether a torch layer subclass's own ``forward`` still runs the layer's training
    behaviour: it calls ``super()`` (``super().forward(x)``) or reads ``self.training``
    (``F.batch_norm(..., self.training or not self.track_running_stats, ...)``)."""
    for node in _nodes_of_function(forward):
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


@lru_cache(maxsize=4096)
def _string_literal(raw: str) -> object:
    """The value of a string literal's source text (libcst's ``evaluated_value`` compiles
    each one; registry keys and config types repeat a lot)."""
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        return NOT_LITERAL


_BUILTIN_TYPES: dict[str, type] = {
    "list": list,
    "dict": dict,
    "tuple": tuple,
    "set": set,
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "NoneType": type(None),
}


@dataclass(frozen=True)
class _BuiltinType:
    """A builtin class as a literal (``list`` in ``type(x) == list``)."""

    name: str


def _compare(operator: cst.BaseCompOp, left: object, right: object) -> object:
    """``left <operator> right`` for the operators branch conditions use, or NOT_LITERAL."""
    try:
        if isinstance(operator, cst.Equal):
            return left == right
        if isinstance(operator, cst.NotEqual):
            return left != right
        if isinstance(operator, cst.Is):
            return left is right if right is None or isinstance(right, bool) else left == right
        if isinstance(operator, cst.IsNot):
            return left is not right if right is None or isinstance(right, bool) else left != right
        if isinstance(operator, cst.In) and isinstance(right, (tuple, list, frozenset, str, dict)):
            return left in right
        if isinstance(operator, cst.NotIn) and isinstance(right, (tuple, list, frozenset, str, dict)):
            return left not in right
    except Exception:  # noqa: BLE001 - incomparable literals
        return NOT_LITERAL
    return NOT_LITERAL


def _param_binding(scope, param: cst.Param) -> Binding | None:  # noqa: ANN001
    for binding in scope.bindings.get(param.name.value, ()):
        if binding.kind is BindingKind.PARAMETER and binding.node is param:
            return binding
    return None


def _returns(
    function: cst.FunctionDef, decide: Callable[[cst.BaseExpression], bool | None] | None = None
) -> list[cst.Return]:
    return [node for node in _nodes_of_function(function, decide) if isinstance(node, cst.Return)]


def _replace_ctx(ctx: Context, **changes: object) -> Context:
    fields = {
        "analysis": ctx.analysis,
        "self_class": ctx.self_class,
        "env": ctx.env,
        "keyword_params": ctx.keyword_params,
        "self_env": ctx.self_env,
        "open_call": ctx.open_call,
        "bound": ctx.bound,
    }
    fields.update(changes)
    return Context(**fields)  # type: ignore[arg-type]


def _target_path(target: cst.BaseExpression, name: str) -> list[int] | None:
    if isinstance(target, cst.Name):
        return [] if target.value == name else None
    if isinstance(target, (cst.Tuple, cst.List)):
        for index, element in enumerate(target.elements):
            inner = _target_path(element.value, name)
            if inner is not None:
                return [index] + inner
    return None


def _describe(value: Value) -> str:
    if isinstance(value, FunctionValue):
        return value.node.name.value if isinstance(value.node, cst.FunctionDef) else "<lambda>"
    if isinstance(value, InstanceValue):
        return f"{value.info.name}.forward"
    if isinstance(value, LayerUse):
        return value.fact.name
    if isinstance(value, ContainerValue):
        return "nn.Sequential"
    return "?"


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

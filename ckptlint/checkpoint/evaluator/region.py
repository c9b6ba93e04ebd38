"""The records of a region: the frames (functions and ``forward`` methods) a checkpoint site
recomputes, the layers called, and the region itself."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import libcst as cst

from ckptlint.checkpoint.evaluator.class_summary import self_parameter
from ckptlint.checkpoint.evaluator.denotations import Context, LayerUse, Value
from ckptlint.checkpoint.sites.site import CheckpointSite
from ckptlint.semantic.bindings import Binding, BindingKind, ScopeKind
from ckptlint.semantic.walk import nodes_of_function
from ckptlint.text.source import location_label

if TYPE_CHECKING:
    from ckptlint.semantic.analysis import ModuleAnalysis

__all__ = ["Frame", "LayerCall", "MAX_DEPTH", "Region", "site_label"]


class BranchDecider(Protocol):
    """What a frame asks to walk only the code that runs: :meth:`ckptlint.checkpoint.evaluator.regions.RegionBuilder.decide`."""

    def decide(self, test: cst.BaseExpression, ctx: Context) -> bool | None: ...


#: Levels of calls followed below the checkpointed callable (its own body is level 0).
MAX_DEPTH = 3


@dataclass(eq=False, repr=False)
class Frame:
    """One function body that runs on recompute.

    Attributes:
        function: the ``FunctionDef`` or ``Lambda``.
        ctx: its evaluation context (module, ``self`` class, bound arguments).
        depth: 0 for the checkpointed callable, +1 for each call below it.
        via: how it was reached, for messages (``"Block.forward"``).
        caller, invocation: the frame whose call first reached this one and that call
            (``None`` for the checkpointed callable); a function called from several
            places is one frame, reached first from these.
        reached_from: every (frame, call) that reached it, the first included (``(None,
            None)`` when it is the checkpointed callable itself).
    """

    function: cst.FunctionDef | cst.Lambda
    ctx: Context
    depth: int
    via: str
    builder: BranchDecider | None = None
    caller: Frame | None = None
    invocation: cst.Call | None = None
    reached_from: list[tuple[Frame | None, cst.Call | None]] = field(default_factory=list, repr=False)
    _decisions: dict[int, bool | None] = field(default_factory=dict, repr=False)
    #: The nodes walked so far (in walk order) and the walk producing the rest (``None``
    #: once it is exhausted): every rule walks the frames of every region, and the walk
    #: (with its branch decisions, memoised above) gives the same nodes each time.
    _walked: list[cst.CSTNode] = field(default_factory=list, repr=False)
    _walk: Iterator[cst.CSTNode] | None = field(default=None, repr=False)
    _started: bool = field(default=False, repr=False)
    _by_name: dict[str, list[cst.CSTNode]] | None = field(default=None, repr=False)

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
        elif self._walk is None:  # walked to the end: the list's own iterator
            return iter(self._walked)
        return self._replay()

    def named(self, name: str) -> list[cst.CSTNode]:
        """The ``Name`` nodes spelling ``name`` and the ``Attribute`` nodes ending in ``.name``
        among :meth:`nodes`, in walk order (an index built on the first call, which walks the
        whole frame: the rules that ask scan every node anyway)."""
        index = self._by_name
        if index is None:
            index = {}
            for node in self.nodes():
                if isinstance(node, cst.Name):
                    index.setdefault(node.value, []).append(node)
                elif isinstance(node, cst.Attribute):
                    index.setdefault(node.attr.value, []).append(node)
            self._by_name = index
        return index.get(name, [])

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
            return nodes_of_function(self.function)
        ctx = self.ctx
        decisions = self._decisions

        def decide(test: cst.BaseExpression) -> bool | None:
            key = id(test)
            if key not in decisions:
                decisions[key] = builder.decide(test, ctx)
            return decisions[key]

        return nodes_of_function(self.function, decide)

    def is_parameter(self, binding: Binding) -> bool:
        return binding.kind is BindingKind.PARAMETER and binding.scope.node is self.function

    def self_parameter(self) -> str | None:
        if isinstance(self.function, cst.FunctionDef) and self.ctx.self_class is not None:
            return self_parameter(self.function)
        return None


@dataclass(eq=False, repr=False)
class LayerCall:
    """A torch layer run in the region: ``invocation`` is the call that runs it inside
    ``frame`` (``None`` when the layer is the checkpointed callable itself)."""

    layer: LayerUse
    invocation: cst.Call | None
    frame: Frame | None


@dataclass(eq=False, repr=False)
class Pending:
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
        entries: what the checkpointed callable may be (the values it was resolved to, before
            any call below it is followed; empty when unknown).
        unknown_calls: calls made in its frames whose callee is not known, with the frame
            (below :data:`MAX_DEPTH`, calls are not followed and not listed).
    """

    site: CheckpointSite
    analysis: ModuleAnalysis
    frames: list[Frame] = field(default_factory=list)
    layers: list[LayerUse] = field(default_factory=list)
    layer_calls: list[LayerCall] = field(default_factory=list)
    resolved: bool = False
    entries: list[Value] = field(default_factory=list)
    unknown_calls: list[tuple[cst.Call, Frame]] = field(default_factory=list)
    #: calls of code of the program made at the last level followed (:data:`MAX_DEPTH`): what
    #: they run is not looked at
    cut_calls: list[tuple[cst.Call, Frame]] = field(default_factory=list)
    #: the evaluation steps ran out while it was built: calls past that point are not followed
    ran_out: bool = False
    #: calls of a name imported from a module of the tree whose callee was not resolved, with
    #: that module's file: what they run is not seen (an autograd Function's ``apply``, a kernel)
    opaque_calls: list[tuple[cst.Call, Frame, Path]] = field(default_factory=list)

    def seen_whole(self) -> bool:
        """Whether every way the region's frames are reached inside it is known: no call
        past the depth followed (:attr:`cut_calls`), the steps did not run out, and no
        unknown callee is a local name (a parameter or variable holding a function of the
        program may call any frame again; a module-level alias such as ``chunk =
        ChunkFunction.apply`` is taken to run library or kernel code; what
        :attr:`opaque_calls` may run is asked where it matters)."""
        return (
            self.resolved
            and not self.cut_calls
            and not self.ran_out
            and not any(_may_call_back(call, frame) for call, frame in self.unknown_calls)
        )

    def frames_of(self, function: cst.FunctionDef | cst.Lambda) -> list[Frame]:
        """The frames that run ``function`` (one for each class ``self`` may be)."""
        return [frame for frame in self.frames if frame.function is function]

    @property
    def partial(self) -> bool:
        """Resolved, but it calls code ckptlint cannot see (:attr:`unknown_calls`: a
        parameter or closure variable bound to something unknown, ``self.attr`` built by a
        library outside the tree); such code may draw random numbers or keep state."""
        return self.resolved and bool(self.unknown_calls)

    def constructs(self, layer: LayerUse) -> bool:
        """Whether ``layer`` is created inside the region itself (a fresh module each call,
        e.g. ``lambda x: nn.BatchNorm1d(d)(x)``), so no state carries over."""
        if layer.call is None:
            return False
        functions = {id(frame.function) for frame in self.frames}
        model = layer.analysis.model
        return any(id(a) in functions for a in model.ancestors(layer.call) if isinstance(a, (cst.FunctionDef, cst.Lambda)))


def _may_call_back(call: cst.Call, frame: Frame) -> bool:
    """Whether the unknown callee of ``call`` (made in ``frame``) is a bare name bound
    anywhere but by a module-level assignment."""
    if not isinstance(call.func, cst.Name):
        return False
    model = frame.analysis.model
    if call.func not in model.scopes:
        return True
    bindings = model.lookup(call.func.value, model.scope_of(call.func))
    return not bindings or any(b.kind is not BindingKind.ASSIGNMENT or b.scope.kind is not ScopeKind.MODULE for b in bindings)


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
    return location_label(Path(shown).as_posix(), row)

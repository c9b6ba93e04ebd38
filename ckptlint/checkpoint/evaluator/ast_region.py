"""The records of a region: the frames (functions and ``forward`` methods) a checkpoint site
recomputes, the layers called and the region itself, with ``ast`` functions, calls and an
:class:`~ckptlint.semantic.ast_analysis.AstAnalysis` (the depth limit is
:data:`~ckptlint.checkpoint.evaluator.region.MAX_DEPTH`).

A ``def`` is a ``FunctionDef`` or an ``AsyncFunctionDef``; :meth:`AstFrame.nodes` yields
nodes in source order (:func:`ckptlint.semantic.ast_walk.nodes_of_function`); an attribute's
name is a string, so :meth:`AstFrame.named` indexes ``Name`` nodes by ``id`` and ``Attribute``
nodes by ``attr``."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ckptlint.checkpoint.evaluator.ast_class_summary import self_parameter
from ckptlint.checkpoint.evaluator.denotations import Context, LayerUse, Value
from ckptlint.semantic.ast_walk import nodes_of_function
from ckptlint.semantic.bindings import Binding, BindingKind, ScopeKind
from ckptlint.text.source import location_label

if TYPE_CHECKING:
    from ckptlint.checkpoint.sites.ast_site_builders import AstSite
    from ckptlint.semantic.ast_analysis import AstAnalysis

    AstContext = Context[AstAnalysis, ast.expr, ast.AST]

__all__ = ["AstFrame", "AstLayerCall", "AstPending", "AstRegion", "FrameFunction", "site_label"]

#: What a frame runs: a ``def``, an ``async def`` or a lambda.
FrameFunction = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


class AstBranchDecider(Protocol):
    """What a frame asks to walk only the code that runs (the region builder's ``decide``)."""

    def decide(self, test: ast.expr, ctx: AstContext) -> bool | None: ...


@dataclass(eq=False, repr=False)
class AstFrame:
    """One function body that runs on recompute.

    Attributes:
        function: the ``def``, ``async def`` or ``Lambda``.
        ctx: its evaluation context (module, ``self`` class, bound arguments).
        depth: 0 for the checkpointed callable, +1 for each call below it.
        via: how it was reached, for messages (``"Block.forward"``).
        caller, invocation: the frame whose call first reached this one and that call
            (``None`` for the checkpointed callable).
        reached_from: every (frame, call) that reached it, the first included.
    """

    function: FrameFunction
    ctx: AstContext
    depth: int
    via: str
    builder: AstBranchDecider | None = None
    caller: AstFrame | None = None
    invocation: ast.Call | None = None
    reached_from: list[tuple[AstFrame | None, ast.Call | None]] = field(default_factory=list, repr=False)
    _decisions: dict[int, bool | None] = field(default_factory=dict, repr=False)
    _walked: list[ast.AST] = field(default_factory=list, repr=False)
    _walk: Iterator[ast.AST] | None = field(default=None, repr=False)
    _started: bool = field(default=False, repr=False)
    _by_name: dict[str, list[ast.AST]] | None = field(default=None, repr=False)

    @property
    def analysis(self) -> AstAnalysis:
        return self.ctx.analysis

    def nodes(self) -> Iterator[ast.AST]:
        """The nodes that run when the frame runs (nested defs excluded, and the branches of
        ``if`` that the bound arguments decide against), walked once and lazily: a branch is
        decided when the walk reaches it, then the walked nodes are replayed."""
        if not self._started:
            self._started = True
            self._walk = self._nodes()
        elif self._walk is None:
            return iter(self._walked)
        return self._replay()

    def named(self, name: str) -> list[ast.AST]:
        """The ``Name`` nodes spelling ``name`` and the ``Attribute`` nodes ending in
        ``.name`` among :meth:`nodes`, in walk order."""
        index = self._by_name
        if index is None:
            index = {}
            for node in self.nodes():
                kind = type(node)
                if kind is ast.Name:
                    index.setdefault(node.id, []).append(node)  # type: ignore[attr-defined]
                elif kind is ast.Attribute:
                    index.setdefault(node.attr, []).append(node)  # type: ignore[attr-defined]
            self._by_name = index
        return index.get(name, [])

    def _replay(self) -> Iterator[ast.AST]:
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

    def _nodes(self) -> Iterator[ast.AST]:
        builder = self.builder
        if builder is None:
            return nodes_of_function(self.function)
        ctx = self.ctx
        decisions = self._decisions

        def decide(test: ast.expr) -> bool | None:
            key = id(test)
            if key not in decisions:
                decisions[key] = builder.decide(test, ctx)
            return decisions[key]

        return nodes_of_function(self.function, decide)

    def is_parameter(self, binding: Binding[Any, Any]) -> bool:
        return binding.kind is BindingKind.PARAMETER and binding.scope.node is self.function

    def self_parameter(self) -> str | None:
        if not isinstance(self.function, ast.Lambda) and self.ctx.self_class is not None:
            return self_parameter(self.function)
        return None


@dataclass(eq=False, repr=False)
class AstLayerCall:
    """A torch layer run in the region: ``invocation`` is the call that runs it inside
    ``frame`` (``None`` when the layer is the checkpointed callable itself)."""

    layer: LayerUse
    invocation: ast.Call | None
    frame: AstFrame | None


@dataclass(eq=False, repr=False)
class AstPending:
    """A value still to follow while a region is built: ``args`` are
    the positional and keyword arguments of the call that reached it (``None``: not seen)."""

    value: Value
    depth: int
    via: str
    args: tuple[ast.expr | ast.keyword, ...] | None
    caller: AstContext
    invocation: ast.Call | None
    frame: AstFrame | None


@dataclass(eq=False, repr=False)
class AstRegion:
    """What a checkpoint site recomputes.

    Attributes:
        site: the site; analysis: the module it is in.
        frames: function bodies that run again, in the order they were reached.
        layers: torch layers that run again (dropout, BatchNorm, containers' elements);
            layer_calls: the same, each with the call that runs it and its frame.
        resolved: whether the checkpointed callable was resolved to code or layers at all.
        entries: what the checkpointed callable may be (the values it was resolved to, before
            any call below it is followed; empty when unknown).
        unknown_calls: calls made in its frames whose callee is not known, with the frame.
        cut_calls: calls that may run code, made in frames at the depth limit (not followed).
        ran_out: the evaluation steps ran out while the region was built.
        opaque_calls: calls with no known callee that name something of a module of the
            tree, with the frame and that module's file.
    """

    site: AstSite
    analysis: AstAnalysis
    frames: list[AstFrame] = field(default_factory=list)
    layers: list[LayerUse] = field(default_factory=list)
    layer_calls: list[AstLayerCall] = field(default_factory=list)
    resolved: bool = False
    entries: list[Value] = field(default_factory=list)
    unknown_calls: list[tuple[ast.Call, AstFrame]] = field(default_factory=list)
    cut_calls: list[tuple[ast.Call, AstFrame]] = field(default_factory=list)
    ran_out: bool = False
    opaque_calls: list[tuple[ast.Call, AstFrame, Path]] = field(default_factory=list)

    def seen_whole(self) -> bool:
        """Whether every way the region's frames are reached inside it is known: resolved, no
        call cut at the depth limit, steps not run out, and no unknown call may call back
        into it."""
        return (
            self.resolved
            and not self.cut_calls
            and not self.ran_out
            and not any(_may_call_back(call, frame) for call, frame in self.unknown_calls)
        )

    def frames_of(self, function: FrameFunction) -> list[AstFrame]:
        """The frames that run ``function`` (one for each class ``self`` may be)."""
        return [frame for frame in self.frames if frame.function is function]

    @property
    def partial(self) -> bool:
        """Resolved, but it calls code ckptlint cannot see (:attr:`unknown_calls`)."""
        return self.resolved and bool(self.unknown_calls)

    def constructs(self, layer: LayerUse) -> bool:
        """Whether ``layer`` is created inside the region itself (a fresh module each call)."""
        if layer.call is None:
            return False
        functions = {id(frame.function) for frame in self.frames}
        model = layer.ctx.analysis.model
        return any(
            id(a) in functions
            for a in model.ancestors(layer.call)
            if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        )


def _may_call_back(call: ast.Call, frame: AstFrame) -> bool:
    """Whether the unknown callee of ``call`` (made in ``frame``) is a bare name bound
    anywhere but by a module-level assignment."""
    func = call.func
    if not isinstance(func, ast.Name):
        return False
    model = frame.analysis.model
    if func not in model.parents:
        return True
    bindings = model.lookup(func.id, model.scope_of(func))
    return not bindings or any(b.kind is not BindingKind.ASSIGNMENT or b.scope.kind is not ScopeKind.MODULE for b in bindings)


def site_label(site: AstSite, site_analysis: AstAnalysis, reported_in: AstAnalysis) -> str:
    """``model.py:42``: where the site is, relative to the folder of the file a finding is
    reported in."""
    row = site_analysis.range(site.call)[0][0]
    here = Path(reported_in.source.path).parent
    target = Path(site_analysis.source.path)
    try:
        shown = os.path.relpath(target, here) if target.is_absolute() and here.is_absolute() else target.name
    except ValueError:
        shown = target.name
    return location_label(Path(shown).as_posix(), row)

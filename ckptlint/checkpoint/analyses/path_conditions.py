"""The conditions on a region's way to a node: the tests around each call that reaches the
function holding it, inside the region.

unilm's YOCO checkpoints a layer whose ``forward`` calls ``gate_retention(...)`` only ``if
incremental_state is not None``; a state write inside ``gate_retention`` runs on recompute
only under that test, which lives one or more calls above the write, in the region itself.
What a way needs is read from the frames of the region (:attr:`Frame.reached_from`); what
holds on every way is stated. Only a region whose every way is known says anything: a call
past the depth followed, steps that ran out or an unknown callable that may call back make
the answer unknown (``None``), never a condition that some unseen way does not need.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import libcst as cst

from ckptlint.checkpoint.sites.guards import Condition, common, joined, local_parts
from ckptlint.semantic.walk import iter_tree

if TYPE_CHECKING:
    from ckptlint.checkpoint.evaluator.region import Frame, Region
    from ckptlint.semantic.analysis import ModuleAnalysis

__all__ = ["may_mention", "path_parts"]


def path_parts(region: Region, node: cst.CSTNode, analysis: ModuleAnalysis) -> Condition | None:
    """What must hold on the region's way to ``node`` (a node of ``analysis``): for each
    frame that runs the function around it, the parts shared by every way it is reached (the
    tests around the reaching call in the calling frame, and that frame's own way); ``()``
    for the checkpointed callable's own body; ``None`` when the node is in no frame or the
    region is not seen whole (:meth:`Region.seen_whole`) and the ways it shows need some
    test (ways it does not show could only need fewer: with none needed, ``()`` is the answer
    whatever the region leaves out)."""
    function = _function_of(node, analysis)
    if function is None:
        return None
    frames = [frame for frame in region.frames_of(function) if frame.analysis is analysis]
    if not frames:
        return None
    known: dict[int, Condition] = {}
    parts = common([_frame_parts(frame, known, set()) for frame in frames])
    if not parts:
        return ()
    return parts if region.seen_whole() and _ways_recorded(region, frames) else None


def _ways_recorded(region: Region, frames: list[Frame]) -> bool:
    """Whether every way into the functions on the ways to ``frames`` is one the region
    recorded: each such function (the checkpointed callable's aside) has no decorator, and
    every mention of its name in the modules the region runs (a call, a name passed as a value,
    an attribute of any object, a string for ``getattr``) is a call that reached one of its
    frames. An override the region did not resolve (``Child.other`` calling ``self.go``), a
    function handed to ``map``, a property, a decorator's wrapper, a call in a branch the
    region decided against (recursion, an argument changed before its test) all fail it."""
    chain: dict[int, Frame] = {}
    todo = list(frames)
    while todo:
        frame = todo.pop()
        if id(frame) in chain:
            continue
        chain[id(frame)] = frame
        todo += [caller for caller, _ in frame.reached_from if caller is not None]
    ways: dict[int, set[int]] = {}
    for frame in chain.values():
        if frame.depth == 0 and all(caller is None for caller, _ in frame.reached_from):
            continue
        ways.setdefault(id(frame.function), set()).update(id(call) for _, call in frame.reached_from if call is not None)
    functions = {id(f.function): f.function for f in chain.values() if id(f.function) in ways}
    if any(isinstance(f, cst.FunctionDef) and f.decorators for f in functions.values()):
        return False
    names = {f.name.value: id(f) for f in functions.values() if isinstance(f, cst.FunctionDef)}
    if len(names) != len(functions):
        return False  # a lambda on the way: its references are not names
    modules = {id(f.analysis): f.analysis for f in region.frames}
    if not all(_mentions_recorded(analysis, names, ways) for analysis in modules.values()):
        return False
    project = region.analysis.project
    return not any(may_mention(path, names, project) for path in {path for _, _, path in region.opaque_calls})


class FileReader(Protocol):
    """What :func:`may_mention` asks of a loader (libcst's or ``ast``'s)."""

    def record_read(self, path: Path) -> None: ...

    def unsaved_text(self, path: Path) -> str | None: ...


def may_mention(path: Path, names: dict[str, int], project: FileReader | None) -> bool:
    """Whether the module file ``path``, which a call the region could not resolve runs code of,
    names one of ``names`` (so it may call it): read as text (an editor's unsaved buffer where
    the project has one; recorded as read, for cache invalidation), a word match that is no
    ``def`` of the same name; an unreadable file may."""
    text = project.unsaved_text(path) if project is not None else None
    if project is not None:
        project.record_read(path)
    if text is None:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return True
    return any(re.search(rf"(?<!def )\b{re.escape(name)}\b", text) for name in names)  # its own `def`s aside


def _mentions_recorded(analysis: ModuleAnalysis, names: dict[str, int], ways: dict[int, set[int]]) -> bool:
    """Whether every mention of one of ``names`` in ``analysis``'s module (its ``def`` aside) is
    the callee of a call recorded in ``ways`` for a function of that name."""
    recorded = set().union(*ways.values()) if ways else set()
    model = analysis.model
    passive: set[int] = set()  # the names of the `def`s themselves, and what imports name
    for node in iter_tree(analysis.module):
        if isinstance(node, cst.FunctionDef):
            passive.add(id(node.name))
            continue
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            passive.update(id(inner) for inner in iter_tree(node))  # importing it runs nothing
            continue
        if id(node) in passive:
            continue
        if isinstance(node, cst.SimpleString) and node.value.strip("\"'rbuRBU") in names:
            return False
        name = node.value if isinstance(node, cst.Name) else node.attr.value if isinstance(node, cst.Attribute) else None
        if name not in names:
            continue
        parent = model.parent(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            continue  # the attribute around it is the mention
        if _super_of_torch_class(analysis, node):
            continue  # `super().forward(x)` in a subclass of `nn.Linear`: torch's own method
        if not (isinstance(parent, cst.Call) and parent.func is node and id(parent) in recorded):
            return False
    return True


def _super_of_torch_class(analysis: ModuleAnalysis, node: cst.CSTNode) -> bool:
    """Whether ``node`` is ``super().name`` in a class whose every base is a class of torch."""
    if not (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Call)):
        return False
    func = node.value.func
    if not (isinstance(func, cst.Name) and func.value == "super"):
        return False
    model = analysis.model
    cls = next((a for a in model.ancestors(node) if isinstance(a, cst.ClassDef)), None)
    if cls is None or not cls.bases:
        return False
    return all(
        base.value in model.scopes and (names := model.qualified_names(base.value)) and all(n.startswith("torch.") for n in names)
        for base in cls.bases
    )


def _frame_parts(frame: Frame, known: dict[int, Condition], active: set[int]) -> Condition:
    key = id(frame)
    if key in known:
        return known[key]
    if key in active:  # a way through itself adds nothing that its other ways need
        return ()
    active.add(key)
    ways: list[Condition] = []
    for caller, call in frame.reached_from:
        if caller is None or call is None:
            ways = [()]
            break
        ways.append(joined(_frame_parts(caller, known, active), local_parts(caller.analysis, call, parameters_given=True)))
    active.discard(key)
    known[key] = common(ways)
    return known[key]


def _function_of(node: cst.CSTNode, analysis: ModuleAnalysis) -> cst.FunctionDef | cst.Lambda | None:
    """The ``def`` or ``lambda`` nearest around ``node`` (``node`` itself when it is one)."""
    for candidate in (node, *analysis.model.ancestors(node)):
        if isinstance(candidate, (cst.FunctionDef, cst.Lambda)):
            return candidate
    return None

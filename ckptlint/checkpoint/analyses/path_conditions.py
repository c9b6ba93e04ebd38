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

from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.checkpoint.sites.guards import Condition, common, joined, local_parts

if TYPE_CHECKING:
    from ckptlint.checkpoint.evaluator.region import Frame, Region
    from ckptlint.semantic.analysis import ModuleAnalysis

__all__ = ["path_parts"]


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
    return parts if region.seen_whole() else None


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

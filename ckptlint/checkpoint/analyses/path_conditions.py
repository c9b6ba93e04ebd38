"""The conditions on a region's way to a node: the tests around each call that reaches the
function holding it, inside the region.

unilm's YOCO checkpoints a layer whose ``forward`` calls ``gate_retention(...)`` only ``if
incremental_state is not None``; a state write inside ``gate_retention`` runs on recompute
only under that test, which lives one or more calls above the write, in the region itself.
What a way needs is read from the frames of the region (:attr:`~ckptlint.checkpoint.evaluator.ast_region.AstFrame.reached_from`); what
holds on every way is stated. Only a region whose every way is known says anything: a call
past the depth followed, steps that ran out or an unknown callable that may call back make
the answer unknown (``None``), never a condition that some unseen way does not need.

This module holds :func:`may_mention` and what it asks of a loader; the analysis is
:mod:`ckptlint.checkpoint.analyses.ast_path_conditions`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Protocol

__all__ = ["may_mention"]


class FileReader(Protocol):
    """What :func:`may_mention` asks of a loader (the project's module cache)."""

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



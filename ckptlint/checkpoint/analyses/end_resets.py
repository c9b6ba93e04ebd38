"""Statistics that a region resets to a constant as the last thing it does to them, so that
CKP202 leaves out the writes before the reset.

fairseq's MoE layer (``MOELayer.forward``, ``fairseq/modules/moe/moe_layer.py`` of its
``moe`` branch and its forks) times its all-to-alls with ``self.a2a_cpu_time_ms += ...`` and
``self.a2a_cuda_event_intervals.append(...)``, and ends with ``self.record_all_to_all_stats()``,
whose last statements are ``self.a2a_cpu_time_ms = 0.0`` and
``self.a2a_cuda_event_intervals = []`` ("reset stats"); ``__init__`` sets the same constants.
Every run of the forward, the recomputation included, starts from those constants and leaves
them behind: the recomputation writes what the forward wrote, and nothing outside the region
ever sees the values in between.

This module holds the record of a reset, ``_Reset``; the analysis is
:mod:`ckptlint.checkpoint.analyses.ast_end_resets`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

#: The frame a reset is made in (``AstFrame`` in :mod:`ckptlint.checkpoint.analyses.ast_end_resets`).
Fr = TypeVar("Fr")


__all__ = []


@dataclass(frozen=True)
class _Reset(Generic[Fr]):
    """``self.<attr> = <constant>`` at statement ``index`` of ``frame``'s body (directly, or
    in the method that statement calls as ``self.m()``)."""

    frame: Fr
    attr: str
    index: int



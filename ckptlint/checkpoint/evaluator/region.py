"""The depth limit of a region: how many levels of calls below the checkpointed callable are
followed. The records of a region are in :mod:`ckptlint.checkpoint.evaluator.ast_region`; the
limit is read by :mod:`~ckptlint.checkpoint.evaluator.ast_regions`,
:mod:`~ckptlint.checkpoint.analyses.ast_outer_writes` and CKP101's rule."""

from __future__ import annotations

__all__ = ["MAX_DEPTH"]


#: Levels of calls followed below the checkpointed callable (its own body is level 0).
MAX_DEPTH = 3



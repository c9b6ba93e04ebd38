"""The budgets of the region builder
(:class:`~ckptlint.checkpoint.evaluator.ast_regions.AstRegionBuilder`, whose module docstring
says how regions are resolved): evaluation steps per query and per linted module, and the depth
of a deep region. Read by :mod:`ckptlint.checkpoint.evaluator.ast_regions`.
"""

from __future__ import annotations

from ckptlint.checkpoint.evaluator.region import MAX_DEPTH

__all__ = []


#: Evaluation steps (expressions evaluated) one query may take: a region, or one
#: ``values``/``signature`` question. Past it the rest is unknown (never a finding by
#: itself). Measured with memoisation: the largest region of sd-scripts takes 653 steps,
#: of ColossalAI 432; ``values``/``signature`` queries there at most 188.
REGION_BUDGET = 20_000


QUERY_BUDGET = 2_000


#: Evaluation steps all queries of one linted module may take together (one
#: :class:`~ckptlint.checkpoint.evaluator.ast_regions.AstRegionBuilder`): past it every query is cut off at once, so no file is
#: pathologically slow; what is cut off is unknown, as past :data:`REGION_BUDGET`.
FILE_BUDGET = 100_000


#: Levels of calls a region is followed to where a finding needs every way its frames are
#: reached (:meth:`~ckptlint.checkpoint.evaluator.ast_regions.AstRegionBuilder.deep_region`).
DEEP_DEPTH = MAX_DEPTH + 3



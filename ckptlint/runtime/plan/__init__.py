"""The checkpoint planner: which blocks to checkpoint so a training step fits a memory budget.

:func:`plan_checkpointing` measures the candidate blocks (saved-for-backward bytes, input
bytes, forward time), leaves out the blocks that are unsafe to checkpoint (with the reason),
and solves for the least recompute time under the budget. The returned
:class:`CheckpointPlan` applies and removes itself (``plan.apply(model)``,
``plan.remove(model)``), checks itself (``plan.verify()``), and writes itself as code
(``plan.to_code()``), as a table (``plan.table()``) and as an SVG chart (``plan.chart_svg()``).
``python -m ckptlint.runtime.plan package.module:factory --budget 8GiB`` does the same from
the command line. See docs/planner.md.
"""

from __future__ import annotations

from .planner import BlockRow, BudgetTooSmall, CheckpointPlan, NoSafeBlocks, plan_checkpointing
from .solve import Item, Solution, brute_force, every_k, solve
from .units import format_bytes, parse_budget
from .verify import Verification, verify_plan

__all__ = [
    "BlockRow",
    "BudgetTooSmall",
    "CheckpointPlan",
    "Item",
    "NoSafeBlocks",
    "Solution",
    "Verification",
    "brute_force",
    "every_k",
    "format_bytes",
    "parse_budget",
    "plan_checkpointing",
    "solve",
    "verify_plan",
]

"""What a plan holds: its blocks, its predictions, and what verifying it found (data only)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..report import EquivalenceReport
from .measure import Measurement
from .solve import Solution
from .units import format_bytes

__all__ = ["BlockRow", "PlanData", "Verification"]


@dataclass
class BlockRow:
    """One candidate block in a plan.

    Attributes:
        name: as ``model.named_modules()`` names it; kind: its class name.
        saved_bytes: bytes it keeps for backward unless checkpointed; input_bytes: what a
            checkpoint keeps instead; forward_s: its forward time (the median over the samples of
            the blocks of identical structure and inputs), seconds.
        chosen: checkpointed by the plan; safe: may be checkpointed; reason: why not (unsafe),
            or why it was left out; kind_of_reason: a key of
            :data:`ckptlint.runtime.plan.safety.REMEDIES` or ``""``.
    """

    name: str
    kind: str
    saved_bytes: int
    input_bytes: int
    forward_s: float
    chosen: bool = False
    safe: bool = True
    reason: str = ""
    kind_of_reason: str = ""
    group: str = ""


@dataclass
class Verification:
    """What :func:`verify_plan` found.

    Attributes:
        equivalent: the on/off check passed (None when not run or nothing is checkpointed).
        report: its :class:`~ckptlint.runtime.EquivalenceReport`, or None.
        budget_bytes, predicted_peak_bytes: from the plan, bytes.
        measured_peak_bytes: the planned step's peak, bytes; plain_peak_bytes: the plain step's.
        peak_method: how the peaks were measured.
        plain_step_s, planned_step_s: median step times, seconds.
        within_budget: ``measured_peak_bytes <= budget_bytes * (1 + tolerance)``.
    """

    equivalent: bool | None
    report: EquivalenceReport | None
    budget_bytes: int
    predicted_peak_bytes: int
    measured_peak_bytes: int
    plain_peak_bytes: int
    peak_method: str
    plain_step_s: float
    planned_step_s: float
    tolerance: float
    within_budget: bool

    @property
    def ok(self) -> bool:
        """Within budget and equivalent (or equivalence not checked)."""
        return self.within_budget and self.equivalent is not False

    def __str__(self) -> str:
        eq = {True: "passed", False: "FAILED", None: "not run"}[self.equivalent]
        return "\n".join([
            f"verify: on/off equivalence {eq}; measured peak {format_bytes(self.measured_peak_bytes)} "
            f"(predicted {format_bytes(self.predicted_peak_bytes)}, budget {format_bytes(self.budget_bytes)}, "
            f"{'within' if self.within_budget else 'OVER'} budget + {self.tolerance:.0%}; plain step "
            f"{format_bytes(self.plain_peak_bytes)})",
            f"  step time {self.planned_step_s * 1e3:.2f} ms planned vs {self.plain_step_s * 1e3:.2f} ms plain; peak: {self.peak_method}",
        ])


@dataclass
class PlanData:
    """Which blocks to checkpoint under a budget, with what the memory model predicts (the data of
    :class:`ckptlint.runtime.plan.CheckpointPlan`).

    Attributes:
        rows: one :class:`BlockRow` per candidate, in model order.
        budget_bytes: the budget, bytes.
        predicted_peak_bytes: predicted activation peak with the plan applied, bytes.
        predicted_recompute_s: predicted extra forward time per step, seconds.
        no_checkpoint_peak_bytes: the measured peak without checkpointing, bytes.
        rest_bytes: what the step holds besides the blocks' activations, bytes (memory model).
        smallest_peak_bytes: the smallest predicted peak any plan reaches, bytes.
        all_safe: the plan that checkpoints every safe candidate (a :class:`Solution`).
        every_k: ``(k, Solution)`` for the best every-k-th-block plan that fits, or None.
        measurement: the :class:`~ckptlint.runtime.plan.measure.Measurement`.
        solve_s, planning_s: solver and total planning time (measurement included), seconds.
        gap_bound_s: how much recompute time the solver's rounding may cost at most, seconds.
        library: the library whose switch checkpoints exactly these candidates, or None.
        notes: what the plan assumed (use_cache=False, eval mode ...).
        verification: the last :meth:`verify` result, or None.
    """

    rows: list[BlockRow]
    budget_bytes: int
    predicted_peak_bytes: int
    predicted_recompute_s: float
    no_checkpoint_peak_bytes: int
    rest_bytes: int
    smallest_peak_bytes: int
    all_safe: Solution
    every_k: tuple[int, Solution] | None
    measurement: Measurement
    solve_s: float = 0.0
    planning_s: float = 0.0
    gap_bound_s: float = 0.0
    library: str | None = None
    notes: list[str] = field(default_factory=list)
    verification: Verification | None = None
    _context: tuple = field(default=(), repr=False)

    @property
    def chosen(self) -> list[str]:
        """Names of the blocks to checkpoint, in model order."""
        return [r.name for r in self.rows if r.chosen]

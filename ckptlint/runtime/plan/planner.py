"""``plan_checkpointing``: measure the candidate blocks, exclude the unsafe ones, solve, explain."""

from __future__ import annotations

import dataclasses
import inspect
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from ..outputs import default_loss
from .candidates import Candidates, resolve_candidates, switch_layers
from .measure import Measurement, measure_blocks
from .render import chart_svg, summary, table, to_code
from .result import BlockRow, PlanData, Verification
from .safety import REMEDIES, judge
from .solve import Item, Solution, brute_force, every_k, peak_of, smallest_peak, solve
from .units import format_bytes, parse_budget
from .verify import verify_plan
from .wrap import unwrap, wrap

_NOT_NEEDED = "not needed to fit the budget"
_SOLVER_NOTE = "solver:"

__all__ = ["BlockRow", "BudgetTooSmall", "CheckpointPlan", "NoSafeBlocks", "plan_checkpointing"]


class BudgetTooSmall(ValueError):
    """No set of safe blocks brings the predicted peak under the budget.

    Attributes: budget_bytes, smallest_bytes (the smallest peak any plan reaches), plan (the
    plan that reaches it, for its table).
    """

    def __init__(self, budget: int, smallest: int, plan: CheckpointPlan) -> None:
        self.budget_bytes, self.smallest_bytes, self.plan = budget, smallest, plan
        super().__init__(
            f"budget {format_bytes(budget)} ({budget} B) is below the smallest predicted activation peak any plan reaches: "
            f"{format_bytes(smallest)} ({smallest} B), checkpointing {len(plan.chosen)} of {len(plan.rows)} candidate blocks; "
            f"pass budget >= {smallest}, or more (smaller) candidates\n{plan.table()}"
        )


class NoSafeBlocks(ValueError):
    """Every candidate is unsafe to checkpoint and the plain step does not fit the budget.

    Attributes: plan (its table gives each block's reason), remedies (``{kind: what makes it safe}``).
    """

    def __init__(self, plan: CheckpointPlan) -> None:
        self.plan = plan
        kinds = sorted({r.kind_of_reason for r in plan.rows if not r.safe})
        self.remedies = {k: REMEDIES[k] for k in kinds}
        lines = [f"- {k}: {v}" for k, v in self.remedies.items()]
        super().__init__(
            f"none of the {len(plan.rows)} candidate blocks can be checkpointed safely, and without checkpointing the "
            f"predicted peak {format_bytes(plan.no_checkpoint_peak_bytes)} exceeds the budget {format_bytes(plan.budget_bytes)}. "
            "What would make them safe:\n" + "\n".join(lines) + "\n" + plan.table()
        )


class CheckpointPlan(PlanData):
    """Which blocks to checkpoint under a budget (fields: :class:`~ckptlint.runtime.plan.result.PlanData`),
    with the methods that apply, remove, verify and write it."""

    def items(self, *, safe_only: bool = True) -> list[Item]:
        """The solver's view of the safe blocks (bytes, seconds)."""
        return [Item(r.name, r.saved_bytes, r.input_bytes, r.forward_s, r.group) for r in self.rows if r.safe or not safe_only]

    @property
    def solver_rest_bytes(self) -> int:
        """``rest_bytes`` plus the saved bytes of the unsafe blocks (never checkpointed)."""
        return self.rest_bytes + sum(r.saved_bytes for r in self.rows if not r.safe)

    def brute_force(self) -> Solution | None:
        """The exact optimum over the safe blocks by enumeration (at most 22), same costs."""
        return brute_force(self.items(), self.solver_rest_bytes, self.budget_bytes)

    def with_budget(self, budget: int | float | str) -> CheckpointPlan:
        """The plan for another budget from the same measurement (no step runs).

        Raises:
            BudgetTooSmall, NoSafeBlocks: as :func:`plan_checkpointing`.
        """
        share = _share(budget)
        limit = parse_budget(budget) if share is None else max(1, int(share * self.no_checkpoint_peak_bytes))
        rows = [
            dataclasses.replace(r, chosen=False, reason="" if r.reason == _NOT_NEEDED else r.reason) for r in self.rows
        ]
        notes = [n for n in self.notes if not n.startswith(_SOLVER_NOTE)]
        plan = _solve(rows, limit, self.measurement, self.library, notes, self._context)
        plan.planning_s = self.planning_s - self.solve_s + plan.solve_s
        return plan

    def apply(self, model: nn.Module) -> nn.Module:
        """Wrap the chosen blocks of ``model`` in non-reentrant checkpoint wrappers, in place;
        ``state_dict()`` keys do not change. Returns ``model``."""
        wrap(model, self.chosen)
        return model

    def remove(self, model: nn.Module) -> nn.Module:
        """Undo :meth:`apply`: the original block objects go back in place. Returns ``model``."""
        unwrap(model, self.chosen)
        return model

    def verify(self, *, iters: int = 3, tolerance: float = 0.05, equivalence: bool = True, **options: Any) -> Verification:
        """Check the plan on the model it was made for: on/off equivalence and the measured peak
        (:func:`ckptlint.runtime.plan.verify.verify_plan`)."""
        model, inputs, kwargs, loss_fn = self._context
        self.verification = verify_plan(
            self, model, inputs, kwargs, loss_fn, iters=iters, tolerance=tolerance, equivalence=equivalence, **options
        )
        return self.verification

    def table(self) -> str:
        """A text table: per block saved MiB, input MiB, forward ms, chosen, why not."""
        return table(self)

    def to_code(self, style: str = "auto") -> str:
        """The snippet that applies this plan (``"switch"``, ``"check_fn"`` or ``"auto"``)."""
        return to_code(self, style)

    def chart_svg(self) -> str:
        """An SVG bar chart: saved MiB per block, the chosen ones, the budget line."""
        return chart_svg(self)

    def __str__(self) -> str:
        return summary(self) + "\n" + self.table()


def _forward_kwargs(model: nn.Module, given: dict[str, Any] | None, library: str | None, notes: list[str]) -> dict[str, Any]:
    kwargs = dict(given or {})
    if library == "transformers" and "use_cache" not in kwargs:
        try:
            params = inspect.signature(model.forward).parameters
        except (TypeError, ValueError):
            params = {}  # type: ignore[assignment]
        if "use_cache" in params or any(p.kind is p.VAR_KEYWORD for p in params.values()):
            kwargs["use_cache"] = False
            notes.append("use_cache=False passed: transformers turns the cache off under checkpointing in training")
    return kwargs


def plan_checkpointing(
    model: nn.Module,
    *inputs: Any,
    budget: int | float | str,
    loss_fn: Callable[[Any], torch.Tensor | None] | None = None,
    candidates: Candidates = None,
    forward_kwargs: dict[str, Any] | None = None,
    repeats: int = 3,
) -> CheckpointPlan:
    """Choose the blocks of ``model`` to checkpoint so one training step's activation peak fits
    ``budget``, at the least recompute time.

    Runs one counted training step of ``model`` on ``inputs`` (bytes, times, safety and the
    step's peak from the same step), then blocks of a structure met fewer than ``repeats`` times
    alone again for more time samples (on CUDA and accelerators with memory statistics one
    plain warm-up step first; see :mod:`ckptlint.runtime.plan.measure`), and solves the memory
    model of :mod:`ckptlint.runtime.plan.solve`.
    Parameters and their gradients are not part of the budget: it bounds what the step holds
    on top of them (activations, their gradients, temporaries).

    Args:
        model: the module, in the mode it trains in (``train()``), on its device.
        *inputs: positional inputs of ``model.forward``.
        budget: bytes (int or float), a string such as ``"8GiB"``, ``"512MiB"``, or a share of
            the measured peak without checkpointing, ``"50%"``.
        loss_fn: maps the output to a scalar; default :func:`ckptlint.runtime.default_loss`.
        candidates: block names, module classes, or a predicate ``(name, module) -> bool``;
            default: the layers a library switch checkpoints, else the children of the deepest
            ``ModuleList`` (:mod:`ckptlint.runtime.plan.candidates`).
        forward_kwargs: keyword arguments of ``model.forward``.
        repeats: forward-time samples per group of identical blocks (median), >= 1.

    Returns:
        a :class:`CheckpointPlan` (an empty ``chosen`` when the plain step fits).

    Raises:
        BudgetTooSmall: no plan's predicted peak fits; the message names the smallest budget.
        NoSafeBlocks: the plain step does not fit and every candidate is unsafe; the message
            says why per block and what would make them safe.
        ValueError, TypeError: a bad budget or bad candidates; what the model's step raises.
    """
    started = time.perf_counter()
    share = _share(budget)
    limit = parse_budget(budget) if share is None else 0
    names = resolve_candidates(model, candidates)
    notes: list[str] = []
    found = switch_layers(model)
    library = found[0] if found is not None and found[1] == names and found[0] in ("transformers", "diffusers", "timm") else None
    kwargs = _forward_kwargs(model, forward_kwargs, found[0] if found else None, notes)
    if not model.training:
        notes.append("the model is in eval mode: the plan is for an eval-mode step (call model.train() to plan training)")
    loss = loss_fn if loss_fn is not None else default_loss
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        measured = measure_blocks(model, inputs, kwargs, loss, names, repeats=repeats)
    verdicts = judge(measured.blocks)
    rows = [
        BlockRow(
            b.name, b.kind, b.saved_bytes, b.input_bytes, b.forward_s, safe=verdicts[b.name].safe,
            reason=verdicts[b.name].reason, kind_of_reason=verdicts[b.name].kind, group=b.signature,
        )
        for b in measured.blocks
    ]
    for r in rows:
        if r.safe and r.saved_bytes <= r.input_bytes:
            r.reason = "its inputs are not smaller than what it saves: checkpointing it cannot lower the peak"
    if share is not None:
        limit = max(1, int(share * (measured.rest_bytes + sum(r.saved_bytes for r in rows))))
    plan = _solve(rows, limit, measured, library, notes, (model, inputs, kwargs, loss_fn))
    plan.planning_s = time.perf_counter() - started
    return plan


def _share(budget: int | float | str) -> float | None:
    """``0.5`` for ``"50%"``; None for an absolute budget. Raises ValueError for a bad share."""
    if not isinstance(budget, str) or not budget.strip().endswith("%"):
        return None
    try:
        share = float(budget.strip()[:-1]) / 100
    except ValueError:
        raise ValueError(f"budget {budget!r}: expected a share such as '50%'") from None
    if not 0 < share:
        raise ValueError(f"budget {budget!r}: the share must be positive")
    return share


def _solve(
    rows: list[BlockRow], limit: int, measured: Measurement, library: str | None, notes: list[str], context: tuple,
) -> CheckpointPlan:
    safe_items = [Item(r.name, r.saved_bytes, r.input_bytes, r.forward_s, r.group) for r in rows if r.safe]
    rest = measured.rest_bytes + sum(r.saved_bytes for r in rows if not r.safe)
    all_rows = [Item(r.name, r.saved_bytes, r.input_bytes, r.forward_s, r.group) for r in rows]
    no_ckpt = peak_of(all_rows, measured.rest_bytes, set())
    all_names = {it.name for it in safe_items}
    all_safe = Solution(
        [it.name for it in safe_items], peak_of(safe_items, rest, all_names), sum(it.time_s for it in safe_items), items=len(safe_items)
    )
    smallest, smallest_set = smallest_peak(safe_items, rest)
    t0 = time.perf_counter()
    found = solve(safe_items, rest, limit)
    solve_s = time.perf_counter() - t0
    best_k = every_k(safe_items, rest, limit)
    chosen = set(found.chosen if found is not None else smallest_set)
    for r in rows:
        r.chosen = r.name in chosen
        if r.safe and not r.chosen and not r.reason:
            r.reason = _NOT_NEEDED
    plan = CheckpointPlan(
        rows, limit,
        found.peak if found is not None else smallest,
        found.time_s if found is not None else sum(it.time_s for it in safe_items if it.name in chosen),
        no_ckpt, measured.rest_bytes, smallest, all_safe, best_k, measured,
        solve_s=solve_s, gap_bound_s=found.gap_bound_s if found is not None else 0.0,
        library=library, notes=notes + (found.notes if found is not None else []), _context=context,
    )
    if found is None:
        if not safe_items:
            raise NoSafeBlocks(plan)
        raise BudgetTooSmall(limit, smallest, plan)
    return plan

"""Which blocks to checkpoint: the least recompute time whose predicted peak fits a budget.

The memory model (bytes; see docs/planner.md): checkpointing the set ``C`` of blocks gives the
predicted activation peak

    peak(C) = rest + sum(saved[i] for i not in C) + sum(inputs[i] for i in C) + max(saved[i] for i in C)

``saved[i]``: bytes block ``i`` keeps for backward without checkpointing; ``inputs[i]``: bytes
of its inputs, which a checkpoint keeps instead; the last term is the largest block recomputed
during backward (0 when ``C`` is empty); ``rest``: what the step holds outside the blocks. The
cost is ``sum(time[i] for i in C)``, seconds (one more forward of each checkpointed block).

:func:`solve` is exact for that model up to the rounding of times: blocks with equal structure
and equal bytes form one group (interchangeable: same memory, and the group's median time),
times are rounded to ``1 / resolution`` of the total, and a 0/1 knapsack over the rounded times
(binary-split groups) keeps the largest saving per time; the largest recomputed block is
handled by taking each group in turn, in ascending ``saved`` order, as the largest one. Bytes
are never rounded, so a plan it returns always fits under the model. The rounding can cost at
most ``gap_bound_s`` (reported) against the true optimum. :func:`brute_force` enumerates every
subset (at most 22 blocks) for tests and evaluation.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

__all__ = ["Item", "Solution", "brute_force", "every_k", "peak_of", "smallest_peak", "solve"]

#: time resolution of the dynamic programme: units per total recompute time (capped by memory)
RESOLUTION = 32768
_MAX_TABLE = 2**25  # booleans kept for reconstruction (32 MiB)


@dataclass(frozen=True)
class Item:
    """One candidate block for the solver.

    Attributes:
        name: the block's name as ``model.named_modules()`` gives it.
        saved: bytes it keeps for backward when not checkpointed.
        inputs: bytes a checkpoint keeps instead (its inputs).
        time_s: its forward time, seconds (the recompute cost).
        group: a key equal for blocks of identical structure (``""``: its own group).
    """

    name: str
    saved: int
    inputs: int
    time_s: float
    group: str = ""


@dataclass
class Solution:
    """A set of blocks to checkpoint and what the model predicts for it.

    Attributes:
        chosen: names of the blocks to checkpoint, in the order of the items given.
        peak: predicted activation peak, bytes.
        time_s: predicted recompute time, seconds.
        gap_bound_s: how much slower than the exact optimum the rounding of times may make the
            plan, seconds (0 for :func:`brute_force`).
        groups: number of groups the items formed; items: candidates considered.
    """

    chosen: list[str]
    peak: int
    time_s: float
    gap_bound_s: float = 0.0
    groups: int = 0
    items: int = 0
    notes: list[str] = field(default_factory=list)


def peak_of(items: Sequence[Item], rest: int, chosen: set[str]) -> int:
    """``peak(C)`` of the module docstring for the names in ``chosen``, bytes."""
    total = rest
    largest = 0
    for it in items:
        if it.name in chosen:
            total += it.inputs
            largest = max(largest, it.saved)
        else:
            total += it.saved
    return total + largest


def _time(items: Sequence[Item], chosen: set[str]) -> float:
    return sum(it.time_s for it in items if it.name in chosen)


def smallest_peak(items: Sequence[Item], rest: int) -> tuple[int, list[str]]:
    """The smallest ``peak(C)`` any set reaches and that set (bytes, names)."""
    base = rest + sum(it.saved for it in items)
    best, best_set = base, []
    useful = sorted((it for it in items if it.saved > it.inputs), key=lambda it: it.saved)
    saving = 0
    for i, it in enumerate(useful):
        saving += it.saved - it.inputs
        if i + 1 < len(useful) and useful[i + 1].saved == it.saved:
            continue  # take every block of this size before trying it as the largest
        peak = base - saving + it.saved
        if peak < best:
            best, best_set = peak, [u.name for u in useful[: i + 1]]
    order = {it.name: i for i, it in enumerate(items)}
    return best, sorted(best_set, key=order.__getitem__)


@dataclass
class _Group:
    members: list[Item]
    saved: int
    inputs: int
    time_s: float
    weight: int = 0

    @property
    def value(self) -> int:
        return self.saved - self.inputs


def _groups(items: Sequence[Item]) -> list[_Group]:
    by_key: dict[tuple, list[Item]] = {}
    for i, it in enumerate(items):
        key = (it.group or f"#{i}", it.saved, it.inputs)
        by_key.setdefault(key, []).append(it)
    groups = [
        _Group(members, members[0].saved, members[0].inputs, statistics.median(m.time_s for m in members))
        for members in by_key.values()
    ]
    return sorted(groups, key=lambda g: (g.saved, g.time_s))


def _spread(members: list[Item], k: int) -> list[Item]:
    """``k`` of ``members`` spread evenly over their order (identical blocks: any k would do)."""
    n = len(members)
    if k >= n:
        return list(members)
    return [members[(2 * j + 1) * n // (2 * k)] for j in range(k)]


def solve(items: Sequence[Item], rest: int, budget: int, *, resolution: int = RESOLUTION) -> Solution | None:
    """The set of ``items`` with the least recompute time whose ``peak`` is <= ``budget``.

    Returns None when no set fits (see :func:`smallest_peak`), an empty set when nothing needs
    checkpointing. Items whose inputs are at least their saved bytes are never chosen (they
    cannot lower the peak). Runs in O(groups x resolution) vector steps: >= 1,000 distinct
    blocks in under a second. torch runs the vector steps on one thread (the vectors are short:
    more threads only wait on each other); the thread count is put back afterwards.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _solve(items, rest, budget, resolution)
    finally:
        torch.set_num_threads(threads)


def _solve(items: Sequence[Item], rest: int, budget: int, resolution: int) -> Solution | None:
    base = rest + sum(it.saved for it in items)
    if base <= budget:
        return Solution([], base, 0.0, items=len(items))
    groups = [g for g in _groups(items) if g.value > 0]
    if not groups:
        return None
    total_time = sum(g.time_s * len(g.members) for g in groups)
    splits = sum((len(g.members) - 1).bit_length() + 1 for g in groups)
    units = max(256, min(resolution, _MAX_TABLE // max(1, splits)))
    unit = total_time / units if total_time > 0 else 1.0
    for g in groups:
        g.weight = round(g.time_s / unit)
    width = sum(g.weight * len(g.members) for g in groups) + 1
    dp = torch.zeros(width, dtype=torch.int64)  # dp[u]: the largest saving at a rounded cost <= u
    history: list[tuple[int, int, torch.Tensor]] = []  # (group, copies, taken at cost u: take[u - weight])

    def add(dp: torch.Tensor, gi: int, copies: int) -> torch.Tensor:
        g = groups[gi]
        w, v = g.weight * copies, g.value * copies
        if w >= width:
            return dp
        tail = dp[: width - w] + v  # taking the copies: cost u - w -> u
        take = tail > dp[w:]
        history.append((gi, copies, take))
        out = dp.clone()
        out[w:] = torch.maximum(dp[w:], tail)
        return out

    def add_many(dp: torch.Tensor, gi: int, count: int) -> torch.Tensor:
        k = 1
        while count > 0:  # binary split: any 0..count copies stay reachable
            c = min(k, count)
            dp = add(dp, gi, c)
            count -= c
            k *= 2
        return dp

    best: tuple[int, int, int, int] | None = None  # (cost units, forced group, history length, u)
    for gi, g in enumerate(groups):
        dp_with = add_many(dp, gi, len(g.members) - 1)
        need = base + g.saved - budget - g.value  # saving still needed after one forced block of g
        if int(dp_with[-1]) >= need:  # dp is non-decreasing in u: binary search
            u = int(torch.searchsorted(dp_with, torch.tensor([need], dtype=torch.int64))[0])
            cost = u + g.weight
            if best is None or cost < best[0]:
                best = (cost, gi, len(history), u)
        dp = add(dp_with, gi, 1)
    if best is None:
        return None
    _, forced, length, u = best
    counts = [0] * len(groups)
    counts[forced] += 1
    for gi, copies, take in reversed(history[:length]):
        w = groups[gi].weight * copies
        if u >= w and bool(take[u - w]):
            counts[gi] += copies
            u -= w
    chosen = {m.name for gi, g in enumerate(groups) for m in _spread(g.members, counts[gi])}
    ordered = [it.name for it in items if it.name in chosen]
    # true(C) - true(C*) <= err(C) - err(C*) with err = time - unit * weight per block
    errors = [g.time_s - unit * g.weight for g in groups for _ in g.members]
    chosen_error = sum(max(0.0, g.time_s - unit * g.weight) * counts[gi] for gi, g in enumerate(groups))
    gap = chosen_error + sum(max(0.0, -e) for e in errors) if total_time > 0 else 0.0
    return Solution(
        ordered, peak_of(items, rest, chosen), _time(items, chosen),
        gap_bound_s=gap,
        groups=len(groups), items=len(items),
        notes=[f"solver: {len(items)} candidates in {len(groups)} groups of identical blocks; times rounded to {unit * 1e3:.4f} ms"],
    )


def brute_force(items: Sequence[Item], rest: int, budget: int) -> Solution | None:
    """The exact optimum by enumerating all ``2**n`` subsets (``n <= 22``); None when none fits."""
    n = len(items)
    if n > 22:
        raise ValueError(f"brute force is for at most 22 candidates, got {n}")
    saving = torch.zeros(1, dtype=torch.int64)
    largest = torch.zeros(1, dtype=torch.int64)
    cost = torch.zeros(1, dtype=torch.float64)
    for it in items:  # subset bit i <-> item i
        saving = torch.cat([saving, saving + (it.saved - it.inputs)])
        largest = torch.cat([largest, torch.clamp(largest, min=it.saved)])
        cost = torch.cat([cost, cost + it.time_s])
    base = rest + sum(it.saved for it in items)
    peak = base - saving + largest
    fits = peak <= budget
    if not bool(fits.any()):
        return None
    masked = torch.where(fits, cost, torch.full_like(cost, float("inf")))
    best = int(torch.argmin(masked))
    chosen = {it.name for i, it in enumerate(items) if best >> i & 1}
    return Solution([it.name for it in items if it.name in chosen], int(peak[best]), float(cost[best]), items=n)


def every_k(items: Sequence[Item], rest: int, budget: int) -> tuple[int, Solution] | None:
    """The best "checkpoint every k-th block" plan that fits (block ``i`` when ``i % k == 0``,
    as transformers' ``every_n_layers``): ``(k, solution)``, or None when no k fits."""
    best: tuple[int, Solution] | None = None
    for k in range(1, len(items) + 1):
        chosen = {it.name for i, it in enumerate(items) if i % k == 0}
        peak = peak_of(items, rest, chosen)
        if peak <= budget:
            sol = Solution([it.name for it in items if it.name in chosen], peak, _time(items, chosen), items=len(items))
            if best is None or sol.time_s < best[1].time_s:
                best = (k, sol)
    return best

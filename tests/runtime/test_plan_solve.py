"""The planner's solver against brute force, its speed, and budgets as strings (no model runs)."""

from __future__ import annotations

import random
import time

import pytest

pytest.importorskip("torch")

from ckptlint.runtime.plan import Item, brute_force, every_k, parse_budget, solve
from ckptlint.runtime.plan.solve import peak_of, smallest_peak


def _instance(rng: random.Random, n: int) -> tuple[list[Item], int]:
    items = [
        Item(f"b{i}", rng.randint(1, 1000), rng.randint(0, 300), rng.uniform(0.001, 0.01), rng.choice(["", "layer"]))
        for i in range(n)
    ]
    return items, rng.randint(0, 500)


@pytest.mark.parametrize("seed", range(40))
def test_solve_matches_brute_force_within_its_gap_bound(seed):
    rng = random.Random(seed)
    items, rest = _instance(rng, rng.randint(1, 12))
    smallest, _ = smallest_peak(items, rest)
    budget = rng.randint(max(1, smallest - 50), rest + sum(it.saved for it in items) + 10)
    found, exact = solve(items, rest, budget), brute_force(items, rest, budget)
    assert (found is None) == (exact is None)
    if found is None:
        assert budget < smallest
        return
    assert found.peak == peak_of(items, rest, set(found.chosen)) <= budget
    assert found.time_s <= exact.time_s + found.gap_bound_s + 1e-12
    assert found.time_s <= exact.time_s * 1.05 + 1e-12  # the evaluation's "within 5 %"


def test_smallest_peak_is_what_brute_force_reaches():
    rng = random.Random(7)
    for _ in range(20):
        items, rest = _instance(rng, 8)
        smallest, names = smallest_peak(items, rest)
        assert peak_of(items, rest, set(names)) == smallest
        assert brute_force(items, rest, smallest) is not None
        assert brute_force(items, rest, smallest - 1) is None


def test_nothing_to_checkpoint_when_the_plain_step_fits():
    items = [Item("a", 100, 10, 1.0), Item("b", 100, 10, 1.0)]
    found = solve(items, 50, 250)
    assert found is not None and found.chosen == [] and found.peak == 250 and found.time_s == 0


def test_the_largest_recomputed_block_counts():
    # checkpointing the big block saves 900 but recomputes 1000 at once: only the small ones help
    items = [Item("big", 1000, 100, 0.1), Item("s1", 300, 10, 0.5), Item("s2", 300, 10, 0.5)]
    found = solve(items, 0, 1320)
    assert found is not None and set(found.chosen) == {"s1", "s2"}
    assert found.peak == 1000 + 20 + 300


def test_blocks_whose_inputs_are_not_smaller_are_never_chosen():
    items = [Item("expand", 100, 400, 0.001), Item("b1", 1000, 10, 1.0), Item("b2", 1000, 10, 1.0)]
    found = solve(items, 0, 1200)
    assert found is not None and found.chosen == ["b1", "b2"] and found.peak == 100 + 20 + 1000


def test_every_k_picks_the_cheapest_k_that_fits():
    items = [Item(f"l{i}", 100, 10, 1.0, "l") for i in range(8)]
    k, sol = every_k(items, 0, 8 * 100 - 4 * 90 + 100)
    assert k == 2 and sol.chosen == ["l0", "l2", "l4", "l6"]
    assert every_k(items, 0, 10) is None


def test_a_thousand_identical_blocks_solve_in_under_a_second():
    items = [Item(f"layers.{i}", 50 << 20, 1 << 20, 0.005, "layer") for i in range(1000)]
    t0 = time.perf_counter()
    found = solve(items, 1 << 30, (1 << 30) + 1000 * (50 << 20) // 3)
    elapsed = time.perf_counter() - t0
    assert found is not None and found.groups == 1
    assert elapsed < 1.0
    exact_count = -(-(1000 * (50 << 20) - 1000 * (50 << 20) // 3 + (50 << 20)) // (49 << 20))
    assert len(found.chosen) == exact_count  # the fewest identical blocks that fit


@pytest.mark.slow
def test_a_thousand_distinct_blocks_solve_fast():
    rng = random.Random(0)
    items = [Item(f"b{i}", rng.randint(10**6, 10**8), rng.randint(10**5, 10**6), rng.uniform(0.001, 0.01)) for i in range(1000)]
    rest = 10**8
    t0 = time.perf_counter()
    found = solve(items, rest, (rest + sum(it.saved for it in items)) // 2)
    assert found is not None and time.perf_counter() - t0 < 5.0  # ~0.8 s on a loaded 2-core machine
    assert found.gap_bound_s < 0.1 * found.time_s


@pytest.mark.parametrize(
    ("text", "expected"),
    [("8GiB", 8 * 2**30), ("512 MiB", 512 * 2**20), ("1.5GB", 1_500_000_000), ("100", 100), (2048, 2048), ("2k", 2048)],
)
def test_budgets_parse(text, expected):
    assert parse_budget(text) == expected


@pytest.mark.parametrize("bad", ["8 parsecs", "-1GiB", "0", "", "GiB"])
def test_bad_budgets_are_refused(bad):
    with pytest.raises(ValueError, match="budget"):
        parse_budget(bad)

"""Evaluate the checkpoint planner on eight small real models at 30/50/70 % budgets.

For each model (benchmarks/plan_models.py) one measurement (plan_checkpointing with the
budget "100%"), then for each share of the measured peak without checkpointing a plan from
that measurement (``plan.with_budget``), verified by ``plan.verify()`` (on/off equivalence and
the op-level peak of a planned step, independent of the saved-tensor accounting) and compared
with checkpointing every safe block, the best every-k-th plan and, for <= 20 candidates, the
brute-force optimum on the same predicted costs. The planning cost is set against one plain
training step of the model, in wall time (the median of its verifications' plain steps) and in
CPU time (the median of three plain steps). Also times the solver on 1,000 candidates.

Run: ``python benchmarks/plan_eval.py [--models gpt2,llama] [--out benchmarks/results/plan_eval.md]``.
Uses one torch thread (shared 2-core machines); takes a few minutes.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from plan_models import MODELS

from ckptlint.runtime.plan import BudgetTooSmall, Item, NoSafeBlocks, plan_checkpointing, solve

SHARES = (0.3, 0.5, 0.7)
MIB = 2**20


def _module_names(model: torch.nn.Module) -> list[str]:
    return [n for n, _ in model.named_modules()]


def evaluate(name: str) -> list[dict]:
    made = MODELS[name]()
    model, inputs, kwargs, loss_fn = made["model"], made["inputs"], made["forward_kwargs"], made["loss_fn"]
    keys, names = list(model.state_dict()), _module_names(model)
    t0, c0 = time.perf_counter(), time.process_time()
    base = plan_checkpointing(model, *inputs, budget="100%", loss_fn=loss_fn, forward_kwargs=kwargs)
    measure_wall, measure_cpu = time.perf_counter() - t0, time.process_time() - c0
    step_cpu = _step_cpu_s(model, inputs, kwargs, loss_fn)
    rows = []
    for share in SHARES:
        case: dict = {"model": name, "share": share, "candidates": len(base.rows), "safe": sum(r.safe for r in base.rows)}
        case["unsafe"] = {r.name: r.reason for r in base.rows if not r.safe}
        case["no_ckpt_peak"] = base.no_checkpoint_peak_bytes
        try:
            plan = base.with_budget(f"{share * 100:g}%")
        except (BudgetTooSmall, NoSafeBlocks) as exc:
            p = exc.plan
            case.update(
                budget=p.budget_bytes, plan=None, smallest=p.smallest_peak_bytes, all_safe_peak=p.all_safe.peak,
                all_safe_fits=p.all_safe.peak <= p.budget_bytes,
            )
            rows.append(case)
            continue
        case.update(
            budget=plan.budget_bytes, plan=len(plan.chosen), chosen=plan.chosen, predicted=plan.predicted_peak_bytes,
            all_safe_peak=plan.all_safe.peak, all_safe_fits=plan.all_safe.peak <= plan.budget_bytes,
            recompute=plan.predicted_recompute_s, all_safe_s=plan.all_safe.time_s,
            every_k=None if plan.every_k is None else (plan.every_k[0], plan.every_k[1].time_s),
            gap_bound=plan.gap_bound_s, planning_s=base.planning_s - base.solve_s + plan.solve_s,
            measure_s=base.measurement.measure_s, counted_step_s=base.measurement.counted_step_s, rerun_s=base.measurement.rerun_s,
            reruns=base.measurement.reruns, solve_s=plan.solve_s, measure_wall=measure_wall, planning_cpu_s=measure_cpu,
            step_cpu_s=step_cpu,
        )
        exact = plan.brute_force() if case["safe"] <= 20 else None
        case["brute"] = None if exact is None else exact.time_s
        case["unsafe_chosen"] = [r.name for r in plan.rows if r.chosen and not r.safe]
        check = plan.verify(iters=2)
        case.update(
            measured=check.measured_peak_bytes, plain_measured=check.plain_peak_bytes, equivalent=check.equivalent,
            within=check.within_budget, plain_step_s=check.plain_step_s, planned_step_s=check.planned_step_s,
        )
        plan.apply(model)
        keys_applied = list(model.state_dict()) == keys
        plan.remove(model)
        case["restored"] = keys_applied and list(model.state_dict()) == keys and _module_names(model) == names
        rows.append(case)
    steps = [c["plain_step_s"] for c in rows if c.get("plan") is not None]
    for c in rows:  # one step of the model: the median over its verifications' plain steps
        c["step_s"] = statistics.median(steps) if steps else None
    return rows


def _step_cpu_s(model: torch.nn.Module, inputs: tuple, kwargs: dict, loss_fn: Any, runs: int = 3) -> float:
    """CPU time of one plain training step (median of ``runs``, gradients allocated beforehand)."""
    grads = {p: p.grad for p in model.parameters()}
    for p in grads:
        p.grad = torch.zeros_like(p)
    times = []
    for _ in range(runs):
        model.zero_grad(set_to_none=False)
        c0 = time.process_time()
        loss_fn(model(*inputs, **kwargs)).backward()
        times.append(time.process_time() - c0)
    for p, g in grads.items():
        p.grad = g
    return statistics.median(times)


def _mib(n: float | None) -> str:
    return "-" if n is None else f"{n / MIB:.2f}"


def _ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:.1f}"


def markdown(cases: list[dict]) -> str:
    head = (
        "| model | share | blocks (safe) | budget MiB | chosen | predicted MiB | measured MiB | meas/budget | "
        "recompute ms | every-k ms (k) | all-safe ms | brute ms | equiv | restored | plan s / step s | plan / step CPU | "
        "step ms plain -> planned |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for c in cases:
        if c.get("plan") is None:
            lines.append(
                f"| {c['model']} | {c['share']:.0%} | {c['candidates']} ({c['safe']}) | {_mib(c['budget'])} | no plan: smallest "
                f"{_mib(c['smallest'])} MiB; all-safe {_mib(c['all_safe_peak'])} MiB "
                f"{'FITS (bug)' if c['all_safe_fits'] else 'does not fit'} "
                "| | | | | | | | | | | | |"
            )
            continue
        ek = "-" if c["every_k"] is None else f"{_ms(c['every_k'][1])} ({c['every_k'][0]})"
        ratio = c["planning_s"] / c["step_s"]
        cpu = c["planning_cpu_s"] / c["step_cpu_s"]
        lines.append(
            f"| {c['model']} | {c['share']:.0%} | {c['candidates']} ({c['safe']}) | {_mib(c['budget'])} | {c['plan']} | "
            f"{_mib(c['predicted'])} | {_mib(c['measured'])} | {c['measured'] / c['budget']:.3f} | {_ms(c['recompute'])} | {ek} | "
            f"{_ms(c['all_safe_s'])} | {_ms(c['brute'])} | {c['equivalent']} | {c['restored']} | "
            f"{c['planning_s']:.2f} / {c['step_s']:.3f} = {ratio:.1f}x | {cpu:.1f}x | "
            f"{_ms(c['plain_step_s'])} -> {_ms(c['planned_step_s'])} |"
        )
    return "\n".join(lines)


def solver_timing() -> list[str]:
    rng = random.Random(0)
    out = []
    distinct = [Item(f"b{i}", rng.randint(10**6, 10**8), rng.randint(10**5, 10**6), rng.uniform(0.001, 0.01)) for i in range(1000)]
    same = [Item(f"l{i}", 50 * MIB, MIB, 0.005, "layer") for i in range(1000)]
    for label, items in (("1000 distinct", distinct), ("1000 identical", same)):
        rest = 10**8
        t0 = time.perf_counter()
        found = solve(items, rest, (rest + sum(it.saved for it in items)) // 2)
        elapsed = time.perf_counter() - t0
        assert found is not None
        out.append(
            f"- solver, {label} candidates: {elapsed:.3f} s, {found.groups} groups, {len(found.chosen)} chosen, "
            f"recompute {found.time_s:.3f} s, rounding gap bound {found.gap_bound_s:.4f} s ({found.gap_bound_s / found.time_s:.2%})"
        )
    return out


def scaling() -> list[str]:
    """Planning cost against one step for larger GPT-2 configs."""
    from transformers import GPT2Config, GPT2LMHeadModel

    out = []
    for width, seq in ((256, 256), (512, 512)):
        torch.manual_seed(0)
        cfg = GPT2Config(n_layer=6, n_embd=width, n_head=4, vocab_size=512, n_positions=1024, bos_token_id=0, eos_token_id=0)
        model = GPT2LMHeadModel(cfg).train()
        ids = torch.randint(0, 512, (4, seq), generator=torch.Generator().manual_seed(0))
        plan = plan_checkpointing(model, ids, budget="50%", loss_fn=lambda o: o.loss, forward_kwargs={"labels": ids})
        check = plan.verify(iters=2, equivalence=False)
        out.append(
            f"- GPT-2 n_embd={width}, 4x{seq} tokens: planning {plan.planning_s:.1f} s = {plan.planning_s / check.plain_step_s:.1f}x "
            f"one step ({check.plain_step_s:.2f} s); predicted {_mib(plan.predicted_peak_bytes)} MiB, measured "
            f"{_mib(check.measured_peak_bytes)} MiB, budget {_mib(plan.budget_bytes)} MiB, {len(plan.chosen)} of 6 blocks"
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--out", default=None)
    parser.add_argument("--scaling", action="store_true", help="only the planning cost on two larger GPT-2 configs (~3 min)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    try:
        from transformers.utils import logging

        logging.set_verbosity_error()
    except ImportError:
        pass
    if args.scaling:
        print("\n".join(scaling()))
        return
    cases = []
    for name in args.models.split(","):
        t0 = time.perf_counter()
        cases += evaluate(name)
        print(f"{name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    planned = [c for c in cases if c.get("plan") is not None]
    wall = [c["planning_s"] / c["step_s"] for c in planned]
    cpu = [c["planning_cpu_s"] / c["step_cpu_s"] for c in planned]
    cost = (
        f"- planning cost (measure + solve) against one plain training step: wall time {min(wall):.1f}-{max(wall):.1f}x "
        f"(the step: median of the model's verifications' plain steps), CPU time {min(cpu):.1f}-{max(cpu):.1f}x"
    )
    text = "\n".join([markdown(cases), "", cost, *solver_timing()])
    unsafe = {c["model"]: c["unsafe"] for c in cases if c["unsafe"]}
    text += "\n" + "\n".join(f"- {m}: unsafe {', '.join(f'{k} ({v})' for k, v in u.items())}" for m, u in unsafe.items())
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
        Path(args.out).with_suffix(".json").write_text(json.dumps(cases, indent=1, default=str), encoding="utf-8")


if __name__ == "__main__":
    main()

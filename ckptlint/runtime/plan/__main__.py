"""``python -m ckptlint.runtime.plan package.module:factory --budget 8GiB``: a plan from the shell.

The factory is called with no arguments and returns ``(model, inputs)`` -- ``inputs`` a tensor
or a tuple of positional inputs -- or a dict with ``model``, ``inputs`` and optionally
``forward_kwargs``, ``loss_fn`` and ``candidates``. The model is planned as returned (put it
in ``train()`` mode and on its device in the factory). Prints the summary, the table and the
code; ``--verify`` adds the on/off check and the measured peak, ``--chart FILE`` writes the SVG
chart, ``--json`` prints the plan as JSON instead.

Exit status: 0 a plan (verified, with ``--verify``); 1 the verification failed; 2 no plan
fits the budget or every candidate is unsafe (the message says the smallest budget or why);
3 the factory could not be loaded or returned something else.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .planner import BudgetTooSmall, CheckpointPlan, NoSafeBlocks, plan_checkpointing


def _load(spec: str) -> dict[str, Any]:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"expected package.module:factory, got {spec!r}")
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    target: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        target = getattr(target, part)
    made = target()
    if isinstance(made, dict):
        if "model" not in made or "inputs" not in made:
            raise ValueError(f"{spec} returned a dict without 'model' and 'inputs'")
        out = dict(made)
    elif isinstance(made, tuple) and len(made) == 2:
        out = {"model": made[0], "inputs": made[1]}
    else:
        raise ValueError(f"{spec} must return (model, inputs) or a dict with 'model' and 'inputs', got {type(made).__name__}")
    if not isinstance(out["inputs"], tuple):
        out["inputs"] = (out["inputs"],)
    return out


def _as_json(plan: CheckpointPlan, verification: Any) -> str:
    data = {
        "budget_bytes": plan.budget_bytes,
        "predicted_peak_bytes": plan.predicted_peak_bytes,
        "predicted_recompute_s": plan.predicted_recompute_s,
        "no_checkpoint_peak_bytes": plan.no_checkpoint_peak_bytes,
        "smallest_peak_bytes": plan.smallest_peak_bytes,
        "chosen": plan.chosen,
        "blocks": [
            {
                "name": r.name, "kind": r.kind, "saved_bytes": r.saved_bytes, "input_bytes": r.input_bytes,
                "forward_s": r.forward_s, "chosen": r.chosen, "safe": r.safe, "reason": r.reason,
            }
            for r in plan.rows
        ],
        "planning_s": plan.planning_s,
        "code": plan.to_code(),
        "notes": plan.notes,
    }
    if verification is not None:
        data["verification"] = {
            "equivalent": verification.equivalent, "measured_peak_bytes": verification.measured_peak_bytes,
            "within_budget": verification.within_budget, "plain_step_s": verification.plain_step_s,
            "planned_step_s": verification.planned_step_s,
        }
    return json.dumps(data, indent=2)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ckptlint.runtime.plan",
        description="Which blocks to checkpoint so a training step fits a memory budget (activation memory).",
    )
    parser.add_argument("factory", help="package.module:function returning (model, inputs) or a dict")
    parser.add_argument("--budget", required=True, help="bytes, a size such as 8GiB or 512MB, or a share such as 50%%")
    parser.add_argument("--candidates", default=None, help="comma-separated block names (default: the library's layers)")
    parser.add_argument("--style", default="auto", choices=("auto", "switch", "check_fn"), help="how to write the code")
    parser.add_argument("--verify", action="store_true", help="run the on/off check and measure the real peak")
    parser.add_argument("--chart", default=None, metavar="FILE", help="write an SVG chart of memory per block")
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    args = parser.parse_args(argv)
    try:
        made = _load(args.factory)
    except Exception as exc:  # noqa: BLE001 - any failure of the user's factory is reported, not raised
        print(f"error: cannot load {args.factory}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 3
    candidates = args.candidates.split(",") if args.candidates else made.get("candidates")
    try:
        plan = plan_checkpointing(
            made["model"], *made["inputs"], budget=args.budget, loss_fn=made.get("loss_fn"),
            candidates=candidates, forward_kwargs=made.get("forward_kwargs"),
        )
    except (BudgetTooSmall, NoSafeBlocks) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    verification = plan.verify() if args.verify else None
    if args.chart:
        Path(args.chart).write_text(plan.chart_svg(), encoding="utf-8")
    if args.json:
        print(_as_json(plan, verification))
    else:
        print(plan)
        print()
        print(plan.to_code(args.style))
        if verification is not None:
            print()
            print(verification)
    return 1 if verification is not None and not verification.ok else 0


if __name__ == "__main__":
    sys.exit(main())

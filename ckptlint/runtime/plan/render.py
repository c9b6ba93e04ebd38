"""A plan for people: the summary, the per-block table, the code to paste, an SVG chart."""

from __future__ import annotations

import html

from .result import PlanData
from .units import format_bytes

__all__ = ["chart_svg", "summary", "table", "to_code"]

_MIB = 2**20


def summary(plan: PlanData) -> str:
    """A few lines: budget, predicted peak and recompute, against checkpointing every safe block."""
    m = plan.measurement
    lines = [
        f"checkpoint plan: {len(plan.chosen)} of {len(plan.rows)} blocks, budget {format_bytes(plan.budget_bytes)}",
        f"  predicted peak {format_bytes(plan.predicted_peak_bytes)} (without checkpointing {format_bytes(plan.no_checkpoint_peak_bytes)}, "
        f"smallest reachable {format_bytes(plan.smallest_peak_bytes)}; rest of the step {format_bytes(plan.rest_bytes)})",
        f"  predicted recompute {plan.predicted_recompute_s * 1e3:.2f} ms per step "
        f"(checkpointing every safe block: {plan.all_safe.time_s * 1e3:.2f} ms)",
    ]
    warmup = f"warm-up step {m.warmup_s:.3f} s, " if m.warmup_s else ""
    if plan.every_k is not None:
        k, sol = plan.every_k
        lines.append(f"  best every-k that fits: k={k}, {sol.time_s * 1e3:.2f} ms, peak {format_bytes(sol.peak)}")
    lines.append(
        f"  planning {plan.planning_s:.2f} s: measure {m.measure_s:.2f} s ({warmup}counted step {m.counted_step_s:.3f} s, "
        f"{m.reruns} lone block runs {m.rerun_s:.3f} s, own hooks {m.hook_overhead_s * 1e3:.1f} ms), "
        f"solve {plan.solve_s * 1e3:.1f} ms; peak: {m.peak_method}"
    )
    lines += [f"  note: {n}" for n in plan.notes]
    return "\n".join(lines)


def table(plan: PlanData) -> str:
    """Per block: saved MiB, input MiB, forward ms, chosen, why not."""
    width = max([len("block"), *(len(r.name) for r in plan.rows)])
    head = f"{'block':<{width}}  {'kind':<22} {'saved MiB':>10} {'input MiB':>10} {'fwd ms':>8}  {'chosen':<6}  why not"
    lines = [head, "-" * len(head)]
    for r in plan.rows:
        why = "" if r.chosen else (r.reason or "")
        if not r.safe:
            why = "UNSAFE: " + why
        lines.append(
            f"{r.name:<{width}}  {r.kind[:22]:<22} {r.saved_bytes / _MIB:>10.3f} {r.input_bytes / _MIB:>10.3f} "
            f"{r.forward_s * 1e3:>8.3f}  {'yes' if r.chosen else 'no':<6}  {why}"
        )
    return "\n".join(lines)


def _switch_code(plan: PlanData) -> str | None:
    chosen, names = set(plan.chosen), [r.name for r in plan.rows]
    if plan.library == "transformers":
        for k in range(1, len(names) + 1):
            if chosen == {n for i, n in enumerate(names) if i % k == 0}:
                return (
                    "# transformers: checkpoint every layer i with i % k == 0 (non-reentrant by default)\n"
                    f"model.activation_checkpointing_enable(every_n_layers={k})"
                )
    if plan.library == "transformers":
        off = sorted(set(names) - chosen, key=names.index)
        return "\n".join([
            "model.activation_checkpointing_enable()  # non-reentrant by default",
            "# keep the activations of these layers (names as model.named_modules() gives them)",
            f"for name in {off!r}:",
            "    model.get_submodule(name).gradient_checkpointing = False",
        ])
    return None


def _check_fn_code(plan: PlanData) -> str:
    names = ",\n".join(f"    {n!r}" for n in plan.chosen)
    return (
        "import functools\n\n"
        "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (\n"
        "    CheckpointImpl,\n    apply_activation_checkpointing,\n    checkpoint_wrapper,\n)\n\n"
        "# names as model.named_modules() gives them\n"
        f"CHECKPOINT = {{\n{names}\n}}\n"
        "_chosen = {id(module) for name, module in model.named_modules() if name in CHECKPOINT}\n"
        "apply_activation_checkpointing(\n"
        "    model,\n"
        "    checkpoint_wrapper_fn=functools.partial(checkpoint_wrapper, checkpoint_impl=CheckpointImpl.NO_REENTRANT),\n"
        "    check_fn=lambda module: id(module) in _chosen,\n"
        ")"
    )


def to_code(plan: PlanData, style: str = "auto") -> str:
    """Python that applies the plan to a variable ``model``.

    ``"switch"``: the library's switch with its layer selection (transformers
    ``activation_checkpointing_enable(every_n_layers=k)`` when the plan is every k-th layer,
    else the switch and ``gradient_checkpointing = False`` on the layers to keep; diffusers'
    switch also flags blocks nested in the chosen ones, so diffusers plans use ``check_fn``);
    ``"check_fn"``: torch's
    ``apply_activation_checkpointing`` with a ``check_fn`` naming the blocks; ``"auto"``: the
    switch where the candidates are exactly the switch's layers, else ``check_fn``.

    Raises:
        ValueError: an unknown style, or ``"switch"`` for a model without one.
    """
    if style not in ("auto", "switch", "check_fn"):
        raise ValueError(f"style must be 'auto', 'switch' or 'check_fn', got {style!r}")
    if not plan.chosen:
        return "# the step fits the budget without checkpointing: nothing to apply"
    if style != "check_fn":
        code = _switch_code(plan)
        if code is not None:
            return code
        if style == "switch":
            raise ValueError("the candidates are not the layers of a library switch: use style='check_fn'")
    return _check_fn_code(plan)


def chart_svg(plan: PlanData) -> str:
    """An SVG chart of activation memory along the forward, one bar per block: the memory kept
    after the block without checkpointing (outline) and with the plan (filled: checkpointed
    blocks blue, unsafe ones grey, others light blue), the rest of the step at the bottom, and
    lines for the budget (red, dashed) and the predicted peak (with the largest recomputed
    block, dotted)."""
    rows = plan.rows
    bar, gap, left, top, height = 22, 6, 90, 40, 240
    plain, planned = [plan.rest_bytes], [plan.rest_bytes]
    for r in rows:
        plain.append(plain[-1] + r.saved_bytes)
        planned.append(planned[-1] + (r.input_bytes if r.chosen else r.saved_bytes))
    top_value = max([1, plain[-1], plan.budget_bytes, plan.predicted_peak_bytes])
    width = max(720, left + len(rows) * (bar + gap) + 120)

    def y(value: float) -> float:
        return top + height - height * value / top_value

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{top + height + 160}" '
        'font-family="sans-serif" font-size="11">',
        f'<text x="10" y="16">activation memory kept after each block: outline without checkpointing, filled with the plan '
        f'({len(plan.chosen)} of {len(rows)} blocks checkpointed, blue)</text>',
        f'<text x="10" y="30">budget {html.escape(format_bytes(plan.budget_bytes))}, predicted peak '
        f'{html.escape(format_bytes(plan.predicted_peak_bytes))}, without checkpointing '
        f'{html.escape(format_bytes(plan.no_checkpoint_peak_bytes))}</text>',
        f'<rect x="{left - 8}" y="{y(plan.rest_bytes):.1f}" width="{len(rows) * (bar + gap) + 8}" '
        f'height="{y(0) - y(plan.rest_bytes):.1f}" fill="#eeeeee"/>',
    ]
    for i, r in enumerate(rows):
        x = left + i * (bar + gap)
        colour = "#2b6cb0" if r.chosen else ("#999999" if not r.safe else "#bee3f8")
        parts.append(f'<rect x="{x}" y="{y(plain[i + 1]):.1f}" width="{bar}" height="{y(0) - y(plain[i + 1]):.1f}" '
                     'fill="none" stroke="#4a5568" stroke-dasharray="2 2"/>')
        parts.append(f'<rect x="{x + 3}" y="{y(planned[i + 1]):.1f}" width="{bar - 6}" '
                     f'height="{y(0) - y(planned[i + 1]):.1f}" fill="{colour}"/>')
        parts.append(f'<text transform="translate({x + bar / 2},{top + height + 8}) rotate(60)">{html.escape(r.name)}</text>')
    right = left + len(rows) * (bar + gap)
    for value, label, style in (
        (plan.budget_bytes, "budget", 'stroke="#e53e3e" stroke-dasharray="6 3"'),
        (plan.predicted_peak_bytes, "predicted peak", 'stroke="#2b6cb0" stroke-dasharray="1 3"'),
    ):
        parts.append(f'<line x1="{left - 8}" x2="{right}" y1="{y(value):.1f}" y2="{y(value):.1f}" {style} stroke-width="1.5"/>')
        parts.append(f'<text x="{right + 4}" y="{y(value) + 4:.1f}">{label}</text>')
    parts.append(f'<text x="10" y="{y(top_value) + 4:.1f}">{top_value / _MIB:.1f} MiB</text>')
    parts.append(f'<text x="10" y="{y(0):.1f}">0</text>')
    parts.append(f'<text x="10" y="{y(plan.rest_bytes / 2) + 4:.1f}">rest</text>')
    parts.append("</svg>")
    return "\n".join(parts)

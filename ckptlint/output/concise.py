"""The default format: one line a finding, then a summary (ruff's ``concise``)."""

from __future__ import annotations

from collections.abc import Sequence

from ckptlint.diagnostics import Applicability, Diagnostic
from ckptlint.output.base import OutputContext, display_path

__all__ = ["render", "summary"]


def render(diagnostics: Sequence[Diagnostic], ctx: OutputContext) -> str:
    lines = []
    for d in diagnostics:
        marker = " [*]" if ctx.is_fixable(d) else ""
        path = display_path(d.path, ctx.cwd)
        lines.append(f"{path}:{d.start[0]}:{d.start[1]}: {d.code}{marker} {d.message}")
    text = "\n".join(lines)
    tail = summary(diagnostics, ctx)
    return (text + "\n" if text else "") + tail


def summary(diagnostics: Sequence[Diagnostic], ctx: OutputContext) -> str:
    """ruff's closing lines: counts, what ``--fix`` would do, hidden unsafe fixes."""
    remaining = len(diagnostics)
    if ctx.fix_applied and ctx.fixed:
        total = remaining + ctx.fixed
        head = f"Found {total} error{'s' if total != 1 else ''} ({ctx.fixed} fixed, {remaining} remaining)."
    elif remaining == 0:
        return "All checks passed!\n"
    else:
        head = f"Found {remaining} error{'s' if remaining != 1 else ''}."
    lines = [head]
    fixable = sum(1 for d in diagnostics if ctx.is_fixable(d))
    hidden = sum(
        1
        for d in diagnostics
        if d.fix is not None and d.fix.applicability is Applicability.UNSAFE and not ctx.unsafe_fixes
    )
    if fixable and not ctx.fix_applied:
        line = f"[*] {fixable} fixable with the `--fix` option"
        if hidden:
            line += f" ({hidden} hidden fix{'es' if hidden != 1 else ''} can be enabled with the `--unsafe-fixes` option)"
        lines.append(line + ".")
    elif hidden:
        lines.append(
            f"No fixes available ({hidden} hidden fix{'es' if hidden != 1 else ''} can be enabled with the "
            "`--unsafe-fixes` option)."
        )
    return "\n".join(lines) + "\n"

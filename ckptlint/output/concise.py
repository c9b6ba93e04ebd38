"""The default format: one line a finding, then a summary (ruff's ``concise``)."""

from __future__ import annotations

from collections.abc import Sequence

from ckptlint.output.base import OutputContext, display_path, rule_name
from ckptlint.text.diagnostics import Applicability, Diagnostic
from ckptlint.text.source import location_label

__all__ = ["fixes_applied", "render", "summary"]


def render(diagnostics: Sequence[Diagnostic], ctx: OutputContext) -> str:
    lines = []
    for d in diagnostics:
        marker = " [*]" if ctx.is_fixable(d) else ""
        where = location_label(display_path(d.path, ctx.cwd), *d.start, cell=d.cell)
        lines.append(f"{where}: {d.code}{marker} {d.message}")
    text = "\n".join(lines)
    tail = summary(diagnostics, ctx)
    return (text + "\n" if text else "") + tail


def fixes_applied(ctx: OutputContext) -> str:
    """``--show-fixes``: what ``--fix`` changed, per file and rule (ruff's layout)::

        Fixed 3 errors:
        - src/model.py:
            2 × CKP001 (checkpoint-without-use-reentrant)
    """
    files = {path: codes for path, codes in ctx.fixed_by_file.items() if codes}
    if not (ctx.show_fixes and ctx.fix_applied and files):
        return ""
    total = sum(sum(codes.values()) for codes in files.values())
    lines = ["", f"Fixed {total} error{'s' if total != 1 else ''}:"]
    for path in sorted(files, key=lambda p: display_path(p, ctx.cwd)):
        lines.append(f"- {display_path(path, ctx.cwd)}:")
        for code, count in sorted(files[path].items(), key=lambda item: (-item[1], item[0])):
            lines.append(f"    {count} × {code} ({rule_name(code)})")
    return "\n".join(lines) + "\n\n"


def summary(diagnostics: Sequence[Diagnostic], ctx: OutputContext) -> str:
    """ruff's closing lines: what ``--show-fixes`` lists, counts, what ``--fix`` would do,
    hidden unsafe fixes. Nothing under ``--quiet``."""
    if ctx.quiet:
        return ""
    return fixes_applied(ctx) + _counts(diagnostics, ctx)


def _counts(diagnostics: Sequence[Diagnostic], ctx: OutputContext) -> str:
    remaining = len(diagnostics)
    if ctx.fix_applied and ctx.fixed:
        total = remaining + ctx.fixed
        head = f"Found {total} error{'s' if total != 1 else ''} ({ctx.fixed} fixed, {remaining} remaining)."
    elif remaining == 0 and ctx.interrupted:
        return "No errors in the files checked before the run was stopped.\n"
    elif remaining == 0 and ctx.incomplete:
        files = f"{ctx.incomplete} file{'s' if ctx.incomplete != 1 else ''}"
        return f"No errors found, but {files} could not be fully checked (internal error above).\n"
    elif remaining == 0:
        return "All checks passed!\n"
    else:
        head = f"Found {remaining} error{'s' if remaining != 1 else ''}."
    lines = [head]
    fixable = sum(1 for d in diagnostics if ctx.is_fixable(d))
    hidden = sum(
        1
        for d in diagnostics
        if d.fix is not None and d.fix.applicability is Applicability.UNSAFE and d.fix.chosen(ctx.unsafe_fixes) is None
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

"""``full``: each finding with a few lines of source, the reported range marked, and its fix
as a diff (ruff's ``full`` layout)::

    CKP001 [*] `checkpoint()` without `use_reentrant`: ...
     --> model.py:5:9
      |
    4 | def forward(x):
    5 |     x = checkpoint(block, x)
      |         ^^^^^^^^^^^^^^^^^^^^
      |
    help: Pass `use_reentrant=False`
      |
    4 | def forward(x):
      -     x = checkpoint(block, x)
    5 +     x = checkpoint(block, x, use_reentrant=False)
      |
    note: This is an unsafe fix and may change runtime behavior

A range over several lines is drawn with a bar down the left (``/`` ... ``|_^``). Tabs are
shown as four spaces; columns stay the 1-based character columns of the header.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from ckptlint.output.base import OutputContext, display_path
from ckptlint.output.concise import summary
from ckptlint.text.diagnostics import Applicability, Diagnostic, Fix
from ckptlint.text.fixer import apply_edits
from ckptlint.text.source import SourceFile, location_label, split_lines

__all__ = ["render"]

CONTEXT = 2  # source lines shown before and after the range
DIFF_CONTEXT = 1  # unchanged lines shown around a fix's change
_NOTES = {
    Applicability.UNSAFE: "note: This is an unsafe fix and may change runtime behavior",
    Applicability.DISPLAY_ONLY: "note: This is a display-only fix and is likely to be incorrect",
}


def render(diagnostics: Sequence[Diagnostic], ctx: OutputContext) -> str:
    blocks = [_finding(d, ctx) for d in diagnostics]
    body = "".join(block + "\n\n" for block in blocks)
    return body + summary(diagnostics, ctx)


def _finding(d: Diagnostic, ctx: OutputContext) -> str:
    marker = " [*]" if ctx.is_fixable(d) else ""
    source = ctx.source(d.path, d.cell)
    lines = [f"{d.code}{marker} {d.message}"]
    location = location_label(display_path(d.path, ctx.cwd), *d.start, cell=d.cell)
    if source is None or d.start[0] > len(source.line_starts):
        return "\n".join([*lines, f" --> {location}"])
    lines += _snippet(source, d, location)
    if d.fix is not None:
        # the fix --fix applies in this run (CKP001's safe fallback without --unsafe-fixes)
        lines += _fix_diff(source, d.fix.chosen(ctx.unsafe_fixes) or d.fix)
    return "\n".join(lines)


def _show(text: str) -> str:
    return text.replace("\t", "    ")


def _display_col(line: str, column: int) -> int:
    """0-based display offset of 1-based character ``column`` of ``line`` (tabs as 4)."""
    return len(_show(line[: column - 1]))


def _snippet(source: SourceFile, d: Diagnostic, location: str) -> list[str]:
    last_row = len(source.line_starts)
    start_row, start_col = d.start
    end_row, end_col = min(d.end[0], last_row), d.end[1]
    multi = end_row > start_row
    first = max(1, start_row - CONTEXT)
    last = min(last_row, end_row + CONTEXT)
    while first < start_row and not source.line(first).strip():
        first += 1
    while last > end_row and not source.line(last).strip():
        last -= 1
    width = len(str(last))
    gutter = " " * (width + 1) + "|"
    out = [" " * width + f"--> {location}", gutter]
    start_line = source.line(start_row)
    bar = multi and not start_line[: start_col - 1].strip()
    for row in range(first, last + 1):
        text = _show(source.line(row))
        if not multi:
            out.append(f"{row:>{width}} | {text}".rstrip())
            if row == start_row:
                begin = _display_col(start_line, start_col)
                length = max(1, _display_col(start_line, end_col) - begin) if end_row == start_row else 1
                out.append(f"{gutter} {' ' * begin}{'^' * length}")
            continue
        if row == start_row:
            prefix = "/ " if bar else "  "
        elif start_row < row <= end_row:
            prefix = "| "
        else:
            prefix = "  "
        out.append(f"{row:>{width}} | {prefix}{text}".rstrip())
        if row == start_row and not bar:
            out.append(f"{gutter}  {'_' * (_display_col(start_line, start_col) + 1)}^")
        if row == end_row:
            caret = _display_col(source.line(end_row), max(1, end_col - 1))  # the last character
            out.append(f"{gutter} |{'_' * (caret + 1)}^")
    if last > end_row:
        out.append(gutter)
    return out


def _fix_diff(source: SourceFile, fix: Fix) -> list[str]:
    out = [f"help: {fix.message}"]
    try:
        edits = [(source.offset(e.start), source.offset(e.end), e.content) for e in fix.edits]
        fixed = apply_edits(source.text, edits)
    except ValueError:
        return out
    old = split_lines(source.text)
    new = split_lines(fixed)
    groups = list(difflib.SequenceMatcher(None, old, new, autojunk=False).get_grouped_opcodes(DIFF_CONTEXT))
    if groups:
        width = len(str(max(j2 for group in groups for _, _, _, _, j2 in group)))
        gutter = " " * (width + 1) + "|"
        out.append(gutter)
        for number, group in enumerate(groups):
            if number:
                out.append(" " * (width + 1) + "...")
            for tag, i1, i2, j1, j2 in group:
                if tag == "equal":
                    out += [f"{j + 1:<{width}} | {_show(new[j])}".rstrip() for j in range(j1, j2)]
                    continue
                out += [f"{' ' * width} - {_show(old[i])}".rstrip() for i in range(i1, i2)]
                out += [f"{j + 1:<{width}} + {_show(new[j])}".rstrip() for j in range(j1, j2)]
        out.append(gutter)
    note = _NOTES.get(fix.applicability)
    if note:
        out.append(note)
    return out

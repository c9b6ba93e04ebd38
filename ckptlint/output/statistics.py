"""``--statistics``: findings counted per rule (ruff's layout).

Text: one line a rule, most frequent first (then by code)::

    12	CKP001	[*] checkpoint-without-use-reentrant

(count right-aligned, code padded to the longest; with the current fix settings ``[*]`` when
every finding of that rule is fixable, ``[-]`` when some are, ``[ ]`` when none is: ruff's
markers since ruff PR #21513, 2025-11; like ruff, no marker at all when no finding is
fixable), then the usual summary. With ``--output-format json``:
a list of ``{"code", "name", "count", "fixable", "fixable_count"}``, ``fixable`` true when every
finding of the rule is fixable (ruff's meaning) and ``fixable_count`` how many are.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ckptlint.output.base import OutputContext, rule_name
from ckptlint.output.concise import summary
from ckptlint.text.diagnostics import Diagnostic

__all__ = ["render_json", "render_text", "statistics"]


def statistics(diagnostics: Sequence[Diagnostic], ctx: OutputContext) -> list[dict[str, Any]]:
    counts: dict[str, int] = {}
    fixable: dict[str, int] = {}
    for d in diagnostics:
        counts[d.code] = counts.get(d.code, 0) + 1
        fixable[d.code] = fixable.get(d.code, 0) + (1 if ctx.is_fixable(d) else 0)
    return [
        {
            "code": code,
            "name": rule_name(code),
            "count": count,
            "fixable": fixable[code] == count,
            "fixable_count": fixable[code],
        }
        for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    ]


def render_text(diagnostics: Sequence[Diagnostic], ctx: OutputContext) -> str:
    rows = statistics(diagnostics, ctx)
    count_width = max((len(str(r["count"])) for r in rows), default=1)
    code_width = max((len(r["code"]) for r in rows), default=1)
    # ruff prints the markers only when some finding is fixable (printer.rs, `any_fixable`)
    marked = any(r["fixable_count"] for r in rows)
    lines = [
        f"{r['count']:>{count_width}}\t{r['code']:<{code_width}}\t{_marker(r) + ' ' if marked else ''}{r['name']}"
        for r in rows
    ]
    return "".join(line + "\n" for line in lines) + summary(diagnostics, ctx)


def _marker(row: dict[str, Any]) -> str:
    """``[*]`` every finding fixable, ``[-]`` some, ``[ ]`` none (ruff)."""
    if row["fixable_count"] == 0:
        return "[ ]"
    return "[*]" if row["fixable_count"] == row["count"] else "[-]"


def render_json(diagnostics: Sequence[Diagnostic], ctx: OutputContext) -> str:
    return json.dumps(statistics(diagnostics, ctx), indent=2, ensure_ascii=False) + "\n"

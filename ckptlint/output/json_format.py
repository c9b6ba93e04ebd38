"""``json``: ruff's record shape, a list of objects sorted like the text output."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from ckptlint.docs import rule_url
from ckptlint.output.base import OutputContext, printable
from ckptlint.registry import RULES
from ckptlint.text.diagnostics import Diagnostic

__all__ = ["record", "render"]


def record(d: Diagnostic, ctx: OutputContext) -> dict[str, Any]:
    """One diagnostic as ruff's JSON record (1-based rows and columns, absolute filename)."""
    rule = RULES.get(d.code)
    return {
        "cell": d.cell,  # notebooks: the 1-based cell; rows are relative to it (ruff)
        "code": d.code,
        "end_location": {"column": d.end[1], "row": d.end[0]},
        "filename": printable(os.path.abspath(d.path) if not d.path.startswith("-") else d.path),
        "fix": d.fix.to_dict() if d.fix else None,
        "location": {"column": d.start[1], "row": d.start[0]},
        "message": d.message,
        "name": rule.name if rule else d.code,
        "noqa_row": d.noqa_row or d.start[0],
        "severity": rule.severity.value if rule else "error",
        "url": rule_url(d.code),
    }


def render(diagnostics: Sequence[Diagnostic], ctx: OutputContext) -> str:
    return json.dumps([record(d, ctx) for d in diagnostics], indent=2, sort_keys=True, ensure_ascii=False) + "\n"

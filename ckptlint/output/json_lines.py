"""``json-lines``: one compact JSON record a line, the same records as ``json`` (ruff's
``json-lines``), for streaming consumers."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ckptlint.output.base import OutputContext
from ckptlint.output.json_format import record
from ckptlint.text.diagnostics import Diagnostic

__all__ = ["render"]


def render(diagnostics: Sequence[Diagnostic], ctx: OutputContext) -> str:
    return "".join(
        json.dumps(record(d, ctx), sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"
        for d in diagnostics
    )

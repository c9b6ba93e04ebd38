"""``gitlab``: a GitLab Code Quality report (a JSON list of Code Climate issues).

Each issue has ``description`` (``CODE: message``, as ruff writes it), ``check_name`` (the
code), ``fingerprint`` (unique and stable across unrelated edits: see
:mod:`ckptlint.output.fingerprints`), ``severity`` (``major`` for rules whose severity is
ERROR, ``minor`` for the others) and ``location`` with ``path`` (relative to the project
folder, ``CI_PROJECT_DIR`` when set, else the enclosing repository, with ``/``) and
``lines.begin``/``lines.end`` (1-based).

Reference: GitLab documentation, "Code Quality" / "Implement a custom tool" (the report format).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ckptlint.output.base import OutputContext, printable, severity_of
from ckptlint.output.fingerprints import fingerprints
from ckptlint.text.diagnostics import Diagnostic

__all__ = ["render"]

_SEVERITY = {"error": "major", "warning": "minor"}


def _path(path: str, ctx: OutputContext) -> str:
    root = Path(ctx.env["CI_PROJECT_DIR"]) if ctx.env.get("CI_PROJECT_DIR") else ctx.repository_root
    absolute = Path(os.path.abspath(path))
    try:
        return printable(absolute.relative_to(Path(os.path.abspath(root))).as_posix())
    except ValueError:
        return printable(absolute.as_posix())


def issue(d: Diagnostic, fingerprint: str, ctx: OutputContext) -> dict[str, Any]:
    """One diagnostic as a Code Quality issue."""
    if d.cell is not None:  # GitLab shows a notebook's JSON lines: line 1, the cell in the text
        where = f"cell {d.cell}, line {d.start[0]}, column {d.start[1]}: "
        return {
            "description": f"{d.code}: {where}{d.message}",
            "check_name": d.code,
            "fingerprint": hashlib.sha256(fingerprint.encode("utf-8")).hexdigest()[:32],
            "severity": _SEVERITY[severity_of(d.code)],
            "location": {"path": _path(d.path, ctx), "lines": {"begin": 1, "end": 1}},
        }
    return {
        "description": f"{d.code}: {d.message}",
        "check_name": d.code,
        "fingerprint": hashlib.sha256(fingerprint.encode("utf-8")).hexdigest()[:32],
        "severity": _SEVERITY[severity_of(d.code)],
        "location": {"path": _path(d.path, ctx), "lines": {"begin": d.start[0], "end": d.end[0]}},
    }


def render(diagnostics: Sequence[Diagnostic], ctx: OutputContext) -> str:
    prints = fingerprints(diagnostics, ctx)
    issues = [issue(d, f, ctx) for d, f in zip(diagnostics, prints, strict=True)]
    return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"

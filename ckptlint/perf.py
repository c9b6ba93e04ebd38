"""Counters of parsing work, summed over every file and worker of a run.

Each process counts into :data:`COUNTERS`; :func:`ckptlint.lint.task.run_task` hands the
counts of one file back with its result (``FileResult.perf``, so they cross a worker's
pipe), and the command line sums them and, when the environment variable
``CKPTLINT_PERF_JSON`` names a file, writes them there as one JSON object at exit
(:func:`write_json`). ``benchmarks/run.py`` reads these keys:

- ``files_linted``: files linted (read, gated in, not taken from the result cache);
- ``ast_parses``, ``ast_chars_parsed``: modules parsed with CPython's ``ast`` (linted files
  and the modules their sites and regions reach) and their characters of source text;
- ``cst_parses``, ``cst_chars_parsed``: libcst parses of the smallest statement around a
  fix's edit (only when a fix is built) and their characters;
- ``evaluation_steps``: steps of the region evaluator (bounded per query and per file,
  see :mod:`ckptlint.checkpoint.evaluator.regions`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping

__all__ = ["COUNTERS", "ENV_VAR", "KEYS", "add", "delta", "snapshot", "total", "write_json"]

ENV_VAR = "CKPTLINT_PERF_JSON"
KEYS = (
    "files_linted",
    "ast_parses",
    "ast_chars_parsed",
    "cst_parses",
    "cst_chars_parsed",
    "evaluation_steps",
)

#: This process's counts (every key of :data:`KEYS`).
COUNTERS: dict[str, int] = dict.fromkeys(KEYS, 0)


def add(key: str, amount: int = 1) -> None:
    COUNTERS[key] += amount


def snapshot() -> dict[str, int]:
    return dict(COUNTERS)


def delta(before: Mapping[str, int]) -> dict[str, int]:
    """The counts since ``before`` (a :func:`snapshot`), only the keys that changed."""
    return {k: v - before.get(k, 0) for k, v in COUNTERS.items() if v != before.get(k, 0)}


def total(parts: Iterable[Mapping[str, int] | None]) -> dict[str, int]:
    """The sum of ``parts`` (per-file counts), every key of :data:`KEYS` present."""
    out = dict.fromkeys(KEYS, 0)
    for part in parts:
        for key, value in (part or {}).items():
            out[key] = out.get(key, 0) + value
    return out


def write_json(parts: Iterable[Mapping[str, int] | None]) -> None:
    """Write :func:`total` of ``parts`` to the file ``$CKPTLINT_PERF_JSON`` names (nothing
    when it is unset or empty; a file that cannot be written is skipped silently)."""
    target = os.environ.get(ENV_VAR)
    if not target:
        return
    try:
        with open(target, "w", encoding="utf-8") as handle:
            json.dump(total(parts), handle, indent=2, sort_keys=True)
            handle.write("\n")
    except OSError:
        pass

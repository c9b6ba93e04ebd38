"""One file as a unit of work sent to a worker, its limits (size, time), and running it."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ckptlint.config.settings import Settings
from ckptlint.lint.collection import collected_after
from ckptlint.lint.limits import internal_error
from ckptlint.lint.linter import FileLinter
from ckptlint.lint.results import FileResult, FixMode, Problem, ProblemKind
from ckptlint.rule_codes import UNUSED_NOQA


@dataclass(frozen=True)
class Task:
    """One file to lint, as sent to a worker."""

    path: str
    raw: bytes
    settings: Settings
    fix: FixMode
    unsafe: bool
    keep_source: bool = False


def linter_for(tasks: list[Task]) -> FileLinter:
    """A linter for a run of ``tasks``: its project searches the import roots of every file of
    the run from the start, so that where an import resolves does not depend on which files
    a worker happened to lint before (``-j1`` and ``-jN`` give one answer)."""
    from pathlib import Path

    from ckptlint.semantic.project import Project, module_name_for

    roots = {module_name_for(Path(t.path))[2] for t in tasks if os.path.isabs(t.path)}
    return FileLinter(Project(sorted(roots)), defer_unused_noqa_fixes=True)


_WORKER_LINTER: FileLinter | None = None


def worker_linter() -> FileLinter:
    global _WORKER_LINTER
    if _WORKER_LINTER is None:
        _WORKER_LINTER = FileLinter(defer_unused_noqa_fixes=True)
    return _WORKER_LINTER


def run_task(task: Task, linter: FileLinter | None = None) -> FileResult:
    from ckptlint import perf

    linter = linter or worker_linter()
    before = perf.snapshot()
    perf.add("files_linted")
    try:
        with collected_after():
            result = linter.lint(task.path, task.raw, task.settings, fix=task.fix, unsafe=task.unsafe, gate=False)
        result = result if task.keep_source else slim(result)
    except Exception as exc:  # noqa: BLE001 - last line of defence: report, never hang
        result = FileResult(task.path, problems=[internal_error(task.path, exc)])
    result.perf = perf.delta(before)
    return result


def slim(result: FileResult) -> FileResult:
    """Drop the source text and bytes unless a fix needs them, so that memory holds only
    findings however many files are linted."""
    if not result.changed and not any(d.code == UNUSED_NOQA for d in result.diagnostics):
        result.source = None
        result.raw = None
        result.fixed_text = None
    return result


def died(task: Task, reason: str) -> FileResult:
    message = f"internal error: the worker process died while linting this file ({reason}); file skipped"
    return FileResult(task.path, problems=[Problem(task.path, message, ProblemKind.INTERNAL)])


def timed_out(task: Task, timeout: float) -> FileResult:
    message = f"not checked: linting took longer than {timeout:g} s (--file-timeout); file skipped"
    return FileResult(task.path, problems=[Problem(task.path, message, ProblemKind.TIMEOUT)])

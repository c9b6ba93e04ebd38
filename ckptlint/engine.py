"""Linting files: gate, decode, parse once, run the enabled rules, apply noqa, fix.

:class:`FileLinter` lints one file's bytes; :func:`lint_files` lints many, in a pool of
worker processes when there is more than one file worth parsing. Per-file work depends only
on the file (and the files its regions reach), so results can be cached and run in any
order; output order is fixed by sorting.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.analysis import ModuleAnalysis, parse_source
from ckptlint.diagnostics import Applicability, Diagnostic
from ckptlint.fixer import MAX_PASSES, apply_edits, select_fixes
from ckptlint.gate import may_have_findings
from ckptlint.noqa import NoqaIndex, parse_noqa
from ckptlint.project import Project, module_name_for
from ckptlint.rules import ALL_RULES, SYNTAX_ERROR, RuleContext
from ckptlint.settings import Settings
from ckptlint.source import SourceDecodeError, SourceFile, decode_source

if TYPE_CHECKING:
    from ckptlint.cache import ResultCache

__all__ = ["FileLinter", "FileResult", "FixMode", "Problem", "RunResult", "lint_files"]


class FixMode(str, Enum):
    NONE = "none"  # report only
    APPLY = "apply"  # compute fixed text (the caller writes it)
    DIFF = "diff"  # compute fixed text to show a diff


@dataclass
class Problem:
    """A file that could not be linted (fully), with a one-line reason.

    ``kind``: ``"io"`` (cannot be read), ``"decode"`` (not text / bad encoding),
    ``"parse"`` (too deeply nested, ...), ``"internal"`` (a bug in ckptlint or a rule),
    ``"fix"`` (a fix would break the file). ``detail`` holds a traceback for ``--verbose``.
    """

    path: str
    message: str
    kind: str
    detail: str | None = None

    def line(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass
class FileResult:
    """What linting one file gave."""

    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    fixed: int = 0
    source: SourceFile | None = None
    fixed_text: str | None = None
    raw: bytes | None = None
    dependencies: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.source is not None and self.fixed_text is not None and self.fixed_text != self.source.text


@dataclass
class RunResult:
    """What linting a set of files gave, in a stable order."""

    results: list[FileResult]

    @property
    def diagnostics(self) -> list[Diagnostic]:
        unique = {(d.code, d.path, d.start, d.end, d.message): d for r in self.results for d in r.diagnostics}
        return sorted(unique.values(), key=lambda d: d.sort_key)

    @property
    def problems(self) -> list[Problem]:
        return sorted((p for r in self.results for p in r.problems), key=lambda p: (p.path, p.message))

    @property
    def fixed(self) -> int:
        return sum(r.fixed for r in self.results)


def _relative_to(path: str, root: Path) -> str:
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        return Path(path).name


class FileLinter:
    """Lints files one at a time, sharing a :class:`~ckptlint.project.Project` (the cache of
    other modules that regions reach)."""

    def __init__(self, project: Project | None = None) -> None:
        self.project = project or Project()

    # ------------------------------------------------------------------ public
    def lint(
        self,
        path: str,
        raw: bytes,
        settings: Settings,
        *,
        fix: FixMode = FixMode.NONE,
        unsafe: bool = False,
        gate: bool = True,
    ) -> FileResult:
        """Lint ``raw`` (the bytes of ``path``); never raises for bad input."""
        result = FileResult(path=path, raw=raw)
        if gate and not may_have_findings(raw):
            return result
        try:
            source = decode_source(raw, path)
        except SourceDecodeError as exc:
            result.problems.append(Problem(path, str(exc), "decode"))
            return result
        result.source = source
        module_name, is_package, root = module_name_for(Path(path)) if os.path.isabs(path) else ("", False, Path.cwd())
        self.project.add_root(root)
        self.project.track()
        diagnostics, problems = self.check(source, settings, module_name, is_package)
        result.dependencies = [str(p) for p in self.project.accessed() if str(p) != path]
        result.problems += problems
        if fix is FixMode.NONE:
            result.diagnostics = diagnostics
            return result
        self._fix(result, source, settings, module_name, is_package, unsafe, diagnostics)
        return result

    def check(
        self, source: SourceFile, settings: Settings, module_name: str = "", is_package: bool = False
    ) -> tuple[list[Diagnostic], list[Problem]]:
        """Diagnostics of ``source`` after noqa and per-file-ignores, and problems met."""
        problems: list[Problem] = []
        enabled = settings.enabled - settings.ignored_for(_relative_to(source.path, settings.root))
        try:
            analysis = parse_source(source, module_name, is_package)
        except cst.ParserSyntaxError as exc:
            if SYNTAX_ERROR not in enabled:
                return [], problems
            return self._filter([_syntax_error(source, exc)], source, settings, enabled), problems
        except RecursionError:
            problems.append(Problem(source.path, "too deeply nested to parse (recursion limit)", "parse"))
            return [], problems
        except MemoryError:
            problems.append(Problem(source.path, "too large to parse (out of memory)", "parse"))
            return [], problems
        if os.path.isabs(source.path):
            self.project.remember(Path(source.path), analysis)
        found: list[Diagnostic] = []
        ctx = RuleContext(analysis, self.project, found.append)
        for code in sorted(enabled):
            rule = ALL_RULES[code]
            ctx.code = code
            try:
                rule().check(ctx)
            except RecursionError:
                problems.append(Problem(source.path, f"{code}: too deeply nested to analyse", "internal"))
            except Exception as exc:  # noqa: BLE001 - one rule's bug must not stop the run
                problems.append(
                    Problem(
                        source.path,
                        f"internal error in rule {code}: {type(exc).__name__}: {exc}",
                        "internal",
                        traceback.format_exc(),
                    )
                )
        return self._filter(found, source, settings, enabled, analysis), problems

    # ----------------------------------------------------------------- helpers
    def _filter(
        self,
        found: list[Diagnostic],
        source: SourceFile,
        settings: Settings,
        enabled: frozenset[str],
        analysis: ModuleAnalysis | None = None,
    ) -> list[Diagnostic]:
        noqa: dict[str, NoqaIndex] = {}
        kept: list[Diagnostic] = []
        for diagnostic in found:
            if diagnostic.path != source.path:
                other = _relative_to(diagnostic.path, settings.root)
                if diagnostic.code in settings.ignored_for(other) or diagnostic.code not in settings.enabled:
                    continue
            elif diagnostic.code not in enabled:
                continue
            index = noqa.get(diagnostic.path)
            if index is None:
                index = noqa[diagnostic.path] = parse_noqa(self._source_of(diagnostic.path, source))
            if index.suppresses(diagnostic):
                continue
            kept.append(_adjust_applicability(diagnostic, settings))
        kept.sort(key=lambda d: d.sort_key)
        return kept

    def _source_of(self, path: str, current: SourceFile) -> SourceFile:
        if path == current.path:
            return current
        analysis = self.project.analysis_for_file(Path(path))
        return analysis.source if analysis is not None else SourceFile(path, "")

    def _fix(
        self,
        result: FileResult,
        source: SourceFile,
        settings: Settings,
        module_name: str,
        is_package: bool,
        unsafe: bool,
        diagnostics: list[Diagnostic],
    ) -> None:
        current = source
        fixed = 0
        for _ in range(MAX_PASSES):
            applicable = [
                d for d in diagnostics if d.path == source.path and d.fix is not None and d.fix.applies(unsafe)
            ]
            if not applicable:
                break
            picked, edits = select_fixes(current, applicable)
            new_text = apply_edits(current.text, edits)
            if new_text == current.text:
                break
            fixed += len(picked)
            current = replace(current, text=new_text)
            diagnostics, problems = self.check(current, settings, module_name, is_package)
            if any(d.code == SYNTAX_ERROR for d in diagnostics) or _does_not_parse(current.text):
                result.problems.append(
                    Problem(source.path, "internal error: a fix produced code that does not parse; file left unchanged", "fix")
                )
                result.diagnostics, _ = self.check(source, settings, module_name, is_package)
                return
            known = {p.message for p in result.problems}
            result.problems += [p for p in problems if p.message not in known]
        result.diagnostics = diagnostics
        result.fixed = fixed
        result.fixed_text = current.text


def _does_not_parse(text: str) -> bool:
    try:
        cst.parse_module(text)
    except Exception:  # noqa: BLE001
        return True
    return False


def _adjust_applicability(diagnostic: Diagnostic, settings: Settings) -> Diagnostic:
    fix = diagnostic.fix
    if fix is None or fix.applicability is Applicability.DISPLAY_ONLY:
        return diagnostic
    override = settings.promote(diagnostic.code)
    if override == "safe" and fix.applicability is Applicability.UNSAFE:
        return replace(diagnostic, fix=replace(fix, applicability=Applicability.SAFE))
    if override == "unsafe" and fix.applicability is Applicability.SAFE:
        return replace(diagnostic, fix=replace(fix, applicability=Applicability.UNSAFE))
    return diagnostic


def _syntax_error(source: SourceFile, exc: cst.ParserSyntaxError) -> Diagnostic:
    row = max(1, exc.raw_line)
    column = max(1, exc.raw_column + 1)
    message = str(exc.message).strip().splitlines()[0] if exc.message else "invalid syntax"
    return Diagnostic(
        code=SYNTAX_ERROR,
        message=f"Syntax error: {message}",
        path=source.path,
        start=(row, column),
        end=(row, column),
        noqa_row=row,
    )


# ------------------------------------------------------------------ many files
@dataclass(frozen=True)
class Task:
    """One file to lint, as sent to a worker."""

    path: str
    raw: bytes
    settings: Settings
    fix: FixMode
    unsafe: bool


_WORKER_LINTER: FileLinter | None = None


def _worker_linter() -> FileLinter:
    global _WORKER_LINTER
    if _WORKER_LINTER is None:
        _WORKER_LINTER = FileLinter()
    return _WORKER_LINTER


def _run_task(task: Task) -> FileResult:
    try:
        return _slim(
            _worker_linter().lint(task.path, task.raw, task.settings, fix=task.fix, unsafe=task.unsafe, gate=False)
        )
    except Exception as exc:  # noqa: BLE001 - last line of defence: report, never hang
        return FileResult(
            task.path,
            problems=[Problem(task.path, f"internal error: {type(exc).__name__}: {exc}", "internal", traceback.format_exc())],
        )


def default_jobs() -> int:
    """Worker processes to use: the CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def lint_files(
    files: list[Path],
    settings_for: Callable[[Path], Settings],
    *,
    fix: FixMode = FixMode.NONE,
    unsafe_for: Callable[[Settings], bool] = lambda s: bool(s.unsafe_fixes),
    jobs: int | None = None,
    cache: ResultCache | None = None,
) -> RunResult:
    """Lint ``files``; read and gate them here, parse the survivors in worker processes.

    ``jobs``: worker processes (default: the CPUs available); one file, or ``jobs == 1``,
    runs in this process, and so does a small amount of work (see :func:`_pool_size`).
    ``cache``: reuse and record results (:class:`~ckptlint.cache.ResultCache`); the caller
    saves it.
    """
    results: list[FileResult] = []
    tasks: list[Task] = []
    for path in files:
        name = str(path)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            results.append(FileResult(name, problems=[Problem(name, _read_error(exc), "io")]))
            continue
        if not may_have_findings(raw):
            continue
        settings = settings_for(path)
        unsafe = unsafe_for(settings)
        if cache is not None:
            cached = cache.lookup(name, raw, settings, fixing=fix is not FixMode.NONE, unsafe=unsafe)
            if cached is not None:
                results.append(cached)
                continue
        tasks.append(Task(name, raw, settings, fix, unsafe))
    workers = _pool_size(tasks, jobs or default_jobs())
    if workers <= 1:
        linter = FileLinter()
        linted = [_slim(linter.lint(t.path, t.raw, t.settings, fix=t.fix, unsafe=t.unsafe, gate=False)) for t in tasks]
    else:
        linted = _in_pool(tasks, workers)
    if cache is not None:
        for task, result in zip(tasks, linted):
            cache.store(result, task.settings)
    results += linted
    results.sort(key=lambda r: r.path)
    return RunResult(results)


#: Bytes of source a worker process should get at least for starting it to pay off:
#: about 800 lines, a quarter of a second of parsing and analysis, several times what
#: forking a worker and sending results back cost.
_BYTES_PER_WORKER = 32_000


def _pool_size(tasks: list[Task], jobs: int) -> int:
    """Worker processes for ``tasks``: at most ``jobs`` and one per task, and none (run in
    this process) when the gated files are too few or too small to pay for the pool."""
    total = sum(len(t.raw) for t in tasks)
    return max(1, min(jobs, len(tasks), total // _BYTES_PER_WORKER))


def _slim(result: FileResult) -> FileResult:
    """Drop the source text and bytes unless a fix needs them, so that memory holds only
    findings however many files are linted."""
    if not result.changed:
        result.source = None
        result.raw = None
        result.fixed_text = None
    return result


def _in_pool(tasks: list[Task], workers: int) -> list[FileResult]:
    import multiprocessing

    try:
        context = multiprocessing.get_context("fork")
    except ValueError:  # pragma: no cover - platforms without fork
        context = multiprocessing.get_context()
    chunk = max(1, len(tasks) // (workers * 4))
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            return list(pool.map(_run_task, tasks, chunksize=chunk))
    except Exception as exc:  # noqa: BLE001 - a worker died (BrokenProcessPool): finish here
        out = [_slim(_run_task(task)) for task in tasks]
        out[0].problems.append(
            Problem(tasks[0].path, f"a worker process died ({type(exc).__name__}); linted in the main process", "internal")
        )
        return out


def _read_error(exc: OSError) -> str:
    import errno

    if exc.errno == errno.EACCES:
        return "cannot read: permission denied"
    if exc.errno == errno.ELOOP:
        return "cannot read: symbolic link loop"
    if exc.errno == errno.ENOENT:
        return "cannot read: no such file (broken symbolic link?)"
    if exc.errno == errno.EISDIR:
        return "cannot read: is a directory"
    return f"cannot read: {exc.strerror or exc}"

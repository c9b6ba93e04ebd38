"""Linting files: gate, decode, parse once, run the enabled rules, apply noqa, fix.

:class:`FileLinter` lints one file's bytes; :func:`lint_files` lints many, in a pool of
worker processes when there is more than one file worth parsing. Per-file work depends only
on the file (and the files its regions reach), so results can be cached and run in any
order; output order is fixed by sorting.
"""

from __future__ import annotations

import ast
import os
import time
import traceback
import warnings
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

from ckptlint.diagnostics import Applicability, Diagnostic
from ckptlint.fixer import MAX_PASSES, apply_edits, select_fixes
from ckptlint.gate import may_have_findings
from ckptlint.noqa import INVALID_MESSAGE as INVALID_NOQA
from ckptlint.noqa import NoqaIndex, may_have_invalid, parse_noqa
from ckptlint.project import Project, module_name_for
from ckptlint.rule_codes import IO_ERROR, REGION_RULES, SYNTAX_ERROR, UNUSED_NOQA
from ckptlint.settings import Settings
from ckptlint.source import SourceDecodeError, SourceFile, gate_bytes, load_source

if TYPE_CHECKING:
    import libcst as cst

    from ckptlint.analysis import ModuleAnalysis
    from ckptlint.cache import ResultCache

# libcst, the analysis and the rules are imported where a file is parsed: a run whose files
# are all cached or rejected by the gate never pays for them (about 0.35 s).

__all__ = [
    "UNCHECKED_KINDS",
    "FileLinter",
    "FileResult",
    "FixMode",
    "Problem",
    "RunResult",
    "io_error",
    "lint_files",
]


class FixMode(str, Enum):
    NONE = "none"  # report only
    APPLY = "apply"  # compute fixed text (the caller writes it)
    DIFF = "diff"  # compute fixed text to show a diff


@dataclass
class Problem:
    """A file that could not be linted (fully), with a one-line reason.

    ``kind``: ``"io"`` (cannot be read), ``"decode"`` (not text / bad encoding),
    ``"parse"`` (too large or too deeply nested to parse), ``"timeout"`` (took longer than the
    per-file time limit), ``"warning"`` (the file was checked; something in it is ignored, such
    as a ``# noqa:`` without codes; ``message`` starts with the row), ``"internal"`` (a bug in
    ckptlint or a rule),
    ``"fix"`` (a fix would break the file). ``detail`` holds a traceback for ``--verbose``.
    """

    path: str
    message: str
    kind: str
    detail: str | None = None

    def line(self) -> str:
        return f"{self.path}: {self.message}"

    @property
    def unchecked(self) -> bool:
        """Whether the file was not checked at all (reported as CKP902, not as an error)."""
        return self.kind in UNCHECKED_KINDS


#: Problem kinds that mean "this file was not checked": reported as CKP902 diagnostics.
UNCHECKED_KINDS = frozenset({"io", "decode", "parse", "timeout"})


def io_error(path: str, message: str) -> Diagnostic:
    """CKP902 (io-error) at 1:1 of ``path``: the file could not be read, decoded, parsed into a
    tree or written, so it was not checked (ruff's E902). Never suppressed, never fixable."""
    return Diagnostic(code=IO_ERROR, message=message, path=path, start=(1, 1), end=(1, 1), noqa_row=None)


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
    fixed_codes: dict[str, int] = field(default_factory=dict)  # code -> findings fixed
    noqa_used_elsewhere: set[tuple[str, int]] = field(default_factory=set)  # (path, row) of other files
    #: with a fix: the findings of the file as read (reported instead when the fixed file cannot be written)
    diagnostics_before_fix: list[Diagnostic] | None = None
    #: parsing work this file cost (:mod:`ckptlint.perf` counters; empty for a cached result)
    perf: dict[str, int] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return self.source is not None and self.fixed_text is not None and self.fixed_text != self.source.text


def _one_per_line(found: Iterable[Diagnostic]) -> list[Diagnostic]:
    """One finding per problem: a region rule (:data:`~ckptlint.rule_codes.REGION_RULES`)
    reports a line of shared code once for every checkpoint site whose region reaches it, from the file of each site
    (torchtune's attention reached by fifteen recipes). Those are merged into the first
    (by message, so by site), which says how many other sites reach the line."""
    groups: dict[tuple, list[Diagnostic]] = {}
    out: list[Diagnostic] = []
    for diagnostic in found:
        if diagnostic.code in REGION_RULES and diagnostic.fix is None:
            groups.setdefault((diagnostic.code, diagnostic.path, diagnostic.start, diagnostic.end), []).append(diagnostic)
        else:
            out.append(diagnostic)
    for group in groups.values():
        group.sort(key=lambda d: d.message)
        first = group[0]
        if len(group) > 1:
            others = len(group) - 1
            first = replace(
                first,
                message=f"{first.message} (the same line is also recomputed by {others} other checkpoint "
                f"site{'s' if others > 1 else ''})",
            )
        out.append(first)
    return out


@dataclass
class RunResult:
    """What linting a set of files gave, in a stable order."""

    results: list[FileResult]
    #: ``True`` when the run was interrupted (SIGINT/SIGTERM): ``results`` holds the files done.
    interrupted: bool = False
    #: how many of the files given were done (read, and gated out, cached or linted)
    files_done: int = 0

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """Every finding, plus a CKP902 for each file that could not be checked, sorted."""
        found = [d for r in self.results for d in r.diagnostics]
        found += [io_error(p.path, p.message) for r in self.results for p in r.problems if p.unchecked]
        unique = {(d.code, d.path, d.start, d.end, d.message): d for d in found}
        return sorted(_one_per_line(unique.values()), key=lambda d: d.sort_key)

    @property
    def problems(self) -> list[Problem]:
        """Errors met (internal errors, refused fixes); files not checked are in :attr:`diagnostics`,
        warnings in :attr:`warnings`."""
        found = (p for r in self.results for p in r.problems if not p.unchecked and p.kind != "warning")
        return sorted(found, key=lambda p: (p.path, p.message))

    @property
    def warnings(self) -> list[Problem]:
        """Things ignored in files that were checked (a ``# noqa:`` without codes), by path and row."""
        found = {(p.path, p.message): p for r in self.results for p in r.problems if p.kind == "warning"}
        return [found[key] for key in sorted(found, key=lambda k: (k[0], int(k[1].split(":")[0]), k[1]))]

    @property
    def fixed(self) -> int:
        return sum(r.fixed for r in self.results)


class Interrupted(BaseException):
    """Raised in the main thread by a :class:`StopFlag` in ``hard`` mode (nothing is being
    written) when a stop signal arrives; a ``BaseException`` so that no ``except Exception``
    of a rule or of libcst swallows it."""


class StopFlag:
    """Set by the command line's SIGINT/SIGTERM handlers; the engine and the writer poll it
    between files (no new file is started once it is set).

    Attributes:
        signal: the number of the first stop signal received, ``None`` until then.
        hard: while ``True`` (linting in this process, nothing being written), a stop signal
            raises :class:`Interrupted` at once instead of waiting for the file to finish.
    """

    def __init__(self) -> None:
        self.signal: int | None = None
        self.hard = False

    def request(self, signum: int) -> None:
        """A stop signal arrived (called from a signal handler, in the main thread)."""
        first = self.signal is None
        if first:
            self.signal = signum
        if self.hard or not first:  # a second signal: stop now, whatever is running
            raise Interrupted(signum)

    def __bool__(self) -> bool:
        return self.signal is not None


def _relative_to(path: str, root: Path) -> str:
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        return Path(path).name


class FileLinter:
    """Lints files one at a time, sharing a :class:`~ckptlint.project.Project` (the cache of
    other modules that regions reach)."""

    def __init__(self, project: Project | None = None, *, defer_unused_noqa_fixes: bool = False) -> None:
        self.project = project or Project()
        #: leave CKP901's fixes to :func:`lint_files`, which knows the noqa used from other files
        self.defer_unused_noqa_fixes = defer_unused_noqa_fixes
        self._noqa_used_elsewhere: set[tuple[str, int]] = set()

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
        """Lint ``raw`` (the bytes of ``path``); never raises.

        Bad input and ckptlint's own bugs become :class:`Problem` records of the result
        (an unexpected exception: kind ``"internal"``, with its traceback as ``detail``).
        """
        result = FileResult(path=path, raw=raw)
        self._noqa_used_elsewhere = result.noqa_used_elsewhere
        try:
            return self._lint(result, raw, settings, fix, unsafe, gate)
        except Exception as exc:  # noqa: BLE001 - last line of defence: one file never stops the run
            result.diagnostics, result.fixed, result.fixed_text, result.fixed_codes = [], 0, None, {}
            result.problems.append(_internal_error(path, exc))
            return result

    def _lint(
        self, result: FileResult, raw: bytes, settings: Settings, fix: FixMode, unsafe: bool, gate: bool
    ) -> FileResult:
        path = result.path
        if gate and not may_have_findings(gate_bytes(raw, path)):
            result.problems += _undecodable(path, raw)
            return result
        if len(raw) > _size_limit(path):
            result.problems.append(_too_large(path, len(raw)))
            return result
        try:
            source = load_source(raw, path)
        except SourceDecodeError as exc:
            result.problems.append(Problem(path, str(exc), "decode"))
            return result
        if len(source.text) > MAX_FILE_BYTES:  # a notebook's code cells (a .py file's text is never longer)
            result.problems.append(_too_large(path, len(source.text), MAX_FILE_BYTES))
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
        import libcst as cst

        from ckptlint.analysis import TooDeeplyNested, deep_recursion, parse_source

        problems: list[Problem] = []
        enabled = settings.enabled - settings.ignored_for(_relative_to(source.path, settings.root))
        try:
            analysis = parse_source(source, module_name, is_package)
        except cst.ParserSyntaxError as exc:
            if _cpython_parses(source.text):
                # valid Python that libcst cannot build a tree of (~4,000 implicitly
                # concatenated string literals with libcst 1.9.0, syntax newer than libcst):
                # not a syntax error, but not checked either
                why = str(exc.message).strip().splitlines()[0] if exc.message else "parser error"
                problems.append(Problem(source.path, f"libcst cannot parse this file, which Python parses ({why}); file skipped", "parse"))
                return [], problems
            # Like ruff's syntax errors, CKP999 is always reported: selection, per-file-ignores
            # and noqa cannot hide that a file was not checked.
            return [_syntax_error(source, exc)], problems
        except TooDeeplyNested as exc:
            problems.append(Problem(source.path, str(exc), "parse"))
            return [], problems
        except RecursionError:
            problems.append(Problem(source.path, "too deeply nested to parse (recursion limit)", "parse"))
            return [], problems
        except MemoryError:
            problems.append(Problem(source.path, "too large to parse (out of memory)", "parse"))
            return [], problems
        if os.path.isabs(source.path):
            self.project.remember(Path(source.path), analysis)
        with deep_recursion(analysis.depth):
            # A region may reach a name that a module parsed partially lacks: the module is
            # parsed again with it and, when the rules held the smaller parse, they run
            # again (the third time with every module reached parsed whole), so that one
            # result never mixes two parses of a module (see ckptlint.project).
            from ckptlint import perf

            used_elsewhere = set(self._noqa_used_elsewhere)
            for attempt in range(_RULE_PASSES):
                self.project.begin_pass(whole=attempt == _RULE_PASSES - 1)
                found = self._run_rules(analysis, source, settings, enabled, list(problems))
                if not self.project.end_pass():
                    break
                perf.add("rule_reruns")
                self._noqa_used_elsewhere.clear()
                self._noqa_used_elsewhere.update(used_elsewhere)
            return found

    def _run_rules(
        self,
        analysis: ModuleAnalysis,
        source: SourceFile,
        settings: Settings,
        enabled: frozenset[str],
        problems: list[Problem],
    ) -> tuple[list[Diagnostic], list[Problem]]:
        from ckptlint.rules import ALL_RULES, RuleContext

        found: list[Diagnostic] = []
        failed: set[str] = set()
        ctx = RuleContext(analysis, self.project, found.append)
        for code in sorted(enabled):
            rule = ALL_RULES[code]
            ctx.code = code
            try:
                rule().check(ctx)
            except RecursionError:
                failed.add(code)
                problems.append(Problem(source.path, f"{code}: too deeply nested to analyse", "internal"))
            except Exception as exc:  # noqa: BLE001 - one rule's bug must not stop the run
                failed.add(code)
                problems.append(
                    Problem(
                        source.path,
                        f"internal error in rule {code}: {type(exc).__name__}: {exc}",
                        "internal",
                        traceback.format_exc(),
                    )
                )
        noqa: dict[str, NoqaIndex] = {}
        kept = self._filter(found, source, settings, enabled, analysis, noqa)
        if may_have_invalid(source.text):  # ruff warns about a noqa directive with a colon and no codes, and ignores it
            index = noqa.get(source.path) or noqa.setdefault(source.path, parse_noqa(source))
            problems += [Problem(source.path, f"{row}: {INVALID_NOQA}", "warning") for row in index.invalid]
        for path, other in noqa.items():
            if path != source.path:  # for CKP901 in that file (see settle_unused_noqa)
                self._noqa_used_elsewhere.update((path, row) for row, d in other.by_row.items() if d.used)
        if UNUSED_NOQA in enabled:
            kept = sorted(kept + self._unused_noqa(source, settings, enabled - failed, noqa), key=lambda d: d.sort_key)
        return kept, problems

    def _unused_noqa(
        self, source: SourceFile, settings: Settings, ran: frozenset[str], noqa: dict[str, NoqaIndex]
    ) -> list[Diagnostic]:
        """CKP901: the pass after noqa filtering, over the directives of ``source``; codes of
        rules that ran (``ran``) and are not CKP901 itself are judged."""
        from ckptlint.rules.ckp901_unused_noqa import unused_noqa_diagnostics

        index = noqa.get(source.path) or parse_noqa(source)
        found = unused_noqa_diagnostics(source, index, ran - {UNUSED_NOQA})
        return [_adjust_applicability(d, settings) for d in found if not index.suppresses(d)]

    # ----------------------------------------------------------------- helpers
    def _filter(
        self,
        found: list[Diagnostic],
        source: SourceFile,
        settings: Settings,
        enabled: frozenset[str],
        analysis: ModuleAnalysis | None = None,
        noqa: dict[str, NoqaIndex] | None = None,
    ) -> list[Diagnostic]:
        noqa = {} if noqa is None else noqa
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
        return self.project.source_for_file(Path(path))

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
        applied: list[Diagnostic] = []
        result.diagnostics_before_fix = list(diagnostics)
        for _ in range(MAX_PASSES):
            applicable = self._applicable(diagnostics, source.path, unsafe)
            if not applicable:
                break
            picked, edits = select_fixes(current, applicable)
            new_text = apply_edits(current.text, edits)
            if new_text == current.text:
                break
            fixed += len(picked)
            applied += picked
            for d in picked:
                result.fixed_codes[d.code] = result.fixed_codes.get(d.code, 0) + 1
            current = replace(current, text=new_text)
            diagnostics, problems = self.check(current, settings, module_name, is_package)
            broken = None
            if any(d.code == SYNTAX_ERROR for d in diagnostics) or _does_not_parse(current):
                broken = f"does not parse ({_compile_error(current.text) or 'libcst cannot parse it'})"
            elif (why := _compile_error(current.text)) is not None and _compile_error(source.text) is None:
                broken = f"does not compile ({why})"
            if broken is not None:
                self._reject_fixes(result, source, settings, (module_name, is_package), applied, broken)
                return
            known = {p.message for p in result.problems}
            result.problems += [p for p in problems if p.message not in known]
        else:
            if self._applicable(diagnostics, source.path, unsafe):  # a fixed finding keeps coming back
                what = f"does not converge (findings still fixable after {MAX_PASSES} passes)"
                self._reject_fixes(result, source, settings, (module_name, is_package), applied, what)
                return
        result.diagnostics = diagnostics
        result.fixed = fixed
        result.fixed_text = current.text

    def _applicable(self, diagnostics: list[Diagnostic], path: str, unsafe: bool) -> list[Diagnostic]:
        return [
            d
            for d in diagnostics
            if d.path == path
            and d.fix is not None
            and d.fix.applies(unsafe)
            and not (self.defer_unused_noqa_fixes and d.code == UNUSED_NOQA)
        ]

    def _reject_fixes(
        self,
        result: FileResult,
        source: SourceFile,
        settings: Settings,
        module: tuple[str, bool],
        applied: list[Diagnostic],
        what: str,
    ) -> None:
        """Leave the file as it was (nothing to write) and report the fixes that broke it."""
        codes = sorted({d.code for d in applied})
        fixes = f"the fix for {codes[0]}" if len(codes) == 1 else f"the fixes for {', '.join(codes)}"
        message = f"internal error: {fixes} produced code that {what}; file left unchanged"
        result.problems.append(Problem(source.path, message, "fix"))
        result.diagnostics, _ = self.check(source, settings, *module)
        result.fixed_codes = {}
        result.fixed = 0
        result.fixed_text = None


def _does_not_parse(source: SourceFile) -> bool:
    from ckptlint.analysis import parse_source

    try:
        parse_source(source)
    except Exception:  # noqa: BLE001 - a syntax error, too deeply nested...
        return True
    return False


def _cpython_parses(text: str) -> bool:
    """Whether CPython's own parser (the running interpreter's) builds an AST of ``text``,
    with the recursion allowed for the depths :func:`~ckptlint.analysis.parse_source` lets
    through; ``False`` on a syntax error and when it cannot tell (``RecursionError``...)."""
    from ckptlint.analysis import MAX_NESTING, deep_recursion

    try:
        with warnings.catch_warnings(), deep_recursion(MAX_NESTING + 101):
            warnings.simplefilter("ignore")  # SyntaxWarnings are the linted code's business
            compile(text, "<source>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except Exception:  # noqa: BLE001 - SyntaxError, RecursionError, MemoryError, ValueError
        return False
    return True


def _compile_error(text: str) -> str | None:
    """Why CPython's compiler rejects ``text`` (``"<message>, line N"``), or ``None``. Catches
    what libcst's parser lets through, such as a repeated keyword argument."""
    try:
        with warnings.catch_warnings():  # SyntaxWarnings are the linted code's business
            warnings.simplefilter("ignore")
            compile(text, "<fixed>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        return f"{exc.msg}, line {exc.lineno}" if exc.lineno else exc.msg
    except Exception:  # noqa: BLE001 - RecursionError, MemoryError...: cannot tell
        return None
    return None


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
    """CKP999 at the error's position. libcst's native parser reports tokenizer errors at 1:1
    and parser errors at the next line's start, so CPython's parser (which users know from
    tracebacks) gives the position and message when it rejects the text too."""
    row = max(1, exc.raw_line)
    column = max(1, exc.raw_column + 1)
    message = str(exc.message).strip().splitlines()[0] if exc.message else "invalid syntax"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(source.text, source.path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as error:
        if error.lineno:
            row = min(max(1, error.lineno), len(source.line_starts))
            column = min(max(1, error.offset or 1), len(source.line(row)) + 1)
            message = error.msg or message
    except Exception:  # noqa: BLE001 - RecursionError, MemoryError, ValueError: keep libcst's
        pass
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
    keep_source: bool = False


#: Times the rules may run on one file (see :meth:`FileLinter.check`).
_RULE_PASSES = 3

MAX_FILE_BYTES = 2 * 2**20
"""Files larger than this (bytes) are not parsed; the largest file of the real repositories
tried is ~0.3 MiB, and libcst needs ~15 s and ~600 MB per MiB of checkpoint-dense code."""

MAX_NOTEBOOK_BYTES = 64 * 2**20
"""Notebooks (``.ipynb``) larger than this are not read; their outputs (images, logs) make
most of their size, so the limit on code is :data:`MAX_FILE_BYTES` of cells' text."""


def _size_limit(path: str) -> int:
    return MAX_NOTEBOOK_BYTES if path.lower().endswith(".ipynb") else MAX_FILE_BYTES


DEFAULT_FILE_TIMEOUT = 60.0
"""Seconds one file may take by default (``--file-timeout``): the slowest file of the real
repositories tried takes under 3 s."""


_WORKER_LINTER: FileLinter | None = None


def _worker_linter() -> FileLinter:
    global _WORKER_LINTER
    if _WORKER_LINTER is None:
        _WORKER_LINTER = FileLinter(defer_unused_noqa_fixes=True)
    return _WORKER_LINTER


def _run_task(task: Task, linter: FileLinter | None = None) -> FileResult:
    from ckptlint import perf

    linter = linter or _worker_linter()
    before = perf.snapshot()
    perf.add("files_linted")
    try:
        result = linter.lint(task.path, task.raw, task.settings, fix=task.fix, unsafe=task.unsafe, gate=False)
        result = result if task.keep_source else _slim(result)
    except Exception as exc:  # noqa: BLE001 - last line of defence: report, never hang
        result = FileResult(task.path, problems=[_internal_error(task.path, exc)])
    result.perf = perf.delta(before)
    return result


def _internal_error(path: str, exc: BaseException) -> Problem:
    return Problem(path, f"internal error: {type(exc).__name__}: {exc}", "internal", traceback.format_exc())


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
    keep_sources: bool = False,
    stop: StopFlag | None = None,
    file_timeout: float | None = DEFAULT_FILE_TIMEOUT,
) -> RunResult:
    """Lint ``files``; read and gate them here, parse the survivors in worker processes.

    ``jobs``: worker processes (default: the CPUs available), never more than the files to
    parse; one file, or ``jobs == 1``, runs in this process, and so does a small amount of
    work (see :func:`_pool_size`). ``cache``: reuse and record results
    (:class:`~ckptlint.cache.ResultCache`); the caller saves it. ``keep_sources``: keep every
    result's source text (``--add-noqa`` edits it); otherwise it is dropped unless a fix
    needs it. ``stop``: polled between files; once set, no new file is started and the
    result is marked :attr:`RunResult.interrupted` (holding the files done).
    ``file_timeout``: seconds one file may take (``None``: no limit); a file that takes
    longer is reported (CKP902) and the run goes on (see :func:`_in_pool`; in this process
    the limit is kept with ``SIGALRM`` when no other alarm is pending).
    """
    results: list[FileResult] = []
    tasks: list[Task] = []
    for path in files:
        if stop:
            return RunResult(sorted(results, key=lambda r: r.path), interrupted=True, files_done=files.index(path))
        name = str(path)
        try:
            size = path.stat().st_size
            if size > _size_limit(name):  # not read whole: the gate's first test, streamed
                if _mentions(path, (b"checkpoint", b"CKP")):
                    results.append(FileResult(name, problems=[_too_large(name, size)]))
                continue
            raw = path.read_bytes()
        except OSError as exc:
            results.append(FileResult(name, problems=[Problem(name, _read_error(exc), "io")]))
            continue
        if not may_have_findings(gate_bytes(raw, name)):
            if problems := _undecodable(name, raw):
                results.append(FileResult(name, problems=problems))
            continue
        settings = settings_for(path)
        unsafe = unsafe_for(settings)
        if cache is not None:
            cached = cache.lookup(name, raw, settings, fixing=fix is not FixMode.NONE, unsafe=unsafe)
            if cached is not None:
                results.append(cached)
                continue
        tasks.append(Task(name, raw, settings, fix, unsafe, keep_sources))
    workers = _pool_size(tasks, jobs)
    if workers <= 1:
        linted = _in_process(tasks, stop, file_timeout)
    else:
        linted = _in_pool(tasks, workers, stop=stop, timeout=file_timeout)
    if cache is not None:
        for task, result in zip(tasks, linted):
            if result is not None:
                cache.store(result, task.settings)
    results += [r for r in linted if r is not None]
    results.sort(key=lambda r: r.path)
    if any(d.code == UNUSED_NOQA for r in results for d in r.diagnostics):
        from ckptlint.rules.ckp901_unused_noqa import settle_unused_noqa

        settle_unused_noqa(results, {t.path: t.unsafe for t in tasks})
    left = sum(1 for r in linted if r is None)
    return RunResult(results, interrupted=bool(stop) or left > 0, files_done=len(files) - left)


class _FileTimeout(BaseException):
    """Raised by ``SIGALRM`` in this process when one file took too long."""


def _in_process(tasks: list[Task], stop: StopFlag | None, timeout: float | None) -> list[FileResult | None]:
    """Lint ``tasks`` in this process, in order; ``None`` for the tasks a stop request left.
    While a file is linted, a stop signal interrupts it at once (nothing is written here)."""
    import signal
    import threading

    linter = FileLinter(defer_unused_noqa_fixes=True)
    done: list[FileResult | None] = [None] * len(tasks)
    alarm = (
        timeout is not None
        and threading.current_thread() is threading.main_thread()
        and hasattr(signal, "setitimer")
        and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # another alarm is someone else's
    )
    previous = signal.signal(signal.SIGALRM, _raise_file_timeout) if alarm else None
    try:
        i = 0
        while i < len(tasks) and not stop:
            task = tasks[i]
            try:
                try:
                    if stop is not None:
                        stop.hard = True
                    if alarm:
                        signal.setitimer(signal.ITIMER_REAL, timeout)
                    done[i] = _run_task(task, linter)
                finally:
                    if alarm:
                        signal.setitimer(signal.ITIMER_REAL, 0)
                    if stop is not None:
                        stop.hard = False
            except _FileTimeout:
                if done[i] is None:
                    done[i] = _timed_out(task, timeout)  # type: ignore[arg-type]
                    linter = FileLinter(defer_unused_noqa_fixes=True)  # its state may be half-built
            except Interrupted:
                break
            i += 1
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    return done


def _raise_file_timeout(signum, frame) -> None:  # noqa: ANN001
    raise _FileTimeout


def _too_large(path: str, size: int, limit_bytes: int | None = None) -> Problem:
    limit = (limit_bytes or _size_limit(path)) // 2**20
    return Problem(path, f"too large to lint ({size / 2**20:.1f} MiB; the limit is {limit} MiB); file skipped", "parse")


def _undecodable(path: str, raw: bytes) -> list[Problem]:
    """The reason a file the gate skips cannot be Python source (a binary file, not UTF-8
    without a coding cookie...), as ``[problem]``; ``[]`` when it decodes."""
    try:
        load_source(raw, path)
    except SourceDecodeError as exc:
        return [Problem(path, str(exc), "decode")]
    return []


def _mentions(path: Path, markers: tuple[bytes, ...], block: int = 1 << 20) -> bool:
    """Whether the file at ``path`` contains one of ``markers``, read in blocks (bounded memory)."""
    keep = max(len(m) for m in markers) - 1
    tail = b""
    with open(path, "rb") as handle:
        while chunk := handle.read(block):
            window = tail + chunk
            if any(m in window for m in markers):
                return True
            tail = window[-keep:]
    return False


#: Bytes of source a worker process should get at least for starting it to pay off:
#: about 800 lines, a quarter of a second of parsing and analysis, several times what
#: forking a worker and sending results back cost.
_BYTES_PER_WORKER = 32_000


def _pool_size(tasks: list[Task], jobs: int | None) -> int:
    """Worker processes for ``tasks``: at most one per task; ``jobs`` when the user chose it
    (``-j``), else the CPUs available, and none (run in this process) when the gated files
    are too few or too small to pay for the pool."""
    if jobs is not None:
        return max(1, min(jobs, len(tasks)))
    total = sum(len(t.raw) for t in tasks)
    return max(1, min(default_jobs(), len(tasks), total // _BYTES_PER_WORKER))


def _slim(result: FileResult) -> FileResult:
    """Drop the source text and bytes unless a fix needs them, so that memory holds only
    findings however many files are linted."""
    if not result.changed and not any(d.code == UNUSED_NOQA for d in result.diagnostics):
        result.source = None
        result.raw = None
        result.fixed_text = None
    return result


def _in_pool(
    tasks: list[Task], workers: int, *, stop: StopFlag | None = None, timeout: float | None = None
) -> list[FileResult | None]:
    """Lint ``tasks`` in ``workers`` processes; results in the order of ``tasks`` (``None`` for
    a task not done because ``stop`` was raised).

    Each worker is a forked child (it inherits ``tasks``; only indices and results cross its
    pipe) that dies with this process (``PR_SET_PDEATHSIG``), ignores SIGINT (Ctrl-C reaches
    the whole process group; this process decides) and lints one file at a time. A worker
    that dies (a crash in native code, ``os._exit``, the OOM killer) is blamed for the file
    it was on and replaced; one that takes longer than ``timeout`` seconds on a file is
    killed, that file is reported (CKP902) and the run goes on. Nothing is linted in this
    process, so a file that kills the interpreter cannot kill the run. When ``stop`` is
    raised, no new file is started and every worker is killed at once (workers never write:
    fixes are written by the caller).
    """
    from multiprocessing.connection import wait

    context = _fork_context()
    results: list[FileResult | None] = [None] * len(tasks)
    # Contiguous slices, one a worker: files of one package share a worker's module cache;
    # a worker whose slice is done takes the last file of the longest slice left.
    size = -(-len(tasks) // workers)
    queues = [list(range(k, min(k + size, len(tasks))))[::-1] for k in range(0, len(tasks), size)]
    live: dict[object, _Worker] = {}
    requeued: set[int] = set()

    def take(slot: int) -> int | None:
        if not queues:
            return None
        own = queues[slot % len(queues)]
        if own:
            return own.pop()
        longest = max(queues, key=len)
        return longest.pop(0) if longest else None

    def assign(worker: _Worker) -> bool:
        """Give ``worker`` its next file; ``False`` when none is left (or the worker is gone)."""
        index = take(worker.slot)
        if index is None:
            return False
        try:
            worker.start_task(index)
        except OSError:  # the worker died between two files (BrokenPipeError)
            live.pop(worker.connection, None)
            worker.close(kill=True)
            if index in requeued:  # a second worker died before starting it: give up on it
                results[index] = _died(tasks[index], _death(worker.process.exitcode))
            else:
                requeued.add(index)
                queues[worker.slot % len(queues)].append(index)  # the next worker of the slot takes it
            if any(queues):
                start(worker.slot)
            return True  # handled: the caller must not retire it again
        return True

    def retire(worker: _Worker, *, kill: bool) -> None:
        live.pop(worker.connection, None)
        worker.close(kill=kill)

    def start(slot: int) -> None:
        worker = _Worker.spawn(context, tasks, slot)
        if worker is None:
            return
        live[worker.connection] = worker
        if not assign(worker):
            retire(worker, kill=False)

    try:
        for slot in range(workers):
            start(slot)
        if not live and any(queues):  # no worker process could start: lint here
            linter = FileLinter(defer_unused_noqa_fixes=True)
            for queue in queues:
                while queue and not (stop and stop.signal):
                    index = queue.pop()
                    results[index] = _run_task(tasks[index], linter)
        while live:
            if stop is not None and stop.signal:
                break
            ready = wait(list(live), timeout=_poll_interval(live.values(), timeout))
            for connection in ready:
                worker = live[connection]
                index = worker.index
                try:
                    results[index] = connection.recv()  # type: ignore[attr-defined]
                except Exception:  # noqa: BLE001 - EOFError: the worker died (or died mid-message)
                    retire(worker, kill=True)
                    results[index] = _died(tasks[index], _death(worker.process.exitcode))
                    if any(queues):
                        start(worker.slot)
                    continue
                if not assign(worker):
                    retire(worker, kill=False)
            if timeout is not None:
                now = time.monotonic()
                for worker in [w for w in live.values() if now - w.started > timeout]:
                    retire(worker, kill=True)
                    results[worker.index] = _timed_out(tasks[worker.index], timeout)
                    if any(queues):
                        start(worker.slot)
    finally:
        for worker in list(live.values()):
            retire(worker, kill=True)
    return results


def _poll_interval(workers, timeout: float | None) -> float:  # noqa: ANN001
    """How long to wait for a result: short enough to notice a stop request within a tenth of
    a second, and to kill a worker soon after its time limit."""
    if timeout is None:
        return 0.1
    now = time.monotonic()
    return max(0.0, min([0.1] + [w.started + timeout - now for w in workers]))


class _Worker:
    """One forked worker process and the parent's end of its pipe."""

    def __init__(self, process, connection, slot: int) -> None:  # noqa: ANN001
        self.process = process
        self.connection = connection
        self.slot = slot
        self.index = -1
        self.started = 0.0

    @classmethod
    def spawn(cls, context, tasks: list[Task], slot: int) -> _Worker | None:  # noqa: ANN001
        try:
            parent, child = context.Pipe(duplex=True)
            process = context.Process(target=_worker_main, args=(tasks, child, os.getpid()), daemon=True)
            process.start()
        except OSError:  # no more processes, no memory: the caller lints with fewer workers
            return None
        child.close()
        return cls(process, parent, slot)

    def start_task(self, index: int) -> None:
        self.index = index
        self.started = time.monotonic()
        self.connection.send(index)

    def close(self, *, kill: bool) -> None:
        try:
            if kill and self.process.is_alive():
                self.process.kill()
            else:
                self.connection.send(None)  # done: the worker returns
        except Exception:  # noqa: BLE001 - the pipe is already closed (the worker died)
            pass
        self.connection.close()
        self.process.join(5)
        if self.process.is_alive():  # pragma: no cover - ignored its end of work
            self.process.kill()
            self.process.join()


def _worker_main(tasks: list[Task], connection, parent: int) -> None:  # noqa: ANN001 - a Connection
    """A worker process: lint the task whose index arrives, send its result back, until
    ``None`` or end-of-file. ``parent``: the process id of the ``ckptlint`` that forked it."""
    import signal

    _die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the process group: the parent decides
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    linter = FileLinter(defer_unused_noqa_fixes=True)
    while True:
        try:
            index = connection.recv()
        except (EOFError, OSError):
            return
        if index is None:
            return
        task = tasks[index]
        result = _run_task(task, linter)
        try:
            connection.send(result)
        except Exception as exc:  # noqa: BLE001 - e.g. a result that cannot be pickled
            connection.send(FileResult(task.path, problems=[_internal_error(task.path, exc)]))


def _die_with_parent(parent: int) -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux ``prctl(2)``
    ``PR_SET_PDEATHSIG``), so that no worker outlives a killed ``ckptlint``; elsewhere the
    worker notices end-of-file on its pipe when it next reads."""
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except Exception:  # noqa: BLE001 - not Linux
        return
    if os.getppid() != parent:  # the parent died before the request: do not linger
        os._exit(1)


def _fork_context():  # noqa: ANN202 - a multiprocessing context
    import multiprocessing

    try:
        return multiprocessing.get_context("fork")
    except ValueError:  # pragma: no cover - platforms without fork
        return multiprocessing.get_context()


def _died(task: Task, reason: str) -> FileResult:
    message = f"internal error: the worker process died while linting this file ({reason}); file skipped"
    return FileResult(task.path, problems=[Problem(task.path, message, "internal")])


def _timed_out(task: Task, timeout: float) -> FileResult:
    message = f"not checked: linting took longer than {timeout:g} s (--file-timeout); file skipped"
    return FileResult(task.path, problems=[Problem(task.path, message, "timeout")])


def _death(exitcode: int | None) -> str:
    import signal

    if exitcode is not None and exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"


def _read_error(exc: OSError) -> str:
    from ckptlint.discovery import os_reason

    return f"cannot read: {os_reason(exc, missing='no such file (broken symbolic link?)')}"

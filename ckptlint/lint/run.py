"""Linting many files: read and gate them here, then lint the survivors in this process or a pool."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ckptlint.config.settings import Settings
from ckptlint.lint.gate import file_may_have_findings
from ckptlint.lint.limits import (
    DEFAULT_FILE_TIMEOUT,
    mentions,
    read_error,
    size_limit,
    too_large,
    undecodable,
)
from ckptlint.lint.pool import in_pool
from ckptlint.lint.results import FileResult, FixMode, Problem, ProblemKind, RunResult
from ckptlint.lint.stop import Interrupted, StopFlag
from ckptlint.lint.task import Task, linter_for, run_task, timed_out
from ckptlint.lint.unused_noqa import settle_unused_noqa
from ckptlint.rule_codes import UNUSED_NOQA
from ckptlint.text.reading import check_regular, is_pipe, read_pipe, read_regular

if TYPE_CHECKING:
    from types import FrameType

    from ckptlint.lint.cache import ResultCache


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
    progress: Callable[[int, int], None] | None = None,
) -> RunResult:
    """Lint ``files``; read and gate them here, parse the survivors in worker processes.

    ``jobs``: worker processes (default: the CPUs available), never more than the files to
    parse; one file, or ``jobs == 1``, runs in this process, and so does a small amount of
    work (see :func:`_pool_size`). ``cache``: reuse and record results
    (:class:`~ckptlint.lint.cache.ResultCache`); the caller saves it. ``keep_sources``: keep every
    result's source text (``--add-noqa`` edits it); otherwise it is dropped unless a fix
    needs it. ``stop``: polled between files; once set, no new file is started and the
    result is marked :attr:`RunResult.interrupted` (holding the files done).
    ``file_timeout``: seconds one file may take (``None``: no limit); a file that takes
    longer is reported (CKP902) and the run goes on (see :func:`in_pool`; in this process
    the limit is kept with ``SIGALRM`` when no other alarm is pending).
    ``progress``: called with (files done, findings so far) as files are done.
    """
    results: list[FileResult] = []
    counted, findings = 0, 0  # results[:counted] hold `findings` diagnostics
    tasks: list[Task] = []
    uncached: set[str] = set()  # pipes: their path names nothing a later run could read again
    # a file whose size and modification time are those the cache recorded is not read
    # (ruff's cache does the same); a fix or --add-noqa needs the text, so it reads every file
    by_stat = cache is not None and fix is FixMode.NONE and not keep_sources
    for index, path in enumerate(files):
        if stop:
            return RunResult(sorted(results, key=lambda r: r.path), interrupted=True, files_done=files.index(path))
        if progress is not None:
            findings += sum(len(r.diagnostics) for r in results[counted:])
            counted = len(results)
            progress(index - len(tasks), findings)
        name = str(path)
        try:
            stat = path.stat()  # before reading: a write after it changes the time the cache keeps
            if is_pipe(stat):  # `ckptlint <(git show REV:model.py)`: read, bounded; never cached
                found = _from_pipe(path, settings_for(path), fix, unsafe_for, keep_sources, file_timeout)
                if isinstance(found, Task):
                    tasks.append(found)
                    uncached.add(name)
                elif found is not None:
                    results.append(found)
                continue
            check_regular(path, stat)  # /dev/zero, a socket named on the command line: not read
            size = stat.st_size
            if size > size_limit(name):  # not read whole: the gate's first test, streamed
                if mentions(path, (b"checkpoint", b"CKP")):
                    results.append(FileResult(name, problems=[too_large(name, size)]))
                continue
            if by_stat and cache is not None:
                known = cache.by_stat(name, stat, settings_for(path))
                if known is True:
                    continue  # the gate rejected these bytes
                if known:
                    results.append(known)
                    continue
            raw = read_regular(path, size_limit(name))
            if len(raw) > size_limit(name):  # it grew since the stat
                results.append(FileResult(name, problems=[too_large(name, len(raw))]))
                continue
        except OSError as exc:
            results.append(FileResult(name, problems=[Problem(name, read_error(exc), ProblemKind.IO)]))
            continue
        if not file_may_have_findings(raw, name):
            if problems := undecodable(name, raw):
                results.append(FileResult(name, problems=problems))
            elif cache is not None:
                cache.rejected(name, stat, settings_for(path))
            continue
        settings = settings_for(path)
        unsafe = unsafe_for(settings)
        if cache is not None:
            cached = cache.lookup(name, raw, settings, fixing=fix is not FixMode.NONE, unsafe=unsafe, stat=stat)
            if cached is not None:
                results.append(cached)
                continue
        tasks.append(Task(name, raw, settings, fix, unsafe, keep_sources))
    on_result = None
    if progress is not None:
        findings += sum(len(r.diagnostics) for r in results[counted:])
        done = [len(files) - len(tasks), findings]
        progress(*done)

        def on_result(result: FileResult) -> None:
            done[0] += 1
            done[1] += len(result.diagnostics)
            progress(*done)

    workers = _pool_size(tasks, jobs)
    if workers <= 1:
        linted = in_process(tasks, stop, file_timeout, on_result)
    else:
        linted = in_pool(tasks, workers, stop=stop, timeout=file_timeout, on_result=on_result)
    if cache is not None:
        _store(cache, tasks, linted, uncached)
    results += [r for r in linted if r is not None]
    results.sort(key=lambda r: r.path)
    if any(d.code == UNUSED_NOQA for r in results for d in r.diagnostics):
        settle_unused_noqa(results, {t.path: t.unsafe for t in tasks})
    left = sum(1 for r in linted if r is None)
    return RunResult(results, interrupted=bool(stop) or left > 0, files_done=len(files) - left)


def _store(cache: ResultCache, tasks: list[Task], linted: list[FileResult | None], uncached: set[str]) -> None:
    """Keep each file's result in ``cache``, but for the paths in ``uncached`` (pipes)."""
    for task, result in zip(tasks, linted, strict=True):
        if result is not None and task.path not in uncached:
            cache.store(result, task.settings)


def _from_pipe(
    path: Path,
    settings: Settings,
    fix: FixMode,
    unsafe_for: Callable[[Settings], bool],
    keep_sources: bool,
    timeout: float | None,
) -> Task | FileResult | None:
    """The pipe named on the command line at ``path``, read (:func:`read_pipe`: the size
    limit of a file, ``timeout`` seconds for each wait): the task that lints it, the result
    that says why it cannot be linted, or ``None`` when it cannot hold a finding. Raises
    ``OSError``."""
    name = str(path)
    raw = read_pipe(path, size_limit(name), timeout)
    if len(raw) > size_limit(name):
        return FileResult(name, problems=[too_large(name, len(raw))])
    if file_may_have_findings(raw, name):
        return Task(name, raw, settings, fix, unsafe_for(settings), keep_sources)
    problems = undecodable(name, raw)
    return FileResult(name, problems=problems) if problems else None


class _FileTimeout(BaseException):
    """Raised by ``SIGALRM`` in this process when one file took too long."""


def in_process(
    tasks: list[Task],
    stop: StopFlag | None,
    timeout: float | None,
    on_result: Callable[[FileResult], None] | None = None,
) -> list[FileResult | None]:
    """Lint ``tasks`` in this process, in order; ``None`` for the tasks a stop request left.
    While a file is linted, a stop signal interrupts it at once (nothing is written here).
    ``on_result`` is called with each result (progress)."""
    import signal
    import threading

    linter = linter_for(tasks)
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
                    if alarm and timeout is not None:
                        signal.setitimer(signal.ITIMER_REAL, timeout)
                    done[i] = run_task(task, linter)
                finally:
                    if alarm:
                        signal.setitimer(signal.ITIMER_REAL, 0)
                    if stop is not None:
                        stop.hard = False
            except _FileTimeout:
                if done[i] is None:
                    done[i] = timed_out(task, timeout)  # type: ignore[arg-type]
                    linter = linter_for(tasks)  # its state may be half-built
            except Interrupted:
                break
            if stop:
                # The stop signal arrived while the file was linted and its Interrupted did not
                # come out: code between the handler and here swallowed it (seen as a rule's
                # "KeyError: IndentedBlock(...)" under load: an exception raised by a signal
                # handler inside a C-level dictionary lookup can be replaced). The file's
                # result may be half-built: it is not reported, like the file it interrupted.
                done[i] = None
                break
            result = done[i]
            if on_result is not None and result is not None:
                on_result(result)
            i += 1
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    return done


def _raise_file_timeout(signum: int, frame: FrameType | None) -> None:
    raise _FileTimeout


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

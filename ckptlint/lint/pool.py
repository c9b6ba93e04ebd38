"""The worker pool: processes that die with the main process, a per-file time limit, Ctrl-C."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ckptlint.lint.limits import internal_error
from ckptlint.lint.results import FileResult
from ckptlint.lint.stop import StopFlag
from ckptlint.lint.task import Task, died, linter_for, run_task, timed_out

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.context import DefaultContext, ForkContext
    from multiprocessing.process import BaseProcess

__all__ = ["RECYCLE_BETWEEN_PROJECTS_BYTES", "RECYCLE_RESIDENT_BYTES", "in_pool"]

#: A worker whose resident memory is above this after a file is replaced by a fresh fork of
#: the main process (which holds no parsed module) before its next file. A worker's memory
#: only grows: its cache of parsed modules is bounded (:class:`~ckptlint.semantic.project.Project`),
#: but CPython's allocator returns an arena to the system only when every object in it is
#: freed, so the modules it drops leave holes the next ones do not fill. Measured on 41
#: repositories linted in one run (``--jobs 2``, 1,129 files analysed): a worker grew steadily
#: to 355 MB resident; one tree alone (timm, ``--jobs 1``) peaks at 231 MB. The fresh worker
#: parses again the modules the next files reach.
RECYCLE_RESIDENT_BYTES = 260 * 1024 * 1024
#: The same, when the worker's next file is of another project than its last one: its cache is
#: dropped then anyway (:meth:`~ckptlint.semantic.project.Project.track`), so a fresh worker
#: costs nothing but the fork.
RECYCLE_BETWEEN_PROJECTS_BYTES = 160 * 1024 * 1024

_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def in_pool(
    tasks: list[Task],
    workers: int,
    *,
    stop: StopFlag | None = None,
    timeout: float | None = None,
    on_result: Callable[[FileResult], None] | None = None,
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
    fixes are written by the caller). ``on_result`` is called with each result as it comes
    (progress).
    """
    pool = _Pool(tasks, workers, on_result)
    try:
        for slot in range(workers):
            pool.start(slot)
        if not pool.live and any(pool.queues):  # no worker process could start: lint here
            pool.lint_here(stop)
        while pool.live:
            if stop is not None and stop.signal:
                break
            pool.receive_ready(timeout)
            if timeout is not None:
                pool.kill_late(timeout)
    finally:
        pool.close()
    return pool.results


class _Pool:
    """One :func:`in_pool` run: the workers alive (by the parent's end of their pipe), the
    files each slot has left, and the results so far."""

    def __init__(self, tasks: list[Task], workers: int, on_result: Callable[[FileResult], None] | None) -> None:
        self.context = _fork_context()
        self.tasks = tasks
        self.on_result = on_result
        self.results: list[FileResult | None] = [None] * len(tasks)
        # Contiguous slices, one a worker: files of one package share a worker's module cache;
        # a worker whose slice is done takes the last file of the longest slice left.
        size = -(-len(tasks) // workers)
        self.queues = [list(range(k, min(k + size, len(tasks))))[::-1] for k in range(0, len(tasks), size)]
        self.live: dict[Connection[int | None, FileResult], _Worker] = {}
        self.requeued: set[int] = set()

    def finish(self, index: int, result: FileResult) -> None:
        self.results[index] = result
        if self.on_result is not None:
            self.on_result(result)

    def grown(self, worker: _Worker, done: int) -> bool:
        """Whether ``worker``, which has just linted task ``done``, should be replaced by a
        fresh fork before its next file (see :data:`RECYCLE_RESIDENT_BYTES`)."""
        upcoming = self.peek(worker.slot)
        if upcoming is None:
            return False
        resident = worker.resident_bytes()
        if resident > RECYCLE_RESIDENT_BYTES:
            return True
        return resident > RECYCLE_BETWEEN_PROJECTS_BYTES and _project_of(self.tasks[upcoming]) != _project_of(
            self.tasks[done]
        )

    def peek(self, slot: int) -> int | None:
        """The task :meth:`take` would give ``slot`` next, without taking it."""
        if not self.queues:
            return None
        own = self.queues[slot % len(self.queues)]
        if own:
            return own[-1]
        longest = max(self.queues, key=len)
        return longest[0] if longest else None

    def take(self, slot: int) -> int | None:
        if not self.queues:
            return None
        own = self.queues[slot % len(self.queues)]
        if own:
            return own.pop()
        longest = max(self.queues, key=len)
        return longest.pop(0) if longest else None

    def assign(self, worker: _Worker) -> bool:
        """Give ``worker`` its next file; ``False`` when none is left (or the worker is gone)."""
        index = self.take(worker.slot)
        if index is None:
            return False
        try:
            worker.start_task(index)
        except OSError:  # the worker died between two files (BrokenPipeError)
            self.live.pop(worker.connection, None)
            worker.close(kill=True)
            if index in self.requeued:  # a second worker died before starting it: give up on it
                self.finish(index, died(self.tasks[index], _death(worker.process.exitcode)))
            else:
                self.requeued.add(index)
                self.queues[worker.slot % len(self.queues)].append(index)  # the next worker of the slot takes it
            if any(self.queues):
                self.start(worker.slot)
            return True  # handled: the caller must not retire it again
        return True

    def retire(self, worker: _Worker, *, kill: bool) -> None:
        self.live.pop(worker.connection, None)
        worker.close(kill=kill)

    def start(self, slot: int) -> None:
        worker = _Worker.spawn(self.context, self.tasks, slot)
        if worker is None:
            return
        self.live[worker.connection] = worker
        if not self.assign(worker):
            self.retire(worker, kill=False)

    def lint_here(self, stop: StopFlag | None) -> None:
        """Lint every queued file in this process (no worker process could start)."""
        linter = linter_for(self.tasks)
        for queue in self.queues:
            while queue and not (stop and stop.signal):
                index = queue.pop()
                self.finish(index, run_task(self.tasks[index], linter))

    def receive_ready(self, timeout: float | None) -> None:
        """Wait a short while for results; take each one that came and give its worker the next file."""
        from multiprocessing.connection import wait

        ready = wait(list(self.live), timeout=_poll_interval(self.live.values(), timeout))
        for worker in [w for connection, w in self.live.items() if connection in ready]:
            index = worker.index
            try:
                result = worker.connection.recv()
            except Exception:  # noqa: BLE001 - EOFError: the worker died (or died mid-message)
                self.retire(worker, kill=True)
                self.finish(index, died(self.tasks[index], _death(worker.process.exitcode)))
                if any(self.queues):
                    self.start(worker.slot)
                continue
            self.finish(index, result)
            if self.grown(worker, index):
                self.retire(worker, kill=False)  # it returns; a fresh fork takes its slot
                self.start(worker.slot)
            elif not self.assign(worker):
                self.retire(worker, kill=False)

    def kill_late(self, timeout: float) -> None:
        """Kill the workers that have spent more than ``timeout`` seconds on their file."""
        now = time.monotonic()
        for worker in [w for w in self.live.values() if now - w.started > timeout]:
            self.retire(worker, kill=True)
            self.finish(worker.index, timed_out(self.tasks[worker.index], timeout))
            if any(self.queues):
                self.start(worker.slot)

    def close(self) -> None:
        for worker in list(self.live.values()):
            self.retire(worker, kill=True)


def _project_of(task: Task) -> Path:
    """The project folder of ``task``'s file (:func:`~ckptlint.semantic.project.project_folder`
    of its import root)."""
    from ckptlint.semantic.project import module_name_for, project_folder

    return project_folder(module_name_for(Path(os.path.abspath(task.path)))[2])


def _poll_interval(workers: Iterable[_Worker], timeout: float | None) -> float:
    """How long to wait for a result: short enough to notice a stop request within a tenth of
    a second, and to kill a worker soon after its time limit."""
    if timeout is None:
        return 0.1
    now = time.monotonic()
    return max(0.0, min([0.1] + [w.started + timeout - now for w in workers]))


class _Worker:
    """One forked worker process and the parent's end of its pipe."""

    def __init__(self, process: BaseProcess, connection: Connection[int | None, FileResult], slot: int) -> None:
        self.process = process
        self.connection = connection
        self.slot = slot
        self.index = -1
        self.started = 0.0

    @classmethod
    def spawn(cls, context: ForkContext | DefaultContext, tasks: list[Task], slot: int) -> _Worker | None:
        try:
            parent, child = context.Pipe(duplex=True)
            process = context.Process(target=_worker_main, args=(tasks, child, os.getpid()), daemon=True)
            process.start()
        except OSError:  # no more processes, no memory: the caller lints with fewer workers
            return None
        child.close()
        return cls(process, parent, slot)

    def resident_bytes(self) -> int:
        """The worker's resident memory now, in bytes (Linux ``/proc/PID/statm``, its second
        field in pages); ``0`` where that cannot be read."""
        try:
            with open(f"/proc/{self.process.pid}/statm", "rb") as statm:
                return int(statm.read().split()[1]) * _PAGE_BYTES
        except (OSError, ValueError, IndexError):
            return 0

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


def _worker_main(tasks: list[Task], connection: Connection[FileResult, int | None], parent: int) -> None:
    """A worker process: lint the task whose index arrives, send its result back, until
    ``None`` or end-of-file. ``parent``: the process id of the ``ckptlint`` that forked it."""
    import signal

    _die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the process group: the parent decides
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    linter = linter_for(tasks)
    while True:
        try:
            index = connection.recv()
        except (EOFError, OSError):
            return
        if index is None:
            return
        task = tasks[index]
        result = run_task(task, linter)
        try:
            connection.send(result)
        except Exception as exc:  # noqa: BLE001 - e.g. a result that cannot be pickled
            connection.send(FileResult(task.path, problems=[internal_error(task.path, exc)]))


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


def _fork_context() -> ForkContext | DefaultContext:
    import multiprocessing

    try:
        return multiprocessing.get_context("fork")
    except ValueError:  # pragma: no cover - platforms without fork
        return multiprocessing.get_context()


def _death(exitcode: int | None) -> str:
    import signal

    if exitcode is not None and exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"

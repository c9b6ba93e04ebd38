"""``python -m ckptlint`` that also records the time each parsed file took.

Used by ``benchmarks/run.py`` for its cold runs: it wraps :func:`ckptlint.lint.task.run_task`
(``ckptlint.lint.results._run_task`` before the layout of December 2026; the function a
worker process, or the main process with one job, calls for every file that passed the gate
and the cache) before the CLI starts, so workers forked by the pool inherit the wrapper. Each
finished file appends one line ``SECONDS<TAB>PATH`` to the file named by the environment
variable ``CKPTLINT_BENCH_TIMES`` (opened in append mode, one ``write`` a line, so lines of
concurrent workers do not interleave). Without that variable, or when the
engine has no ``_run_task`` (a later engine), it is plain ``python -m ckptlint``. The cost
is two ``perf_counter`` calls and one short write per parsed file.
"""

from __future__ import annotations

import os
import sys
import time


def _install(path: str) -> None:
    try:  # the layered package: run_task is bound where it is called (lint.run and lint.pool)
        from ckptlint.lint import pool, run, task

        holders, name = [task, run, pool], "run_task"
    except ImportError:  # the flat package of earlier commits
        import importlib

        engine = importlib.import_module("ckptlint." + "engine")

        holders, name = [engine], "_run_task"
    original = getattr(holders[0], name, None)
    if original is None:
        return

    def timed(task, linter=None):
        start = time.perf_counter()
        try:
            return original(task, linter)
        finally:
            line = f"{time.perf_counter() - start:.6f}\t{task.path}\n".encode("utf-8", "surrogateescape")
            descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(descriptor, line)
            finally:
                os.close(descriptor)

    for holder in holders:
        if hasattr(holder, name):
            setattr(holder, name, timed)


if __name__ == "__main__":
    if os.environ.get("CKPTLINT_BENCH_TIMES"):
        _install(os.environ["CKPTLINT_BENCH_TIMES"])
    from ckptlint.cli import main

    sys.argv[0] = "ckptlint"
    main()

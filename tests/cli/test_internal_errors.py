"""A bug in one rule, or a worker process that dies, never stops the run: the file is
reported as an internal error (exit code 2) and every other file is still linted."""

from __future__ import annotations

import os
import signal

import pytest

from ckptlint.lint import linter, pool
from ckptlint.lint import run as lint_run
from ckptlint.rules import ALL_RULES
from ckptlint.rules.ckp001_use_reentrant import CheckpointWithoutUseReentrant

CALL = "from torch.utils.checkpoint import checkpoint\ncheckpoint(f, x)\n"


class _BoomOnBadFiles(CheckpointWithoutUseReentrant):
    """CKP001, except that it raises on files named ``bad*.py``."""

    def check(self, ctx):
        if os.path.basename(ctx.analysis.source.path).startswith("bad"):
            raise ValueError("boom")
        super().check(ctx)


@pytest.mark.slow
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_rule_that_raises_on_one_file(run_cli, write, tmp_path, monkeypatch, jobs):
    monkeypatch.setitem(ALL_RULES, "CKP001", _BoomOnBadFiles)
    write("a.py", CALL)
    bad = write("bad.py", CALL)
    write("c.py", CALL)
    result = run_cli(".", "-j", jobs)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [f"error: {bad.name}: internal error in rule CKP001: ValueError: boom"]
    assert [line.split(":")[0] for line in result.stdout.splitlines() if "CKP001" in line] == ["a.py", "c.py"]


def test_verbose_prints_the_traceback_of_an_internal_error(run_cli, write, monkeypatch):
    monkeypatch.setitem(ALL_RULES, "CKP001", _BoomOnBadFiles)
    bad = write("bad.py", CALL)
    result = run_cli("bad.py", "--verbose")
    assert result.exit_code == 2
    lines = result.stderr.rstrip().splitlines()
    assert lines[0] == f"error: {bad.name}: internal error in rule CKP001: ValueError: boom"
    assert lines[1] == "Traceback (most recent call last):"
    assert 'raise ValueError("boom")' in result.stderr
    assert lines[-1] == "ValueError: boom"
    assert bad.read_text() == CALL


def test_an_exception_outside_the_rules_is_an_internal_error_too(run_cli, write, monkeypatch):
    """FileLinter.lint never raises, also for a bug in the engine itself (here: noqa)."""

    def broken(source, **options):
        raise KeyError("noqa index")

    monkeypatch.setattr(linter, "parse_noqa", broken)
    bad = write("bad.py", CALL)
    result = run_cli("bad.py")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [f"error: {bad.name}: internal error: KeyError: 'noqa index'"]


def _dies_on(names: tuple[str, ...], how):
    original = linter.FileLinter.lint

    def lint(self, path, *args, **kwargs):
        if os.path.basename(path) in names:
            how()
        return original(self, path, *args, **kwargs)

    return lint


@pytest.mark.slow
@pytest.mark.parametrize(
    ("how", "reason"),
    [
        (lambda: os._exit(7), "exit code 7"),
        (lambda: os.kill(os.getpid(), signal.SIGSEGV), "killed by SIGSEGV"),
    ],
    ids=["os._exit", "SIGSEGV"],
)
def test_a_worker_that_dies_does_not_hang_or_stop_the_run(run_cli, write, tmp_path, monkeypatch, how, reason):
    for name in ("a.py", "b.py", "c.py", "d.py", "e.py", "f.py"):
        write(name, CALL)
    monkeypatch.setattr(linter.FileLinter, "lint", _dies_on(("b.py", "e.py"), how))
    signal.alarm(60)  # a hang fails the test instead of blocking the suite
    try:
        result = run_cli(".", "-j", "2")
    finally:
        signal.alarm(0)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: {name}: internal error: the worker process died while linting this file ({reason}); "
        "file skipped"
        for name in ("b.py", "e.py")
    ]
    linted = [line.split(":")[0] for line in result.stdout.splitlines() if "CKP001" in line]
    assert linted == ["a.py", "c.py", "d.py", "f.py"]


@pytest.mark.slow
def test_every_file_after_a_dead_worker_is_linted_once(tmp_path, monkeypatch):
    """The supervised rerun pins each death on one file and goes on with the next."""
    from ckptlint.api import settings_for

    paths = []
    for i in range(12):
        path = tmp_path / f"m{i:02}.py"
        path.write_text(CALL)
        paths.append(path)
    dying = ("m00.py", "m01.py", "m07.py", "m11.py")
    monkeypatch.setattr(linter.FileLinter, "lint", _dies_on(dying, lambda: os._exit(3)))
    run = lint_run.lint_files(paths, lambda p: settings_for(), jobs=3)
    assert [os.path.basename(r.path) for r in run.results] == [p.name for p in paths]
    for r in run.results:
        if os.path.basename(r.path) in dying:
            assert [p.kind for p in r.problems] == ["internal"] and r.diagnostics == []
        else:
            assert r.problems == [] and [d.code for d in r.diagnostics] == ["CKP001"]


def test_a_run_with_an_internal_error_never_says_all_checks_passed(run_cli, write, monkeypatch):
    monkeypatch.setitem(ALL_RULES, "CKP001", _BoomOnBadFiles)
    write("bad.py", CALL)
    write("clean.py", "x = 1\n")
    result = run_cli("--no-cache", ".")
    assert result.exit_code == 2
    assert result.stdout == "No errors found, but 1 file could not be fully checked (internal error above).\n"


@pytest.mark.slow
def test_a_worker_that_dies_between_two_files_does_not_stop_the_run(tmp_path, monkeypatch):
    """A worker killed while idle (the OOM killer, say): its next file goes to a new worker."""
    from ckptlint.api import settings_for

    paths = []
    for i in range(6):
        path = tmp_path / f"m{i}.py"
        path.write_text(CALL)
        paths.append(path)
    original = pool._Worker.start_task
    killed: list[int] = []

    def start_task(self, index):
        if index == 2 and not killed:  # kill the worker just before it gets its next file
            killed.append(self.process.pid)
            self.process.kill()
            self.process.join()
        return original(self, index)

    monkeypatch.setattr(pool._Worker, "start_task", start_task)
    monkeypatch.setattr(lint_run, "_BYTES_PER_WORKER", 1)
    run = lint_run.lint_files(paths, lambda p: settings_for(), jobs=2)
    assert killed
    assert run.problems == [] and [os.path.basename(d.path) for d in run.diagnostics] == [p.name for p in paths]

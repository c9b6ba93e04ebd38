"""What keeps a run's memory bounded: workers replaced when they have grown, files read with
buffers of their own size, a project's modules dropped when the run moves to another project."""

from __future__ import annotations

import os

import pytest

from ckptlint.lint import pool
from ckptlint.lint import run as lint_run
from ckptlint.text.reading import read_regular

CALL = "from torch.utils.checkpoint import checkpoint\ncheckpoint(f, x)\n"


@pytest.fixture
def spawned(monkeypatch):
    """The workers the pool forks in the test, counted as they start."""
    started: list[object] = []
    original = pool._Worker.spawn.__func__

    def spawn(cls, *args, **kwargs):
        worker = original(cls, *args, **kwargs)
        started.append(worker)
        return worker

    monkeypatch.setattr(pool._Worker, "spawn", classmethod(spawn))
    return started


@pytest.mark.slow
def test_a_worker_grown_past_the_bound_is_replaced_and_every_file_is_linted_once(tmp_path, monkeypatch, spawned):
    from ckptlint.api import settings_for

    paths = []
    for i in range(8):
        path = tmp_path / f"m{i}.py"
        path.write_text(CALL)
        paths.append(path)
    monkeypatch.setattr(pool, "RECYCLE_RESIDENT_BYTES", 0)  # every worker is over it after a file
    run = lint_run.lint_files(paths, lambda p: settings_for(), jobs=2)
    assert [os.path.basename(r.path) for r in run.results] == [p.name for p in paths]
    assert all(r.problems == [] and [d.code for d in r.diagnostics] == ["CKP001"] for r in run.results)
    # two to start, then one more after each file but the last of each slot
    assert len(spawned) == 2 + len(paths) - 2


def test_a_worker_under_the_bound_keeps_linting(tmp_path, monkeypatch, spawned):
    from ckptlint.api import settings_for

    paths = [tmp_path / f"m{i}.py" for i in range(4)]
    for path in paths:
        path.write_text(CALL)
    monkeypatch.setattr(pool, "RECYCLE_RESIDENT_BYTES", 1 << 40)
    run = lint_run.lint_files(paths, lambda p: settings_for(), jobs=2)
    assert [d.code for r in run.results for d in r.diagnostics] == ["CKP001"] * 4
    assert len(spawned) == 2


@pytest.mark.parametrize("size", [0, 1, 4095, 4096, 70_000])
def test_a_file_is_read_whole_up_to_the_limit(tmp_path, size):
    path = tmp_path / "f.py"
    data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    path.write_bytes(data)
    assert read_regular(path, 100_000) == data


def test_a_file_over_the_limit_gives_one_byte_more_than_the_limit(tmp_path):
    path = tmp_path / "f.py"
    path.write_bytes(b"a" * 5000)
    assert read_regular(path, 1000) == b"a" * 1001
    assert read_regular(path, 4999) == b"a" * 5000
    assert read_regular(path, 5000) == b"a" * 5000


def test_the_modules_of_a_project_are_dropped_when_the_next_file_is_of_another(tmp_path):
    from ckptlint.semantic.project import Project

    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
        (folder / "pyproject.toml").write_text("[project]\nname = 'x'\n")
        (folder / "layers.py").write_text("class Block:\n    pass\n")
    modules = Project().ast_project
    modules.track(first)
    assert modules.ast_analysis_for_file(first / "layers.py") is not None
    modules.track(first)  # the next file of the same project: kept
    assert modules.cached(first / "layers.py") is not None
    modules.track(second)
    assert modules.cached(first / "layers.py") is None
    assert modules.ast_analysis_for_file(second / "layers.py") is not None


@pytest.mark.slow
def test_a_worker_moving_to_another_project_is_replaced_at_the_lower_bound(tmp_path, monkeypatch, spawned):
    from ckptlint.api import settings_for

    paths = []
    for project, count in (("first", 2), ("second", 6)):
        folder = tmp_path / project
        folder.mkdir()
        (folder / "pyproject.toml").write_text("[project]\nname = 'x'\n")
        for i in range(count):
            path = folder / f"m{i}.py"
            path.write_text(CALL)
            paths.append(path)
    monkeypatch.setattr(pool, "RECYCLE_RESIDENT_BYTES", 1 << 40)
    monkeypatch.setattr(pool, "RECYCLE_BETWEEN_PROJECTS_BYTES", 0)
    run = lint_run.lint_files(paths, lambda p: settings_for(), jobs=2)
    assert [d.code for r in run.results for d in r.diagnostics] == ["CKP001"] * 8
    # slot 0 lints first/m0, first/m1, then second/m0: one fresh worker there; slot 1 stays
    assert len(spawned) == 3

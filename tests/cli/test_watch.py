"""``--watch``: a round at the start, another after each change of a Python or configuration
file (watchfiles' notifications), the configuration read afresh each round; Ctrl-C ends it with
exit status 0; the options that write are refused."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ckptlint.cli.app import main
from ckptlint.cli.watch import change_filter, is_watched, watch
from ckptlint.lint.stop import StopFlag

pytest.importorskip("watchfiles")

ROOT = Path(__file__).resolve().parents[2]
IMPORT = "from torch.utils.checkpoint import checkpoint\n"
BAD = IMPORT + "y = checkpoint(f, x)\n"


def _options(*args: str):
    """The :class:`~ckptlint.cli.options.Options` click makes of ``args``."""
    from ckptlint.cli.options import Options

    ctx = main.make_context("ckptlint", list(args))
    return Options(**ctx.params)


class _Writer:
    """Writes ``text`` to ``path`` every 0.2 s until stopped: a change the watcher, started just
    after the round, cannot miss."""

    def __init__(self, path: Path, text: str) -> None:
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(path, text), daemon=True)
        self.thread.start()

    def _run(self, path: Path, text: str) -> None:
        while not self.done.wait(0.2):
            path.write_text(text, encoding="utf-8")


@pytest.mark.slow
def test_rounds_follow_changes_of_code_and_configuration(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(BAD)
    stop_event = threading.Event()
    statuses: list[int] = []
    outputs: list[str] = []
    errors: list[str] = []
    writers: list[_Writer] = []

    def after_round(number: int, status: int) -> None:
        statuses.append(status)
        captured = capsys.readouterr()
        outputs.append(captured.out)
        errors.append(captured.err)
        for writer in writers:
            writer.done.set()
        if number == 0:
            writers.append(_Writer(tmp_path / "pkg" / "m.py", BAD + "z = checkpoint(f, x)\n"))
        elif number == 1:
            writers.append(_Writer(tmp_path / "pyproject.toml", '[tool.ckptlint]\nignore = ["CKP001"]\n'))
        else:
            stop_event.set()

    assert watch(_options("--watch", "--no-cache", "."), StopFlag(), stop_event=stop_event, after_round=after_round) == 0
    assert statuses == [1, 1, 0]
    assert [line.split(" CKP")[0] for line in outputs[0].splitlines() if " CKP" in line] == ["pkg/m.py:2:5:"]
    assert [line.split(" CKP")[0] for line in outputs[1].splitlines() if " CKP" in line] == ["pkg/m.py:2:5:", "pkg/m.py:3:5:"]
    assert outputs[2] == "All checks passed!\n"  # the configuration was read again
    assert [e.splitlines()[0].split("] ", 1)[1] for e in errors] == [
        "Starting linter in watch mode...",
        "File change detected (pkg/m.py)...",
        "File change detected (pyproject.toml)...",
    ]
    assert all(e.splitlines()[-1].endswith("] Watching for file changes.") for e in errors)


@pytest.mark.slow
def test_a_deleted_configuration_file_is_no_longer_watched(tmp_path: Path, monkeypatch, capsys) -> None:
    """The ``pyproject.toml`` above the watched folder is watched beside it; once deleted, the
    watch goes on (watchfiles refuses a path that does not exist: "No path was found")."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.ckptlint]\nignore = ["CKP001"]\n')
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(BAD)
    stop_event = threading.Event()
    statuses: list[int] = []
    writers: list[_Writer] = []

    def after_round(number: int, status: int) -> None:
        statuses.append(status)
        capsys.readouterr()
        for writer in writers:
            writer.done.set()
        if number == 0:
            (tmp_path / "pyproject.toml").unlink()
            writers.append(_Writer(tmp_path / "pkg" / "m.py", BAD + "z = 1\n"))
        else:
            stop_event.set()

    assert watch(_options("--watch", "--no-cache", "pkg"), StopFlag(), stop_event=stop_event, after_round=after_round) == 0
    assert statuses[0] == 0 and statuses[-1] == 1  # CKP001 ignored, then reported without the configuration


@pytest.mark.slow
def test_ctrl_c_ends_the_watch_with_status_0(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(BAD)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ckptlint", "check", "--watch", "."],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 60
        seen = ""
        while "Watching for file changes." not in seen and time.monotonic() < deadline:
            seen += proc.stderr.readline()
        assert "Watching for file changes." in seen
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "m.py:2:5: CKP001" in out
    assert "Traceback" not in err


@pytest.mark.parametrize("option", ["--fix", "--diff", "--add-noqa", "--show-files"])
def test_options_that_write_or_list_are_refused(run_cli, write, option: str) -> None:
    write("m.py", BAD)
    result = run_cli("--watch", option, "m.py")
    assert result.exit_code == 2
    assert f"error: --watch and {option} cannot be used together" in result.stderr


def test_a_missing_path_is_refused(run_cli) -> None:
    result = run_cli("check", "--watch", "nowhere")
    assert result.exit_code == 2
    assert "nowhere: no such file or directory" in result.stderr


def test_without_watchfiles_it_says_what_to_install(run_cli, write, monkeypatch) -> None:
    write("m.py", BAD)
    monkeypatch.setitem(sys.modules, "watchfiles", None)
    result = run_cli("--watch", "m.py")
    assert result.exit_code == 2
    assert "pip install 'ckptlint[watch]'" in result.stderr


@pytest.mark.parametrize(
    ("path", "watched"),
    [
        ("src/m.py", True),
        ("nb.ipynb", True),
        ("stubs/m.pyi", True),
        ("pyproject.toml", True),
        (".ckptlint.toml", True),
        ("requirements-dev.txt", True),
        ("requirements/base.txt", True),
        ("notes.txt", False),
        (".ckptlint_cache/0.1.0-abc/1234abcd.json", False),
        ("m.pyc", False),
    ],
)
def test_which_changes_start_a_round(path: str, watched: bool) -> None:
    assert is_watched(path) is watched


def test_changes_in_tool_folders_are_dropped(tmp_path: Path) -> None:
    from watchfiles import Change

    relevant = change_filter()
    assert relevant(Change.modified, str(tmp_path / "src" / "m.py"))
    assert not relevant(Change.added, str(tmp_path / ".venv" / "lib" / "site-packages" / "x.py"))
    assert not relevant(Change.modified, str(tmp_path / ".git" / "config.py"))
    assert not relevant(Change.modified, str(tmp_path / "src" / "notes.md"))

"""Progress on stderr when it is a terminal (files done of total, findings so far; nothing in
a pipe or with ``-q``), and ``--help`` naming ``ckptlint server``."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ckptlint.cli.progress import ProgressLine, progress_for

ROOT = Path(__file__).resolve().parents[2]
CALL = "from torch.utils.checkpoint import checkpoint\n\ny = checkpoint(f, x)\n"
PLAIN = "x = 1\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for i in range(3):
        (tmp_path / f"m{i}.py").write_text(CALL)
    (tmp_path / "plain.py").write_text(PLAIN)
    return tmp_path


def _run_with_terminal_stderr(cwd: Path, *args: str) -> tuple[int, str, str]:
    """Run ckptlint with stderr on a pseudo-terminal; (exit code, stdout, what the terminal got)."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "ckptlint", *args],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=slave,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            timeout=120,
        )
    finally:
        os.close(slave)
    received = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the other end is closed and everything was read
            break
        if not chunk:
            break
        received += chunk
    os.close(master)
    return proc.returncode, proc.stdout.decode(), received.decode()


@pytest.mark.slow
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_progress_on_a_terminal(tree: Path, jobs: str) -> None:
    code, stdout, terminal = _run_with_terminal_stderr(tree, "--no-cache", "-j", jobs, ".")
    assert code == 1
    assert stdout.count(": CKP001 ") == 3  # use_reentrant=False changes the variant here: no [*]
    shown = re.findall(r"\[(\d+)/(\d+) files, (\d+) findings?\]", terminal)
    assert shown[-1] == ("4", "4", "3")  # the last line drawn: every file, every finding
    assert all(total == "4" for _, total, _ in shown)
    assert terminal.endswith("\r\x1b[K")  # erased before the report
    assert re.search(r"\[\d+/\d+ files", stdout) is None  # no progress in the report


@pytest.mark.slow
def test_no_progress_with_quiet(tree: Path) -> None:
    code, stdout, terminal = _run_with_terminal_stderr(tree, "--no-cache", "-q", ".")
    assert code == 1 and stdout.count(": CKP001 ") == 3
    assert terminal == ""


@pytest.mark.slow
def test_no_progress_when_stderr_is_not_a_terminal(tree: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ckptlint", "--no-cache", "."],
        cwd=tree,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert proc.returncode == 1
    assert proc.stderr == ""


def test_the_progress_line_is_throttled_and_shows_the_last_state() -> None:
    stream = io.StringIO()
    line = ProgressLine(stream, total=1000, interval=3600)
    for done in range(1000):
        line(done, done // 10)
    line(1000, 100)  # the last is always drawn
    assert stream.getvalue() == "\r\x1b[K[0/1000 files, 0 findings]\r\x1b[K[1000/1000 files, 100 findings]"
    line.clear()
    assert stream.getvalue().endswith("\r\x1b[K")
    assert progress_for(10, quiet=False, stream=io.StringIO()) is None  # not a terminal


def test_help_names_the_language_server(run_cli) -> None:
    result = run_cli("--help")
    assert result.exit_code == 0
    assert "`ckptlint server` starts the language server" in " ".join(result.stdout.split())

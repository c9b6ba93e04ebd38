"""Pipes named on the command line (``ckptlint <(git show REV:model.py)``, ``/dev/fd/N``,
``/dev/stdin`` fed by a pipe) are read as the user asked, within a file's bounds (its size
limit, a time limit for each wait), linted with the settings of the working folder, never
cached and never written; ``--config`` that is not a regular file says what it is."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ckptlint.lint.limits import MAX_FILE_BYTES
from ckptlint.text.reading import PipeTimeout, read_pipe

CALL = "from torch.utils.checkpoint import checkpoint\ny = checkpoint(f, x)\n"


@pytest.fixture
def pipe() -> Iterator:
    """``pipe(data)``: the path (``/dev/fd/N``) of a pipe a thread fills with ``data``, then
    closes, as a shell's process substitution gives it."""
    made: list[tuple[int, threading.Thread]] = []

    def make(data: bytes) -> str:
        read_end, write_end = os.pipe()

        def write() -> None:
            try:
                _write_all(write_end, data)
            except BrokenPipeError:  # the reader took what it allows and closed its end
                pass
            finally:
                os.close(write_end)

        thread = threading.Thread(target=write, daemon=True)
        thread.start()
        made.append((read_end, thread))
        return f"/dev/fd/{read_end}"

    yield make
    for read_end, thread in made:
        thread.join(timeout=10)
        os.close(read_end)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def test_a_pipe_named_on_the_command_line_is_linted_and_never_cached(run_cli, pipe, tmp_path: Path) -> None:
    path = pipe(CALL.encode())
    result = run_cli("--cache-dir", "cache", path)
    assert result.exit_code == 1, result.stderr
    assert result.stdout.startswith(f"{path}:2:5: CKP001 `checkpoint()` without `use_reentrant`")
    stored = "".join(p.read_text() for p in (tmp_path / "cache").rglob("*.json"))
    assert "/dev/fd/" not in stored  # its name means nothing to a later run


def test_a_pipe_takes_the_settings_of_the_working_folder(run_cli, pipe, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.ckptlint]\nignore = ["CKP001"]\n')
    result = run_cli("--no-cache", pipe(CALL.encode()))
    assert (result.exit_code, result.stdout) == (0, "All checks passed!\n")


def test_fix_of_a_pipe_reports_it_and_writes_nothing(run_cli, pipe) -> None:
    path = pipe(CALL.encode())
    result = run_cli("--no-cache", "--fix", "--unsafe-fixes", path)
    assert result.exit_code == 1
    assert result.stdout.splitlines()[:2] == [
        f"{path}:1:1: CKP902 cannot write the fixed file: not a regular file (a FIFO); fixes not written",
        f"{path}:2:5: CKP001 [*] `checkpoint()` without `use_reentrant`: PyTorch warns and silently runs the legacy "
        "reentrant variant; pass `use_reentrant=False` (recommended)",
    ]


def test_a_pipe_over_the_size_limit_is_read_no_further(run_cli, pipe) -> None:
    path = pipe(b"checkpoint = 1\n" + b"#" * MAX_FILE_BYTES)
    result = run_cli("--no-cache", path)
    assert result.exit_code == 1
    assert result.stdout.startswith(f"{path}:1:1: CKP902 too large to lint (2.0 MiB; the limit is 2 MiB); file skipped")


def test_a_pipe_whose_writer_sends_nothing_times_out_and_a_fifo_without_writer_is_empty(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()  # the writer holds its end open and writes nothing
    try:
        with pytest.raises(PipeTimeout, match="nothing came from the pipe for 0.2 s"):
            read_pipe(f"/dev/fd/{read_end}", 100, timeout=0.2)
    finally:
        os.close(read_end)
        os.close(write_end)
    os.mkfifo(tmp_path / "fifo")
    assert read_pipe(tmp_path / "fifo", 100, timeout=0.2) == b""  # no writer: nothing waited for


@pytest.mark.parametrize("kind", ["/dev/null", "FIFO"])
def test_a_config_that_is_not_a_regular_file_says_what_it_is(run_cli, tmp_path: Path, kind: str) -> None:
    (tmp_path / "m.py").write_text(CALL)
    if kind == "FIFO":
        os.mkfifo(tmp_path / "conf.toml")
    config, what = ("/dev/null", "a character device") if kind == "/dev/null" else ("conf.toml", "a FIFO")
    result = run_cli("--config", config, "m.py")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {config}: not a regular file ({what}); --config takes a TOML configuration file (for none: --isolated)\n"
    )
    missing = run_cli("--config", "nope.toml", "m.py")
    assert (missing.exit_code, missing.stderr) == (2, "error: nope.toml: configuration file not found\n")
    assert json.loads(run_cli("--isolated", "--output-format", "json", "m.py").stdout)[0]["code"] == "CKP001"

"""Files named on the command line that are not regular files, and files the user may not
read or write: reported (CKP902), never read or written, and the run goes on.

The permission tests run ckptlint as an ordinary user: as root (CI), the child process drops
to user ``nobody`` (``run_process(..., unprivileged=True)``); as an ordinary user it already is
one. None of them is skipped.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from ckptlint.output import FORMATS

CALL = "from torch.utils.checkpoint import checkpoint\n\ny = checkpoint(f, x)\n"
FIXED = "from torch.utils.checkpoint import checkpoint\n\ny = checkpoint(f, x, use_reentrant=False)\n"


def _special(tmp_path: Path, kind: str) -> Path:
    if kind == "link to /dev/zero":
        path = tmp_path / "zero.py"
        path.symlink_to("/dev/zero")
    elif kind == "FIFO":
        path = tmp_path / "pipe.py"
        os.mkfifo(path)
    elif kind == "link to a FIFO":
        os.mkfifo(tmp_path / "real_pipe")
        path = tmp_path / "pipe_link.py"
        path.symlink_to(tmp_path / "real_pipe")
    else:  # a socket
        path = tmp_path / "sock.py"
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        server.close()
    return path


KINDS = ["link to /dev/zero", "FIFO", "link to a FIFO", "socket"]
WHAT = {"link to /dev/zero": "a character device", "FIFO": "a FIFO", "link to a FIFO": "a FIFO", "socket": "a socket"}


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_a_named_special_file_is_reported_not_read(tmp_path: Path, run_process, kind: str) -> None:
    """A device or socket is reported; a FIFO named on the command line is read (a pipe is
    what the user asked for: tests/cli/test_pipes.py), and one nobody writes to reads as
    empty at once, never waited on."""
    (tmp_path / "ok.py").write_text(CALL)
    special = _special(tmp_path, kind)
    # a memory cap and a time limit: reading /dev/zero or waiting on the FIFO fails the test
    result = run_process("--no-cache", special.name, "ok.py", cwd=tmp_path, memory=1 * 2**30, timeout=60)
    assert result.exit_code == 1, result.stderr
    if "FIFO" in kind:
        assert "CKP902" not in result.stdout
    else:
        assert f"{special.name}:1:1: CKP902 not a regular file ({WHAT[kind]}); not read" in result.stdout
    assert "ok.py:3:5: CKP001" in result.stdout
    assert result.stderr == ""


@pytest.mark.slow
@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_named_special_file_in_every_format(tmp_path: Path, run_process, fmt: str) -> None:
    (tmp_path / "ok.py").write_text(CALL)
    special = _special(tmp_path, "link to /dev/zero")
    result = run_process(
        "--no-cache", "--output-format", fmt, special.name, "ok.py", cwd=tmp_path, memory=1 * 2**30, timeout=60
    )
    assert result.exit_code == 1, result.stderr
    assert "CKP902" in result.stdout and "not a regular file" in result.stdout
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_show_sites_skips_a_named_fifo(tmp_path: Path, run_process) -> None:
    (tmp_path / "ok.py").write_text(CALL)
    special = _special(tmp_path, "FIFO")
    result = run_process("--show-sites", special.name, "ok.py", cwd=tmp_path, timeout=60)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("ok.py:3:5  torch.utils.checkpoint.checkpoint")


# ------------------------------------------------------------------------------ permissions
@pytest.mark.slow
def test_fix_refuses_a_read_only_file_and_goes_on(open_folder: Path, run_process) -> None:
    """As ruff: a file the user may not write is not replaced, even though the folder would
    allow a rename over it; it is reported and the other files are fixed."""
    locked = open_folder / "locked.py"
    locked.write_text(CALL)
    locked.chmod(0o444)  # root's as root, else the user's own: neither may be written
    owner = locked.stat().st_uid
    mine = open_folder / "mine.py"
    mine.write_text(CALL)
    mine.chmod(0o666)
    result = run_process("--no-cache", "--fix", "--unsafe-fixes", ".", cwd=open_folder, unprivileged=True)
    assert result.exit_code == 1, result.stderr
    assert locked.read_text() == CALL
    assert (locked.stat().st_uid, locked.stat().st_mode & 0o777) == (owner, 0o444)
    assert "locked.py:1:1: CKP902 cannot write the fixed file: permission denied; fixes not written" in result.stdout
    assert "locked.py:3:5: CKP001" in result.stdout
    assert mine.read_text() == FIXED
    assert "Found 3 errors (1 fixed, 2 remaining)." in result.stdout


@pytest.mark.slow
def test_an_unreadable_file_named_on_the_command_line_is_ckp902(open_folder: Path, run_process) -> None:
    secret = open_folder / "secret.py"
    secret.write_text(CALL)
    secret.chmod(0)
    (open_folder / "ok.py").write_text(CALL)
    result = run_process("--no-cache", "secret.py", "ok.py", cwd=open_folder, unprivileged=True)
    assert result.exit_code == 1, result.stderr
    assert result.stdout.splitlines()[:2] == [
        "ok.py:3:5: CKP001 `checkpoint()` without `use_reentrant`: PyTorch warns and silently runs the legacy "
        "reentrant variant; pass `use_reentrant=False` (recommended)",
        "secret.py:1:1: CKP902 cannot read: permission denied",
    ]


@pytest.mark.slow
def test_an_unreadable_file_found_by_the_walk_is_ckp902(open_folder: Path, run_process) -> None:
    secret = open_folder / "secret.py"
    secret.write_text(CALL)
    secret.chmod(0)
    (open_folder / "ok.py").write_text(CALL)
    result = run_process("--no-cache", ".", cwd=open_folder, unprivileged=True)
    assert result.exit_code == 1, result.stderr
    assert "secret.py:1:1: CKP902 cannot read: permission denied" in result.stdout
    assert "ok.py:3:5: CKP001" in result.stdout


@pytest.mark.slow
def test_stdin_filename_of_an_unreadable_file_is_never_read(open_folder: Path, run_process) -> None:
    secret = open_folder / "secret.py"
    secret.write_text("x = 1\n")
    secret.chmod(0)
    result = run_process(
        "--no-cache", "--stdin-filename", "secret.py", "-", cwd=open_folder, unprivileged=True, stdin=CALL.encode()
    )
    assert result.exit_code == 1, result.stderr
    assert result.stdout.startswith("secret.py:3:5: CKP001")
    fixed = run_process(
        "--fix", "--unsafe-fixes", "--stdin-filename", "secret.py", "-",
        cwd=open_folder, unprivileged=True, stdin=CALL.encode(),
    )
    assert (fixed.exit_code, fixed.stdout) == (0, FIXED)


@pytest.mark.slow
def test_an_unreadable_report_file_is_replaced(open_folder: Path, run_process) -> None:
    """``-o`` names a file the user may write but not read: the report is written to it."""
    (open_folder / "ok.py").write_text(CALL)
    report = open_folder / "report.txt"
    report.write_text("old")
    report.chmod(0o222)
    if os.geteuid() == 0:
        os.chown(report, 65534, 65534)
    result = run_process("--no-cache", "-o", "report.txt", "ok.py", cwd=open_folder, unprivileged=True)
    assert result.exit_code == 1, result.stderr
    report.chmod(0o644)
    assert report.read_text().startswith("ok.py:3:5: CKP001")


@pytest.mark.slow
def test_a_folder_that_can_be_listed_but_not_entered_does_not_stop_the_run(open_folder: Path, run_process) -> None:
    (open_folder / "ok.py").write_text(CALL)
    closed = open_folder / "closed"
    closed.mkdir()
    (closed / "y.py").write_text(CALL)
    closed.chmod(0o644)  # readable, not traversable: its .gitignore cannot even be looked for
    try:
        result = run_process("--no-cache", ".", cwd=open_folder, unprivileged=True)
    finally:
        closed.chmod(0o755)
    assert result.exit_code == 1, result.stderr
    assert "error:" not in result.stderr
    assert result.stdout.startswith("closed/y.py:1:1: CKP902 cannot read: permission denied\nok.py:3:5: CKP001 ")


@pytest.mark.slow
def test_fix_in_a_folder_the_user_cannot_write_keeps_the_file(open_folder: Path, run_process) -> None:
    """The file may be written but its folder may not: the temporary file of the atomic write
    cannot be made there. One CKP902 line says why, the file is left as it was, the other
    files are fixed, and the exit status is that of any unwritten file."""
    package = open_folder / "pkg"
    package.mkdir()
    kept = package / "kept.py"
    kept.write_text(CALL)
    kept.chmod(0o666)
    if os.geteuid() == 0:
        os.chown(kept, 65534, 65534)
    package.chmod(0o555)
    mine = open_folder / "mine.py"
    mine.write_text(CALL)
    mine.chmod(0o666)
    try:
        result = run_process("--no-cache", "--fix", "--unsafe-fixes", ".", cwd=open_folder, unprivileged=True)
    finally:
        package.chmod(0o755)
    assert result.exit_code == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert kept.read_text() == CALL
    assert sorted(p.name for p in package.iterdir()) == ["kept.py"]
    assert mine.read_text() == FIXED
    errors = [line for line in result.stdout.splitlines() if "CKP902" in line]
    assert errors == [
        "pkg/kept.py:1:1: CKP902 cannot write the fixed file: cannot create a file in its folder (permission denied); "
        "fixes not written"
    ]
    assert "pkg/kept.py:3:5: CKP001" in result.stdout
    assert "Found 3 errors (1 fixed, 2 remaining)." in result.stdout

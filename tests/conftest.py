"""Shared fixtures: a ``run_cli`` helper that runs ckptlint in-process with click's runner,
and a temporary project folder."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from ckptlint.cli.app import main


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def run_cli(tmp_path: Path) -> Callable[..., CliResult]:
    """Run ``ckptlint`` with ``args`` in ``cwd`` (default: ``tmp_path``) in this process."""

    def run(*args: str, cwd: Path | None = None, input: str | None = None, env: dict | None = None) -> CliResult:
        runner = CliRunner()
        old = os.getcwd()
        os.chdir(cwd or tmp_path)
        try:
            result = runner.invoke(main, list(args), input=input, env=env, catch_exceptions=False)
        finally:
            os.chdir(old)
        return CliResult(result.exit_code, result.stdout, result.stderr)

    return run


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str | bytes], Path]:
    """Write ``content`` to ``tmp_path / name`` (creating folders) and return the path."""

    def _write(name: str, content: str | bytes) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        return path

    return _write


#: The user a test drops to when it runs as root (CI does) and needs an ordinary user's
#: permissions: ``nobody`` on Linux.
UNPRIVILEGED_UID = 65534


def _drop_privileges() -> None:  # pragma: no cover - runs in the child process
    """Become :data:`UNPRIVILEGED_UID` (groups cleared, group the same number)."""
    os.setgroups([])
    os.setgid(UNPRIVILEGED_UID)
    os.setuid(UNPRIVILEGED_UID)


def _drop_capabilities() -> None:  # pragma: no cover - runs in the child process
    """Stay root but lose every capability at the next exec (prctl ``PR_CAPBSET_DROP``):
    root without ``CAP_DAC_OVERRIDE``/``CAP_DAC_READ_SEARCH``/``CAP_FOWNER`` is held to file
    permissions like any user (a ``0444`` file is not writable, a ``0`` file not readable).
    Used where user ``nobody`` cannot run this interpreter (installed in root's home)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    for capability in range(last + 1):
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "cannot drop a capability")


_UNPRIVILEGED_STEP: list = []


def _unprivileged_step():
    """How a child process becomes an ordinary user: ``None`` when this process is not root,
    else :func:`_drop_privileges` when user ``nobody`` can run this interpreter and ckptlint
    (checked once), else :func:`_drop_capabilities`."""
    if os.geteuid() != 0:
        return None
    if not _UNPRIVILEGED_STEP:
        import subprocess
        import sys

        try:
            probe = subprocess.run(
                [sys.executable, "-c", "import json, tempfile, ckptlint.cli.app"],
                cwd="/",
                env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
                preexec_fn=_drop_privileges,
                capture_output=True,
                check=False,
            )
            works = probe.returncode == 0
        except OSError:  # the interpreter itself is out of that user's reach
            works = False
        _UNPRIVILEGED_STEP.append(_drop_privileges if works else _drop_capabilities)
    return _UNPRIVILEGED_STEP[0]


def _limit_memory(limit_bytes: int):
    def apply() -> None:  # pragma: no cover - runs in the child process
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return apply


@dataclass
class ProcessResult:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def open_folder():
    """A fresh folder every user may enter and write (``tmp_path`` is private to its owner),
    for tests that run ckptlint as another user; removed afterwards."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="ckptlint-test-"))
    folder.chmod(0o777)  # not sticky: the user may replace the files the test wrote
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def run_process() -> Callable[..., ProcessResult]:
    """Run ``python -m ckptlint`` with ``args`` in a child process: ``unprivileged`` runs it as
    an ordinary user (as root, the child drops to :data:`UNPRIVILEGED_UID`, or where that
    user cannot run the interpreter, drops every capability; otherwise it already is one); ``memory`` caps its address space (bytes); ``timeout`` in seconds; ``stdin``:
    bytes, or a file object, or ``None`` for a closed stdin; ``stdout``: a file object
    instead of capturing."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent

    def run(
        *args: str,
        cwd: Path,
        unprivileged: bool = False,
        memory: int | None = 2 * 2**30,
        timeout: float = 120,
        stdin: object = b"",
        stdout: object = None,
        env: dict | None = None,
    ) -> ProcessResult:
        steps = []
        if memory is not None:
            steps.append(_limit_memory(memory))
        if unprivileged and _unprivileged_step() is not None:
            steps.append(_unprivileged_step())

        def prepare() -> None:  # pragma: no cover - runs in the child process
            for step in steps:
                step()

        environment = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
        closed = stdin is None
        proc = subprocess.run(
            [sys.executable, "-m", "ckptlint", *args],
            cwd=cwd,
            input=stdin if isinstance(stdin, bytes) else None,
            stdin=subprocess.DEVNULL if closed else (None if isinstance(stdin, bytes) else stdin),
            stdout=subprocess.PIPE if stdout is None else stdout,
            stderr=subprocess.PIPE,
            env=environment,
            preexec_fn=(lambda: (prepare(), os.close(0))) if closed else prepare,
            timeout=timeout,
        )
        decode = lambda data: (data or b"").decode("utf-8", "replace")  # noqa: E731
        return ProcessResult(proc.returncode, decode(proc.stdout), decode(proc.stderr))

    return run

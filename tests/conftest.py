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

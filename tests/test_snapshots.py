"""Golden-file (snapshot) tests of the output formats over a small fixture project
(``tests/snapshot_project``: sites, findings of several rules, safe, unsafe and display-only
fixes, a ``noqa``). The golden files live in ``tests/__snapshots__/`` (syrupy); after an
intended change of the output run ``python -m pytest tests/test_snapshots.py --snapshot-update``
and review the diff.

Absolute paths and the version are replaced by ``<ROOT>`` and ``<VERSION>``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ckptlint import __version__

PROJECT = Path(__file__).resolve().parent / "snapshot_project"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(PROJECT, root, ignore=shutil.ignore_patterns("README.md", "__pycache__"))
    (root / ".git").mkdir()  # the repository root for repository-relative paths (SARIF)
    return root


def _normalise(text: str, root: Path) -> str:
    for form in (root.resolve().as_uri(), root.as_uri(), str(root.resolve()), str(root)):
        text = text.replace(form, "<ROOT>")
    return text.replace(__version__, "<VERSION>")


def _run(run_cli, project: Path, *args: str) -> str:
    result = run_cli("--isolated", "--no-cache", "-j", "1", *args, ".", cwd=project)
    assert result.exit_code == 1, result.stderr
    assert result.stderr == ""
    return _normalise(result.stdout, project)


@pytest.mark.parametrize("fmt", ["full", "concise", "github"])
def test_text_formats(fmt: str, project: Path, run_cli, snapshot) -> None:
    assert _run(run_cli, project, "--output-format", fmt) == snapshot


def test_json(project: Path, run_cli, snapshot) -> None:
    out = _run(run_cli, project, "--output-format", "json")
    json.loads(out)  # valid JSON
    assert out == snapshot


def test_sarif(project: Path, run_cli, snapshot) -> None:
    out = _run(run_cli, project, "--output-format", "sarif")
    log = json.loads(out)
    assert log["runs"][0]["tool"]["driver"]["version"] == "<VERSION>"
    assert out == snapshot


def test_statistics(project: Path, run_cli, snapshot) -> None:
    assert _run(run_cli, project, "--statistics") == snapshot


def test_unsafe_fix_diff(project: Path, run_cli, snapshot) -> None:
    assert _run(run_cli, project, "--diff", "--unsafe-fixes") == snapshot

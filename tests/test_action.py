"""The GitHub Action (``action.yml``): a composite whose steps, run here as the Actions runner
runs them (``${{ inputs.* }}`` expanded, ``GITHUB_ACTION_PATH``, ``GITHUB_PATH``,
``RUNNER_TEMP`` set, bash), annotate a sample project's findings and give ckptlint's exit
status as the step's.

The install step needs the package index (it builds this checkout with pip), so here its
contract is checked and stood in for: it puts a folder holding ``ckptlint`` on ``GITHUB_PATH``;
this environment's ``ckptlint`` (this checkout) takes that place.
``scripts/release_check.py`` runs the real install step.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
IMPORT = "from torch.utils.checkpoint import checkpoint\n"
WARNING_FILE = IMPORT + "y = checkpoint(f, x)\n"  # CKP001, severity warning
ERROR_FILE = "import torch.utils.checkpoint\n\n\ndef f(x):\n    return torch.utils.checkpoint(g, x)\n"  # CKP302, error
CLEAN_FILE = IMPORT + "y = checkpoint(f, x, use_reentrant=False)\n"
_EXPRESSION = re.compile(r"\$\{\{\s*inputs\.([A-Za-z0-9_-]+)\s*\}\}")


def _step(step_id: str) -> dict:
    [step] = [s for s in ACTION["runs"]["steps"] if s.get("id") == step_id]
    return step


def test_the_action_is_a_composite_with_ruff_actions_inputs() -> None:
    assert ACTION["runs"]["using"] == "composite"
    assert set(ACTION["inputs"]) == {"args", "src", "version"}
    assert ACTION["inputs"]["src"]["default"] == "."
    assert [s["id"] for s in ACTION["runs"]["steps"]] == ["install", "run"]
    assert all(s["shell"] == "bash" for s in ACTION["runs"]["steps"])
    install = _step("install")["run"]
    assert '-m pip install --quiet --disable-pip-version-check "$GITHUB_ACTION_PATH"' in install
    assert '>> "$GITHUB_PATH"' in install
    assert "--output-format github" in _step("run")["run"]


def _run_action(project: Path, tmp_path: Path, inputs: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run the action's steps after the install step in ``project`` as the runner would."""
    values = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()} | inputs
    tool_bin = Path(sys.executable).parent  # what the install step puts on GITHUB_PATH
    assert (tool_bin / "ckptlint").exists()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")},
        "PATH": f"{tool_bin}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(ROOT),  # this checkout is the one installed
        "GITHUB_ACTIONS": "true",
        "GITHUB_ACTION_PATH": str(ROOT),
        "GITHUB_PATH": str(tmp_path / "github_path"),
        "GITHUB_OUTPUT": str(tmp_path / "github_output"),
        "RUNNER_TEMP": str(tmp_path / "runner_temp"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "step_summary.md"),
    }
    step = _step("run")
    step_env = {name: _EXPRESSION.sub(lambda m: values[m.group(1)], str(value)) for name, value in step["env"].items()}
    return subprocess.run(
        ["bash", "-e", "-c", step["run"]],  # the runner's `shell: bash` is `bash --noprofile --norc -eo pipefail {0}`
        cwd=project,
        env={**env, **step_env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    for name, text in {"src/warn.py": WARNING_FILE, "src/err.py": ERROR_FILE, "tests/ok.py": CLEAN_FILE}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_findings_are_annotated_and_fail_the_step(project: Path, tmp_path: Path) -> None:
    result = _run_action(project, tmp_path, {})
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines == [
        "::error file=src/err.py,line=5,col=12,endLine=5,endColumn=40,title=ckptlint (CKP302)::"
        "`torch.utils.checkpoint` is the `torch.utils.checkpoint` module, not a function: calling it raises TypeError "
        "('module' object is not callable); call `torch.utils.checkpoint.checkpoint(...)`",
        "::warning file=src/warn.py,line=2,col=5,endLine=2,endColumn=21,title=ckptlint (CKP001)::"
        "`checkpoint()` without `use_reentrant`: PyTorch warns and silently runs the legacy reentrant variant; "
        "pass `use_reentrant=False` (recommended)",
    ]
    summary = (tmp_path / "step_summary.md").read_text(encoding="utf-8")  # the job summary's table
    assert "src/err.py:5" in summary and "src/warn.py:2" in summary


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_src_and_args_inputs_choose_files_and_rules(project: Path, tmp_path: Path) -> None:
    clean = _run_action(project, tmp_path, {"src": "tests"})
    assert (clean.returncode, clean.stdout) == (0, "")
    selected = _run_action(project, tmp_path, {"src": "src/warn.py  src/err.py", "args": "--select CKP001"})
    assert selected.returncode == 1
    assert [line.split("::")[1].split(",")[0] for line in selected.stdout.splitlines()] == ["warning file=src/warn.py"]
    zero = _run_action(project, tmp_path, {"args": "--exit-zero"})
    assert zero.returncode == 0
    assert len(zero.stdout.splitlines()) == 2
    missing = _run_action(project, tmp_path, {"src": "nowhere"})
    assert missing.returncode == 1
    assert "::error file=nowhere" in missing.stdout

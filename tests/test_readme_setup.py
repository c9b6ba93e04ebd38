"""The setup instructions work as written: the pre-commit configuration the editors page shows
runs (a local hook, through the real ``pre-commit``), and the README's test instructions say how
to get the CPU wheel of torch while the command CI runs stays the README's."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
EDITORS = (ROOT / "docs" / "editors-and-notebooks.md").read_text(encoding="utf-8")
IMPORT = "from torch.utils.checkpoint import checkpoint\n"


def _section(title: str, text: str = README) -> str:
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def _pre_commit_config() -> str:
    [config] = re.findall(r"```yaml\n(# \.pre-commit-config\.yaml\n.*?)```", _section("pre-commit", EDITORS), re.DOTALL)
    return config


def test_the_pre_commit_config_is_the_shipped_hook_run_locally() -> None:
    config = yaml.safe_load(_pre_commit_config())
    [repo] = config["repos"]
    assert repo["repo"] == "local"  # no placeholder URL or hash
    [hook] = repo["hooks"]
    shipped = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert hook["entry"] == shipped["ckptlint"]["entry"]
    assert hook["types_or"] == shipped["ckptlint"]["types_or"]
    assert hook["require_serial"] is True
    fix_entry = re.search(r"# entry: (.*)", _pre_commit_config())
    assert fix_entry is not None and fix_entry.group(1) == shipped["ckptlint-fix"]["entry"]


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("pre_commit") is None, reason="pre-commit is not installed")
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_pre_commit_config_runs(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".pre-commit-config.yaml").write_text(_pre_commit_config())
    (repo / "bad.py").write_text(IMPORT + "y = checkpoint(f, x)\n")
    (repo / "good.py").write_text(IMPORT + "y = checkpoint(f, x, use_reentrant=False)\n")
    env = {
        **os.environ,
        "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),  # this ckptlint
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "PYTHONPATH": str(ROOT),
    }
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "."], cwd=repo, check=True)

    def run(*files: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pre_commit", "run", "--files", *files],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    bad = run("bad.py")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "bad.py:2:5: CKP001" in bad.stdout
    good = run("good.py")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Passed" in good.stdout


def test_the_test_instructions_get_the_cpu_wheel_and_keep_the_ci_command() -> None:
    test = _section("Test")
    [block] = re.findall(r"```bash\n(.*?)\n```", test, re.DOTALL)
    cpu, test_command = block.splitlines()  # the set-up is in the block, not in the prose
    assert cpu == 'pip install "torch==2.13.0" --index-url https://download.pytorch.org/whl/cpu'
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test_command in ci  # the command CI runs, unchanged
    assert "pytest" in test_command and "torch==2.13.0" in test_command
    prose = " ".join(test.replace(block, "").split())
    assert '`python -m pytest -m "not slow"`' in prose  # the quick run is named
    assert re.search(r"\d+ minutes", prose)  # how long the set-up takes

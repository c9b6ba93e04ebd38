"""``ckptlint --version`` starts without importing torch (never) or libcst (only needed to
lint), measured with ``python -X importtime``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ckptlint import __version__

ROOT = Path(__file__).resolve().parent.parent


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _imported_modules(*args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ckptlint", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(),
        timeout=120,
    )
    modules = [
        line.split("|")[-1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "|" in line and not line.rstrip().endswith("imported package")
    ]
    return proc, modules


@pytest.mark.slow
def test_version_imports_neither_torch_nor_libcst() -> None:
    proc, modules = _imported_modules("--version")
    assert proc.returncode == 0
    assert proc.stdout == f"ckptlint {__version__}\n"
    assert "ckptlint.cli.app" in modules  # the measurement saw our modules
    assert "click" in modules
    assert [m for m in modules if m == "torch" or m.startswith("torch.")] == []
    assert [m for m in modules if m == "libcst" or m.startswith("libcst.")] == []
    linting = ("ckptlint.lint.linter", "ckptlint.semantic", "ckptlint.checkpoint", "ckptlint.rules")
    assert [m for m in modules if m.startswith(linting)] == []


@pytest.mark.slow
def test_linting_imports_no_torch(tmp_path: Path) -> None:
    """A file with a finding is linted on ``ast``: neither torch nor libcst is imported (libcst
    builds fixes, only for a run that shows or applies them)."""
    target = tmp_path / "m.py"
    target.write_text("from torch.utils.checkpoint import checkpoint\ny = checkpoint(f, x)\n")
    proc, modules = _imported_modules("--isolated", "--no-cache", str(target))
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "CKP001" in proc.stdout
    assert "libcst" not in modules
    assert [m for m in modules if m == "torch" or m.startswith("torch.")] == []


@pytest.mark.slow
def test_a_file_without_a_site_imports_no_libcst_and_no_requirement_parser(tmp_path: Path) -> None:
    target = tmp_path / "m.py"
    target.write_text("import torch\n\ndef gelu(x):\n    return torch.nn.functional.gelu(x)\n")
    proc, modules = _imported_modules("--isolated", "--no-cache", str(target))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "ckptlint.lint.gate" in modules  # the measurement saw the linting path
    assert [m for m in modules if m == "libcst" or m.startswith("libcst.")] == []
    # packaging's requirement parser (markers, tags, logging) is imported to read a declaration
    assert "packaging.requirements" not in modules
    assert "ckptlint.config.requirement_files" not in modules


@pytest.mark.slow
def test_a_declaration_file_is_still_read(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("transformers==4.57.1\n")
    target = tmp_path / "m.py"
    target.write_text("x = 1\n")
    proc, modules = _imported_modules("--no-cache", "--show-settings", str(target))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "ckptlint.config.requirement_files" in modules
    assert "transformers" in proc.stdout and "4.57.1" in proc.stdout


@pytest.mark.slow
def test_python_dash_m_runs_this_checkout() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", "import ckptlint; print(ckptlint.__file__)"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(),
        timeout=60,
    )
    assert Path(proc.stdout.strip()).resolve() == ROOT / "ckptlint" / "__init__.py"
    proc = subprocess.run(
        [sys.executable, "-m", "ckptlint", "--version"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(),
        timeout=60,
    )
    assert (proc.returncode, proc.stdout) == (0, f"ckptlint {__version__}\n")


@pytest.mark.slow
def test_linting_one_file_without_sites_imports_only_what_it_needs(tmp_path: Path) -> None:
    """The pre-commit case on a file the gate rejects: no libcst, no rule, no process pool,
    no pathspec (no pattern to match for a file named explicitly), no tempfile (nothing is
    written), no output format beyond the one printing the summary."""
    target = tmp_path / "plain.py"
    target.write_text("import os\n\n\ndef f(x):\n    return os.path.join(x, 'y')\n")
    proc, modules = _imported_modules("--isolated", "--no-cache", str(target))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "All checks passed!" in proc.stdout
    assert "ckptlint.lint.results" in modules
    # ckptlint.semantic.project (module names of files, no libcst) is the one semantic module needed
    unwanted = ("libcst", "ckptlint.rules", "ckptlint.semantic.model", "ckptlint.semantic.analysis", "ckptlint.checkpoint",
                "ckptlint.lint.cache", "ckptlint.server", "ckptlint.text.notebook", "ckptlint.runtime", "multiprocessing",
                "concurrent", "pathspec", "tempfile", "torch")
    assert [m for m in modules if m.startswith(unwanted)] == []
    assert [m for m in modules if m.startswith("ckptlint.output.") and m != "ckptlint.output.base"] == []

"""Release readiness: one version (``ckptlint/__init__.py``) that the changelog's first section
names, and ``python -m build`` making a wheel and an sdist that ``twine check`` accepts, with the
rule pages, the console script and the extras in them. The build runs without isolation (the
``release`` extra installs the backend), so no package index is needed; it takes about 10 s."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from packaging.version import Version

import ckptlint

ROOT = Path(__file__).resolve().parent.parent


def test_the_version_is_pep_440_and_the_changelog_starts_with_it() -> None:
    version = Version(ckptlint.__version__)
    assert str(version) == ckptlint.__version__  # written in its normal form
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    first = re.search(r"^## (\S+)", changelog, re.MULTILINE)
    assert first is not None and first.group(1) == ckptlint.__version__
    assert f"`v{ckptlint.__version__}`" in changelog  # the tag the release makes


@pytest.mark.slow
@pytest.mark.skipif(
    any(importlib.util.find_spec(name) is None for name in ("build", "twine", "hatchling")),
    reason="needs the release extra (build, twine, hatchling)",
)
def test_build_makes_a_wheel_and_an_sdist_that_twine_accepts(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp_path), str(ROOT)],
        check=True, capture_output=True, timeout=180,
    )
    version = ckptlint.__version__
    wheel, sdist = tmp_path / f"ckptlint-{version}-py3-none-any.whl", tmp_path / f"ckptlint-{version}.tar.gz"
    assert wheel.is_file() and sdist.is_file()
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)],
        capture_output=True, text=True, timeout=120,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("PASSED") == 2

    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(f"ckptlint-{version}.dist-info/METADATA").decode()
        entry_points = archive.read(f"ckptlint-{version}.dist-info/entry_points.txt").decode()
    assert {"ckptlint/cli/app.py", "ckptlint/runtime/__init__.py", "ckptlint/_rule_docs/CKP001.md"} <= names
    assert not any(name.startswith("tests/") for name in names)
    assert "ckptlint = ckptlint.cli.app:run" in entry_points
    assert f"Version: {version}\n" in metadata
    assert {"runtime", "server", "watch", "release"} <= set(re.findall(r"^Provides-Extra: (\S+)$", metadata, re.MULTILINE))
    assert "Description-Content-Type: text/markdown" in metadata

    with tarfile.open(sdist) as archive:
        members = {m.name.split("/", 1)[1] for m in archive.getmembers() if "/" in m.name}
    assert {"pyproject.toml", "README.md", "CHANGELOG.md", "action.yml", "rules/CKP001.md", "ckptlint/__init__.py"} <= members

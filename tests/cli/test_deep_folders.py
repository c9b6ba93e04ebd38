"""A folder of any depth below the paths neither stops the run nor hides the other files:
every walk on the way (discovery, the configuration and declared-version lookups, ``--clean``)
is a loop, not recursion, and a path longer than the system allows is one CKP902."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ckptlint.config.declarations import DeclaredVersions
from ckptlint.config.files import CliOverrides, SettingsResolver

CALL = "from torch.utils.checkpoint import checkpoint\ny = checkpoint(f, x)\n"

#: Deeper than Python's recursion limit (1,000 frames) and within Linux's PATH_MAX (4,096).
DEPTH = 1_050
#: A folder name of 50 characters: 90 levels of it are longer than Linux's PATH_MAX.
LONG_NAME = "n" * 50


def _nest(top: Path, depth: int, name: str = "d") -> Path:
    """``top/name/name/...`` ``depth`` levels deep, made one level at a time (relative to a
    descriptor, so that the depth is not bounded by the length of a path); returns the path."""
    top.mkdir(parents=True, exist_ok=True)
    fd = os.open(top, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        with open(os.open("x.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as handle:
            handle.write(CALL)
    finally:
        os.close(fd)
    return top.joinpath(*[name] * depth)


def _remove_nest(top: Path) -> None:
    """Remove the chain of folders ``top`` made by :func:`_nest` (``shutil.rmtree``, and so
    pytest's clean-up of old temporary folders, recurses and fails on it): each level's
    folder is moved up in turn, so every path stays short."""
    spare = top.with_name(top.name + ".next")
    while top.is_dir():
        inner = [p for p in top.iterdir() if p.is_dir() and not p.is_symlink()]
        if not inner:
            shutil.rmtree(top)
            return
        os.rename(inner[0], spare)
        shutil.rmtree(top)
        os.rename(spare, top)


@pytest.fixture
def nest(tmp_path: Path) -> Iterator[Callable[..., Path]]:
    """:func:`_nest`, with every chain made removed after the test."""
    made: list[Path] = []

    def make(top: Path, depth: int, name: str = "d") -> Path:
        made.append(top)
        return _nest(top, depth, name)

    yield make
    for top in made:
        _remove_nest(top)


def test_settings_and_declared_versions_of_a_folder_deeper_than_the_recursion_limit(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.ckptlint]\nignore = ["CKP001"]\n[project]\ndependencies = ["torch>=2.9"]\n')
    deep = tmp_path.joinpath(*["d"] * (sys.getrecursionlimit() + 200))  # need not exist
    resolver = SettingsResolver(CliOverrides(), cwd=tmp_path)
    settings = resolver.for_path(deep / "x.py")
    assert settings.config_path == tmp_path / "pyproject.toml"
    assert "CKP001" not in settings.enabled
    assert [t.library for t in DeclaredVersions().for_path(deep / "x.py")] == ["torch"]
    assert resolver.for_path(deep.parent / "y.py") is settings  # each folder on the way remembered


@pytest.mark.slow
def test_a_folder_deeper_than_the_recursion_limit_is_linted_with_the_others(run_cli, write, nest, tmp_path: Path) -> None:
    """A file 1,050 levels down is linted; a folder whose path is longer than the system
    allows (4,096 bytes on Linux) is one CKP902; the file at the top is linted too."""
    write("top.py", CALL)
    nest(tmp_path / "deep", DEPTH)
    nest(tmp_path / "long", 90, name=LONG_NAME)  # 4,590 characters and more: past PATH_MAX
    result = run_cli("--no-cache", "--output-format", "json", ".")
    assert result.exit_code == 1, result.stderr
    assert "RecursionError" not in result.stderr
    found = sorted(
        (Path(d["filename"]).parts[len(tmp_path.parts)], len(Path(d["filename"]).parts), d["code"], d["message"])
        for d in json.loads(result.stdout)
    )
    too_long = found[1]
    assert too_long[0] == "long" and too_long[2:] == ("CKP902", "path too long for the system (ENAMETOOLONG)")
    assert len(str(tmp_path.joinpath(*["long"] + [LONG_NAME] * (too_long[1] - len(tmp_path.parts) - 1)))) > 4_000
    message = found[0][3]
    assert found == [
        ("deep", len(tmp_path.parts) + DEPTH + 2, "CKP001", message),
        too_long,
        ("top.py", len(tmp_path.parts) + 1, "CKP001", message),
    ]


@pytest.mark.slow
def test_clean_finds_a_cache_folder_deeper_than_the_recursion_limit(run_cli, nest, tmp_path: Path) -> None:
    deep = nest(tmp_path / "deep", DEPTH)
    result = run_cli("--cache-dir", ".ckptlint_cache", "x.py", cwd=deep)
    assert result.exit_code == 1 and (deep / ".ckptlint_cache").is_dir()
    result = run_cli("--clean", ".")
    assert result.exit_code == 0, result.stderr
    assert not (deep / ".ckptlint_cache").exists()

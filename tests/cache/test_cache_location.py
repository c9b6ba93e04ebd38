"""Where the cache lives: at the project root (the folder of the ``pyproject.toml`` in use),
as ruff keeps ``.ruff_cache``, whichever folder the command runs from; next to a ckptlint
configuration file; in the working folder outside any project or with ``--isolated``;
``--cache-dir`` and ``CKPTLINT_CACHE_DIR`` win."""

from __future__ import annotations

from pathlib import Path

import pytest

from ckptlint.config.project_root import ProjectRoots
from ckptlint.lint.cache import ResultCache

BAD = "from torch.utils.checkpoint import checkpoint\ny = checkpoint(f, x)\n"
PROJECT = '[project]\nname = "demo"\nversion = "0"\n'


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    counts = {"hits": 0, "misses": 0}
    original = ResultCache.save

    def save(self: ResultCache) -> None:
        counts["hits"] += self.hits
        counts["misses"] += self.misses
        original(self)

    monkeypatch.setattr(ResultCache, "save", save)
    return counts


def _caches(top: Path) -> list[str]:
    return sorted(p.parent.parent.relative_to(top).as_posix() for p in top.rglob(".ckptlint_cache/CACHEDIR.TAG"))


def test_the_cache_is_at_the_project_root_from_any_folder(tmp_path: Path, write, run_cli, counted) -> None:
    write("proj/pyproject.toml", PROJECT)  # no [tool.ckptlint]: still the project in use
    write("proj/src/pkg/m.py", BAD)
    assert run_cli(".", cwd=tmp_path / "proj" / "src").exit_code == 1
    assert _caches(tmp_path) == ["proj"]
    assert (counted["hits"], counted["misses"]) == (0, 1)
    assert run_cli("m.py", cwd=tmp_path / "proj" / "src" / "pkg").exit_code == 1
    assert run_cli("proj/src").exit_code == 1  # from above the project
    assert _caches(tmp_path) == ["proj"]
    assert (counted["hits"], counted["misses"]) == (2, 1)  # one cache, reused


def test_a_configuration_file_keeps_the_cache_beside_it(tmp_path: Path, write, run_cli) -> None:
    write("proj/pyproject.toml", PROJECT)
    write("proj/sub/.ckptlint.toml", "")
    write("proj/sub/m.py", BAD)
    write("proj/top.py", BAD)
    assert run_cli(".", cwd=tmp_path / "proj" / "sub").exit_code == 1
    assert run_cli("top.py", cwd=tmp_path / "proj").exit_code == 1
    assert _caches(tmp_path) == ["proj", "proj/sub"]


def test_outside_a_project_and_isolated_the_cache_is_in_the_working_folder(tmp_path: Path, write, run_cli) -> None:
    write("loose/m.py", BAD)
    assert run_cli("m.py", cwd=tmp_path / "loose").exit_code == 1
    assert _caches(tmp_path) == ["loose"]
    write("proj/pyproject.toml", PROJECT)
    write("proj/src/m.py", BAD)
    assert run_cli("--isolated", "m.py", cwd=tmp_path / "proj" / "src").exit_code == 1
    assert _caches(tmp_path) == ["loose", "proj/src"]


def test_the_option_and_the_environment_variable_win(tmp_path: Path, write, run_cli) -> None:
    write("proj/pyproject.toml", PROJECT)
    write("proj/src/m.py", BAD)
    src = tmp_path / "proj" / "src"
    assert run_cli("--cache-dir", "here", "m.py", cwd=src).exit_code == 1  # relative to the working folder
    assert (src / "here" / "CACHEDIR.TAG").is_file()
    assert run_cli("m.py", cwd=src, env={"CKPTLINT_CACHE_DIR": str(tmp_path / "env")}).exit_code == 1
    assert (tmp_path / "env" / "CACHEDIR.TAG").is_file()
    assert _caches(tmp_path) == []


def test_clean_from_a_subfolder_removes_the_project_cache(tmp_path: Path, write, run_cli) -> None:
    write("proj/pyproject.toml", PROJECT)
    write("proj/src/m.py", BAD)
    src = tmp_path / "proj" / "src"
    run_cli("m.py", cwd=src)
    assert _caches(tmp_path) == ["proj"]
    result = run_cli("--clean", cwd=src)
    assert result.exit_code == 0
    assert result.stderr == f"Removed cache at: {tmp_path / 'proj' / '.ckptlint_cache'}\n"
    assert _caches(tmp_path) == []


def test_project_roots_walk_up_without_recursion(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(PROJECT)
    deep = tmp_path.joinpath(*["d"] * 40)
    deep.mkdir(parents=True)
    roots = ProjectRoots()
    assert roots.for_folder(deep) == tmp_path
    assert roots.for_folder(deep.parent) == tmp_path  # answered from the folders walked
    (deep / "pyproject.toml").mkdir()  # a folder of that name is not a project file
    assert ProjectRoots().for_folder(deep) == tmp_path

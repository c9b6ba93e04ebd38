"""``--clean`` with a cache folder that is a symbolic link (``--cache-dir LINK``, or
``.ckptlint_cache -> elsewhere``): the runs wrote through the link, so ckptlint's files are
removed from the folder it points to; the link, that folder and anything else in it stay,
and the message says where the files were removed. A broken link is a warning."""

from __future__ import annotations

from pathlib import Path

import pytest

CALL = "from torch.utils.checkpoint import checkpoint\ny = checkpoint(f, x)\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "m.py").write_text(CALL, encoding="utf-8")
    return project


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("link_name", ["LINK", ".ckptlint_cache"])
def test_clean_removes_the_cache_files_the_link_leads_to_and_keeps_the_rest(
    run_cli, project: Path, tmp_path: Path, link_name: str
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / link_name).symlink_to(elsewhere)
    given = ("--cache-dir", link_name) if link_name == "LINK" else ()
    assert run_cli(*given, ".", cwd=project).exit_code == 1
    assert [p for p in _files(elsewhere) if p.endswith(".json")]  # written through the link
    (elsewhere / "notes.txt").write_text("mine")

    result = run_cli(*given, "--clean", ".", cwd=project)
    assert result.exit_code == 0
    assert _files(elsewhere) == [".gitignore", "CACHEDIR.TAG", "notes.txt"]  # marks stay beside a user's file
    assert (project / link_name).is_symlink() and _files(project) == [link_name, "m.py"]
    assert result.stderr == (
        f"Removed ckptlint's cache files from: {elsewhere} (through the symbolic link {project / link_name}; "
        "the link, the folder and any other files there are kept)\n"
    )

    (elsewhere / "notes.txt").unlink()
    assert run_cli(*given, ".", cwd=project).exit_code == 1
    assert run_cli(*given, "--clean", ".", cwd=project).exit_code == 0
    assert _files(elsewhere) == []  # emptied, kept: the link still leads to a folder
    assert run_cli(*given, ".", cwd=project).exit_code == 1  # and the next run writes there again
    assert [p for p in _files(elsewhere) if p.endswith(".json")]


def test_clean_with_a_broken_cache_link_warns_and_removes_nothing(run_cli, project: Path, tmp_path: Path) -> None:
    (project / ".ckptlint_cache").symlink_to(tmp_path / "gone")
    result = run_cli("--clean", "-q", ".", cwd=project)
    assert result.exit_code == 0
    assert result.stderr == f"warning: {project / '.ckptlint_cache'}: the cache folder is a broken symbolic link; nothing removed\n"
    assert (project / ".ckptlint_cache").is_symlink()

"""File discovery: .gitignore (nested, negation), ruff's default excludes, exclude /
extend-exclude, files named explicitly, --force-exclude, .pyi files, hierarchical
configuration, --isolated and --config."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

BAD = "from torch.utils.checkpoint import checkpoint\ny = checkpoint(f, x)\n"


def reported(run_cli, *args: str, cwd: Path | None = None) -> list[str]:
    result = run_cli("-q", *args, cwd=cwd)
    assert result.exit_code in (0, 1), result.stderr
    return sorted(line.split(":")[0] for line in result.stdout.splitlines() if line)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    return tmp_path


def test_gitignore_nested_and_negation(run_cli, write, repo) -> None:
    for name in ["src/m.py", "src/gen/a.py", "src/gen/keep.py", "src/keep/m.py", "src/keep/keep.py", "notes/x.py"]:
        write(name, BAD)
    write(".gitignore", "src/gen/\n*.tmp\n")
    write("src/keep/.gitignore", "*.py\n!keep.py\n")
    write("notes/.gitignore", "x.py\n")
    assert reported(run_cli, ".") == ["src/keep/keep.py", "src/m.py"]
    # running from a subfolder still applies the repository's .gitignore files
    assert reported(run_cli, ".", cwd=repo / "src") == ["keep/keep.py", "m.py"]
    # --no-respect-gitignore lints everything
    assert len(reported(run_cli, "--no-respect-gitignore", ".")) == 6


def test_gitignore_negation_in_a_deeper_file_wins(run_cli, write, repo) -> None:
    write(".gitignore", "*_gen.py\n")
    write("pkg/.gitignore", "!special_gen.py\n")
    for name in ["a_gen.py", "pkg/b_gen.py", "pkg/special_gen.py"]:
        write(name, BAD)
    assert reported(run_cli, ".") == ["pkg/special_gen.py"]


def test_git_info_exclude(run_cli, write, repo) -> None:
    write("a.py", BAD)
    write("b.py", BAD)
    (repo / ".git" / "info").mkdir(parents=True, exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("b.py\n")
    assert reported(run_cli, ".") == ["a.py"]


@pytest.mark.parametrize(
    "folder",
    [
        ".venv",
        "venv",
        "build",
        "dist",
        "node_modules",
        "lib/python3.11/site-packages/pkg",
        ".tox",
        ".git",
        "__pypackages__",
    ],
)
def test_default_excludes(run_cli, write, folder: str) -> None:
    write("m.py", BAD)
    write(f"{folder}/m.py", BAD)
    assert reported(run_cli, ".") == ["m.py"]


def test_exclude_replaces_defaults_and_extend_exclude_adds(run_cli, write) -> None:
    for name in ["m.py", "build/m.py", "third_party/m.py", "sub/gen.py", "sub/ok.py"]:
        write(name, BAD)
    write("pyproject.toml", '[tool.ckptlint]\nextend-exclude = ["third_party", "sub/gen.py"]\n')
    assert reported(run_cli, ".") == ["m.py", "sub/ok.py"]
    write("pyproject.toml", '[tool.ckptlint]\nexclude = ["third_party"]\n')
    assert reported(run_cli, ".") == ["build/m.py", "m.py", "sub/gen.py", "sub/ok.py"]
    assert reported(run_cli, "--extend-exclude", "sub", ".") == ["build/m.py", "m.py"]
    assert reported(run_cli, "--exclude", "build", ".") == ["m.py", "sub/gen.py", "sub/ok.py", "third_party/m.py"]


def test_explicit_files_are_linted_unless_force_exclude(run_cli, write, repo) -> None:
    write("build/m.py", BAD)
    write("ignored/m.py", BAD)
    write("ok.py", BAD)
    write(".gitignore", "ignored/\n")
    assert reported(run_cli, "build/m.py", "ignored/m.py", "ok.py") == ["build/m.py", "ignored/m.py", "ok.py"]
    assert reported(run_cli, "--force-exclude", "build/m.py", "ignored/m.py", "ok.py") == ["ok.py"]
    write("pyproject.toml", '[tool.ckptlint]\nforce-exclude = true\nextend-exclude = ["ok.py"]\n')
    assert reported(run_cli, "build/m.py", "ignored/m.py", "ok.py") == []


def test_force_exclude_from_a_subfolder(run_cli, write, tmp_path) -> None:
    write("pyproject.toml", '[tool.ckptlint]\nextend-exclude = ["third"]\n')
    write("third/m.py", BAD)
    write("src/m.py", BAD)
    assert reported(run_cli, "--force-exclude", "../third/m.py", "m.py", cwd=tmp_path / "src") == ["m.py"]


def test_pyi_files_and_other_suffixes(run_cli, write) -> None:
    write("stub.pyi", BAD)
    write("m.py", BAD)
    write("notes.txt", BAD)
    write("script.pyx", BAD)
    assert reported(run_cli, ".") == ["m.py", "stub.pyi"]


def test_hierarchical_configuration(run_cli, write, tmp_path) -> None:
    write("pyproject.toml", '[tool.ckptlint]\nselect = ["CKP999"]\n')
    write("a/m.py", BAD)
    write("b/pyproject.toml", '[tool.ckptlint]\nselect = ["CKP001"]\n')
    write("b/m.py", BAD)
    write("b/c/pyproject.toml", '[project]\nname = "c"\n')  # no [tool.ckptlint]: skipped
    write("b/c/m.py", BAD)
    write("d/.ckptlint.toml", 'select = ["CKP001"]\n')
    write("d/m.py", BAD)
    assert reported(run_cli, ".") == ["b/c/m.py", "b/m.py", "d/m.py"]
    # the closest configuration of each file applies whatever the working folder
    assert reported(run_cli, ".", cwd=tmp_path / "b" / "c") == ["m.py"]
    assert reported(run_cli, "a/m.py", "b/m.py") == ["b/m.py"]


def test_ckptlint_toml_wins_over_pyproject_in_the_same_folder(run_cli, write) -> None:
    write("m.py", BAD)
    write("pyproject.toml", '[tool.ckptlint]\nselect = ["CKP001"]\n')
    write("ckptlint.toml", 'select = ["CKP999"]\n')
    assert reported(run_cli, ".") == []


def test_isolated_and_config_file(run_cli, write, tmp_path) -> None:
    write("pyproject.toml", '[tool.ckptlint]\nselect = ["CKP999"]\n')
    write("sub/m.py", BAD)
    write("other.toml", 'select = ["CKP001"]\n')
    assert reported(run_cli, ".") == []
    assert reported(run_cli, "--isolated", ".") == ["sub/m.py"]
    assert reported(run_cli, "--config", "other.toml", ".") == ["sub/m.py"]
    write("pyproject2/pyproject.toml", '[tool.ckptlint]\nselect = ["CKP999"]\n')
    assert reported(run_cli, "--config", "pyproject2/pyproject.toml", "--isolated", ".") == ["sub/m.py"]


def test_config_exclude_is_relative_to_its_folder(run_cli, write, tmp_path) -> None:
    write("proj/pyproject.toml", '[tool.ckptlint]\nextend-exclude = ["/gen"]\n')
    write("proj/gen/m.py", BAD)
    write("proj/src/gen/m.py", BAD)
    assert reported(run_cli, "proj") == ["proj/src/gen/m.py"]


def test_duplicates_are_linted_once(run_cli, write) -> None:
    write("pkg/m.py", BAD)
    result = run_cli("-q", "pkg", "pkg/m.py", "./pkg")
    assert result.stdout.count("CKP001") == 1


def test_a_link_to_a_file_of_the_run_is_linted_and_fixed_once(run_cli, write, tmp_path) -> None:
    real = write("pkg/a.py", BAD)
    (tmp_path / "pkg" / "b.py").symlink_to(real)  # the link sorts after the file
    (tmp_path / "pkg" / "0.py").symlink_to(real)  # and before it
    result = run_cli("-q", "pkg")
    assert [line.split(":")[0] for line in result.stdout.splitlines() if "CKP001" in line] == ["pkg/a.py"]
    named = run_cli("-q", "pkg/b.py", "pkg/b.py")  # a link named on its own is linted, once
    assert [line.split(":")[0] for line in named.stdout.splitlines() if "CKP001" in line] == ["pkg/b.py"]
    result = run_cli("--fix", "--unsafe-fixes", "pkg")
    assert result.exit_code == 0 and "CKP902" not in result.stdout and "1 fixed" in result.stdout
    assert "use_reentrant=False" in real.read_text()


def test_symlink_loop_and_broken_link_are_not_fatal(run_cli, write, tmp_path) -> None:
    write("pkg/m.py", BAD)
    (tmp_path / "pkg" / "loop").symlink_to(tmp_path / "pkg")
    (tmp_path / "pkg" / "broken.py").symlink_to(tmp_path / "nowhere.py")
    result = run_cli("-q", ".")
    assert result.stdout.count("CKP001") == 1
    assert "pkg/broken.py:1:1: CKP902 broken symbolic link" in result.stdout

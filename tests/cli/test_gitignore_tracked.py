"""``.gitignore`` never skips a file git tracks (git itself keeps tracking it), and a run that
skipped Python files because of ``.gitignore`` says how many and how to include them. Real
repositories made with ``git init``."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ckptlint.config.discovery import discover
from ckptlint.config.files import CliOverrides, SettingsResolver
from ckptlint.config.git_tracked import TrackedFiles

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("git") is None, reason="needs git")]

BAD = "from torch.utils.checkpoint import checkpoint\ny = checkpoint(f, x)\n"
WARNING = (
    "warning: {} ignored by .gitignore (and not tracked by git) {} skipped; "
    "`--no-respect-gitignore` (or `respect-gitignore = false`) lints them\n"
)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, timeout=60)


@pytest.fixture
def repo(tmp_path: Path, write) -> Path:
    """A repository whose .gitignore matches a shipped, tracked folder (``vendored/``, one file
    added with ``git add -f``), a build output folder and one loose file."""
    write(".gitignore", "vendored/\nout/\nscratch.py\n")
    for name in ("m.py", "vendored/kept.py", "vendored/new.py", "out/gen.py", "out/deep/gen2.py", "scratch.py"):
        write(name, BAD)
    write("out/notes.txt", "not Python")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".gitignore", "m.py")
    _git(tmp_path, "add", "-f", "vendored/kept.py")
    return tmp_path


def _linted(stdout: str) -> list[str]:
    return sorted({line.split(":")[0] for line in stdout.splitlines() if ": CKP" in line})


def test_tracked_files_are_linted_and_the_skipped_ones_counted(repo: Path, run_cli) -> None:
    result = run_cli(".")
    assert result.exit_code == 1
    assert _linted(result.stdout) == ["m.py", "vendored/kept.py"]
    assert result.stderr == WARNING.format("4 Python files", "were")  # new.py, gen.py, gen2.py, scratch.py


def test_no_respect_gitignore_lints_everything_and_warns_nothing(repo: Path, run_cli) -> None:
    result = run_cli("--no-respect-gitignore", ".")
    assert _linted(result.stdout) == ["m.py", "out/deep/gen2.py", "out/gen.py", "scratch.py", "vendored/kept.py", "vendored/new.py"]
    assert result.stderr == ""


def test_quiet_leaves_the_warning_out_and_one_file_is_singular(repo: Path, run_cli, write) -> None:
    assert run_cli("-q", ".").stderr == ""
    assert run_cli("vendored").stderr == WARNING.format("1 Python file", "was")


def test_show_files_lists_the_tracked_file(repo: Path, run_cli) -> None:
    result = run_cli("--show-files", ".")
    assert result.stdout.splitlines() == [str(repo / "m.py"), str(repo / "vendored" / "kept.py")]


def test_one_git_call_per_repository_and_none_outside(repo: Path, tmp_path_factory, monkeypatch) -> None:
    calls: list[Path] = []
    original = TrackedFiles._ls_files

    def counting(self: TrackedFiles, repository: Path):
        calls.append(repository)
        return original(self, repository)

    monkeypatch.setattr(TrackedFiles, "_ls_files", counting)
    resolver = SettingsResolver(CliOverrides(), cwd=repo)
    found = discover([repo], resolver)
    assert calls == [repo]
    assert [p.relative_to(repo).as_posix() for p in found.files] == ["m.py", "vendored/kept.py"]
    assert (found.gitignored, found.gitignored_at_least) == (4, False)

    loose = tmp_path_factory.mktemp("loose")  # no repository: .gitignore as it reads, no git
    (loose / ".gitignore").write_text("skip.py\n")
    (loose / "skip.py").write_text(BAD)
    found = discover([loose], SettingsResolver(CliOverrides(), cwd=loose))
    assert (found.files, found.gitignored, calls) == ([], 1, [repo])


def test_without_git_the_patterns_apply_as_they_read(repo: Path, run_cli, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(repo / "no-such-folder"))  # git cannot be started
    result = run_cli(".")
    assert _linted(result.stdout) == ["m.py"]
    assert result.stderr == WARNING.format("5 Python files", "were")


def test_a_tracked_file_with_a_non_ascii_name(repo: Path, run_cli, write) -> None:
    write("vendored/modèle.py", BAD)
    _git(repo, "add", "-f", "vendored/modèle.py")
    assert _linted(run_cli("vendored").stdout) == ["vendored/kept.py", "vendored/modèle.py"]

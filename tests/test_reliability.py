"""Reliability (issue 14): never write outside the tree, never say "All checks passed!" for a
file that was not checked (CKP902 in every format), and small ruff-parity details."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

from ckptlint.output import FORMATS

IMPORT = "from torch.utils.checkpoint import checkpoint\n"
CALL = IMPORT + "y = checkpoint(f, x)\n"
FIXED = IMPORT + "y = checkpoint(f, x, use_reentrant=False)\n"


# ----------------------------------------------------------- 1. never outside the tree
@pytest.fixture
def linked(tmp_path: Path) -> Path:
    """``proj/`` with ``vendor -> ../outside``, ``up -> ..`` and ``link.py -> ../outside/y.py``."""
    proj, outside = tmp_path / "proj", tmp_path / "outside"
    proj.mkdir()
    outside.mkdir()
    (proj / "own.py").write_text(CALL)
    (outside / "x.py").write_text(CALL)
    (outside / "y.py").write_text(CALL)
    (tmp_path / "sibling.py").write_text(CALL)
    (proj / "vendor").symlink_to(outside)
    (proj / "up").symlink_to(tmp_path)
    (proj / "link.py").symlink_to(outside / "y.py")
    return proj


def test_fix_never_follows_a_folder_link_out_of_the_tree(run_cli, linked: Path) -> None:
    outside = linked.parent / "outside"
    result = run_cli("--fix", "--unsafe-fixes", "--no-cache", ".", cwd=linked)
    assert (linked / "own.py").read_text() == FIXED
    assert (outside / "x.py").read_text() == CALL  # vendor/ is a link: not walked
    assert (linked.parent / "sibling.py").read_text() == CALL  # up/ -> .. : not walked
    assert "vendor/" not in result.stdout and "up/" not in result.stdout
    listed = run_cli("--show-files", ".", cwd=linked).stdout.splitlines()
    assert listed == [str(linked / "link.py"), str(linked / "own.py")]


def test_a_file_link_out_of_the_tree_is_linted_but_never_written(run_cli, linked: Path) -> None:
    target = linked.parent / "outside" / "y.py"
    result = run_cli("--fix", "--unsafe-fixes", "--no-cache", ".", cwd=linked)
    assert target.read_text() == CALL
    assert (
        f"link.py:1:1: CKP902 resolves to {target}, outside the paths given; fixes not written" in result.stdout
    )
    assert "link.py:2:5: CKP001" in result.stdout  # its finding as read, not counted as fixed
    assert "Found 3 errors (1 fixed, 2 remaining)." in result.stdout
    assert result.exit_code == 1


def test_a_folder_link_named_explicitly_is_linted_and_fixed(run_cli, linked: Path) -> None:
    """ruff lints a symbolic link named on the command line; what lies below it is inside
    the paths given."""
    result = run_cli("--fix", "--unsafe-fixes", "--no-cache", "vendor", cwd=linked)
    assert result.exit_code == 0, result.stdout
    assert (linked.parent / "outside" / "x.py").read_text() == FIXED


def test_add_noqa_never_writes_outside_the_paths_given(run_cli, linked: Path) -> None:
    target = linked.parent / "outside" / "y.py"
    result = run_cli("--add-noqa", "--no-cache", ".", cwd=linked)
    assert target.read_text() == CALL
    assert f"link.py: resolves to {target}, outside the paths given; not written" in result.stderr
    assert "# noqa: CKP001" in (linked / "own.py").read_text()


# ------------------------------------------------------ 2. CKP902: files not checked
@pytest.fixture
def unchecked(write) -> None:
    write("ok.py", FIXED)
    write("latin.py", IMPORT.encode() + "# café\n".encode("latin-1"))
    write("nb.ipynb", json.dumps({"cells": []}))


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_files_not_checked_are_ckp902_in_every_format(run_cli, unchecked, tmp_path: Path, fmt: str) -> None:
    summary = tmp_path / "summary.md"
    result = run_cli(
        "--no-cache", "--output-format", fmt, "ok.py", "latin.py", "nb.ipynb", "missing.py",
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert (result.exit_code, result.stderr) == (1, "")
    out = result.stdout
    assert "All checks passed!" not in out or fmt == "sarif"  # SARIF embeds CKP902's page, which says it
    expected = {"latin.py", "nb.ipynb", "missing.py"}
    if fmt in ("json", "json-lines"):
        records = json.loads(out) if fmt == "json" else [json.loads(line) for line in out.splitlines()]
        assert {Path(r["filename"]).name for r in records if r["code"] == "CKP902"} == expected
        assert all(r["fix"] is None and r["location"] == {"row": 1, "column": 1} for r in records)
    elif fmt == "sarif":
        results = json.loads(out)["runs"][0]["results"]
        assert sorted(r["ruleId"] for r in results) == ["CKP902"] * 3
        assert all(r["level"] == "error" for r in results)
    elif fmt == "gitlab":
        assert sorted(r["location"]["path"] for r in json.loads(out)) == sorted(expected)
    elif fmt == "junit":
        cases = ElementTree.fromstring(out).iter("testcase")
        assert sum(1 for c in cases if c.get("name") == "org.ckptlint.CKP902" and c.find("failure") is not None) == 3
    elif fmt == "github":
        errors = [line for line in out.splitlines() if line.startswith("::error ")]
        assert len(errors) == 3 and all("title=ckptlint (CKP902)" in line for line in errors)
        text = summary.read_text()
        assert "All checks passed!" not in text and text.count("CKP902") == 3
    else:
        assert out.count("CKP902") == 3


def test_ckp902_cannot_be_hidden_by_selection_or_noqa(run_cli, write) -> None:
    write("pyproject.toml", "[tool.ckptlint]\nper-file-ignores = { 'deep.py' = ['CKP902'] }\n")
    write("latin.py", IMPORT.encode() + "# café # noqa\n".encode("latin-1"))
    write("nb.ipynb", "{}")
    for args in (("--ignore", "CKP902"), ("--select", "CKP001"), ("--ignore", "CKP9")):
        result = run_cli("--no-cache", *args, "latin.py", "nb.ipynb")
        assert result.exit_code == 1
        assert [line.split(" ")[1] for line in result.stdout.splitlines()[:2]] == ["CKP902", "CKP902"]
    stats = run_cli("--no-cache", "--statistics", "latin.py")
    assert stats.stdout.startswith("1\tCKP902\tio-error\n")  # nothing fixable: no marker (ruff)


def _run_in_read_only_folder(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """Run ckptlint in ``folder`` made read-only: by permissions for a user, by a read-only
    bind mount in a private mount namespace for root (who writes through permissions)."""
    command = [sys.executable, "-m", "ckptlint", "--no-cache", "--isolated", *args]
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=60)
        finally:
            folder.chmod(0o755)
    if shutil.which("unshare") is None:
        pytest.skip("root without unshare: cannot make a folder read-only")
    script = 'mount --bind -o ro "$0" "$0" || exit 99; cd "$0" && exec "$@"'
    result = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, str(folder), *command], capture_output=True, text=True, timeout=60
    )
    if result.returncode == 99 or "unshare failed" in result.stderr:
        pytest.skip(f"cannot make a read-only bind mount here: {result.stderr.strip()}")
    return result


def test_fix_in_a_read_only_folder_is_ckp902_and_not_counted_as_fixed(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "m.py").write_text(CALL)
    result = _run_in_read_only_folder(folder, "--fix", "--unsafe-fixes", "--show-fixes", "m.py")
    assert (folder / "m.py").read_text() == CALL
    assert result.returncode == 1, result.stderr
    first, second = result.stdout.splitlines()[:2]
    assert first.startswith("m.py:1:1: CKP902 cannot write the fixed file: ") and first.endswith("; fixes not written")
    assert second.startswith("m.py:2:5: CKP001 [*] ")
    assert "Fixed 1 error" not in result.stdout and " fixed, " not in result.stdout
    assert "Found 2 errors." in result.stdout and "All checks passed!" not in result.stdout
    as_json = _run_in_read_only_folder(folder, "--fix", "--unsafe-fixes", "--output-format", "json", "m.py")
    assert [r["code"] for r in json.loads(as_json.stdout)] == ["CKP902", "CKP001"]


def test_a_coding_cookie_naming_an_unknown_encoding_is_ckp902_from_the_api() -> None:
    from ckptlint.api import lint_source

    [found] = lint_source("# -*- coding: no-such-encoding -*-\n" + FIXED)
    assert (found.code, found.start) == ("CKP902", (1, 1))


# ----------------------------------------------- 6. an unwritable GITHUB_STEP_SUMMARY
@pytest.mark.parametrize("where", ["folder", "missing-parent"])
def test_an_unwritable_step_summary_warns_and_annotations_still_print(run_cli, write, tmp_path: Path, where) -> None:
    write("m.py", CALL)
    target = tmp_path / ("folder" if where == "folder" else "no/such/dir/summary.md")
    if where == "folder":
        target.mkdir()
    result = run_cli("--no-cache", "--output-format", "github", "m.py", env={"GITHUB_STEP_SUMMARY": str(target)})
    assert result.exit_code == 1
    reason = "is a directory" if where == "folder" else "no such file or directory"
    assert result.stderr == f"warning: GITHUB_STEP_SUMMARY ({target}): cannot write the step summary: {reason}\n"
    assert result.stdout.startswith("::warning file=m.py,line=2,col=5,")


# ------------------------------------------------------------- 9. ruff parity, small things
@pytest.mark.parametrize(
    "args",
    [("--select", ""), ("--select", " "), ("--ignore", "CKP001,"), ("--extend-select", ",CKP901"), ("--select", "")],
)
def test_an_empty_rule_selector_is_a_usage_error(run_cli, write, args) -> None:
    write("m.py", CALL)
    result = run_cli("--no-cache", *args, "m.py")
    assert result.exit_code == 2
    assert result.stderr == f"error: {args[0]}: invalid empty rule selector (give a code or prefix, or ALL)\n"
    assert result.stdout == ""


def test_a_noqa_colon_without_codes_warns_and_suppresses_nothing(run_cli, write) -> None:
    """ruff: "Invalid `# noqa` directive ... expected a comma-separated list of codes", ignored."""
    write("m.py", IMPORT + "y = checkpoint(f, x)  # noqa:\nz = checkpoint(f, x)  # noqa: see above\n")
    result = run_cli("--no-cache", "m.py")
    assert result.exit_code == 1
    message = (
        "invalid `# noqa` directive: expected a comma-separated list of codes (e.g. `# noqa: CKP001, CKP002`); ignored"
    )
    assert result.stderr.splitlines() == [f"warning: m.py:2: {message}", f"warning: m.py:3: {message}"]
    assert [line.split(" ")[0] for line in result.stdout.splitlines()[:2]] == ["m.py:2:5:", "m.py:3:5:"]
    # a file-level one too, and the warning comes back from the cache
    write("n.py", "# ckptlint: noqa:\n" + CALL)
    for _ in range(2):
        again = run_cli("n.py")
        assert again.stderr == f"warning: n.py:1: {message}\n" and "n.py:3:5: CKP001" in again.stdout
    assert run_cli("--no-cache", "m.py", "--exit-zero").exit_code == 0  # a warning alone is no error


@pytest.mark.parametrize(
    "source",
    [
        IMPORT + 'y = checkpoint(f, """a\nb""")  # noqa: CKP001\n',
        IMPORT + "y = checkpoint(f, x) + \\\n    1  # noqa: CKP001\n",
        IMPORT + "y = checkpoint(f, x) + \\\n    g(\"\"\"a\nb\"\"\")  # noqa: CKP001\n",
    ],
    ids=["triple-quoted", "backslash", "backslash-then-string"],
)
def test_noqa_where_the_string_or_continuation_ends(run_cli, write, source: str) -> None:
    write("m.py", source)
    assert run_cli("--no-cache", "m.py").exit_code == 0
    write("m.py", source.replace("  # noqa: CKP001", ""))
    assert run_cli("--no-cache", "m.py").exit_code == 1
    write("m.py", source.replace("# noqa: CKP001", "# a comment \\"))
    assert run_cli("--no-cache", "m.py").exit_code == 1  # a comment ending in `\` continues nothing


def test_jobs_is_capped_at_the_files_to_lint(run_cli, write, monkeypatch) -> None:
    from ckptlint.lint import run as lint_run

    used: list[int] = []
    original = lint_run.in_pool

    def in_pool(tasks, workers, **options):
        used.append(workers)
        return original(tasks, workers, **options)

    monkeypatch.setattr(lint_run, "in_pool", in_pool)
    for name in ("a.py", "b.py", "c.py"):
        write(name, CALL)
    assert run_cli("--no-cache", "-j", "64", ".").exit_code == 1
    assert used == [3]


# ------------------------------------------------------ 8. writes keep the file's identity
@pytest.mark.skipif(os.geteuid() != 0, reason="only root may give a file to another user")
def test_fix_keeps_owner_and_group(run_cli, write) -> None:
    path = write("m.py", CALL)
    os.chown(path, 12345, 23456)
    path.chmod(0o640)
    result = run_cli("--no-cache", "--fix", "--unsafe-fixes", "m.py")
    assert (result.exit_code, result.stderr) == (0, "")
    status = path.stat()
    assert path.read_text() == FIXED
    assert (status.st_uid, status.st_gid, status.st_mode & 0o7777) == (12345, 23456, 0o640)


def test_fix_writes_a_hard_linked_file_in_place(run_cli, write, tmp_path: Path) -> None:
    path = write("m.py", CALL)
    other = tmp_path / "elsewhere" / "same.py"
    other.parent.mkdir()
    os.link(path, other)
    inode = path.stat().st_ino
    result = run_cli("--no-cache", "--fix", "--unsafe-fixes", "m.py")
    assert (result.exit_code, result.stderr) == (0, "")
    assert path.read_text() == FIXED and other.read_text() == FIXED  # still one file
    assert path.stat().st_ino == other.stat().st_ino == inode and path.stat().st_nlink == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "m.py"]  # no temporary file


def test_diff_reports_files_not_checked_on_stderr_and_exits_1(run_cli, write) -> None:
    write("m.py", FIXED)
    result = run_cli("--no-cache", "--diff", "m.py", "missing.py")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == "error: missing.py: no such file or directory\n"

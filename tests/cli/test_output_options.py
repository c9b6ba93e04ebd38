"""The options around the outputs: --statistics, --show-fixes, --show-files, --show-settings,
--add-noqa, --stdin-filename, --explain/--list-rules as JSON, --since."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from ckptlint.docs import rule_doc
from ckptlint.rules import ALL_RULES

IMPORT = "from torch.utils.checkpoint import checkpoint\n"


FINDING = IMPORT + "checkpoint(f, x)\n"


MESSAGE = (
    "`checkpoint()` without `use_reentrant`: PyTorch warns and silently runs the legacy reentrant "
    "variant; pass `use_reentrant=False` (recommended)"
)


def test_statistics_text_and_json(write, run_cli) -> None:
    # use_reentrant=False is unsafe here, and Hugging Face's form has an unsafe fix only
    write("a.py", IMPORT + "checkpoint(f, x)\nmodel.gradient_checkpointing_enable()\nx = 1  # noqa: CKP001\n")
    write("b.py", IMPORT + "checkpoint(f, x, debug=True)\n")  # the fix is safe here: fixable
    text = run_cli("--isolated", "-j", "1", "--select", "CKP001,CKP901", "--statistics")
    assert text.exit_code == 1
    assert text.stdout == (
        "3\tCKP001\t[-] checkpoint-without-use-reentrant\n"  # ruff: [-] when only some are fixable
        "1\tCKP901\t[*] unused-noqa\n"
        "Found 4 errors.\n"
        "[*] 2 fixable with the `--fix` option (2 hidden fixes can be enabled with the `--unsafe-fixes` option).\n"
    )
    as_json = run_cli("--isolated", "-j", "1", "--select", "CKP001,CKP901", "--statistics", "--output-format", "json")
    assert json.loads(as_json.stdout) == [
        {"code": "CKP001", "name": "checkpoint-without-use-reentrant", "count": 3, "fixable": False, "fixable_count": 1},
        {"code": "CKP901", "name": "unused-noqa", "count": 1, "fixable": True, "fixable_count": 1},
    ]


def test_show_fixes_lists_what_fix_changed(write, run_cli) -> None:
    write("a.py", IMPORT + "checkpoint(f, x)\ncheckpoint(g, x)\n")
    write("sub dir/b.py", IMPORT + "checkpoint(f, x)\n")
    result = run_cli("--isolated", "-j", "1", "--fix", "--unsafe-fixes", "--show-fixes")
    assert result.exit_code == 0
    assert result.stdout == (
        "\n"
        "Fixed 3 errors:\n"
        "- a.py:\n"
        "    2 × CKP001 (checkpoint-without-use-reentrant)\n"
        "- sub dir/b.py:\n"
        "    1 × CKP001 (checkpoint-without-use-reentrant)\n"
        "\n"
        "Found 3 errors (3 fixed, 0 remaining).\n"
    )


def test_show_files_and_show_settings(tmp_path: Path, write, run_cli) -> None:
    write("pyproject.toml", '[tool.ckptlint]\nextend-select = ["CKP901"]\nextend-exclude = ["skip"]\n')
    write("a.py", FINDING)
    write("skip/b.py", FINDING)
    write("c d/e.pyi", FINDING)
    files = run_cli("--show-files")
    assert files.exit_code == 0
    assert files.stdout.splitlines() == [str(tmp_path / "a.py"), str(tmp_path / "c d" / "e.pyi")]
    settings = run_cli("--show-settings")
    assert settings.exit_code == 0
    lines = settings.stdout.splitlines()
    assert lines[0] == f'Resolved settings for: "{tmp_path / "a.py"}"'
    assert lines[1] == f'Settings path: "{tmp_path / "pyproject.toml"}"'
    start = lines.index("enabled = [")
    enabled = lines[start + 1 : lines.index("]", start)]
    # CKP901 too, from extend-select; the other opt-in rule, CKP005, is not selected
    assert enabled == [f'\t"{code}",' for code in ALL_RULES if code != "CKP005"]
    assert "extend_exclude = [" in lines and '\t"skip",' in lines


def test_add_noqa_merges_keeps_foreign_codes_and_is_idempotent(write, run_cli) -> None:
    source = (
        IMPORT
        + "checkpoint(f, x)  # noqa: E501\n"
        + "y = checkpoint(\n    f, x)\n"
        + "z = checkpoint(f, x)  # a comment\n"
        + "w = checkpoint(f, x)  # noqa: E501 reason\n"
        + "ok = checkpoint(f, x, use_reentrant=False)\n"
    ).replace("\n", "\r\n")
    path = write("a.py", source.encode())
    result = run_cli("--isolated", "--add-noqa", "a.py")
    assert result.exit_code == 0
    assert result.stderr == "Added 4 noqa directives.\n"
    assert path.read_bytes().decode() == (
        IMPORT
        + "checkpoint(f, x)  # noqa: E501, CKP001\n"
        + "y = checkpoint(  # noqa: CKP001\n    f, x)\n"
        + "z = checkpoint(f, x)  # a comment  # noqa: CKP001\n"
        + "w = checkpoint(f, x)  # noqa: E501, CKP001 reason\n"
        + "ok = checkpoint(f, x, use_reentrant=False)\n"
    ).replace("\n", "\r\n")
    again = run_cli("--isolated", "--add-noqa", "a.py")
    assert again.exit_code == 0 and again.stderr == ""
    after = run_cli("--isolated", "--extend-select", "CKP901", "a.py")
    assert after.exit_code == 0 and after.stdout == "All checks passed!\n"


def test_add_noqa_puts_the_directive_where_the_string_ends(write, run_cli) -> None:
    """Line 3 ends inside a string: its `# noqa` goes on line 4, where the string ends (ruff)."""
    source = IMPORT + 's = """a\n""" + checkpoint(f, """\n""")\n'
    path = write("a.py", source)
    result = run_cli("--isolated", "--add-noqa", "a.py")
    assert (result.exit_code, result.stderr) == (0, "Added 1 noqa directive.\n")
    assert path.read_text() == IMPORT + 's = """a\n""" + checkpoint(f, """\n""")  # noqa: CKP001\n'
    assert run_cli("--isolated", "--no-cache", "a.py").exit_code == 0


def test_add_noqa_cannot_be_combined_with_fix(write, run_cli) -> None:
    write("a.py", FINDING)
    result = run_cli("--add-noqa", "--fix", "a.py")
    assert result.exit_code == 2 and "cannot be used together" in result.stderr


def test_stdin_is_linted_as_the_given_path_with_its_config(tmp_path: Path, write, run_cli) -> None:
    write("pyproject.toml", '[tool.ckptlint.per-file-ignores]\n"legacy/*" = ["CKP001"]\n')
    linted = run_cli("--stdin-filename", "src/model.py", "-", input=FINDING)
    assert linted.exit_code == 1
    assert linted.stdout.startswith(f"src/model.py:2:1: CKP001 {MESSAGE}\n")
    ignored = run_cli("--stdin-filename", "legacy/old.py", "-", input=FINDING)
    assert ignored.exit_code == 0 and ignored.stdout == "All checks passed!\n"
    as_json = run_cli("--stdin-filename", "src/model.py", "--output-format", "json", input=FINDING)
    assert json.loads(as_json.stdout)[0]["filename"] == str(tmp_path / "src" / "model.py")


def test_stdin_with_force_exclude_prints_nothing_for_an_excluded_path(write, run_cli) -> None:
    write("pyproject.toml", '[tool.ckptlint]\nextend-exclude = ["generated"]\n')
    excluded = run_cli("--force-exclude", "--stdin-filename", "generated/m.py", "-", input=FINDING)
    assert (excluded.exit_code, excluded.stdout) == (0, "")
    echoed = run_cli("--force-exclude", "--fix", "--stdin-filename", "generated/m.py", "-", input=FINDING)
    assert (echoed.exit_code, echoed.stdout) == (0, FINDING)
    not_forced = run_cli("--stdin-filename", "generated/m.py", "-", input=FINDING)
    assert not_forced.exit_code == 1


def test_stdin_fix_prints_the_fixed_source_and_reports_on_stderr(tmp_path: Path, monkeypatch) -> None:
    from click.testing import CliRunner

    from ckptlint.cli.app import main

    monkeypatch.chdir(tmp_path)
    source = (IMPORT + "checkpoint(f, x, debug=True)\nmodel.gradient_checkpointing_enable()\n").replace("\n", "\r\n")
    result = CliRunner().invoke(main, ["--isolated", "--fix", "--stdin-filename", "m.py", "-"], input=source.encode())
    assert result.exit_code == 1
    # stdout_bytes: click's ``stdout`` turns CRLF into LF; the bytes show the endings are kept.
    assert (
        result.stdout_bytes
        == (IMPORT + "checkpoint(f, x, debug=True, use_reentrant=False)\nmodel.gradient_checkpointing_enable()\n")
        .replace("\n", "\r\n")
        .encode()
    )
    assert result.stderr.startswith("m.py:3:1: CKP001 `gradient_checkpointing_enable()` without")
    assert result.stderr.endswith(
        "Found 2 errors (1 fixed, 1 remaining).\n"
        "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option).\n"
    )
    clean = CliRunner().invoke(main, ["--isolated", "--fix", "--stdin-filename", "m.py", "-"], input=b"x = 1\r\n")
    assert (clean.exit_code, clean.stdout_bytes) == (0, b"x = 1\r\n")


def test_explain_json_is_ruffs_record(run_cli) -> None:
    result = run_cli("--explain", "ckp901", "--output-format", "json")
    assert result.exit_code == 0
    record = json.loads(result.stdout)
    assert record == {
        "name": "unused-noqa",
        "code": "CKP901",
        "linter": "ckptlint",
        "summary": "A `# noqa: CKPxxx` directive that suppresses nothing",
        "fix": "Fix is always available.",
        "fix_availability": "Always",
        "explanation": rule_doc("CKP901"),
        "preview": False,
        "severity": "warning",
        "default_enabled": False,
    }
    assert run_cli("--explain", "CKP000", "--output-format", "json").exit_code == 2


def test_list_rules_table_and_json(run_cli) -> None:
    table = run_cli("--list-rules")
    assert table.exit_code == 0
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["Code", "Name", "Severity", "Fix", "Default", "Summary"]
    assert [line.split()[0] for line in lines[1:]] == list(ALL_RULES)
    assert lines[1 + list(ALL_RULES).index("CKP901")].split()[:5] == [
        "CKP901",
        "unused-noqa",
        "warning",
        "always",
        "no",
    ]
    records = json.loads(run_cli("--list-rules", "--output-format", "json").stdout)
    assert [r["code"] for r in records] == list(ALL_RULES)
    assert records[0]["fix"] == "Fix is sometimes available." and records[0]["explanation"] == rule_doc("CKP001")


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd, check=True, capture_output=True
    )


@pytest.mark.slow
@needs_git
def test_since_lints_committed_staged_unstaged_and_untracked_changes(tmp_path: Path, write, run_cli) -> None:
    _git(tmp_path, "init", "-q")
    for name in ("committed.py", "staged.py", "unstaged.py", "untouched.py", "deleted.py"):
        write(name, FINDING)
    write(".gitignore", "ignored.py\n")
    write("pyproject.toml", '[tool.ckptlint]\nextend-exclude = ["vendor"]\n')
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "base")
    write("committed.py", FINDING + "checkpoint(g, x)\n")
    _git(tmp_path, "commit", "-qam", "change")
    write("staged.py", FINDING + "\n")
    _git(tmp_path, "add", "staged.py")
    write("unstaged.py", FINDING + "\n")
    write("new file.py", FINDING)
    write("ignored.py", FINDING)
    write("vendor/lib.py", FINDING)
    write("notes.txt", "checkpoint\n")
    (tmp_path / "deleted.py").unlink()
    result = run_cli("-j", "1", "--since", "HEAD~1", "--output-format", "json")
    assert result.exit_code == 1, result.stderr
    linted = sorted({Path(r["filename"]).name for r in json.loads(result.stdout)})
    assert linted == ["committed.py", "new file.py", "staged.py", "unstaged.py"]
    only_sub = run_cli("-j", "1", "--since", "HEAD~1", "staged.py")
    assert only_sub.stdout.startswith("staged.py:2:1: CKP001 ") and "unstaged" not in only_sub.stdout
    nothing = run_cli("--since", "HEAD")  # only the working-tree changes since HEAD
    assert "committed.py" not in nothing.stdout and "staged.py" in nothing.stdout


@pytest.mark.slow
@needs_git
def test_since_outside_a_repository_or_with_an_unknown_revision_exits_2(tmp_path: Path, write, run_cli) -> None:
    write("a.py", FINDING)
    outside = run_cli("--since", "main", env={"GIT_CEILING_DIRECTORIES": str(tmp_path.parent)})
    assert outside.exit_code == 2
    assert outside.stderr == f"error: --since main: {tmp_path} is not inside a git repository\n"
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "base")
    unknown = run_cli("--since", "no-such-branch")
    assert unknown.exit_code == 2
    assert unknown.stderr == "error: --since no-such-branch: unknown git revision `no-such-branch`\n"


def test_quiet_prints_findings_only(write, run_cli) -> None:
    write("a.py", FINDING)
    assert run_cli("--isolated", "-q", "a.py").stdout == f"a.py:2:1: CKP001 {MESSAGE}\n"
    write("hf.py", "model.gradient_checkpointing_enable()\n")  # an unsafe fix only
    assert (
        run_cli("--isolated", "-q", "--statistics", "hf.py").stdout
        == "1\tCKP001\tcheckpoint-without-use-reentrant\n"  # nothing fixable: no marker (ruff)
    )
    full = run_cli("--isolated", "-q", "--output-format", "full", "a.py").stdout
    assert full.startswith(f"CKP001 {MESSAGE}\n --> a.py:2:1\n") and "Found" not in full


def test_statistics_prints_no_marker_when_nothing_is_fixable(run_cli, write) -> None:
    # ruff 0.17: `2\tF841\tunused-variable` without --unsafe-fixes (no marker column at all),
    # `[ ]` only beside rows of a table where some other rule is fixable
    write("m.py", "a = model.gradient_checkpointing_enable()\nb = model.gradient_checkpointing_enable()\n")  # unsafe fixes only
    plain = run_cli("--isolated", "--no-cache", "--statistics", "m.py")
    assert plain.stdout.splitlines()[0] == "2\tCKP001\tcheckpoint-without-use-reentrant"
    unsafe = run_cli("--isolated", "--no-cache", "--statistics", "--unsafe-fixes", "m.py")
    assert unsafe.stdout.splitlines()[0] == "2\tCKP001\t[*] checkpoint-without-use-reentrant"
    write("n.py", IMPORT + "c = checkpoint(f, x, debug=True)\nd = checkpoint(f, x, preserve_rng_state=False, use_reentrant=False)\n")
    mixed = run_cli("--isolated", "--no-cache", "--statistics", "n.py")
    lines = mixed.stdout.splitlines()
    assert "1\tCKP001\t[*] checkpoint-without-use-reentrant" in lines
    assert "1\tCKP101\t[ ] rng-state-not-preserved" in lines


@pytest.mark.slow
def test_since_uses_the_repository_of_the_paths_given(run_cli, tmp_path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "base.py").write_text("x = 1\n")
    subprocess.run([*git, "-C", str(repo), "add", "."], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-qm", "base"], check=True)
    (repo / "new.py").write_text(IMPORT + "checkpoint(f, x)\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = run_cli("--isolated", "--no-cache", "--since", "HEAD", str(repo), cwd=elsewhere)
    assert result.exit_code == 1, result.stderr
    assert "new.py:2:1: CKP001" in result.stdout


def test_show_sites_writes_its_report_to_the_output_file(tmp_path, run_cli, write) -> None:
    write("m.py", "from torch.utils.checkpoint import checkpoint\n\n\ndef f(b, x):\n    return checkpoint(b, x)\n")
    shown = run_cli("--show-sites", "--output-format", "json", "--isolated", "m.py")
    written = run_cli("--show-sites", "--output-format", "json", "--isolated", "-o", "sites.json", "m.py")
    assert (written.exit_code, written.stdout) == (0, "")
    assert (tmp_path / "sites.json").read_text(encoding="utf-8") == shown.stdout
    assert [r["api"] for r in json.loads(shown.stdout)] == ["torch.utils.checkpoint.checkpoint"]

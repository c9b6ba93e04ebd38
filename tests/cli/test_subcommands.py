"""ruff's subcommand spellings: ``ckptlint check [PATHS]`` lints as ``ckptlint [PATHS]`` does,
``ckptlint rule CODE`` / ``--all`` print the rules' documentation, and a first argument that is
a command wins over a file or folder of that name (which ``./NAME`` lints)."""

from __future__ import annotations

import json

import pytest

IMPORT = "from torch.utils.checkpoint import checkpoint\n"
BAD = IMPORT + "y = checkpoint(f, x)\n"


def test_check_lints_like_the_plain_command(run_cli, write) -> None:
    write("src/m.py", BAD)
    plain = run_cli("src/")
    checked = run_cli("check", "src/")
    assert (checked.exit_code, checked.stdout, checked.stderr) == (plain.exit_code, plain.stdout, plain.stderr)
    assert checked.exit_code == 1
    assert checked.stdout.startswith("src/m.py:2:5: CKP001 ")


def test_check_takes_the_options_after_it(run_cli, write) -> None:
    write("src/m.py", BAD)
    result = run_cli("check", "--select", "CKP002", "src")
    assert (result.exit_code, result.stdout) == (0, "All checks passed!\n")


def test_check_without_paths_lints_the_current_folder(run_cli, write) -> None:
    write("pkg/m.py", BAD)
    result = run_cli("check")
    assert result.exit_code == 1
    assert result.stdout.startswith("pkg/m.py:2:5: CKP001 ")
    assert result.stderr == ""


def test_a_folder_named_check_is_linted_when_written_as_a_path(run_cli, write) -> None:
    write("check/m.py", BAD)
    for args in (("./check",), ("check", "check")):
        result = run_cli(*args)
        assert result.exit_code == 1, args
        assert "check/m.py:2:5: CKP001" in result.stdout
        assert result.stderr == ""


def test_the_command_wins_over_a_folder_named_check_and_says_so(run_cli, write) -> None:
    write("check/m.py", BAD)
    write("other/ok.py", IMPORT)
    result = run_cli("check", "other")
    assert (result.exit_code, result.stdout) == (0, "All checks passed!\n")
    assert result.stderr == "warning: `check` is read as the command `ckptlint check`; to lint the folder named check, write `./check`\n"


def test_rule_prints_the_explanation(run_cli) -> None:
    result = run_cli("rule", "CKP001")
    assert result.exit_code == 0
    assert result.stdout == run_cli("--explain", "CKP001").stdout
    assert result.stdout.startswith("# checkpoint-without-use-reentrant (CKP001)\n")


def test_rule_json_is_ruffs_record(run_cli) -> None:
    result = run_cli("rule", "--output-format", "json", "CKP203")
    record = json.loads(result.stdout)
    assert (record["code"], record["name"], record["linter"]) == ("CKP203", "batchnorm-in-checkpoint", "ckptlint")


def test_rule_all_lists_every_rule(run_cli) -> None:
    from ckptlint.registry import RULES

    text = run_cli("rule", "--all")
    assert text.exit_code == 0
    assert text.stdout == run_cli("--list-rules").stdout
    records = json.loads(run_cli("rule", "--all", "--output-format", "json").stdout)
    assert [r["code"] for r in records] == list(RULES)


@pytest.mark.parametrize(
    ("args", "stderr"),
    [
        (("rule",), "give a rule code or --all"),
        (("rule", "--all", "CKP001"), "give one rule code"),
        (("rule", "CKP404"), "error: unknown rule code `CKP404`"),
        (("rule", "--output-format", "sarif", "CKP001"), "Invalid value for '--output-format'"),
    ],
)
def test_rule_usage_errors_exit_2(run_cli, args, stderr: str) -> None:
    result = run_cli(*args)
    assert result.exit_code == 2
    assert stderr in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("word", "hint"),
    [("clean", "use `ckptlint --clean`"), ("version", "use `ckptlint --version`"), ("format", "has no counterpart here")],
)
def test_ruffs_other_commands_are_a_usage_error_that_names_the_option(run_cli, word: str, hint: str) -> None:
    result = run_cli(word)
    assert result.exit_code == 2
    assert f"Error: `{word}` is " in result.stderr
    assert hint in result.stderr
    assert result.stdout == ""


def test_a_path_named_like_ruffs_other_commands_is_linted(run_cli, write) -> None:
    write("clean/m.py", BAD)
    result = run_cli("clean")
    assert result.exit_code == 1
    assert "clean/m.py:2:5: CKP001" in result.stdout

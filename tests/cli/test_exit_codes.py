"""Exit codes (ruff's): 0 nothing left, 1 findings left, 2 usage error, bad configuration or
missing path; ``--exit-zero``, ``--exit-non-zero-on-fix`` and ``--diff``."""

from __future__ import annotations

import pytest

IMPORT = "from torch.utils.checkpoint import checkpoint\n"
BAD = IMPORT + "y = checkpoint(f, x)\n"
SAFE_BAD = IMPORT + "y = checkpoint(f, x, mask=m)\n"
CLEAN = IMPORT + "y = checkpoint(f, x, use_reentrant=False)\n"


def test_clean_exits_0(run_cli, write) -> None:
    write("m.py", CLEAN)
    result = run_cli("m.py")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "All checks passed!\n", "")


def test_default_path_is_the_current_folder(run_cli, write) -> None:
    write("pkg/m.py", BAD)
    result = run_cli()
    assert result.exit_code == 1
    assert result.stdout.startswith("pkg/m.py:2:5: CKP001 ")


def test_findings_exit_1(run_cli, write) -> None:
    write("m.py", BAD)
    assert run_cli("m.py").exit_code == 1


def test_exit_zero(run_cli, write) -> None:
    write("m.py", BAD)
    result = run_cli("--exit-zero", "m.py")
    assert result.exit_code == 0
    assert "m.py:2:5: CKP001" in result.stdout


@pytest.mark.parametrize(
    ("args", "stderr"),
    [
        (("--bogus",), "No such option"),
        (("--select", "XYZ"), "error: --select: unknown rule selector `XYZ`"),
        (("--select", "CKP001,CKP0009"), "error: --select: unknown rule selector `CKP0009`"),
        (("--ignore", "E501"), "error: --ignore: unknown rule selector `E501`"),
        (("--extend-select", "CKP8"), "error: --extend-select: unknown rule selector `CKP8`"),
        (("--output-format", "xml"), "Invalid value for '--output-format'"),
        (("--config", "nope.toml"), "error: nope.toml: configuration file not found"),
        (("--explain", "CKP404"), "error: unknown rule code `CKP404`"),
    ],
)
def test_usage_errors_exit_2(run_cli, write, args, stderr: str) -> None:
    write("m.py", BAD)
    result = run_cli(*args, *(() if any(a.endswith(".py") for a in args) or "--explain" in args else ("m.py",)))
    assert result.exit_code == 2
    assert stderr in result.stderr
    assert "CKP001" not in result.stdout


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[tool.ckptlint\n", "pyproject.toml: invalid TOML: "),
        ("[tool.ckptlint]\nfoo = 1\n", "pyproject.toml: unknown key `tool.ckptlint.foo` (known keys: "),
        (
            '[tool.ckptlint]\nselect = ["CKP777"]\n',
            "pyproject.toml: `tool.ckptlint.select`: unknown rule selector `CKP777`",
        ),
        ('[tool.ckptlint]\nselect = "CKP001"\n', "pyproject.toml: `tool.ckptlint.select` must be a list of strings"),
        (
            '[tool.ckptlint]\nunsafe-fixes = "yes"\n',
            "pyproject.toml: `tool.ckptlint.unsafe-fixes` must be true or false",
        ),
        (
            '[tool.ckptlint]\noutput-format = "xml"\n',
            "pyproject.toml: `tool.ckptlint.output-format` must be one of concise, full, github, gitlab, json, json-lines, junit, sarif",
        ),
        (
            '[tool.ckptlint.per-file-ignores]\n"m.py" = ["CKP00X"]\n',
            "pyproject.toml: `tool.ckptlint.per-file-ignores` ('m.py'): unknown rule selector `CKP00X`",
        ),
        (
            '[tool.ckptlint.per-file-ignores]\n"m.py" = "CKP001"\n',
            "pyproject.toml: `tool.ckptlint.per-file-ignores` must be a table of lists of rule codes",
        ),
        ("[tool]\nckptlint = 3\n", "pyproject.toml: `tool.ckptlint` must be a table"),
    ],
)
def test_bad_configuration_exits_2_naming_file_and_key(run_cli, write, tmp_path, content: str, message: str) -> None:
    write("m.py", BAD)
    write("pyproject.toml", content)
    result = run_cli("m.py")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {tmp_path / message}") or result.stderr.startswith(
        f"error: {tmp_path}/{message}"
    ), result.stderr
    assert result.stdout == ""


def test_a_missing_path_is_a_ckp902_finding_exit_1(run_cli, write) -> None:
    """ruff reports a missing path as E902 (io-error) and exits 1; never "All checks passed!"."""
    result = run_cli("missing.py")
    assert (result.exit_code, result.stderr) == (1, "")
    assert result.stdout == "missing.py:1:1: CKP902 no such file or directory\nFound 1 error.\n"
    assert run_cli("missing.py", "--exit-zero").exit_code == 0


def test_bad_ckptlint_toml_exits_2(run_cli, write, tmp_path) -> None:
    write("m.py", BAD)
    write("ckptlint.toml", "bogus = 1\n")
    result = run_cli("m.py")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {tmp_path}/ckptlint.toml: unknown key `bogus`")
    # --isolated reads no configuration file at all
    assert run_cli("--isolated", "m.py").exit_code == 1


def test_bad_config_in_a_subfolder_is_found_during_discovery(run_cli, write, tmp_path) -> None:
    write("m.py", CLEAN)
    write("sub/m.py", BAD)
    write("sub/pyproject.toml", "[tool.ckptlint]\nnope = true\n")
    result = run_cli(".")
    assert result.exit_code == 2
    assert f"{tmp_path}/sub/pyproject.toml: unknown key `tool.ckptlint.nope`" in result.stderr


def test_exit_non_zero_on_fix(run_cli, write) -> None:
    path = write("m.py", SAFE_BAD)
    result = run_cli("--fix", "--exit-non-zero-on-fix", "m.py")
    assert result.exit_code == 1
    assert result.stdout == "Found 1 error (1 fixed, 0 remaining).\n"
    assert path.read_text() == IMPORT + "y = checkpoint(f, x, mask=m, use_reentrant=False)\n"
    # nothing left to fix: exit 0
    result = run_cli("--fix", "--exit-non-zero-on-fix", "m.py")
    assert (result.exit_code, result.stdout) == (0, "All checks passed!\n")


def test_fix_without_exit_non_zero_on_fix_exits_0_when_all_fixed(run_cli, write) -> None:
    write("m.py", SAFE_BAD)
    assert run_cli("--fix", "m.py").exit_code == 0


#: a finding whose only fix is unsafe (transformers' default variant differs between releases)
UNSAFE_ONLY = "def run(model):\n    model.gradient_checkpointing_enable()\n"


def test_fix_leaves_unsafe_findings_exit_1(run_cli, write) -> None:
    path = write("m.py", UNSAFE_ONLY)
    result = run_cli("--fix", "m.py")
    assert result.exit_code == 1
    assert path.read_text() == UNSAFE_ONLY


def test_fix_never_passes_use_reentrant_true(run_cli, write) -> None:
    path = write("m.py", BAD)  # use_reentrant=False changes the variant here: unsafe, not applied
    result = run_cli("--fix", "m.py")
    assert result.exit_code == 1
    assert path.read_text() == BAD


def test_diff_prints_writes_nothing_exits_1(run_cli, write) -> None:
    path = write("m.py", SAFE_BAD)
    result = run_cli("--diff", "m.py")
    assert result.exit_code == 1
    assert result.stdout == (
        "--- a/m.py\n"
        "+++ b/m.py\n"
        "@@ -1,2 +1,2 @@\n"
        " from torch.utils.checkpoint import checkpoint\n"
        "-y = checkpoint(f, x, mask=m)\n"
        "+y = checkpoint(f, x, mask=m, use_reentrant=False)\n"
    )
    assert path.read_text() == SAFE_BAD


def test_diff_without_applicable_fix_exits_0(run_cli, write) -> None:
    path = write("m.py", UNSAFE_ONLY)  # only an unsafe fix: no diff without --unsafe-fixes, and says so (ruff)
    result = run_cli("--diff", "m.py")
    assert (result.exit_code, result.stdout) == (0, "No errors would be fixed (1 fix available with `--unsafe-fixes`).\n")
    result = run_cli("--diff", "--unsafe-fixes", "m.py")
    assert result.exit_code == 1
    assert '+    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})\n' in result.stdout
    assert path.read_text() == UNSAFE_ONLY


def test_unsafe_fixes_from_config(run_cli, write) -> None:
    path = write("m.py", BAD)
    write("pyproject.toml", "[tool.ckptlint]\nunsafe-fixes = true\n")
    assert run_cli("--fix", "m.py").exit_code == 0
    assert path.read_text() == IMPORT + "y = checkpoint(f, x, use_reentrant=False)\n"


def test_extend_safe_fixes_promotes_ckp001(run_cli, write) -> None:
    path = write("m.py", BAD)
    write("pyproject.toml", '[tool.ckptlint]\nextend-safe-fixes = ["CKP001"]\n')
    result = run_cli("m.py")
    assert "CKP001 [*]" in result.stdout
    assert run_cli("--fix", "m.py").exit_code == 0
    assert path.read_text() == IMPORT + "y = checkpoint(f, x, use_reentrant=False)\n"


def test_statistics(run_cli, write) -> None:
    write("a.py", BAD + "z = checkpoint(g, y, mask=m)\n")
    result = run_cli("--statistics", "--select", "CKP001", "a.py")
    assert result.exit_code == 1
    assert result.stdout == (
        "2\tCKP001\t[-] checkpoint-without-use-reentrant\n"  # only the call whose reentrant variant raises
        "Found 2 errors.\n"
        "[*] 1 fixable with the `--fix` option (1 hidden fix can be enabled with the `--unsafe-fixes` option).\n"
    )


def test_explain_prints_the_rule_page(run_cli) -> None:
    result = run_cli("--explain", "ckp001")
    assert result.exit_code == 0
    assert result.stdout.startswith("# checkpoint-without-use-reentrant (CKP001)\n")
    assert "## Fix safety" in result.stdout


def test_output_file(run_cli, write, tmp_path) -> None:
    write("m.py", BAD)
    result = run_cli("--output-file", "out/report.txt", "m.py")
    assert (result.exit_code, result.stdout) == (1, "")
    assert (tmp_path / "out" / "report.txt").read_text().startswith("m.py:2:5: CKP001 ")

"""Every bad input gets a clear one-line message naming the file, and the run goes on with
the other files. A file that could not be checked (and a missing path) is a CKP902 finding
at 1:1 in the report, exit 1; a bad configuration or an internal error exits 2."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pytest

from ckptlint.api import settings_for
from ckptlint.lint.limits import MAX_FILE_BYTES
from ckptlint.lint.linter import FileLinter
from ckptlint.lint.run import lint_files

IMPORT = "from torch.utils.checkpoint import checkpoint\n"


CALL = IMPORT + "checkpoint(f, x)\n"


OK_LINE = "ok.py:2:1: CKP001"


def _linted_ok(stdout: str) -> bool:
    """The good file next to the bad one was linted (its finding is in the report)."""
    return any(line.startswith(OK_LINE) for line in stdout.splitlines())


def _unchecked(result) -> list[str]:
    """The CKP902 findings of a run as ``PATH: message`` (and nothing on stderr)."""
    assert result.stderr == ""
    assert "All checks passed!" not in result.stdout
    return [line.replace(":1:1: CKP902 ", ": ", 1) for line in result.stdout.splitlines() if ":1:1: CKP902 " in line]


def test_syntax_error_is_ckp999_at_the_errors_position(run_cli, write):
    write("ok.py", CALL)
    write("broken.py", IMPORT + "y = checkpoint(f, x\nz = 1\n")
    result = run_cli(".")
    assert result.exit_code == 1
    assert "broken.py:2:15: CKP999 Syntax error: '(' was never closed" in result.stdout.splitlines()
    assert _linted_ok(result.stdout)
    assert result.stderr == ""


def test_not_utf8_without_a_coding_cookie(run_cli, write):
    write("ok.py", CALL)
    bad = write("latin.py", IMPORT.encode() + "# café\n".encode("latin-1") + b"checkpoint(f, x)\n")
    result = run_cli(".")
    assert result.exit_code == 1
    assert _unchecked(result) == [
        f"{bad.name}: is not valid UTF-8 (byte 0xe9 at offset 51) and declares no encoding"
    ]
    assert _linted_ok(result.stdout)


def test_a_latin1_file_with_a_coding_cookie_is_linted(run_cli, write):
    write("latin.py", "# -*- coding: latin-1 -*-\n# café\n".encode("latin-1") + CALL.encode())
    result = run_cli(".")
    assert (result.exit_code, result.stderr) == (1, "")
    assert "latin.py:4:1: CKP001" in result.stdout


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"\x7fELF\x02\x01\x01\x00\x00\x00" + bytes(range(256)) * 4, "contains NUL bytes (a binary file?)"),
        (
            b"\x89PNG\r\n\x1a\n" + bytes(range(128, 256)) * 8,
            "is not valid UTF-8 (byte 0x89 at offset 0) and declares no encoding",
        ),
    ],
    ids=["elf", "no-nul"],
)
def test_a_binary_file_named_py(run_cli, write, content, reason):
    """Reported even though it mentions no checkpoint API (the gate would skip it)."""
    write("ok.py", CALL)
    bad = write("blob.py", content)
    result = run_cli(".")
    assert result.exit_code == 1
    assert _unchecked(result) == [f"{bad.name}: {reason}"]
    assert _linted_ok(result.stdout)


def test_nul_bytes_in_a_source_file(run_cli, write):
    write("ok.py", CALL)
    bad = write("nul.py", IMPORT.encode() + b"x = 1\x00\ncheckpoint(f, x)\n")
    result = run_cli(".")
    assert result.exit_code == 1
    assert _unchecked(result) == [f"{bad.name}: contains NUL bytes (a binary file?)"]
    assert _linted_ok(result.stdout)


def _generate(path: Path, size: int, with_checkpoint: bool) -> None:
    block = (IMPORT if with_checkpoint else "") + "".join(
        f"def block_{i}(x):\n    return {'checkpoint' if with_checkpoint else 'layer'}(f, x + {i})\n\n"
        for i in range(2000)
    )
    data = block.encode()
    with open(path, "wb") as handle:
        for _ in range(size // len(data) + 1):
            handle.write(data)


def test_a_50_mb_file_is_refused_quickly_and_in_bounded_memory(run_cli, tmp_path, write):
    write("ok.py", CALL)
    big = tmp_path / "generated.py"
    _generate(big, 50 * 2**20, with_checkpoint=True)
    size = big.stat().st_size
    started = time.monotonic()
    result = run_cli(".", "-j", "1")
    assert time.monotonic() - started < 10
    assert result.exit_code == 1
    assert _unchecked(result) == [
        f"{big.name}: too large to lint ({size / 2**20:.1f} MiB; the limit is 2 MiB); file skipped"
    ]
    assert _linted_ok(result.stdout)
    tracemalloc.start()
    try:
        run = lint_files([big], lambda p: settings_for())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [d.code for d in run.diagnostics] == ["CKP902"] and run.problems == []
    assert peak < 8 * 2**20  # read in 1 MiB blocks, never whole


def test_a_large_file_that_cannot_hold_findings_is_skipped_silently(run_cli, tmp_path):
    _generate(tmp_path / "generated.py", 3 * MAX_FILE_BYTES, with_checkpoint=False)
    result = run_cli(".")
    assert (result.exit_code, result.stderr) == (0, "")


def test_too_large_source_given_as_bytes(tmp_path):
    raw = (CALL * (MAX_FILE_BYTES // len(CALL) + 1)).encode()
    result = FileLinter().lint(str(tmp_path / "big.py"), raw, settings_for())
    assert [p.line() for p in result.problems] == [
        f"{tmp_path / 'big.py'}: too large to lint ({len(raw) / 2**20:.1f} MiB; the limit is 2 MiB); file skipped"
    ]


def test_ten_thousand_nested_parentheses(run_cli, write):
    """CPython's tokenizer stops at 200 levels; libcst would overflow the C stack (a crash)."""
    write("ok.py", CALL)
    write("deep.py", IMPORT + "y = checkpoint(f, " + "(" * 10_000 + "x" + ")" * 10_000 + ")\n")
    result = run_cli(".", "-j", "1")
    assert result.exit_code == 1
    assert "deep.py:2:218: CKP999 Syntax error: too many nested parentheses" in result.stdout.splitlines()
    assert _linted_ok(result.stdout)


def test_a_deeply_nested_list_inside_a_checkpoint_call_is_analysed(run_cli, write):
    path = write("deep.py", IMPORT + "y = checkpoint(f, " + "[" * 150 + "x" + "]" * 150 + ")\n")
    result = run_cli("deep.py", "--fix", "--unsafe-fixes")
    assert (result.exit_code, result.stderr) == (0, "")
    assert path.read_text().endswith("]" * 150 + ", use_reentrant=False)\n")


@pytest.mark.parametrize(
    "expression",
    [
        " and ".join(["x"] * 10_000),
        " + ".join(["x"] * 10_000),
        "x" + ".a" * 10_000,
        "-" * 10_000 + "x",
        "x" + "[0]" * 4000,
    ],
    ids=["and-chain", "sum", "attributes", "unary", "subscripts"],
)
def test_deeply_nested_expressions(run_cli, write, expression):
    write("ok.py", CALL)
    bad = write("deep.py", IMPORT + f"y = checkpoint(f, {expression})\n")
    result = run_cli(".", "-j", "1")
    assert result.exit_code == 1
    assert _unchecked(result) == [
        f"{bad.name}: too deeply nested to check (more than 3000 levels); file skipped"
    ]
    assert _linted_ok(result.stdout)


def test_an_unreadable_file_simulated(run_cli, write, monkeypatch):
    """A read that fails with EACCES, in this process (the same as a real unreadable file, run
    as an ordinary user: tests/test_special_files_and_permissions.py)."""
    from ckptlint.lint import run as run_module

    write("ok.py", CALL)
    bad = write("secret.py", CALL)
    original = run_module.read_regular

    def read_regular(path, limit):
        if Path(path).name == "secret.py":
            raise PermissionError(13, "Permission denied", str(path))
        return original(path, limit)

    monkeypatch.setattr(run_module, "read_regular", read_regular)
    result = run_cli(".")
    assert result.exit_code == 1
    assert _unchecked(result) == [f"{bad.name}: cannot read: permission denied"]
    assert _linted_ok(result.stdout)


def test_broken_symbolic_links(run_cli, write, tmp_path):
    write("ok.py", CALL)
    (tmp_path / "gone.py").symlink_to(tmp_path / "nowhere.py")
    result = run_cli(".")
    assert result.exit_code == 1
    assert _unchecked(result) == ["gone.py: broken symbolic link"]
    assert _linted_ok(result.stdout)
    named = run_cli("gone.py", "ok.py")
    assert named.exit_code == 1
    assert _unchecked(named) == ["gone.py: broken symbolic link"]
    assert _linted_ok(named.stdout)


def test_symbolic_link_loops(run_cli, write, tmp_path):
    write("ok.py", CALL)
    (tmp_path / "a.py").symlink_to(tmp_path / "b.py")
    (tmp_path / "b.py").symlink_to(tmp_path / "a.py")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "up").symlink_to(tmp_path)  # a link to a folder: not followed
    (tmp_path / "x").symlink_to(tmp_path / "y")
    (tmp_path / "y").symlink_to(tmp_path / "x")  # a loop of links not named *.py: never followed
    result = run_cli(".")
    assert result.exit_code == 1
    loop = "symbolic link loop (too many levels of symbolic links)"
    assert _unchecked(result) == [
        f"a.py: {loop}",
        f"b.py: {loop}",
    ]
    assert [line for line in result.stdout.splitlines() if "CKP001" in line] == [
        line for line in result.stdout.splitlines() if line.startswith(OK_LINE)
    ]
    named = run_cli("a.py", "ok.py")
    assert named.exit_code == 1
    assert _unchecked(named) == [f"a.py: {loop}"]
    assert _linted_ok(named.stdout)


def test_a_path_that_does_not_exist(run_cli, write):
    write("ok.py", CALL)
    result = run_cli("ok.py", "missing.py")
    assert result.exit_code == 1  # ruff: E902, exit 1
    assert _unchecked(result) == ["missing.py: no such file or directory"]


@pytest.mark.parametrize("args", [(), ("--fix", "--unsafe-fixes"), ("--select", "ALL")])
def test_an_empty_file(run_cli, write, args):
    path = write("empty.py", "")
    result = run_cli("empty.py", *args)
    assert (result.exit_code, result.stderr) == (0, "")
    assert path.read_bytes() == b""
    assert FileLinter().lint(str(path), b"", settings_for(["ALL"]), gate=False).problems == []


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        (
            "pyproject.toml",
            "[tool.ckptlint\nselect = ['CKP001']\n",
            "invalid TOML: Expected ']' at the end of a table declaration (at line 1, column 15)",
        ),
        ("pyproject.toml", "[tool.ckptlint]\nselct = ['CKP001']\n", "unknown key `tool.ckptlint.selct` (known keys: "),
        ("ckptlint.toml", "select = ['CKP0X1']\n", "`select`: unknown rule selector `CKP0X1`"),
        (
            ".ckptlint.toml",
            "[per-file-ignores]\n'x.py' = ['NOPE']\n",
            "`per-file-ignores` ('x.py'): unknown rule selector `NOPE`",
        ),
        (".ckptlint.toml", "unsafe-fixes = 'yes'\n", "`unsafe-fixes` must be true or false"),
    ],
    ids=["invalid-toml", "unknown-key", "unknown-code", "unknown-code-per-file", "wrong-type"],
)
def test_a_bad_configuration(run_cli, write, tmp_path, name, content, message):
    write("ok.py", CALL)
    config = write(name, content)
    result = run_cli(".")
    assert result.exit_code == 2
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: {config}: {message}")


def test_missing_path_is_reported_and_the_others_are_still_linted(run_cli, write) -> None:
    write("good.py", IMPORT + "checkpoint(f, x)\n")
    result = run_cli("--isolated", "--no-cache", "good.py", "missing.py")
    assert result.exit_code == 1  # ruff: E902, exit 1
    assert result.stderr == ""
    assert result.stdout.splitlines()[:2] == [
        result.stdout.splitlines()[0],
        "missing.py:1:1: CKP902 no such file or directory",
    ]
    assert result.stdout.startswith("good.py:2:1: CKP001 ")


def test_output_file_that_cannot_be_written_is_a_clean_error(run_cli, write, tmp_path) -> None:
    write("good.py", IMPORT + "checkpoint(f, x, use_reentrant=False)\n")
    (tmp_path / "folder").mkdir()
    result = run_cli("--isolated", "--no-cache", "-o", "folder", "good.py")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: folder: cannot write the report: ")
    assert "Traceback" not in result.stderr

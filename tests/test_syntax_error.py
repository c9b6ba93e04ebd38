"""A file that does not parse is reported as CKP999 at the error's position; the other files
are still linted and the run exits 1."""

from __future__ import annotations

import json

import pytest

IMPORT = "from torch.utils.checkpoint import checkpoint\n"
GOOD = IMPORT + "y = checkpoint(f, x)\n"


@pytest.mark.parametrize(
    ("broken", "position", "message"),
    [
        (IMPORT + "y = checkpoint(f, x)\ndef f(:\n    pass\n", (3, 7), "Syntax error: invalid syntax"),
        (IMPORT + "x = (1,\ncheckpoint(f)\n", (2, 5), "Syntax error: '(' was never closed"),
        (
            IMPORT + "def f():\n\treturn checkpoint(f)\n        return 2\n",
            (4, 1),
            "Syntax error: inconsistent use of tabs and spaces in indentation",
        ),
        (
            IMPORT + 'y = checkpoint(f, x)\ns = "abc\n',
            (3, 5),
            "Syntax error: unterminated string literal (detected at line 3)",
        ),
    ],
    ids=["parser", "unclosed-paren", "tabs", "tokenizer"],
)
def test_syntax_error_reported_and_run_goes_on(run_cli, write, broken: str, position, message: str) -> None:
    write("broken.py", broken)
    write("ok.py", GOOD)
    result = run_cli("--isolated", "--output-format", "json", ".")
    assert result.exit_code == 1
    records = json.loads(result.stdout)
    assert [(r["code"], r["filename"].rsplit("/", 1)[-1]) for r in records] == [
        ("CKP999", "broken.py"),
        ("CKP001", "ok.py"),
    ]
    error = records[0]
    assert (error["location"]["row"], error["location"]["column"]) == position
    assert error["message"] == message
    assert error["name"] == "syntax-error"
    assert error["fix"] is None


def test_syntax_error_concise_and_exit_code(run_cli, write) -> None:
    write("broken.py", IMPORT + "x = (1,\ncheckpoint(f)\n")
    result = run_cli("--isolated", "broken.py")
    assert result.exit_code == 1
    assert result.stdout == "broken.py:2:5: CKP999 Syntax error: '(' was never closed\nFound 1 error.\n"


def test_syntax_error_cannot_be_ignored(run_cli, write) -> None:
    # as ruff's syntax errors: an unchecked file is never reported as clean
    write("broken.py", IMPORT + "x = (1,\ncheckpoint(f)\n")
    result = run_cli("--isolated", "--ignore", "CKP999", "--select", "CKP001", "broken.py")
    assert result.exit_code == 1
    assert [line.split(" ")[1] for line in result.stdout.splitlines()[:1]] == ["CKP999"]


def test_fix_leaves_a_broken_file_alone(run_cli, write) -> None:
    text = IMPORT + "y = checkpoint(f, x)\nx = (1,\n"
    path = write("broken.py", text)
    result = run_cli("--isolated", "--fix", "--unsafe-fixes", "broken.py")
    assert result.exit_code == 1
    assert path.read_text() == text

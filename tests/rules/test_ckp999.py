"""CKP999 syntax-error: a file that does not parse is reported at the error's position; the other
files are still linted and the run exits 1. Valid Python that libcst cannot parse is CKP902,
not a syntax error."""

from __future__ import annotations

import json
import re
from pathlib import Path

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


def test_valid_python_libcst_cannot_parse_is_checked(run_cli, write) -> None:
    # CPython parses 5,000 implicitly concatenated string literals; libcst 1.9.0 stops near
    # 4,000: on ast the file is checked, and it is no syntax error (CKP999)
    body = IMPORT + "y = checkpoint(f, x)\nx = " + " ".join(['"a"'] * 5000) + "\n"
    compile(body, "m.py", "exec")
    write("m.py", body)
    result = run_cli("--isolated", "--no-cache", "m.py")
    assert result.exit_code == 1
    assert "CKP999" not in result.stdout
    assert "CKP902" not in result.stdout
    assert result.stdout.startswith("m.py:2:5: CKP001 ")


# ------------------------------------------------------------ code the compiler rejects
COMPILE_ERRORS = [
    pytest.param(
        IMPORT + "\n\ndef run(f, x, x):\n    return checkpoint(f, x)\n",
        (4, 15),
        "duplicate argument 'x' in function definition",
        5,
        id="repeated-parameter",
    ),
    pytest.param(
        IMPORT + "nonlocal x\ny = checkpoint(f, x)\n", (2, 1), "nonlocal declaration not allowed at module level", 3, id="nonlocal"
    ),
    pytest.param(
        IMPORT + "if x:\n    return checkpoint(f, x)\n", (3, 5), "'return' outside function", 3, id="return-outside-function"
    ),
    pytest.param(IMPORT + "y = checkpoint(f, x)\nbreak\n", (3, 1), "'break' outside loop", 2, id="break-outside-loop"),
    # CPython 3.11 gives the column in UTF-8 bytes (16); the character column is 12, as ruff says
    pytest.param(IMPORT + "é = 'ééé'; return checkpoint(f, é)\n", (2, 12), "'return' outside function", 2, id="non-ascii-line"),
]


@pytest.mark.parametrize(("source", "position", "message", "ckp001_row"), COMPILE_ERRORS)
def test_code_the_compiler_rejects_is_ckp999_and_the_other_rules_still_run(
    run_cli, write, source: str, position, message: str, ckp001_row: int
) -> None:
    write("m.py", source)
    result = run_cli("--isolated", "--no-cache", "--output-format", "json", "m.py")
    assert result.exit_code == 1
    records = json.loads(result.stdout)
    found = [(r["code"], r["location"]["row"], r["location"]["column"]) for r in records]
    assert ("CKP999", *position) in found
    assert [r["message"] for r in records if r["code"] == "CKP999"] == [f"Syntax error: {message}"]
    assert [r["location"]["row"] for r in records if r["code"] == "CKP001"] == [ckp001_row]
    with pytest.raises(SyntaxError):
        compile(source, "m.py", "exec")


def test_a_compile_error_is_reported_whatever_the_selection_and_noqa(run_cli, write) -> None:
    write("m.py", IMPORT + "def run(f, x, x):  # noqa\n    return checkpoint(f, x, use_reentrant=False)\n")
    result = run_cli("--isolated", "--no-cache", "--select", "CKP001", "--ignore", "CKP999", "m.py")
    assert result.exit_code == 1
    assert result.stdout.startswith("m.py:2:15: CKP999 Syntax error: duplicate argument 'x' in function definition\n")


def test_a_file_the_gate_turns_away_is_not_compiled(run_cli, write, monkeypatch) -> None:
    from ckptlint.lint import compile_errors

    compiled: list[str] = []
    original = compile_errors.compile_error_diagnostic

    def recording(source, **kwargs):
        compiled.append(source.path)
        return original(source, **kwargs)

    monkeypatch.setattr(compile_errors, "compile_error_diagnostic", recording)
    write("plain.py", "def f(a, a):\n    return a\n")  # no checkpoint API: never parsed
    write("m.py", IMPORT + "def f(a, a):\n    return checkpoint(a, use_reentrant=False)\n")
    result = run_cli("--isolated", "--no-cache", "-j", "1", "plain.py", "m.py")
    assert result.stdout.splitlines()[:1] == ["m.py:2:10: CKP999 Syntax error: duplicate argument 'a' in function definition"]
    assert "plain.py" not in result.stdout
    assert [Path(p).name for p in compiled] == ["m.py"]


def test_fix_still_applies_to_a_file_the_compiler_rejects(run_cli, write) -> None:
    # the compile error is the file's own, not the fix's: the fix is written, CKP999 stays
    path = write("m.py", IMPORT + "y = checkpoint(f, x)\nbreak\n")
    result = run_cli("--isolated", "--no-cache", "--fix", "--unsafe-fixes", "m.py")
    assert path.read_text() == IMPORT + "y = checkpoint(f, x, use_reentrant=False)\nbreak\n"
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0] == "m.py:3:1: CKP999 Syntax error: 'break' outside loop"
    assert "internal error" not in result.stderr


def test_top_level_await_in_a_notebook_is_not_a_compile_error(run_cli, write) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(IMPORT), nbformat.v4.new_code_cell("await setup()\ny = checkpoint(f, x)\n")]
    write("a.ipynb", nbformat.writes(nb))
    write("m.py", IMPORT + "await setup()\ny = checkpoint(f, x)\n")
    result = run_cli("--isolated", "--no-cache", "a.ipynb", "m.py")
    codes = [(line.split(":", 1)[0], re.search(r" (CKP\d+) ", line).group(1)) for line in result.stdout.splitlines()[:-2]]
    assert codes == [("a.ipynb", "CKP001"), ("m.py", "CKP999"), ("m.py", "CKP001")]


@pytest.mark.parametrize(
    "text",
    [
        "def f(a, a):\n    return a\n",
        "f(a=1, a=2)\n",
        "s = 'ééé'; break\n",
        "def f():\n    x = 1\n    global x\n",
        "x = [await y for y in z]\n",
        "match x:\n    case [a, a]: pass\n",
        "def f():\n    yield 1\n    return 2\n",
    ],
)
def test_the_tree_compiles_as_the_text_does(text: str) -> None:
    import ast

    from ckptlint.lint import compile_errors
    from ckptlint.text.source import SourceFile

    tree = ast.parse(text)
    dumped = ast.dump(tree, include_attributes=True)
    for top_level_await in (False, True):
        compile_errors._FAILURES.clear()
        of_text = compile_errors.compile_error_diagnostic(SourceFile("m.py", text), top_level_await=top_level_await)
        compile_errors._FAILURES.clear()
        of_tree = compile_errors.compile_error_diagnostic(SourceFile("m.py", text), top_level_await=top_level_await, tree=tree)
        assert of_tree == of_text
    assert ast.dump(tree, include_attributes=True) == dumped

"""Files with CRLF or mixed line endings, a UTF-8 byte-order mark, a latin-1 coding cookie or
no final newline: findings at the right positions, and ``--fix`` changes no byte but the
inserted text."""

from __future__ import annotations

import json

import pytest

IMPORT = b"from torch.utils.checkpoint import checkpoint"


def locations(run_cli, name: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    result = run_cli("--output-format", "json", "--isolated", name)
    assert result.exit_code == 1, result.stderr
    return [
        ((r["location"]["row"], r["location"]["column"]), (r["end_location"]["row"], r["end_location"]["column"]))
        for r in json.loads(result.stdout)
    ]


def fix(run_cli, name: str) -> None:
    result = run_cli("--fix", "--unsafe-fixes", "--isolated", name)
    assert result.exit_code == 0, (result.stdout, result.stderr)


CASES = [
    pytest.param(
        IMPORT + b"\r\ny = checkpoint(\r\n    f,\r\n    x\r\n)\r\nz = checkpoint(f, x)\r\n",
        [((2, 5), (5, 2)), ((6, 5), (6, 21))],
        IMPORT + b"\r\ny = checkpoint(\r\n    f,\r\n    x,\r\n    use_reentrant=False\r\n)\r\n"
        b"z = checkpoint(f, x, use_reentrant=False)\r\n",
        id="crlf",
    ),
    pytest.param(
        IMPORT + b"\r\ny = checkpoint(f, x)\nz = checkpoint(\n    f,\n    x,\r\n)\n",
        [((2, 5), (2, 21)), ((3, 5), (6, 2))],
        # the inserted line uses the file's dominant line ending (\n); every other byte is kept
        IMPORT + b"\r\ny = checkpoint(f, x, use_reentrant=False)\nz = checkpoint(\n    f,\n    x,\n"
        b"    use_reentrant=False,\r\n)\n",
        id="mixed-line-endings",
    ),
    pytest.param(
        b"\xef\xbb\xbf" + IMPORT + b'\ny = "\xc3\xa9\xc3\xa9"; z = checkpoint(f, x)\n',
        [((2, 15), (2, 31))],
        b"\xef\xbb\xbf" + IMPORT + b'\ny = "\xc3\xa9\xc3\xa9"; z = checkpoint(f, x, use_reentrant=False)\n',
        id="utf8-bom-import-on-first-line",
    ),
    pytest.param(
        b"\xef\xbb\xbfimport torch\n" + IMPORT + b'\ny = "\xc3\xa9"; z = checkpoint(f, x)\n',
        [((3, 14), (3, 30))],
        b"\xef\xbb\xbfimport torch\n" + IMPORT + b'\ny = "\xc3\xa9"; z = checkpoint(f, x, use_reentrant=False)\n',
        id="utf8-bom",
    ),
    pytest.param(
        b"# -*- coding: latin-1 -*-\n" + IMPORT + b'\ny = "\xe9\xe9"; z = checkpoint(f, x)\n',
        [((3, 15), (3, 31))],
        b"# -*- coding: latin-1 -*-\n" + IMPORT + b'\ny = "\xe9\xe9"; z = checkpoint(f, x, use_reentrant=False)\n',
        id="latin-1-cookie",
    ),
    pytest.param(
        IMPORT + b"\nz = checkpoint(f, x)",
        [((2, 5), (2, 21))],
        IMPORT + b"\nz = checkpoint(f, x, use_reentrant=False)",
        id="no-final-newline",
    ),
    pytest.param(
        IMPORT + b"\r\nz = checkpoint(\r\n    f,\r\n    x,\r\n)",
        [((2, 5), (5, 2))],
        IMPORT + b"\r\nz = checkpoint(\r\n    f,\r\n    x,\r\n    use_reentrant=False,\r\n)",
        id="crlf-no-final-newline",
    ),
]


@pytest.mark.parametrize(("raw", "expected", "after"), CASES)
def test_positions_and_fixed_bytes(run_cli, write, raw: bytes, expected, after: bytes) -> None:
    path = write("m.py", raw)
    assert locations(run_cli, "m.py") == expected
    fix(run_cli, "m.py")
    assert path.read_bytes() == after
    # a second --fix changes nothing
    fix(run_cli, "m.py")
    assert path.read_bytes() == after


def test_file_permissions_are_kept(run_cli, write) -> None:
    path = write("m.py", IMPORT + b"\nz = checkpoint(f, x)\n")
    path.chmod(0o640)
    fix(run_cli, "m.py")
    assert path.stat().st_mode & 0o777 == 0o640
    assert not [p.name for p in path.parent.iterdir() if p.name != "m.py"]  # no temporary file left


def test_undecodable_file_is_a_problem_not_a_crash(run_cli, write) -> None:
    write("bad.py", IMPORT + b"\nz = checkpoint(f, x)  # \xff\xfe\n")
    write("good.py", IMPORT + b"\nz = checkpoint(f, x)\n")
    result = run_cli("--isolated", ".")
    assert result.exit_code == 1
    assert "good.py:2:5: CKP001" in result.stdout
    assert "bad.py:1:1: CKP902 is not valid UTF-8 (byte 0xff at offset 70) and declares no encoding" in result.stdout


def test_gate_sees_an_import_on_the_first_line_after_a_bom() -> None:
    from ckptlint.lint.gate import may_have_findings

    body = IMPORT + b"\nz = checkpoint(f, x)\n"
    assert may_have_findings(body)
    assert may_have_findings(b"\xef\xbb\xbf" + body)
    assert not may_have_findings(b"\xef\xbb\xbf" + IMPORT + b"\nz = 1\n")  # a dead import

"""Rows are counted as Python's tokenizer and the Language Server Protocol count them: a line
ends at ``\\n``, ``\\r\\n`` or ``\\r`` only. A form feed (``\\x0c``, Emacs page breaks) or
U+2028 inside a line is not a line break, although ``str.splitlines`` treats it as one."""

from __future__ import annotations

from pathlib import Path

import pytest

from ckptlint.text.add_noqa import add_noqa
from ckptlint.text.noqa import noqa_line_map, parse_noqa
from ckptlint.text.source import SourceFile, split_lines

# a line-breaking character of str.splitlines on a line above, then a finding on the
# continuation of a backslash line: the noqa of the finding's own line applies
BREAKS = ["\x0c", "\u2028", "\x1c", "\x85", "\u2029", "\x0b"]


def _source(brk: str, noqa: str = "  # noqa: CKP001") -> str:
    return (
        "from torch.utils.checkpoint import checkpoint\n"
        f"# page {brk} two\n"
        "\n"
        "def forward(block, x):\n"
        "    y = \\\n"
        f"        checkpoint(block, x){noqa}\n"
        "    return y\n"
    )


def test_split_lines_breaks_at_newlines_only() -> None:
    assert split_lines("a\x0cb\u2028c\r\nd\re\n") == ["a\x0cb\u2028c", "d", "e"]
    assert split_lines("a\r\nb", keepends=True) == ["a\r\n", "b"]
    assert split_lines("") == [] and split_lines("\n\n") == ["", ""]


@pytest.mark.parametrize("brk", BREAKS)
def test_noqa_after_a_form_feed_line_suppresses(brk: str) -> None:
    source = SourceFile("m.py", _source(brk))
    index = parse_noqa(source)
    assert sorted(index.by_row) == [6]
    assert noqa_line_map(source.text) == {5: 6}  # the backslash line maps to its continuation


@pytest.mark.parametrize("brk", ["\x0c", "\u2028"])
def test_cli_honours_the_noqa_and_offers_no_ckp901(run_cli, tmp_path: Path, brk: str) -> None:
    path = tmp_path / "m.py"
    path.write_text(_source(brk), encoding="utf-8")
    result = run_cli("--no-cache", "--extend-select", "CKP901", "--diff", str(path))
    assert result.stdout == "" and result.exit_code == 0, result.stdout
    checked = run_cli("--no-cache", "--extend-select", "CKP901", str(path))
    assert checked.exit_code == 0 and checked.stdout == "All checks passed!\n"


@pytest.mark.parametrize("brk", ["\x0c", "\u2028"])
def test_add_noqa_writes_the_finding_line(run_cli, tmp_path: Path, brk: str) -> None:
    path = tmp_path / "m.py"
    path.write_text(_source(brk, noqa=""), encoding="utf-8")
    result = run_cli("--no-cache", "--add-noqa", str(path))
    assert result.exit_code == 0
    assert path.read_text(encoding="utf-8") == _source(brk)


def test_add_noqa_rows_with_a_form_feed_inside_a_line() -> None:
    text = "a = 1\x0c  # page\nb = 2\n"
    edit = add_noqa(SourceFile("m.py", text), [_finding(2)])
    assert edit.text == "a = 1\x0c  # page\nb = 2  # noqa: CKP001\n"


def test_noqa_in_a_file_with_carriage_return_endings() -> None:
    text = "import os\rx = 1  # noqa: CKP001\ry = 2\r"
    assert sorted(parse_noqa(SourceFile("m.py", text)).by_row) == [2]


def test_diff_and_full_output_count_rows_as_the_editor(run_cli, tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(
        "from torch.utils.checkpoint import checkpoint\n\x0c\n\ndef forward(block, x):\n    return checkpoint(block, x)\n"
    )
    diff = run_cli("--no-cache", "--diff", "--unsafe-fixes", str(path)).stdout
    assert "@@ -2,4 +2,4 @@" in diff, diff
    full = run_cli("--no-cache", "--output-format", "full", "--unsafe-fixes", str(path)).stdout
    assert "5 + " in full and "    return checkpoint(block, x, use_reentrant=False)" in full, full


def _finding(row: int):
    from ckptlint.text.diagnostics import Diagnostic

    return Diagnostic("CKP001", "m", "m.py", (row, 1), (row, 2))

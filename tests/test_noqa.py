"""``# noqa`` suppression comments (ruff's syntax) and the file-level ``# ckptlint: noqa``."""

from __future__ import annotations

from textwrap import dedent

import pytest

from ckptlint.api import lint_source
from ckptlint.testing import located

IMPORT = "from torch.utils.checkpoint import checkpoint\n"


@pytest.mark.parametrize(
    "comment",
    [
        "# noqa: CKP001",
        "# noqa",
        "# noqa: E501, CKP001",
        "# noqa:CKP001,E501",
        "# NOQA: ckp001",
        "# type: ignore  # noqa: CKP001",
    ],
)
def test_line_noqa_suppresses(comment: str) -> None:
    assert located(IMPORT + dedent(f"y = checkpoint(f, x)  {comment}\n"), "CKP001") == []


@pytest.mark.parametrize("comment", ["# noqa: E501", "# noqa: CKP002", "# noqa: CKP0011", "# no qa"])
def test_noqa_for_another_code_does_not_suppress(comment: str) -> None:
    assert located(IMPORT + dedent(f"y = checkpoint(f, x)  {comment}\n"), "CKP001") == [(2, "CKP001")]


def test_noqa_inside_a_string_does_not_count() -> None:
    assert located(IMPORT + dedent('y = checkpoint(f, x); s = "# noqa"\n'), "CKP001") == [(2, "CKP001")]
    assert located(IMPORT + dedent('y = checkpoint(f, "# noqa: CKP001")\n'), "CKP001") == [(2, "CKP001")]


def test_noqa_on_another_line_does_not_count() -> None:
    assert located(IMPORT + dedent("# noqa: CKP001\ny = checkpoint(f, x)\n"), "CKP001") == [(3, "CKP001")]


def test_multi_line_call_noqa_on_its_first_line() -> None:
    source = """\
        y = checkpoint(  # noqa: CKP001
            f,
            x,
        )
        z = checkpoint(
            f,
            x,  # noqa: CKP001
        )
        """
    # the diagnostic's noqa line is the first line of the call
    assert located(IMPORT + dedent(source), "CKP001") == [(6, "CKP001")]


@pytest.mark.parametrize("directive", ["# ckptlint: noqa", "# ckptlint: noqa: CKP001", "#ckptlint:noqa:CKP001,CKP999"])
def test_file_level_noqa(directive: str) -> None:
    assert located(IMPORT + dedent(f"{directive}\ny = checkpoint(f, x)\nz = checkpoint(g, y)\n"), "CKP001") == []


def test_file_level_noqa_for_other_codes_keeps_ckp001() -> None:
    assert located(IMPORT + dedent("# ckptlint: noqa: CKP999\ny = checkpoint(f, x)\n"), "CKP001") == [(3, "CKP001")]


def test_file_level_noqa_at_the_end_of_the_file() -> None:
    assert located(IMPORT + dedent("y = checkpoint(f, x)\n\n# ckptlint: noqa\n"), "CKP001") == []


def test_noqa_through_the_cli(run_cli, write) -> None:
    write("m.py", IMPORT + "a = checkpoint(f, x)  # noqa: CKP001\nb = checkpoint(f, x)\n")
    result = run_cli("m.py")
    assert result.exit_code == 1
    assert result.stdout.startswith("m.py:3:5: CKP001 ")
    assert "m.py:2:" not in result.stdout


def test_fix_does_not_touch_suppressed_findings(run_cli, write) -> None:
    text = IMPORT + "a = checkpoint(f, x)  # noqa: CKP001\n"
    path = write("m.py", text)
    result = run_cli("--fix", "--unsafe-fixes", "m.py")
    assert (result.exit_code, result.stdout) == (0, "All checks passed!\n")
    assert path.read_text() == text


def test_file_level_directive_must_stand_on_its_own_line() -> None:

    trailing = "x = 1  # ckptlint: noqa\nfrom torch.utils.checkpoint import checkpoint\ncheckpoint(f, x)\n"
    assert [d.code for d in lint_source(trailing)] == ["CKP001"]
    own_line = "# ckptlint: noqa\nfrom torch.utils.checkpoint import checkpoint\ncheckpoint(f, x)\n"
    assert lint_source(own_line) == []


def test_a_valid_directive_after_an_invalid_one_in_the_same_comment_counts(run_cli, write) -> None:
    # `# noqa:` without codes suppresses nothing and warns (ruff); what --add-noqa appends
    # after it (`# noqa:  # noqa: CKP001`) suppresses, so a second --add-noqa adds nothing
    assert located(IMPORT + "y = checkpoint(f, x)  # noqa:  # noqa: CKP001\n", "CKP001") == []
    assert located(IMPORT + "y = checkpoint(f, x)  # noqa:\n", "CKP001") == [(2, "CKP001")]
    path = write("m.py", IMPORT + "y = checkpoint(f, x)  # noqa:\n")
    first = run_cli("--isolated", "--no-cache", "--add-noqa", "m.py")
    assert "Added 1 noqa directive." in first.stderr and first.stderr.count("invalid `# noqa` directive") == 1
    second = run_cli("--isolated", "--no-cache", "--add-noqa", "m.py")
    assert "Added" not in second.stderr and second.stderr.count("invalid `# noqa` directive") == 1
    assert path.read_text().endswith("y = checkpoint(f, x)  # noqa:  # noqa: CKP001\n")

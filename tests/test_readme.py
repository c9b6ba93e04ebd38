"""The README's rule table and test command stay true to the code and to .ci/run, and
``python -m ckptlint.docs`` writes the table."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from ckptlint.docs import RULES_END, RULES_START, main, readme_with_rule_table, rule_table_markdown
from ckptlint.registry import RULES

ROOT = Path(__file__).resolve().parent.parent


def test_rule_table_matches_registry() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = re.search(r"<!-- rules:start -->\n(.*?)\n<!-- rules:end -->", readme, re.DOTALL)
    assert table is not None
    assert table.group(1) == rule_table_markdown()
    assert readme_with_rule_table(readme) == readme


@pytest.mark.slow
def test_docs_command_checks_the_real_readme() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ckptlint.docs", "--check", "README.md"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "README.md: the rule table is current\n", "")


def _stale_readme(newline: str) -> str:
    lines = ["# Title", "", "Text before.", RULES_START, "| old | table |", "| --- | --- |", RULES_END, "", "After.", ""]
    return newline.join(lines)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_docs_write_rewrites_only_the_block_between_the_markers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], newline: str
) -> None:
    readme = tmp_path / "README.md"
    readme.write_bytes(_stale_readme(newline).encode())
    assert main(["--check", str(readme)]) == 1
    assert readme.read_bytes() == _stale_readme(newline).encode()

    assert main(["--write", str(readme)]) == 0
    written = readme.read_bytes().decode()
    table = newline.join(rule_table_markdown().split("\n"))
    expected = newline.join(["# Title", "", "Text before.", RULES_START, table, RULES_END, "", "After.", ""])
    assert written == expected
    assert main(["--check", str(readme)]) == 0
    assert main(["--write", str(readme)]) == 0
    assert readme.read_bytes().decode() == expected
    out = capsys.readouterr().out
    assert f"{readme}: rule table written ({len(RULES)} rules)\n" in out


def test_docs_command_refuses_a_readme_without_markers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# Title\n{RULES_END}\n{RULES_START}\n", encoding="utf-8")
    assert main(["--write", str(readme)]) == 2
    assert readme.read_text(encoding="utf-8") == f"# Title\n{RULES_END}\n{RULES_START}\n"
    assert "expected one <!-- rules:start --> line" in capsys.readouterr().err


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = [line for block in re.findall(r"```bash\n(.*?)\n```", readme, re.DOTALL) for line in block.splitlines()]
    test_command = next(line for line in lines if "pytest" in line)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command.strip() in ci.splitlines()
    assert "torch==2.13.0" in test_command

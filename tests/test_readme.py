"""The README's rule table and test command stay true to the code and to .ci/run."""

from __future__ import annotations

import re
from pathlib import Path

from ckptlint.docs import rule_table_markdown

ROOT = Path(__file__).resolve().parent.parent


def test_rule_table_matches_registry() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = re.search(r"<!-- rules:start -->\n(.*?)\n<!-- rules:end -->", readme, re.DOTALL)
    assert table is not None
    assert table.group(1) == rule_table_markdown()


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"```bash\n(.*?)\n```", readme, re.DOTALL)
    test_command = next(c for c in commands if "pytest" in c)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command.strip() in ci.splitlines()
    assert "torch==2.13.0" in test_command

"""Every rule's examples run: the ``VALID``/``INVALID`` programs next to each rule class, and
the ``bad``/``good``/``fixed`` code blocks of its ``rules/CKPxxx.md`` page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ckptlint.docs import rule_doc_path
from ckptlint.rules import ALL_RULES, Invalid, Rule
from ckptlint.testing import (
    UNCHECKED,
    assert_clean,
    assert_lints,
    check_fix_availability,
    check_invalid,
    check_valid,
    example_select,
    example_versions,
    examples,
)

RULES_DIR = Path(__file__).resolve().parent.parent / "rules"
_BLOCK = re.compile(r"^```python (?P<tag>bad|good|fixed)\n(?P<code>.*?)^```", re.MULTILINE | re.DOTALL)


def _blocks(code: str) -> dict[str, list[str]]:
    text = (RULES_DIR / f"{code}.md").read_text(encoding="utf-8")
    found: dict[str, list[str]] = {}
    for match in _BLOCK.finditer(text):
        found.setdefault(match.group("tag"), []).append(match.group("code"))
    return found


def _select(code: str) -> list[str]:
    return example_select(ALL_RULES[code])


@pytest.mark.parametrize("code", sorted(ALL_RULES))
def test_every_rule_has_a_page_with_examples(code: str) -> None:
    assert rule_doc_path(code) is not None, f"rules/{code}.md is missing"
    text = (RULES_DIR / f"{code}.md").read_text(encoding="utf-8")
    rule = ALL_RULES[code]
    assert text.startswith(f"# {rule.name} ({code})\n")
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead"):
        assert heading in text, f"{code}.md lacks {heading!r}"
    blocks = _blocks(code)
    assert blocks.get("bad") and blocks.get("good"), f"{code}.md needs ```python bad``` and ```python good``` blocks"


@pytest.mark.parametrize("code", sorted(ALL_RULES))
def test_page_examples(code: str) -> None:
    """A page's ``bad`` blocks are reported (the first ``fixed`` block is the first ``bad``
    block after ``--fix --unsafe-fixes``, and so on); its ``good`` blocks are not."""
    blocks = _blocks(code)
    select = _select(code)
    versions = example_versions(ALL_RULES[code])
    fixed = blocks.get("fixed", [])
    for index, bad in enumerate(blocks.get("bad", [])):
        expected = fixed[index] if index < len(fixed) else UNCHECKED
        assert_lints(bad, code, count=None, select=select, fixed=expected, versions=versions)
    for good in blocks.get("good", []):
        assert_clean(good, code, select=select, versions=versions)


@pytest.mark.parametrize(
    ("rule", "example"), [pytest.param(r, e, id=i) for r, e, i in examples(list(ALL_RULES.values()), "VALID")]
)
def test_valid_examples(rule: type[Rule], example: str) -> None:
    check_valid(rule, example)


@pytest.mark.parametrize(
    ("rule", "example"), [pytest.param(r, e, id=i) for r, e, i in examples(list(ALL_RULES.values()), "INVALID")]
)
def test_invalid_examples(rule: type[Rule], example: Invalid) -> None:
    check_invalid(rule, example)


@pytest.mark.parametrize("code", sorted(ALL_RULES))
def test_fix_availability_matches_the_examples(code: str) -> None:
    check_fix_availability(ALL_RULES[code])


def test_rule_codes_data_matches_the_registry() -> None:
    from ckptlint.rule_codes import OFF_BY_DEFAULT, RULE_CODES

    assert RULE_CODES == tuple(ALL_RULES)
    assert OFF_BY_DEFAULT == {c for c, r in ALL_RULES.items() if not r.default_enabled}

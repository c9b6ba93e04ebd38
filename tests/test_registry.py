"""The rule registry: metadata as data, importable without libcst, and the rule classes take
theirs from it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ckptlint.registry import (
    OFF_BY_DEFAULT,
    REGION_RULES,
    RULE_CODES,
    RULES,
    FixAvailability,
    Severity,
    rule_info,
)
from ckptlint.rules import ALL_RULES


@pytest.mark.slow
def test_registry_imports_without_libcst() -> None:
    code = (
        "import sys\n"
        "import ckptlint.registry, ckptlint.rule_codes, ckptlint.docs\n"
        "import ckptlint.output.json_format, ckptlint.output.sarif, ckptlint.output.statistics\n"
        "assert 'libcst' not in sys.modules, sorted(m for m in sys.modules if 'libcst' in m)[:3]\n"
        "assert 'ckptlint.rules' not in sys.modules\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ok\n"


def test_rule_classes_take_their_metadata_from_the_registry() -> None:
    assert tuple(ALL_RULES) == RULE_CODES == tuple(sorted(RULES))
    for code, rule in ALL_RULES.items():
        info = RULES[code]
        assert (rule.code, rule.name, rule.summary) == (info.code, info.name, info.summary)
        assert rule.severity is info.severity and isinstance(rule.severity, Severity)
        assert rule.fix_availability is info.fix_availability and isinstance(rule.fix_availability, FixAvailability)
        assert rule.default_enabled is info.default_enabled


def test_derived_sets() -> None:
    assert OFF_BY_DEFAULT == {"CKP005", "CKP901"}
    assert REGION_RULES == {c for c in RULE_CODES if c[:4] in ("CKP1", "CKP2")}
    assert rule_info("ckp001") is RULES["CKP001"]
    assert rule_info("CKP000") is None

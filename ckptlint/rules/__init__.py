"""The rules, ordered by code: each ``ckptlint/rules/ckpNNN_<name>.py`` module defines one
:class:`~ckptlint.rules.base.Rule`, found by :func:`~ckptlint.rules.discovery.discover_rules`.

Adding a rule: its row in :mod:`ckptlint.registry`, the module ``ckpNNN_<name>.py`` here with
its examples, and the page ``rules/CKPNNN.md`` (docs/development.md, "Adding a rule").
"""

from __future__ import annotations

from ckptlint.registry import IO_ERROR, RULE_CODES, SYNTAX_ERROR, UNUSED_NOQA
from ckptlint.rules.base import FixAvailability, Invalid, Rule, RuleContext, Severity
from ckptlint.rules.discovery import discover_rules

__all__ = [
    "ALL_RULES",
    "IO_ERROR",
    "SYNTAX_ERROR",
    "UNUSED_NOQA",
    "FixAvailability",
    "Invalid",
    "Rule",
    "RuleContext",
    "Severity",
    "rule_by_code",
]

#: code -> rule class, for every code of the registry, in the registry's order (by code).
ALL_RULES: dict[str, type[Rule]] = discover_rules(__path__, __name__, RULE_CODES)


def rule_by_code(code: str) -> type[Rule] | None:
    """The rule class for ``code`` (case-insensitive), or ``None``."""
    return ALL_RULES.get(code.upper())

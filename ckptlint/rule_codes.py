"""The rule codes as plain data, for the parts that run before (or without) any parsing.

Selecting rules and reading cached results need only the codes; importing the rules
themselves pulls in libcst (about 0.35 s), which a run whose files are all cached or gated
out never needs. ``tests/test_rule_specs.py`` checks these against the rule registry.
"""

from __future__ import annotations

__all__ = ["IO_ERROR", "OFF_BY_DEFAULT", "REGION_RULES", "RULE_CODES", "SYNTAX_ERROR", "UNUSED_NOQA"]

#: Every rule code, sorted (the registry in :mod:`ckptlint.rules` has the rules themselves).
RULE_CODES: tuple[str, ...] = (
    "CKP001",
    "CKP002",
    "CKP003",
    "CKP101",
    "CKP102",
    "CKP103",
    "CKP104",
    "CKP105",
    "CKP201",
    "CKP202",
    "CKP203",
    "CKP301",
    "CKP302",
    "CKP303",
    "CKP304",
    "CKP901",
    "CKP902",
    "CKP999",
)

#: Rules a default selection leaves off (like ruff's RUF100, unused-noqa is opt-in).
OFF_BY_DEFAULT: frozenset[str] = frozenset({"CKP901"})

#: Rules that report in code a checkpoint recomputes (the RNG and outer-state rules, and the
#: home-made recompute implementations): one line of shared code can be reached by many
#: sites, and the run reports it once (``lint.results.RunResult.diagnostics``).
REGION_RULES: frozenset[str] = frozenset(code for code in RULE_CODES if code[:4] in ("CKP1", "CKP2"))

SYNTAX_ERROR = "CKP999"
IO_ERROR = "CKP902"
UNUSED_NOQA = "CKP901"

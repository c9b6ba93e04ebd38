"""The rule codes as plain data: re-exported from :mod:`ckptlint.registry`, which holds every
rule's metadata (kept so that existing imports keep working; new code imports the registry)."""

from __future__ import annotations

from ckptlint.registry import (
    IO_ERROR,
    OFF_BY_DEFAULT,
    REGION_RULES,
    RULE_CODES,
    SYNTAX_ERROR,
    UNUSED_NOQA,
)

__all__ = ["IO_ERROR", "OFF_BY_DEFAULT", "REGION_RULES", "RULE_CODES", "SYNTAX_ERROR", "UNUSED_NOQA"]

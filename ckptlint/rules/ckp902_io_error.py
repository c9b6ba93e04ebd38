"""CKP902 io-error: a file ckptlint could not check (read, decode, parse into a tree, or write)."""

from __future__ import annotations

from ckptlint.rules.base import Rule, RuleContext


class IoError(Rule):
    """Reported by the engine and the command line (not by :meth:`check`) at 1:1 of a file that
    could not be checked, like ruff's ``E902`` (io-error)."""

    code = "CKP902"

    def check(self, ctx: RuleContext) -> None:  # pragma: no cover - reported by the engine
        return None

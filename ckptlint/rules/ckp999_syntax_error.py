"""CKP999 syntax-error: the file does not parse, so no other rule can run on it, or CPython's
compiler rejects it (:mod:`ckptlint.lint.compile_errors`; the other rules run)."""

from __future__ import annotations

from ckptlint.rules.base import Rule, RuleContext


class SyntaxErrorRule(Rule):
    """Reported by the engine (not by :meth:`check`) at the position of the parse or compile
    error."""

    code = "CKP999"

    def check(self, ctx: RuleContext) -> None:  # pragma: no cover - reported by the engine
        return None

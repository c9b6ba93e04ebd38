"""CKP901 unused-noqa: a ``# noqa: CKPxxx`` that suppressed nothing in this run (ruff's RUF100).

The engine reports it (see :meth:`ckptlint.lint.linter.FileLinter.check`): only after every other
rule ran and noqa filtering marked the directives it used can a directive be judged. This
module holds the rule's examples; :func:`ckptlint.text.noqa.unused_noqa_diagnostics` turns
the directives of one file into diagnostics with their fixes, and
:func:`ckptlint.lint.unused_noqa.settle_unused_noqa` is the run-level step: a region rule may
report a finding in another file (``layers.py``) while linting ``model.py``, and the
``# noqa`` in ``layers.py`` that suppressed it is then used although
linting ``layers.py`` alone never needed it.
"""

from __future__ import annotations

from ckptlint.rules.base import Invalid, Rule, RuleContext

__all__ = ["UnusedNoqa"]


class UnusedNoqa(Rule):
    """Reported by the engine (not by :meth:`check`) at the ``# noqa`` directive.

    Judges only ckptlint's own codes (``CKP...``) of rules enabled for the file: a code of
    another tool (``E501``) or of a disabled rule is left alone. Not enabled by default (as
    ruff does with RUF100): select it with ``--extend-select CKP901``.
    """

    code = "CKP901"
    #: rules the examples (here and in rules/CKP901.md) need enabled besides this one: a
    #: directive is judged only for enabled rules (read by tests/test_rule_specs.py).
    EXAMPLE_SELECT = ("CKP001",)

    VALID = (
        """\
        from torch.utils.checkpoint import checkpoint
        checkpoint(f, x)  # noqa: CKP001
        """,
        """\
        x = 1  # noqa: E501
        """,
        """\
        x = 1  # noqa
        """,
    )
    INVALID = (
        Invalid(
            """\
            from torch.utils.checkpoint import checkpoint
            checkpoint(f, x, use_reentrant=False)  # noqa: CKP001
            """,
            at=(2, 40),
            message="Unused `noqa` directive (unused: `CKP001`)",
            fixed="""\
            from torch.utils.checkpoint import checkpoint
            checkpoint(f, x, use_reentrant=False)
            """,
        ),
        Invalid(
            """\
            x = 1  # noqa: E501, CKP001
            """,
            at=(1, 8),
            message="Unused `noqa` directive (unused: `CKP001`)",
            fixed="""\
            x = 1  # noqa: E501
            """,
        ),
        Invalid(
            """\
            x = 1  # noqa: CKP001 # type: ignore
            """,
            at=(1, 8),
            message="Unused `noqa` directive (unused: `CKP001`)",
            fixed="""\
            x = 1  # type: ignore
            """,
        ),
        Invalid(
            """\
            x = 1  # noqa: CKP001 kept for later
            """,
            at=(1, 8),
            message="Unused `noqa` directive (unused: `CKP001`)",
            fixed="""\
            x = 1  # kept for later
            """,
        ),
    )

    def check(self, ctx: RuleContext) -> None:  # pragma: no cover - reported by the engine
        return None

"""CKP901 unused-noqa: a ``# noqa: CKPxxx`` that suppressed nothing in this run (ruff's RUF100).

The engine reports it (see :meth:`ckptlint.engine.FileLinter.check`): only after every other
rule ran and noqa filtering marked the directives it used can a directive be judged. This
module holds the rule's metadata, :func:`unused_noqa_diagnostics`, which turns the directives
of one file into diagnostics with their fixes, and :func:`settle_unused_noqa`, the run-level
step: a region rule may report a finding in another file (``layers.py``) while linting
``model.py``, and the ``# noqa`` in ``layers.py`` that suppressed it is then used although
linting ``layers.py`` alone never needed it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ckptlint.diagnostics import Applicability, Diagnostic, Edit, Fix
from ckptlint.fixer import apply_edits
from ckptlint.noqa import NoqaDirective, NoqaIndex
from ckptlint.rules.base import Invalid, Rule, RuleContext
from ckptlint.source import SourceFile

if TYPE_CHECKING:
    from ckptlint.engine import FileResult

__all__ = ["UnusedNoqa", "settle_unused_noqa", "unused_noqa_diagnostics"]

_FIX_MESSAGE = "Remove unused `noqa` directive"


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


def unused_noqa_diagnostics(source: SourceFile, index: NoqaIndex, judged: Collection[str]) -> list[Diagnostic]:
    """One CKP901 diagnostic for each directive of ``index`` (the noqa comments of
    ``source``, after filtering marked what they suppressed) that lists codes of ``judged``
    (enabled rules that ran) which it did not use.

    The fix removes the unused codes; when nothing else is left it removes the directive (and
    the space before it), keeping any other comment text on the line, so the line still
    parses. Blanket ``# noqa`` and file-level ``# ckptlint: noqa`` are not judged.
    """
    found: list[Diagnostic] = []
    for row in sorted(index.by_row):
        directive = index.by_row[row]
        if directive.codes is None:
            continue
        unused = [code for code in dict.fromkeys(directive.codes) if code in judged and code not in directive.used]
        if not unused:
            continue
        listed = ", ".join(f"`{code}`" for code in unused)
        found.append(
            Diagnostic(
                code=UnusedNoqa.code,
                message=f"Unused `noqa` directive (unused: {listed})",
                path=source.path,
                start=(row, directive.start_col),
                end=(row, directive.end_col),
                fix=Fix(Applicability.SAFE, _FIX_MESSAGE, (_edit(source, directive, unused),)),
                noqa_row=row,
            )
        )
    return found


def _edit(source: SourceFile, directive: NoqaDirective, unused: list[str]) -> Edit:
    row = directive.row
    line = source.line(row)
    kept = [code for code in directive.codes or () if code not in unused]
    start, end = directive.start_col, directive.end_col
    if kept:
        return Edit((row, start), (row, end), "# noqa: " + ", ".join(kept))
    rest = line[end - 1 :]
    if not rest.strip() or rest.lstrip().startswith("#"):
        # Nothing after the directive, or another comment: drop the directive and the
        # space before it (``x = 1  # noqa: CKP001 # type: ignore`` -> ``x = 1  # type: ignore``).
        before = line[: start - 1]
        spaces = len(before) - len(before.rstrip())
        if rest.strip():
            return Edit((row, start), (row, end + len(rest) - len(rest.lstrip())), "")
        return Edit((row, start - spaces), (row, len(line) + 1), "")
    # Free text follows (``# noqa: CKP001 reason``): keep it as a comment.
    return Edit((row, start), (row, end + len(rest) - len(rest.lstrip())), "# ")


def settle_unused_noqa(results: Sequence[FileResult], unsafe: Mapping[str, bool]) -> None:
    """The run-level step of CKP901, after every file of the run was linted.

    Drops the CKP901 findings on directives that linting another file used (each result's
    ``noqa_used_elsewhere``: ``(path, row)`` in that file as read from disk), then, for files
    linted with a fix mode (``fixed_text`` set; their linter deferred CKP901's fixes), applies
    the remaining CKP901 fixes that apply (``unsafe[path]``: whether unsafe fixes do) to the
    fixed text, counting them in ``fixed``/``fixed_codes``. Once fixes changed a file, a
    directive is matched by the text of its line rather than by its row. Mutates ``results``.
    """
    used: dict[str, set[int]] = {}
    for result in results:
        for path, row in result.noqa_used_elsewhere:
            used.setdefault(path, set()).add(row)
    for result in results:
        source = result.source
        if not any(d.code == UnusedNoqa.code for d in result.diagnostics):
            continue
        rows = used.get(result.path, set())
        if source is None:  # a cached result: its text is the file on disk, match by row
            result.diagnostics = [
                d for d in result.diagnostics if not (d.code == UnusedNoqa.code and d.path == result.path and d.start[0] in rows)
            ]
            continue
        current = source if result.fixed_text is None else replace(source, text=result.fixed_text)
        same_text = current.text == source.text
        lines = {source.line(row).strip() for row in rows if row <= len(source.line_starts)}
        kept: list[Diagnostic] = []
        to_fix: list[Diagnostic] = []
        for d in result.diagnostics:
            if d.code != UnusedNoqa.code or d.path != result.path:
                kept.append(d)
            elif (d.start[0] in rows) if same_text else (current.line(d.start[0]).strip() in lines):
                continue  # used by a finding reported while linting another file
            elif result.fixed_text is not None and d.fix is not None and d.fix.applies(unsafe.get(result.path, False)):
                to_fix.append(d)
            else:
                kept.append(d)
        result.diagnostics = kept
        if to_fix:
            edits = [(current.offset(e.start), current.offset(e.end), e.content) for d in to_fix for e in d.fix.edits]  # type: ignore[union-attr]
            result.fixed_text = apply_edits(current.text, edits)
            result.fixed += len(to_fix)
            result.fixed_codes[UnusedNoqa.code] = result.fixed_codes.get(UnusedNoqa.code, 0) + len(to_fix)

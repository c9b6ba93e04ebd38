"""The run-level step of CKP901 (unused-noqa): a region rule may report a finding in another
file (``layers.py``) while linting ``model.py``; the ``# noqa`` in ``layers.py`` that
suppressed it is then used although linting ``layers.py`` alone never needed it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from ckptlint.lint.results import FileResult
from ckptlint.rule_codes import UNUSED_NOQA
from ckptlint.text.diagnostics import Diagnostic
from ckptlint.text.fixer import apply_edits

__all__ = ["settle_unused_noqa"]


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
        if not any(d.code == UNUSED_NOQA for d in result.diagnostics):
            continue
        rows = used.get(result.path, set())
        if source is None:  # a cached result: its text is the file on disk, match by row
            result.diagnostics = [
                d for d in result.diagnostics if not (d.code == UNUSED_NOQA and d.path == result.path and d.start[0] in rows)
            ]
            continue
        current = source if result.fixed_text is None else replace(source, text=result.fixed_text)
        same_text = current.text == source.text
        lines = {source.line(row).strip() for row in rows if row <= len(source.line_starts)}
        kept: list[Diagnostic] = []
        to_fix: list[Diagnostic] = []
        for d in result.diagnostics:
            if d.code != UNUSED_NOQA or d.path != result.path:
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
            result.fixed_codes[UNUSED_NOQA] = result.fixed_codes.get(UNUSED_NOQA, 0) + len(to_fix)

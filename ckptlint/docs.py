"""Rule documentation: the Markdown pages of ``rules/`` (shipped in the wheel as
``ckptlint/_rule_docs``) and their public URLs."""

from __future__ import annotations

from pathlib import Path

from ckptlint.registry import RULES, FixAvailability, rule_info

__all__ = ["DOCS_URL", "explain_record", "rule_doc", "rule_doc_path", "rule_list_text", "rule_url"]

DOCS_URL = "https://github.com/ckptlint/ckptlint/blob/main/rules/{code}.md"
HOME_URL = "https://github.com/ckptlint/ckptlint"


def rule_url(code: str) -> str:
    return DOCS_URL.format(code=code)


def rule_doc_path(code: str) -> Path | None:
    """The Markdown page of ``code``: in the installed package, or in the source tree."""
    package = Path(__file__).resolve().parent
    for folder in (package / "_rule_docs", package.parent / "rules"):
        candidate = folder / f"{code}.md"
        if candidate.is_file():
            return candidate
    return None


def rule_doc(code: str) -> str | None:
    """The text of the rule's page, or ``None`` when it has none."""
    path = rule_doc_path(code)
    return path.read_text(encoding="utf-8") if path is not None else None


def rule_table_markdown() -> str:
    """The README's rule table, generated from the registry (a test keeps them equal)."""
    fix_marks = {FixAvailability.NONE: "no", FixAvailability.SOMETIMES: "sometimes", FixAvailability.ALWAYS: "yes"}
    lines = [
        "| Code | Name | Severity | Fix | What it flags |",
        "| --- | --- | --- | --- | --- |",
    ]
    for code, rule in RULES.items():
        lines.append(
            f"| [{code}](rules/{code}.md) | {rule.name} | {rule.severity.value} | "
            f"{fix_marks[rule.fix_availability]} | {rule.summary} |"
        )
    return "\n".join(lines)


_FIX_SENTENCES = {
    "always": ("Fix is always available.", "Always"),
    "sometimes": ("Fix is sometimes available.", "Sometimes"),
    "none": ("Fix is not available.", "None"),
}


def explain_record(code: str) -> dict | None:
    """The rule as ruff's ``ruff rule --output-format json`` record (``name``, ``code``,
    ``linter``, ``summary``, ``fix``, ``fix_availability``, ``explanation``, ``preview``) plus
    ``severity`` and ``default_enabled``; ``None`` for an unknown code."""
    rule = rule_info(code)
    if rule is None:
        return None
    fix, availability = _FIX_SENTENCES[rule.fix_availability.value]
    return {
        "name": rule.name,
        "code": rule.code,
        "linter": "ckptlint",
        "summary": rule.summary,
        "fix": fix,
        "fix_availability": availability,
        "explanation": rule_doc(rule.code) or f"# {rule.name} ({rule.code})\n\n{rule.summary}\n",
        "preview": False,
        "severity": rule.severity.value,
        "default_enabled": bool(rule.default_enabled),
    }


def rule_list_text() -> str:
    """``--list-rules``: an aligned table of every rule (code, name, severity, fix, whether
    enabled by default, summary)."""
    rows = [("Code", "Name", "Severity", "Fix", "Default", "Summary")]
    for code, rule in RULES.items():
        default = "yes" if rule.default_enabled else "no"
        rows.append((code, rule.name, rule.severity.value, rule.fix_availability.value, default, rule.summary))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[-1] + "\n" for row in rows
    )

"""Rule documentation: the Markdown pages of ``rules/`` (shipped in the wheel as
``ckptlint/_rule_docs``) and their public URLs."""

from __future__ import annotations

from pathlib import Path

__all__ = ["DOCS_URL", "rule_doc", "rule_doc_path", "rule_url"]

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
    from ckptlint.rules import ALL_RULES, FixAvailability

    fix_marks = {FixAvailability.NONE: "no", FixAvailability.SOMETIMES: "sometimes", FixAvailability.ALWAYS: "yes"}
    lines = [
        "| Code | Name | Severity | Fix | What it flags |",
        "| --- | --- | --- | --- | --- |",
    ]
    for code, rule in ALL_RULES.items():
        lines.append(
            f"| [{code}](rules/{code}.md) | {rule.name} | {rule.severity.value} | "
            f"{fix_marks[rule.fix_availability]} | {rule.summary} |"
        )
    return "\n".join(lines)

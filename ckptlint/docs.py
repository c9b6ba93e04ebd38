"""Rule documentation: the Markdown pages of ``rules/`` (shipped in the wheel as
``ckptlint/_rule_docs``), their public URLs, and the README's rule table.

``python -m ckptlint.docs --write [README]`` rewrites the table between the README's
``<!-- rules:start -->`` and ``<!-- rules:end -->`` markers from the registry (``--check``
exits 1 when it is stale; with neither, the table is printed).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from ckptlint.registry import RULES, FixAvailability, rule_info

__all__ = [
    "DOCS_URL",
    "RULES_END",
    "RULES_START",
    "explain_record",
    "main",
    "readme_with_rule_table",
    "rule_doc",
    "rule_doc_path",
    "rule_list_text",
    "rule_table_markdown",
    "rule_url",
]

#: The markers around the generated rule table in README.md.
RULES_START = "<!-- rules:start -->"
RULES_END = "<!-- rules:end -->"

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


def readme_with_rule_table(readme: str) -> str:
    """``readme`` with the lines between its rule-table markers replaced by
    :func:`rule_table_markdown`; every other character is kept.

    Raises:
        ValueError: the markers are missing, repeated, out of order, or not on lines of their own.
    """
    lines = readme.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.strip() == RULES_START]
    ends = [i for i, line in enumerate(lines) if line.strip() == RULES_END]
    if len(starts) != 1 or len(ends) != 1 or starts[0] > ends[0]:
        raise ValueError(
            f"expected one {RULES_START} line and, after it, one {RULES_END} line; "
            f"found {len(starts)} and {len(ends)}"
        )
    start, end = starts[0], ends[0]
    newline = "\r\n" if lines[start].endswith("\r\n") else "\n"
    table = "".join(line + newline for line in rule_table_markdown().split("\n"))
    return "".join(lines[: start + 1]) + table + "".join(lines[end:])


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ckptlint.docs [--write | --check] [README]``: print the rule table, write it
    into README (default ``README.md`` in the current folder), or check that it is current.

    Returns the exit status: 0, or 1 for ``--check`` on a stale table, or 2 for a README that
    cannot be read or has no (or broken) markers.
    """
    import argparse

    parser = argparse.ArgumentParser(prog="python -m ckptlint.docs", description=main.__doc__)
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help="rewrite the table between the markers")
    action.add_argument("--check", action="store_true", help="exit 1 when the table is not the generated one")
    parser.add_argument("readme", nargs="?", default="README.md", type=Path, help="default: ./README.md")
    args = parser.parse_args(argv)
    if not (args.write or args.check):
        print(rule_table_markdown())
        return 0
    try:
        with open(args.readme, encoding="utf-8", newline="") as handle:
            current = handle.read()
        updated = readme_with_rule_table(current)
    except (OSError, UnicodeDecodeError, ValueError) as error:
        print(f"error: {args.readme}: {error}", file=sys.stderr)
        return 2
    if updated == current:
        print(f"{args.readme}: the rule table is current")
        return 0
    if args.check:
        print(f"{args.readme}: the rule table is stale; run python -m ckptlint.docs --write", file=sys.stderr)
        return 1
    with open(args.readme, "w", encoding="utf-8", newline="") as handle:
        handle.write(updated)
    print(f"{args.readme}: rule table written ({len(RULES)} rules)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

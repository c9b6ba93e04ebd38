"""``--explain CODE`` and ``--list-rules``: the rules' documentation."""

from __future__ import annotations

import click

from ckptlint.cli.common import EXIT_ERROR, EXIT_OK, emit, error

__all__ = ["explain", "list_rules"]


def explain(code: str, output_format: str | None) -> int:
    """``--explain CODE``: the rule's page, or ruff's JSON record with ``--output-format json``."""
    import json

    from ckptlint.docs import explain_record

    record = explain_record(code)
    if record is None:
        error(f"unknown rule code `{code}`")
        return EXIT_ERROR
    if output_format in ("json", "json-lines"):
        emit(json.dumps(record, indent=2, ensure_ascii=False) + "\n", None, fmt="json")
    else:
        click.echo(record["explanation"].rstrip("\n"))
    return EXIT_OK


def list_rules(output_format: str | None) -> int:
    """``--list-rules``: a table, or a JSON list of explain records."""
    import json

    from ckptlint.docs import explain_record, rule_list_text
    from ckptlint.registry import RULES

    if output_format in ("json", "json-lines"):
        emit(json.dumps([explain_record(code) for code in RULES], indent=2, ensure_ascii=False) + "\n", None, fmt="json")
    else:
        click.echo(rule_list_text(), nl=False)
    return EXIT_OK

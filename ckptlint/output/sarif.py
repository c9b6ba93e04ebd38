"""``sarif``: a SARIF 2.1.0 log for GitHub code scanning (``github/codeql-action/upload-sarif``).

One run. ``tool.driver`` names ckptlint and lists the rules that have results (as ruff does),
each with ``id``, ``name``, ``shortDescription``, ``fullDescription``, ``helpUri``, ``help``
(``text`` and ``markdown``: the rule's page from ``rules/``) and
``defaultConfiguration.level``. Each result has ``ruleId``, ``ruleIndex``, ``level``,
``message.text``, one location (a percent-encoded ``artifactLocation.uri`` relative to the
repository root with ``uriBaseId`` ``%SRCROOT%``, and a ``region`` with 1-based lines and
columns, ``endColumn`` exclusive, columns counted in Unicode code points as
``columnKind`` says), ``partialFingerprints`` (see :mod:`ckptlint.output.fingerprints`: no
line numbers) and ``fixes`` when the finding has a fix.

Reference: SARIF 2.1.0 (OASIS Standard, errata 01), sections 3.13 (run), 3.19 (toolComponent),
3.27 (result), 3.29-3.30 (location, region), 3.55 (fix); GitHub's "SARIF support for code
scanning".
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ckptlint import __version__
from ckptlint.docs import HOME_URL, rule_doc, rule_url
from ckptlint.output.base import OutputContext, relative_uri, severity_of
from ckptlint.output.fingerprints import fingerprints
from ckptlint.registry import RULES
from ckptlint.text.diagnostics import Diagnostic, Edit, Fix

__all__ = ["FINGERPRINT_KEY", "SCHEMA", "render", "sarif_log"]

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"
#: the partialFingerprints key (versioned: a change of the algorithm gets a new key).
FINGERPRINT_KEY = "ckptlint/v1"
_SECTION = re.compile(r"^## What it does\n(?P<body>.*?)(?=^## |\Z)", re.MULTILINE | re.DOTALL)


def _full_description(code: str, summary: str) -> str:
    doc = rule_doc(code)
    if doc:
        match = _SECTION.search(doc)
        if match and match.group("body").strip():
            return match.group("body").strip()
    return summary


def _rule(code: str) -> dict[str, Any]:
    rule = RULES.get(code)
    summary = rule.summary if rule else code
    name = rule.name if rule else code
    markdown = rule_doc(code) or f"# {name} ({code})\n\n{summary}\n"
    return {
        "id": code,
        "name": name,
        "shortDescription": {"text": summary},
        "fullDescription": {"text": _full_description(code, summary)},
        "helpUri": rule_url(code),
        "help": {"text": summary, "markdown": markdown},
        "defaultConfiguration": {"level": severity_of(code)},
        "properties": {"problem.severity": severity_of(code), "tags": ["pytorch", "activation-checkpointing"]},
    }


def _artifact(path: str, ctx: OutputContext) -> dict[str, Any]:
    uri, relative = relative_uri(path, ctx.repository_root)
    return {"uri": uri, "uriBaseId": SRCROOT} if relative else {"uri": uri}


def _region(start: tuple[int, int], end: tuple[int, int]) -> dict[str, int]:
    return {"startLine": start[0], "startColumn": start[1], "endLine": end[0], "endColumn": end[1]}


def _replacement(edit: Edit) -> dict[str, Any]:
    replacement: dict[str, Any] = {"deletedRegion": _region(edit.start, edit.end)}
    if edit.content:
        replacement["insertedContent"] = {"text": edit.content}
    return replacement


def _fix(fix: Fix, path: str, ctx: OutputContext) -> dict[str, Any]:
    return {
        "description": {"text": fix.message},
        "artifactChanges": [
            {"artifactLocation": _artifact(path, ctx), "replacements": [_replacement(e) for e in sorted(fix.edits)]}
        ],
        "properties": {"applicability": fix.applicability.value},
    }


def sarif_log(diagnostics: Sequence[Diagnostic], ctx: OutputContext) -> dict[str, Any]:
    """The SARIF log as a JSON-compatible dict."""
    codes = sorted({d.code for d in diagnostics})
    index = {code: i for i, code in enumerate(codes)}
    prints = fingerprints(diagnostics, ctx)
    results = []
    for d, fingerprint in zip(diagnostics, prints, strict=True):
        result: dict[str, Any] = {
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": severity_of(d.code),
            "message": {"text": d.message},
            "locations": [
                {"physicalLocation": {"artifactLocation": _artifact(d.path, ctx), "region": _region(d.start, d.end)}}
            ],
            "partialFingerprints": {FINGERPRINT_KEY: fingerprint},
        }
        if d.cell is not None:
            # a notebook: regions would point into its JSON; line 1, and the cell position
            # in the message and the result's properties
            region = {"startLine": 1, "startColumn": 1, "endLine": 1, "endColumn": 1}
            result["locations"][0]["physicalLocation"]["region"] = region
            result["message"] = {"text": f"cell {d.cell}, line {d.start[0]}, column {d.start[1]}: {d.message}"}
            result["properties"] = {"cell": d.cell, "cellStart": list(d.start), "cellEnd": list(d.end)}
        elif d.fix is not None:
            result["fixes"] = [_fix(fix, d.path, ctx) for fix in d.fix.alternatives()]
        results.append(result)
    root_uri = ctx.repository_root.resolve().as_uri().rstrip("/") + "/"
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "ckptlint",
                        "version": __version__,
                        "informationUri": HOME_URL,
                        "rules": [_rule(code) for code in codes],
                    }
                },
                "originalUriBaseIds": {SRCROOT: {"uri": root_uri}},
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


def render(diagnostics: Sequence[Diagnostic], ctx: OutputContext) -> str:
    return json.dumps(sarif_log(diagnostics, ctx), indent=2, ensure_ascii=False) + "\n"

"""``junit``: a JUnit XML report, one ``testsuite`` per file and one failing ``testcase`` per
finding (ruff's layout: ``testcase`` named ``org.ckptlint.CODE`` with the file's path without
its suffix as ``classname``, ``line`` and ``column``; the failure's text is
``line R, col C, MESSAGE``). A clean run is one passing test case, as in ruff.

Built with :mod:`xml.etree.ElementTree`, which escapes ``&``, ``<``, ``>`` and quotes; the
characters XML 1.0 cannot hold at all (C0 controls but tab, newline and carriage return; lone
surrogates; U+FFFE, U+FFFF), which a path or a quoted guard condition can carry, are written as
``\\xNN`` / ``\\uNNNN`` escapes, so the report stays well-formed.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from itertools import groupby
from pathlib import PurePosixPath

from ckptlint.output.base import OutputContext, display_path, severity_of
from ckptlint.text.diagnostics import Diagnostic

__all__ = ["render"]

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_text(text: str) -> str:
    """``text`` with the characters XML 1.0 forbids escaped as ``\\xNN`` / ``\\uNNNN``."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text)


def _suite(parent: ET.Element, name: str, cases: int, failures: int) -> ET.Element:
    return ET.SubElement(
        parent,
        "testsuite",
        {
            "name": name,
            "tests": str(cases),
            "skipped": "0",
            "errors": "0",
            "failures": str(failures),
            "package": "org.ckptlint",
        },
    )


def render(diagnostics: Sequence[Diagnostic], ctx: OutputContext) -> str:
    total = max(1, len(diagnostics))
    root = ET.Element(
        "testsuites",
        {"name": "ckptlint", "tests": str(total), "skipped": "0", "failures": str(len(diagnostics)), "errors": "0"},
    )
    if not diagnostics:
        suite = _suite(root, "ckptlint", 1, 0)
        ET.SubElement(suite, "testcase", {"name": "No errors found", "classname": "ckptlint"})
    ordered = sorted(diagnostics, key=lambda d: d.sort_key)
    for path, group in groupby(ordered, key=lambda d: d.path):
        findings = list(group)
        shown = _xml_text(display_path(path, ctx.cwd))
        classname = str(PurePosixPath(shown).with_suffix("")) if PurePosixPath(shown).suffix else shown
        suite = _suite(root, shown, len(findings), len(findings))
        for d in findings:
            case = ET.SubElement(
                suite,
                "testcase",
                {
                    "name": f"org.ckptlint.{d.code}",
                    "classname": classname,
                    "line": str(d.start[0]),
                    "column": str(d.start[1]),
                },
            )
            properties = ET.SubElement(case, "properties")
            ET.SubElement(properties, "property", {"name": "severity", "value": severity_of(d.code)})
            message = _xml_text(d.message)
            failure = ET.SubElement(case, "failure", {"message": message})
            cell = f"cell {d.cell}, " if d.cell is not None else ""
            failure.text = f"{cell}line {d.start[0]}, col {d.start[1]}, {message}"
    ET.indent(root, space="    ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"

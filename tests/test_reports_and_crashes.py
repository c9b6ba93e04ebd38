"""Reports stay valid and whole, and every crash path ends the same way.

- a file name that is not UTF-8 (``bad\\xffname.py``) appears escaped in every format, and every
  format stays valid: JSON parses, SARIF keeps its structure (a subset of the SARIF 2.1.0
  schema written here from the specification's property tables, checked with jsonschema, and
  URIs that are RFC 3986 references), JUnit is XML;
- ``-o FILE`` is written to a temporary file and renamed: a failed write leaves an existing
  report as it was;
- a crash exits 2 with one ``error:`` line: a pyproject.toml that is not UTF-8 or nested 5,000
  deep, a closed stdin with ``--stdin-filename``, stdout on a full disk, an internal error.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import jsonschema
import pytest

from ckptlint.output import FORMATS

CALL = "from torch.utils.checkpoint import checkpoint\n\ny = checkpoint(f, x)\n"
BAD_NAME = os.fsdecode(b"bad\xffname.py")

#: A location's URI: an RFC 3986 URI reference (ASCII, percent-encoded bytes).
URI_REFERENCE = re.compile(r"(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*")

_MESSAGE = {"type": "object", "required": ["text"], "properties": {"text": {"type": "string", "minLength": 1}}}
_ARTIFACT_LOCATION = {
    "type": "object",
    "required": ["uri"],
    "properties": {"uri": {"type": "string", "pattern": URI_REFERENCE.pattern.join("^$")}, "uriBaseId": {"type": "string"}},
}
_REGION = {
    "type": "object",
    "properties": {k: {"type": "integer", "minimum": 1} for k in ("startLine", "startColumn", "endLine", "endColumn")},
}
#: What ckptlint's SARIF uses of SARIF 2.1.0 (OASIS, sections 3.13 sarifLog, 3.14 run, 3.18-3.19
#: tool/toolComponent, 3.27 result, 3.28 location, 3.29 physicalLocation, 3.4 artifactLocation,
#: 3.30 region, 3.55 fix, 3.57 replacement), with the types and ranges given there.
SARIF_SUBSET = {
    "type": "object",
    "required": ["version", "runs"],
    "properties": {
        "$schema": {"type": "string"},
        "version": {"const": "2.1.0"},
        "runs": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["tool"],
                "properties": {
                    "tool": {
                        "type": "object",
                        "required": ["driver"],
                        "properties": {
                            "driver": {
                                "type": "object",
                                "required": ["name"],
                                "properties": {
                                    "name": {"type": "string"},
                                    "rules": {
                                        "type": "array",
                                        "items": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}},
                                    },
                                },
                            }
                        },
                    },
                    "originalUriBaseIds": {
                        "type": "object",
                        "additionalProperties": {"type": "object", "properties": {"uri": {"type": "string", "pattern": "^file://"}}},
                    },
                    "results": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["message"],
                            "properties": {
                                "ruleId": {"type": "string"},
                                "ruleIndex": {"type": "integer", "minimum": -1},
                                "level": {"enum": ["none", "note", "warning", "error"]},
                                "message": _MESSAGE,
                                "locations": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "properties": {
                                            "physicalLocation": {
                                                "type": "object",
                                                "properties": {"artifactLocation": _ARTIFACT_LOCATION, "region": _REGION},
                                            }
                                        },
                                    },
                                },
                                "partialFingerprints": {"type": "object", "additionalProperties": {"type": "string"}},
                                "fixes": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "required": ["artifactChanges"],
                                        "properties": {
                                            "artifactChanges": {
                                                "type": "array",
                                                "minItems": 1,
                                                "items": {
                                                    "type": "object",
                                                    "required": ["artifactLocation", "replacements"],
                                                    "properties": {"artifactLocation": _ARTIFACT_LOCATION},
                                                },
                                            }
                                        },
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}


@pytest.fixture
def bad_name_tree(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()  # the repository root, for repository-relative URIs
    (tmp_path / BAD_NAME).write_text(CALL, encoding="utf-8")
    (tmp_path / "ok.py").write_text(CALL, encoding="utf-8")
    return tmp_path


def _check_valid(fmt: str, data: bytes) -> None:
    text = data.decode("utf-8")  # strict: every byte written is UTF-8
    assert "\\xff" in text or "%FF" in text
    if fmt in ("json", "gitlab"):
        json.loads(text)
    elif fmt == "json-lines":
        for line in text.splitlines():
            json.loads(line)
    elif fmt == "sarif":
        log = json.loads(text)
        jsonschema.validate(log, SARIF_SUBSET)
        uris = [loc["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"] for loc in r["locations"]]
        assert "bad%FFname.py" in uris
    elif fmt == "junit":
        ElementTree.fromstring(text.split("\n", 1)[1] if text.startswith("<?xml") else text)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_file_name_that_is_not_utf8_is_escaped_and_every_format_stays_valid(bad_name_tree: Path, run_process, fmt: str) -> None:
    result_file = bad_name_tree / "out.bin"
    with open(result_file, "wb") as out:
        result = run_process("--no-cache", "--output-format", fmt, ".", cwd=bad_name_tree, stdout=out)
    assert result.exit_code == 1, result.stderr
    assert result.stderr == ""
    data = result_file.read_bytes()
    assert b"\xff" not in data
    _check_valid(fmt, data)
    if fmt in ("concise", "full", "github"):
        assert "bad\\xffname.py:3:5" in data.decode() or "file=bad\\xffname.py" in data.decode()


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_report_file_with_a_name_that_is_not_utf8(bad_name_tree: Path, run_process, fmt: str) -> None:
    """With ``-o`` and ``--exit-zero`` (the README's CI commands) too."""
    result = run_process("--no-cache", "--exit-zero", "--output-format", fmt, "-o", "report", ".", cwd=bad_name_tree)
    assert (result.exit_code, result.stderr) == (0, ""), result.stderr
    _check_valid(fmt, (bad_name_tree / "report").read_bytes())


def test_a_warning_line_names_the_file_escaped(bad_name_tree: Path, run_process) -> None:
    (bad_name_tree / BAD_NAME).write_text(CALL.replace("x)\n", "x)  # noqa: CKP 001\n"), encoding="utf-8")
    result = run_process("--no-cache", BAD_NAME, cwd=bad_name_tree)
    assert result.stderr.startswith("warning: bad\\xffname.py:3:"), result.stderr


def test_show_sites_escapes_a_file_name_that_is_not_utf8(bad_name_tree: Path, run_process) -> None:
    table = run_process("--show-sites", BAD_NAME, cwd=bad_name_tree)
    assert table.stdout.startswith("bad\\xffname.py:3:5  torch.utils.checkpoint.checkpoint")
    records = json.loads(run_process("--show-sites", "--output-format", "json", BAD_NAME, cwd=bad_name_tree).stdout)
    assert records[0]["filename"] == str(bad_name_tree) + "/bad\\xffname.py"


# ---------------------------------------------------------------------------- -o FILE whole
def _no_larger_than(limit: int):
    def apply() -> None:  # pragma: no cover - runs in the child process
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_failed_report_write_leaves_the_existing_report(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(CALL * 40, encoding="utf-8")
    report = tmp_path / "report.json"
    report.write_text('["the previous report"]\n')
    report.chmod(0o640)
    proc = subprocess.run(
        [sys.executable, "-m", "ckptlint", "--no-cache", "--output-format", "json", "-o", str(report), "m.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        preexec_fn=_no_larger_than(1000),  # the report is ~40 kB
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert report.read_text() == '["the previous report"]\n'
    [line] = proc.stderr.splitlines()
    assert line.startswith(f"error: {report}: cannot write the report: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.py", "report.json"]  # no temporary file left

    again = subprocess.run(
        [sys.executable, "-m", "ckptlint", "--no-cache", "--output-format", "json", "-o", str(report), "m.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert again.returncode == 1
    assert len(json.loads(report.read_text())) == 40
    assert report.stat().st_mode & 0o777 == 0o640  # its permissions kept


def test_a_report_to_a_link_replaces_the_file_it_points_to(tmp_path: Path, run_cli) -> None:
    (tmp_path / "m.py").write_text(CALL, encoding="utf-8")
    (tmp_path / "real.txt").write_text("old")
    (tmp_path / "link.txt").symlink_to("real.txt")
    assert run_cli("--no-cache", "-o", "link.txt", "m.py").exit_code == 1
    assert (tmp_path / "link.txt").is_symlink()
    assert (tmp_path / "real.txt").read_text().startswith("m.py:3:5: CKP001")


# ------------------------------------------------------------------- crashes: exit 2, one line
def _one_error_line(result) -> str:
    assert result.exit_code == 2, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def test_a_pyproject_that_is_not_utf8(tmp_path: Path, run_process) -> None:
    (tmp_path / "pyproject.toml").write_bytes(b"[tool.ckptlint]\n# caf\xe9\n")
    (tmp_path / "m.py").write_text(CALL, encoding="utf-8")
    line = _one_error_line(run_process("--no-cache", ".", cwd=tmp_path))
    assert line == f"error: {tmp_path / 'pyproject.toml'}: invalid TOML: not UTF-8 (byte 21)"


def test_a_pyproject_nested_5000_deep(tmp_path: Path, run_process) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.ckptlint]\nx = " + "[" * 5000 + "]" * 5000 + "\n")
    (tmp_path / "m.py").write_text(CALL, encoding="utf-8")
    line = _one_error_line(run_process("--no-cache", ".", cwd=tmp_path))
    assert line == f"error: {tmp_path / 'pyproject.toml'}: invalid TOML: nested too deeply"


def test_a_closed_stdin_with_stdin_filename(tmp_path: Path, run_process) -> None:
    line = _one_error_line(run_process("--stdin-filename", "m.py", "-", cwd=tmp_path, stdin=None))
    assert line == "error: cannot read stdin: it is closed"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("args", [["m.py"], ["--output-format", "json", "m.py"], ["--show-files", "."], ["--statistics", "m.py"]])
def test_stdout_on_a_full_disk(tmp_path: Path, run_process, args: list[str]) -> None:
    (tmp_path / "m.py").write_text(CALL, encoding="utf-8")
    with open("/dev/full", "wb") as full:
        result = run_process("--no-cache", *args, cwd=tmp_path, stdout=full)
    assert "No space left on device" in _one_error_line(result)


def test_an_internal_error_is_one_line_and_exit_2(tmp_path: Path, run_cli, monkeypatch) -> None:
    from ckptlint.cli import check as check_module

    def broken(*args, **kwargs):
        raise KeyError("boom")

    monkeypatch.setattr(check_module, "check", broken)
    (tmp_path / "m.py").write_text(CALL, encoding="utf-8")
    result = run_cli("--no-cache", ".")
    assert _one_error_line(result) == "error: internal error: KeyError: 'boom' (run with -v for the traceback)"
    verbose = run_cli("--no-cache", "-v", ".")
    assert verbose.exit_code == 2
    assert verbose.stderr.startswith("error: internal error: KeyError: 'boom'\nTraceback")

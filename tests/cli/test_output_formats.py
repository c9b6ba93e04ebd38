"""Every output format, end to end on a project with findings in several files: a multi-line
finding, a path with spaces, a path with ``%``, ``,`` and ``:``, CRLF input, a syntax error
(an ``error``-level rule) and more than 10 findings of one level. Escaping is also checked on
constructed diagnostics whose message holds ``%``, ``,``, ``:`` and line breaks."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import sarif_pydantic

from ckptlint.docs import rule_doc
from ckptlint.output import FORMATS, renderer
from ckptlint.output.base import OutputContext
from ckptlint.output.github import escape_data, escape_property
from ckptlint.text.diagnostics import Applicability, Diagnostic, Edit, Fix

IMPORT = "from torch.utils.checkpoint import checkpoint\n"
MODEL = IMPORT + (
    "\n"
    "def forward(block, x):\n"
    "    x = checkpoint(block, x)\n"  # row 4, cols 9..29 (end exclusive)
    "    y = checkpoint(\n"  # rows 5..8: the multi-line finding
    "        block,\n"
    "        x + 1,\n"
    "    )\n"
    "    return checkpoint(block, y, use_reentrant=False)\n"
)
SPACED = IMPORT + "out = checkpoint(f, x)\n"  # row 2, cols 7..23
CRLF = IMPORT.replace("\n", "\r\n") + "\r\ny = checkpoint(f, x)  # trailing\r\n"  # row 3, cols 5..21
MANY = IMPORT + "".join(f"v{i} = checkpoint(f, x)\n" for i in range(12))  # rows 2..13
BROKEN = IMPORT + "y = checkpoint(f x)\n"
ODD = IMPORT + "checkpoint(f, x)\n"
# A side effect in a recomputed region (CKP202, severity error) whose message quotes the code
# `LOG["50%, a:b"]`: a real message with `%`, `,` and `:` in it.
EFFECTS = (
    "from torch import nn\n"
    "from torch.utils.checkpoint import checkpoint\n"
    "\n"
    "LOG = {}\n"
    "\n"
    "\n"
    "class Block(nn.Module):\n"
    "    def forward(self, x):\n"
    '        LOG["50%, a:b"] += x  # a running total: recomputation adds x again\n'
    "        return x\n"
    "\n"
    "\n"
    "def run(x):\n"
    "    return checkpoint(Block(), x, use_reentrant=False)\n"
)

CKP001_MESSAGE = (
    "`checkpoint()` without `use_reentrant`: PyTorch warns and silently runs the legacy reentrant "
    "variant; pass `use_reentrant=False` (recommended)"
)


@pytest.fixture
def project(tmp_path: Path, write) -> Path:
    write("pkg/model.py", MODEL)
    write("sub dir/my model.py", SPACED)
    write("crlf.py", CRLF.encode())
    write("many.py", MANY)
    write("broken.py", BROKEN)
    write("odd%,:name.py", ODD)
    write("effects.py", EFFECTS)
    (tmp_path / ".git").mkdir()  # the repository root for repository-relative paths
    return tmp_path


def _lint(run_cli, fmt: str, *args: str, env: dict | None = None):
    return run_cli("--isolated", "--output-format", fmt, "-j", "1", *args, env=env)


def test_every_format_is_registered() -> None:
    assert set(FORMATS) == {"concise", "full", "json", "json-lines", "github", "sarif", "gitlab", "junit"}


# ------------------------------------------------------------------------------- json
def test_json_records_hold_ruff_fields_and_real_values(project: Path, run_cli) -> None:
    result = _lint(run_cli, "json")
    assert result.exit_code == 1
    records = json.loads(result.stdout)
    assert len(records) == 2 + 1 + 1 + 12 + 1 + 1 + 1
    by_file: dict[str, list[dict]] = {}
    for record in records:
        by_file.setdefault(os.path.relpath(record["filename"], project), []).append(record)
    model = by_file[os.path.join("pkg", "model.py")]
    assert [(r["location"], r["end_location"]) for r in model] == [
        ({"row": 4, "column": 9}, {"row": 4, "column": 29}),
        ({"row": 5, "column": 9}, {"row": 8, "column": 6}),
    ]
    # the record's fields and values: tests/test_snapshots.py (golden file of the json format)
    first = model[0]
    assert os.path.isabs(first["filename"])
    spaced = by_file[os.path.join("sub dir", "my model.py")]
    assert [(r["location"]["row"], r["location"]["column"]) for r in spaced] == [(2, 7)]
    crlf = by_file["crlf.py"][0]
    assert (crlf["location"], crlf["end_location"]) == ({"row": 3, "column": 5}, {"row": 3, "column": 21})
    broken = by_file["broken.py"][0]
    assert broken["code"] == "CKP999" and broken["severity"] == "error" and broken["fix"] is None
    assert broken["location"] == {"row": 2, "column": 16}
    [effect] = by_file["effects.py"]
    assert (effect["code"], effect["severity"], effect["location"], effect["end_location"]) == (
        "CKP202",
        "error",
        {"row": 9, "column": 9},
        {"row": 9, "column": 29},
    )
    assert 'LOG["50%, a:b"]' in effect["message"]
    assert [r["location"]["row"] for r in by_file["many.py"]] == list(range(2, 14))


def test_json_lines_is_one_compact_record_a_line_equal_to_json(project: Path, run_cli) -> None:
    lines = _lint(run_cli, "json-lines").stdout.splitlines()
    records = json.loads(_lint(run_cli, "json").stdout)
    assert [json.loads(line) for line in lines] == records
    assert all(": " not in line.split('"message"')[0] for line in lines)  # compact separators
    assert len(lines) == 19


# -------------------------------------------------------------------------------- full
def test_full_shows_source_caret_and_fix_diff(project: Path, run_cli) -> None:
    result = _lint(run_cli, "full", "pkg", "crlf.py")
    assert result.exit_code == 1
    text = result.stdout
    assert "\r" not in text
    assert text.startswith(f"CKP001 {CKP001_MESSAGE}\n")  # the fix is unsafe here: no [*]
    # a one-line finding with its fix diff: tests/test_snapshots.py (golden file of the full format)
    expected_multi = "\n".join(
        [
            " --> pkg/model.py:5:9",
            "  |",
            "3 |   def forward(block, x):",
            "4 |       x = checkpoint(block, x)",
            "5 |       y = checkpoint(",
            "  |  _________^",
            "6 | |         block,",
            "7 | |         x + 1,",
            "8 | |     )",
            "  | |_____^",
            "9 |       return checkpoint(block, y, use_reentrant=False)",
            "  |",
            "help: Pass `use_reentrant=False`",
            "  |",
            "7 |         x + 1,",
            "8 +         use_reentrant=False,",
            "9 |     )",
            "  |",
            "",
        ]
    )
    assert expected_multi in text
    assert " --> crlf.py:3:5\n" in text
    assert "3 | y = checkpoint(f, x)  # trailing\n  |     ^^^^^^^^^^^^^^^^\n" in text
    assert text.endswith(
        "note: This is an unsafe fix and may change runtime behavior\n\n"
        "Found 3 errors.\nNo fixes available (3 hidden fixes can be enabled with the `--unsafe-fixes` option).\n"
    )
    unsafe = _lint(run_cli, "full", "--unsafe-fixes", "pkg", "crlf.py").stdout  # the fix --fix --unsafe-fixes applies
    assert "help: Pass `use_reentrant=False`\n" in unsafe and "8 +         use_reentrant=False,\n" in unsafe
    assert unsafe.endswith(
        "note: This is an unsafe fix and may change runtime behavior\n\nFound 3 errors.\n[*] 3 fixable with the `--fix` option.\n"
    )


def test_full_marks_fixable_findings_and_paths_with_spaces(project: Path, run_cli) -> None:
    text = _lint(run_cli, "full", "--unsafe-fixes", "sub dir").stdout
    assert text.startswith(f"CKP001 [*] {CKP001_MESSAGE}\n --> sub dir/my model.py:2:7\n")
    assert "2 | out = checkpoint(f, x)\n  |       ^^^^^^^^^^^^^^^^\n" in text


# ------------------------------------------------------------------------------ github
def test_escaping_of_workflow_commands() -> None:
    assert escape_data("100% sure, a: b\r\nnext") == "100%25 sure, a: b%0D%0Anext"
    assert escape_property("a%b,c:d\r\ne") == "a%25b%2Cc%3Ad%0D%0Ae"


def test_github_constructed_diagnostic_with_percent_comma_colon(tmp_path: Path) -> None:
    d = Diagnostic("CKP001", "50% of 2: a, b\nsecond line", str(tmp_path / "dir, x" / "a:b%.py"), (3, 5), (3, 9))
    text = renderer("github")([d], OutputContext(cwd=tmp_path, env={}))
    assert text == (
        "::warning file=dir%2C x/a%3Ab%25.py,line=3,col=5,endLine=3,endColumn=9,title=ckptlint (CKP001)"
        "::50%25 of 2: a, b%0Asecond line\n"
    )


def test_github_annotations_end_to_end(project: Path, run_cli) -> None:
    result = _lint(
        run_cli,
        "github",
        "pkg",
        "sub dir",
        "odd%,:name.py",
        "crlf.py",
        "broken.py",
        "effects.py",
        env={"GITHUB_STEP_SUMMARY": ""},
    )
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    effect = json.loads(_lint(run_cli, "json", "effects.py").stdout)[0]["message"]
    assert 'LOG["50%, a:b"]' in effect
    assert lines == [
        "::error file=broken.py,line=2,col=16,endLine=2,endColumn=16,title=ckptlint (CKP999)::Syntax error: "
        + _syntax_message(run_cli),
        f"::warning file=crlf.py,line=3,col=5,endLine=3,endColumn=21,title=ckptlint (CKP001)::{CKP001_MESSAGE}",
        # only `%` is escaped in a message; `,` and `:` stay
        "::error file=effects.py,line=9,col=9,endLine=9,endColumn=29,title=ckptlint (CKP202)::"
        + effect.replace("%", "%25"),
        # `%`, `,` and `:` are escaped in a property
        f"::warning file=odd%25%2C%3Aname.py,line=2,col=1,endLine=2,endColumn=17,title=ckptlint (CKP001)::{CKP001_MESSAGE}",
        f"::warning file=pkg/model.py,line=4,col=9,endLine=4,endColumn=29,title=ckptlint (CKP001)::{CKP001_MESSAGE}",
        # a finding over several lines: no columns
        f"::warning file=pkg/model.py,line=5,endLine=8,title=ckptlint (CKP001)::{CKP001_MESSAGE}",
        f"::warning file=sub dir/my model.py,line=2,col=7,endLine=2,endColumn=23,title=ckptlint (CKP001)::{CKP001_MESSAGE}",
    ]
    assert 'LOG["50%25, a:b"]' in lines[2]


def _syntax_message(run_cli) -> str:
    record = json.loads(_lint(run_cli, "json", "broken.py").stdout)[0]
    assert record["location"] == {"row": 2, "column": 16}
    return record["message"].removeprefix("Syntax error: ")


def test_github_overflow_notice_and_step_summary(project: Path, run_cli, tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    env = {
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "octo/repo",
        "GITHUB_SHA": "abc123",
        "GITHUB_WORKSPACE": str(project),
    }
    result = _lint(run_cli, "github", env=env)
    lines = result.stdout.splitlines()
    warnings = [line for line in lines if line.startswith("::warning ")]
    errors = [line for line in lines if line.startswith("::error ")]
    plain = [line for line in lines if not line.startswith("::")]
    notices = [line for line in lines if line.startswith("::notice ")]
    assert len(warnings) == 10  # GitHub's limit per level and step
    assert len(errors) == 2
    # 17 warnings in all: the other 7 are printed as plain lines, then one notice.
    assert len(plain) == 7
    assert plain[-1] == f"sub dir/my model.py:2:7: CKP001 {CKP001_MESSAGE}"
    assert notices == [
        "::notice title=ckptlint::7 more ckptlint findings were not annotated (GitHub shows at most 10 "
        "annotations of each level per step and 50 per job); they are listed in the log above and in the "
        "step summary."
    ]
    assert lines[-1] == notices[0]
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n### ckptlint\n\n19 findings in 7 files (2 errors, 17 warnings).\n\n")
    assert "| Location | Code | Level | Message |\n| --- | --- | --- | --- |\n" in text
    assert (
        "| [pkg/model.py:5](https://github.com/octo/repo/blob/abc123/pkg/model.py#L5-L8) | CKP001 | warning | "
        + CKP001_MESSAGE
        + " |"
    ) in text
    assert "| [sub dir/my model.py:2](https://github.com/octo/repo/blob/abc123/sub%20dir/my%20model.py#L2) |" in text
    assert "| [odd%,:name.py:2](https://github.com/octo/repo/blob/abc123/odd%25%2C%3Aname.py#L2) |" in text
    assert 'LOG["50%, a:b"]' in text
    assert text.count("\n| [") == 19


def test_github_exactly_ten_of_a_level_has_no_notice(tmp_path: Path) -> None:
    diagnostics = [Diagnostic("CKP001", "m", str(tmp_path / "a.py"), (row, 1), (row, 2)) for row in range(1, 11)]
    text = renderer("github")(diagnostics, OutputContext(cwd=tmp_path, env={}))
    assert len(text.splitlines()) == 10 and "::notice" not in text


def test_step_summary_escapes_pipes_and_says_when_clean(tmp_path: Path) -> None:
    from ckptlint.output.github import step_summary

    d = Diagnostic("CKP001", "a | b\nc", str(tmp_path / "x.py"), (1, 1), (1, 2))
    text = step_summary([d], OutputContext(cwd=tmp_path, env={}))
    assert "| `x.py:1` | CKP001 | warning | a \\| b c |" in text
    assert step_summary([], OutputContext(cwd=tmp_path, env={})) == "### ckptlint\n\nAll checks passed!\n\n"


# ------------------------------------------------------------------------------- sarif
#: What GitHub code scanning requires of an uploaded SARIF file (docs.github.com, "SARIF support
#: for code scanning", the tables of required properties), as JSON paths.
GITHUB_REQUIRED_LOG = ("$schema", "version", "runs")
GITHUB_REQUIRED_RUN = ("tool.driver.name", "results")
GITHUB_REQUIRED_RESULT = (
    "ruleId",
    "message.text",
    "locations",
    "partialFingerprints",
)
GITHUB_REQUIRED_LOCATION = ("physicalLocation.artifactLocation.uri", "physicalLocation.region.startLine")


def _get(data: dict, dotted: str):
    for part in dotted.split("."):
        assert isinstance(data, dict) and part in data, f"missing {dotted}"
        data = data[part]
    return data


def check_github_sarif(log: dict) -> None:
    """Fail unless ``log`` has every property GitHub code scanning requires, with sane values."""
    sarif_pydantic.Sarif.model_validate(log)  # the SARIF 2.1.0 object model, with rules, fixes, fingerprints
    for key in GITHUB_REQUIRED_LOG:
        _get(log, key)
    assert log["version"] == "2.1.0"
    assert "sarif" in log["$schema"] and "2.1.0" in log["$schema"]
    assert isinstance(log["runs"], list) and log["runs"]
    for run in log["runs"]:
        for key in GITHUB_REQUIRED_RUN:
            _get(run, key)
        rules = run["tool"]["driver"].get("rules", [])
        for result in run["results"]:
            for key in GITHUB_REQUIRED_RESULT:
                _get(result, key)
            assert isinstance(result["message"]["text"], str) and result["message"]["text"]
            assert isinstance(result["partialFingerprints"], dict) and result["partialFingerprints"]
            assert 1 <= len(result["locations"]) <= 10
            for location in result["locations"]:
                for key in GITHUB_REQUIRED_LOCATION:
                    _get(location, key)
                region = location["physicalLocation"]["region"]
                assert isinstance(region["startLine"], int) and region["startLine"] >= 1
                assert region.get("endLine", region["startLine"]) >= region["startLine"]
                assert region.get("startColumn", 1) >= 1
            if "ruleIndex" in result:
                assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
            assert result.get("level", "warning") in ("none", "note", "warning", "error")


def _sarif(run_cli, *args: str) -> dict:
    result = _lint(run_cli, "sarif", *args)
    assert result.exit_code == 1, result.stderr
    return json.loads(result.stdout)


def test_sarif_meets_github_requirements_and_holds_real_values(project: Path, run_cli) -> None:
    log = _sarif(run_cli)
    check_github_sarif(log)
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "ckptlint" and driver["informationUri"].startswith("https://")
    assert [rule["id"] for rule in driver["rules"]] == ["CKP001", "CKP202", "CKP999"]
    ckp001 = driver["rules"][0]
    assert ckp001["name"] == "checkpoint-without-use-reentrant"
    assert (
        ckp001["shortDescription"]["text"]
        == "Checkpoint call without `use_reentrant`: the legacy reentrant variant runs"
    )
    assert ckp001["fullDescription"]["text"].startswith("Flags activation-checkpointing call sites")
    assert ckp001["help"]["markdown"] == rule_doc("CKP001")
    assert ckp001["helpUri"].endswith("rules/CKP001.md")
    assert ckp001["defaultConfiguration"] == {"level": "warning"}
    assert driver["rules"][2]["defaultConfiguration"] == {"level": "error"}
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == project.resolve().as_uri() + "/"
    results = run["results"]
    assert len(results) == 19
    by_uri: dict[str, list[dict]] = {}
    for result in results:
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        by_uri.setdefault(location["artifactLocation"]["uri"], []).append(result)
    assert sorted(by_uri) == [
        "broken.py",
        "crlf.py",
        "effects.py",
        "many.py",
        "odd%25%2C%3Aname.py",
        "pkg/model.py",
        "sub%20dir/my%20model.py",
    ]
    assert 'LOG["50%, a:b"]' in by_uri["effects.py"][0]["message"]["text"]
    multi = by_uri["pkg/model.py"][1]
    assert multi["ruleId"] == "CKP001" and multi["ruleIndex"] == 0 and multi["level"] == "warning"
    assert multi["message"]["text"] == CKP001_MESSAGE
    assert multi["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 5,
        "startColumn": 9,
        "endLine": 8,
        "endColumn": 6,
    }
    fix = multi["fixes"][0]
    assert fix["description"]["text"] == "Pass `use_reentrant=False`"
    change = fix["artifactChanges"][0]
    assert change["artifactLocation"] == {"uri": "pkg/model.py", "uriBaseId": "%SRCROOT%"}
    assert change["replacements"] == [
        {
            "deletedRegion": {"startLine": 7, "startColumn": 15, "endLine": 7, "endColumn": 15},
            "insertedContent": {"text": "\n        use_reentrant=False,"},
        }
    ]
    broken = by_uri["broken.py"][0]
    assert broken["ruleId"] == "CKP999" and broken["ruleIndex"] == 2 and broken["level"] == "error"
    assert "fixes" not in broken
    # Twelve findings on identical lines still get twelve distinct fingerprints.
    many = [r["partialFingerprints"]["ckptlint/v1"] for r in by_uri["many.py"]]
    assert len(set(many)) == 12
    assert [f.rsplit(":", 1)[1] for f in many] == [str(i) for i in range(1, 13)]


def _prints(log: dict) -> dict[tuple[str, int], str]:
    out = {}
    for result in log["runs"][0]["results"]:
        location = result["locations"][0]["physicalLocation"]
        out[(location["artifactLocation"]["uri"], location["region"]["startLine"])] = result["partialFingerprints"][
            "ckptlint/v1"
        ]
    return out


def test_sarif_fingerprints_survive_unrelated_edits(project: Path, run_cli) -> None:
    before = _prints(_sarif(run_cli, "pkg"))
    model = project / "pkg" / "model.py"
    # Unrelated edits: lines added above, the multi-line call reflowed and re-indented.
    edited = MODEL.replace("\ndef forward", "\nimport os\n\n\nCONSTANT = 3\n\n\ndef forward").replace(
        "    y = checkpoint(\n        block,\n        x + 1,\n    )\n",
        "    y = checkpoint(block,\n                   x+1)\n",
    )
    model.write_text(edited, encoding="utf-8")
    after = _prints(_sarif(run_cli, "pkg"))
    assert sorted(before) == [("pkg/model.py", 4), ("pkg/model.py", 5)]
    assert sorted(after) == [("pkg/model.py", 10), ("pkg/model.py", 11)]
    assert before[("pkg/model.py", 4)] == after[("pkg/model.py", 10)]
    assert before[("pkg/model.py", 5)] == after[("pkg/model.py", 11)]
    # Editing the reported code itself makes it a new finding.
    model.write_text(edited.replace("checkpoint(block, x)", "checkpoint(block, x * 2)"), encoding="utf-8")
    changed = _prints(_sarif(run_cli, "pkg"))
    assert changed[("pkg/model.py", 10)] != before[("pkg/model.py", 4)]
    assert changed[("pkg/model.py", 11)] == before[("pkg/model.py", 5)]


def test_sarif_without_findings_is_still_valid(tmp_path: Path, write, run_cli) -> None:
    write("ok.py", IMPORT + "checkpoint(f, x, use_reentrant=False)\n")
    result = _lint(run_cli, "sarif")
    assert result.exit_code == 0
    log = json.loads(result.stdout)
    check_github_sarif(log)
    assert log["runs"][0]["results"] == [] and log["runs"][0]["tool"]["driver"]["rules"] == []


# ------------------------------------------------------------------------------ gitlab
def test_gitlab_code_quality_report(project: Path, run_cli) -> None:
    result = _lint(run_cli, "gitlab")
    assert result.exit_code == 1
    issues = json.loads(result.stdout)
    assert len(issues) == 19
    assert len({issue["fingerprint"] for issue in issues}) == 19
    for issue in issues:
        assert set(issue) == {"description", "check_name", "fingerprint", "severity", "location"}
        assert issue["description"].startswith(issue["check_name"] + ": ")
    multi = [i for i in issues if i["location"]["path"] == "pkg/model.py"][1]
    assert multi == {
        "description": f"CKP001: {CKP001_MESSAGE}",
        "check_name": "CKP001",
        "fingerprint": multi["fingerprint"],
        "severity": "minor",
        "location": {"path": "pkg/model.py", "lines": {"begin": 5, "end": 8}},
    }
    assert len(multi["fingerprint"]) == 32 and int(multi["fingerprint"], 16) >= 0
    paths = sorted({i["location"]["path"] for i in issues})
    assert paths == [
        "broken.py",
        "crlf.py",
        "effects.py",
        "many.py",
        "odd%,:name.py",
        "pkg/model.py",
        "sub dir/my model.py",
    ]
    broken = next(i for i in issues if i["check_name"] == "CKP999")
    assert broken["severity"] == "major" and broken["location"]["lines"] == {"begin": 2, "end": 2}


def test_gitlab_paths_are_relative_to_ci_project_dir(project: Path, run_cli) -> None:
    result = _lint(run_cli, "gitlab", "pkg", env={"CI_PROJECT_DIR": str(project / "pkg")})
    assert {i["location"]["path"] for i in json.loads(result.stdout)} == {"model.py"}


# ------------------------------------------------------------------------------- junit
def test_junit_one_suite_per_file(project: Path, run_cli) -> None:
    result = _lint(run_cli, "junit")
    assert result.exit_code == 1
    assert result.stdout.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    root = ET.fromstring(result.stdout.split("\n", 1)[1])
    assert root.tag == "testsuites"
    assert (root.get("name"), root.get("tests"), root.get("failures")) == ("ckptlint", "19", "19")
    suites = {suite.get("name"): suite for suite in root}
    assert sorted(suites) == [
        "broken.py",
        "crlf.py",
        "effects.py",
        "many.py",
        "odd%,:name.py",
        "pkg/model.py",
        "sub dir/my model.py",
    ]
    effect = suites["effects.py"].find("testcase/failure")
    assert 'LOG["50%, a:b"]' in effect.get("message")
    assert suites["many.py"].get("tests") == "12" and suites["many.py"].get("failures") == "12"
    cases = suites["sub dir/my model.py"].findall("testcase")
    assert [(c.get("name"), c.get("classname"), c.get("line"), c.get("column")) for c in cases] == [
        ("org.ckptlint.CKP001", "sub dir/my model", "2", "7")
    ]
    failure = cases[0].find("failure")
    assert failure.get("message") == CKP001_MESSAGE
    assert failure.text == f"line 2, col 7, {CKP001_MESSAGE}"
    severity = suites["broken.py"].find("testcase/properties/property")
    assert (severity.get("name"), severity.get("value")) == ("severity", "error")


def test_junit_escapes_markup_and_reports_a_clean_run(tmp_path: Path) -> None:
    d = Diagnostic("CKP001", 'a < b & "c": 5%, d', str(tmp_path / "x.py"), (1, 1), (1, 2))
    text = renderer("junit")([d], OutputContext(cwd=tmp_path, env={}))
    failure = ET.fromstring(text.split("\n", 1)[1]).find("testsuite/testcase/failure")
    assert failure.get("message") == 'a < b & "c": 5%, d'
    clean = ET.fromstring(renderer("junit")([], OutputContext(cwd=tmp_path, env={})).split("\n", 1)[1])
    assert [c.get("name") for c in clean.iter("testcase")] == ["No errors found"]
    assert clean.get("failures") == "0"


# ----------------------------------------------------------- constructed diagnostics
def test_every_format_renders_awkward_messages(tmp_path: Path) -> None:
    fix = Fix(Applicability.SAFE, "Do it: now, 100%", (Edit((1, 1), (1, 2), "y"),))
    d = Diagnostic("CKP001", "100% sure: a, b", str(tmp_path / "a b.py"), (1, 1), (1, 2), fix=fix)
    (tmp_path / "a b.py").write_text("x = 1\n", encoding="utf-8")
    ctx = OutputContext(cwd=tmp_path, env={})
    assert json.loads(renderer("json")([d], ctx))[0]["message"] == "100% sure: a, b"
    assert json.loads(renderer("json-lines")([d], ctx))["fix"]["message"] == "Do it: now, 100%"
    assert json.loads(renderer("sarif")([d], ctx))["runs"][0]["results"][0]["message"]["text"] == "100% sure: a, b"
    assert json.loads(renderer("gitlab")([d], ctx))[0]["description"] == "CKP001: 100% sure: a, b"
    assert "a b.py:1:1: CKP001 [*] 100% sure: a, b" in renderer("concise")([d], ctx)
    full = renderer("full")([d], ctx)
    assert "help: Do it: now, 100%" in full and "1 + y = 1" in full


# ------------------------------------------------------------- choosing the format
def test_output_format_from_config_env_and_output_file(project: Path, run_cli, write) -> None:
    write("pyproject.toml", '[tool.ckptlint]\noutput-format = "json-lines"\n')
    by_config = run_cli("-j", "1", "sub dir")
    assert json.loads(by_config.stdout)["code"] == "CKP001"
    by_env = run_cli("-j", "1", "sub dir", env={"CKPTLINT_OUTPUT_FORMAT": "gitlab"})
    assert json.loads(by_env.stdout)[0]["check_name"] == "CKP001"
    by_option = run_cli("-j", "1", "sub dir", "--output-format", "concise", env={"CKPTLINT_OUTPUT_FORMAT": "gitlab"})
    assert by_option.stdout.startswith("sub dir/my model.py:2:7: CKP001 ")
    target = project / "reports" / "ckptlint.sarif"
    written = run_cli("-j", "1", "sub dir", "--output-format", "sarif", "--output-file", str(target))
    assert written.stdout == "" and written.exit_code == 1
    check_github_sarif(json.loads(target.read_text(encoding="utf-8")))


def test_full_gutter_widens_with_line_numbers(project: Path, run_cli) -> None:
    text = _lint(run_cli, "full", "many.py").stdout
    assert (
        "  --> many.py:13:7\n"
        "   |\n"
        "11 | v9 = checkpoint(f, x)\n"
        "12 | v10 = checkpoint(f, x)\n"
        "13 | v11 = checkpoint(f, x)\n"
        "   |       ^^^^^^^^^^^^^^^^\n"
        "help: Pass `use_reentrant=False`\n"
        "   |\n"
        "12 | v10 = checkpoint(f, x)\n"
        "   - v11 = checkpoint(f, x)\n"
        "13 + v11 = checkpoint(f, x, use_reentrant=False)\n"
        "   |\n"
    ) in text


def test_crlf_source_leaves_no_carriage_return_in_any_format(project: Path) -> None:
    """click's test runner turns CRLF into LF in ``stdout``, so render directly here."""
    from ckptlint.api import settings_for
    from ckptlint.lint.linter import FileLinter

    path = project / "crlf.py"
    result = FileLinter().lint(str(path), path.read_bytes(), settings_for(), gate=False)
    [d] = result.diagnostics
    assert (d.start, d.end) == ((3, 5), (3, 21))
    ctx = OutputContext(cwd=project, env={}, sources={str(path): result.source.text})
    for name in FORMATS:
        text = renderer(name)([d], ctx)
        assert "\r" not in text, name
    assert "3 | y = checkpoint(f, x)  # trailing\n  |     ^^^^^^^^^^^^^^^^\n" in renderer("full")([d], ctx)


def test_junit_stays_well_formed_with_control_characters(tmp_path: Path) -> None:
    # a quoted guard condition or a file name can carry characters XML 1.0 cannot hold
    d = Diagnostic("CKP203", "runs only when `mode == '\x1b[31m'`", str(tmp_path / "a\x01b.py"), (2, 1), (2, 5))
    text = renderer("junit")([d], OutputContext(cwd=tmp_path, env={}))
    root = ET.fromstring(text.split("\n", 1)[1])
    failure = root.find("testsuite/testcase/failure")
    assert failure is not None and failure.get("message") == "runs only when `mode == '\\x1b[31m'`"
    assert root.find("testsuite").get("name") == "a\\x01b.py"

"""A stream that cannot encode a character never loses the report: what its encoding cannot
hold is escaped as the format allows (text ``\\u2192``, JSON ``\\u2192``, XML ``&#8594;``),
in every format, on stdout and on stderr (ruff always writes its report)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import quote

import pytest
from click.testing import CliRunner

from ckptlint.cli.app import main
from ckptlint.output import FORMATS

NAME = "mödel_中.py"
SOURCE = (
    "from torch.utils.checkpoint import checkpoint\n"
    "# → 中文 ✓\n"
    "y = checkpoint(f, x)  # 中文 →\n"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / NAME).write_text(SOURCE, encoding="utf-8")
    return tmp_path


def _run_ascii(project: Path, *args: str) -> tuple[int, bytes]:
    """Run in this process with a stdout whose encoding is ASCII (errors ``strict``, as
    ``PYTHONIOENCODING=ascii`` gives); returns the exit status and the bytes written."""
    runner = CliRunner(charset="ascii")
    old = os.getcwd()
    os.chdir(project)
    try:
        result = runner.invoke(main, ["--no-cache", *args], catch_exceptions=False)
    finally:
        os.chdir(old)
    assert "UnicodeEncodeError" not in result.stderr
    return result.exit_code, result.stdout_bytes


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_format_is_written_whole_to_an_ascii_stdout(project: Path, fmt: str) -> None:
    code, out = _run_ascii(project, "--output-format", fmt, ".")
    assert code == 1
    text = out.decode("ascii")  # nothing but ASCII was written
    if fmt in ("json", "gitlab"):
        assert NAME in json.dumps(json.loads(text), ensure_ascii=False)  # the escapes read back
    elif fmt == "sarif":  # URIs are percent-encoded; the messages' text is escaped
        assert quote(NAME) in json.dumps(json.loads(text))
    elif fmt == "json-lines":
        assert json.loads(text.splitlines()[0])["filename"].endswith(NAME)
    elif fmt == "junit":
        names = [suite.get("name") for suite in ET.fromstring(text.split("\n", 1)[1]).iter("testsuite")]
        assert names == [NAME]
    else:
        assert "m\\xf6del_\\u4e2d.py" in text
    if fmt == "full":  # the source lines shown, escaped as Python writes them
        assert "y = checkpoint(f, x)  # \\u4e2d\\u6587 \\u2192" in text


@pytest.mark.parametrize(
    "args",
    [
        ("--diff", "--unsafe-fixes", "."),
        ("--statistics", "--output-format", "json", "."),
        ("--show-sites", "--output-format", "json", "."),
        ("--explain", "CKP001", "--output-format", "json"),
        ("--list-rules", "--output-format", "json"),
    ],
)
def test_other_reports_are_written_to_an_ascii_stdout(project: Path, args: tuple[str, ...]) -> None:
    code, out = _run_ascii(project, *args)
    assert code in (0, 1)
    text = out.decode("ascii")
    if "json" in args:
        json.loads(text)
    else:
        assert "+y = checkpoint(f, x, use_reentrant=False)  # \\u4e2d\\u6587 \\u2192" in text


@pytest.mark.slow
@pytest.mark.parametrize("encoding", ["ascii:strict", "cp1252"])
def test_a_real_process_with_a_narrow_encoding_writes_its_report_and_errors(project: Path, encoding: str) -> None:
    """``PYTHONIOENCODING`` as a cp1252 console or a pipe in an ASCII locale sets it: the
    report on stdout with exit status 1 (findings); an error line on stderr, exit 2."""
    env = {**os.environ, "PYTHONIOENCODING": encoding}

    def run(*args: str) -> subprocess.CompletedProcess[bytes]:
        command = [sys.executable, "-m", "ckptlint", "--no-cache", *args]
        return subprocess.run(command, cwd=project, env=env, capture_output=True, timeout=120)

    result = run("--output-format", "full", ".", "missing→.py")
    assert result.returncode == 1, result.stderr
    stdout = result.stdout.decode(encoding.split(":")[0])
    assert "  # \\u4e2d\\u6587 \\u2192" in stdout
    assert "--> missing\\u2192.py:1:1" in stdout
    assert result.stderr == b""
    (project / "conf→.toml").write_text("bogus = 1\n", encoding="utf-8")
    result = run("--config", "conf→.toml", ".")
    assert result.returncode == 2
    # click writes to a stream it takes as misconfigured (ASCII) in UTF-8; cp1252 is escaped
    name = "conf→.toml" if encoding.startswith("ascii") else "conf\\u2192.toml"
    assert result.stderr.decode("utf-8").startswith(f"error: {name}: unknown key `bogus`")

"""The parse modes (ckptlint.semantic.project.parse_mode): ``sites``, the default, parses the
linted file partially only when its sites need less than half of it, and the modules regions
reach whole; ``partial`` parses reached modules partially too; ``whole`` parses everything
whole. The output is the same in every mode."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from test_partial_parsing import _output, _tree

from ckptlint import perf
from ckptlint.lint import linter, task
from ckptlint.semantic import index
from ckptlint.semantic.project import Project, parse_mode

SITE = """\
    from torch import nn
    from torch.utils.checkpoint import checkpoint


    class Counted(nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0

        def body(self, x):
            self.calls += 1
            return x * 2

        def forward(self, x):
            return checkpoint(self.body, x)
"""

UNRELATED = """\


    def helper_{n}(x):
        y = x + {n}
        y = y * 2
        y = y - 1
        return y
"""


def _run(monkeypatch: pytest.MonkeyPatch, mode: str, files: list[Path]) -> tuple[list, dict]:
    monkeypatch.setenv("CKPTLINT_PARSE", mode)
    index._CACHE.clear()
    before = perf.snapshot()
    out = _output(files)
    return out, perf.delta(before)


@pytest.mark.parametrize(
    ("env", "mode"),
    [({}, "sites"), ({"CKPTLINT_PARSE": "partial"}, "partial"), ({"CKPTLINT_PARSE": "whole"}, "whole"),
     ({"CKPTLINT_PARSE": "bogus"}, "sites"), ({"CKPTLINT_PARSE": "partial", "CKPTLINT_WHOLE_PARSE": "1"}, "whole")],
)
def test_the_mode_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch, env: dict, mode: str) -> None:
    monkeypatch.delenv("CKPTLINT_PARSE", raising=False)
    monkeypatch.delenv("CKPTLINT_WHOLE_PARSE", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert parse_mode() == mode
    project = Project()
    assert (project.partial, project.partial_reached) == {"sites": (True, False), "partial": (True, True), "whole": (False, False)}[mode]


def test_reached_modules_are_parsed_whole_by_default_with_the_same_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CKPTLINT_WHOLE_PARSE", raising=False)
    files = _tree(tmp_path)
    whole, _ = _run(monkeypatch, "whole", files)
    few, few_counts = _run(monkeypatch, "sites", files)  # one file to lint: the pre-commit case
    monkeypatch.setattr(task, "FEW_FILES", 0)  # as in a run of many files
    sites, counts = _run(monkeypatch, "sites", files)
    partial, partial_counts = _run(monkeypatch, "partial", files)
    assert sites == whole == partial == few
    assert any(row[1].endswith("layers.py") for row in whole if row[0] != "problem")  # a finding in a reached module
    assert counts.get("files_parsed_partial", 0) == 0  # model.py's site class is most of it; layers.py reached
    assert few_counts.get("files_parsed_partial", 0) > 0  # layers.py, for the names model.py asks for
    assert partial_counts.get("files_parsed_partial", 0) > 0


def test_a_large_file_with_a_small_site_is_parsed_partially_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CKPTLINT_WHOLE_PARSE", raising=False)
    source = textwrap.dedent(SITE) + "".join(textwrap.dedent(UNRELATED).format(n=n) for n in range(12))
    path = tmp_path / "model.py"
    path.write_text(source, encoding="utf-8")
    _, counts = _run(monkeypatch, "sites", [path])
    assert counts.get("files_parsed_partial", 0) == 0  # under MIN_PARTIAL_LINES: no index, parsed whole
    monkeypatch.setattr(linter, "MIN_PARTIAL_LINES", 50)
    whole, _ = _run(monkeypatch, "whole", [path])
    sites, counts = _run(monkeypatch, "sites", [path])
    assert sites == whole and {row[0] for row in whole} == {"CKP001", "CKP202"}
    assert counts.get("files_parsed_partial") == 1 and counts.get("files_parsed_whole", 0) == 0
    # the same file with the site class as most of it is parsed whole
    small = tmp_path / "small.py"
    small.write_text(textwrap.dedent(SITE) + textwrap.dedent(UNRELATED).format(n=0), encoding="utf-8")
    _, counts = _run(monkeypatch, "sites", [small])
    assert counts.get("files_parsed_partial", 0) == 0 and counts.get("files_parsed_whole") == 1


def test_a_short_file_of_long_data_lines_is_parsed_partially(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Five 33,000-element list lines and one checkpoint call (0.5 MiB): few lines, but the
    statements the site needs are a few hundred characters of it; parsed whole, libcst took
    about 20 s and 700 MB for it."""
    monkeypatch.delenv("CKPTLINT_WHOLE_PARSE", raising=False)
    data = "y = [" + ", ".join(["1"] * 33_000) + "]\n"
    source = "from torch.utils.checkpoint import checkpoint\n" + data * 5 + "def f(block, x):\n    return checkpoint(block, x)\n"
    assert len(source) > linter.MIN_PARTIAL_CHARS and source.count("\n") < linter.MIN_PARTIAL_LINES
    path = tmp_path / "model.py"
    path.write_text(source, encoding="utf-8")
    sites, counts = _run(monkeypatch, "sites", [path])
    assert [row[0] for row in sites] == ["CKP001"]
    assert counts.get("files_parsed_partial") == 1 and counts.get("files_parsed_whole", 0) == 0
    assert counts.get("chars_parsed", 0) < 1_000  # the import and the function, not the data


def test_a_fix_is_checked_by_cpythons_parser_not_a_whole_libcst_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    from ckptlint.semantic import parse
    from ckptlint.text.source import SourceFile

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("libcst parsed the whole fixed file")

    monkeypatch.setattr(parse, "parse_source", refuse)
    before = SourceFile("m.py", "f(x)\n")
    assert not linter._does_not_parse(SourceFile("m.py", "f(x, use_reentrant=False)\n"), before)
    assert linter._does_not_parse(SourceFile("m.py", "f(x, use_reentrant=False\n"), before)

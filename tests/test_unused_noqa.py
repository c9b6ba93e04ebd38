"""CKP901 unused-noqa: judged after every rule ran and noqa filtering marked what was used."""

from __future__ import annotations

from pathlib import Path

from ckptlint.api import fix_source, lint_source
from ckptlint.config.settings import default_enabled
from ckptlint.lint.linter import FileLinter
from ckptlint.testing import located

IMPORT = "from torch.utils.checkpoint import checkpoint\n"


def test_not_enabled_by_default_like_ruff_rule_100() -> None:
    assert "CKP901" not in default_enabled()
    assert "CKP001" in default_enabled()
    assert lint_source(IMPORT + "checkpoint(f, x, use_reentrant=False)  # noqa: CKP001\n") == []


def test_reports_the_unused_code_at_the_directive() -> None:
    text = IMPORT + "checkpoint(f, x, use_reentrant=False)  # noqa: CKP001\n"
    [d] = lint_source(text, select=["CKP001", "CKP901"])
    assert (d.code, d.start, d.end) == ("CKP901", (2, 40), (2, 54))
    assert d.message == "Unused `noqa` directive (unused: `CKP001`)"
    assert d.fix is not None and d.fix.applicability.value == "safe"
    assert fix_source(text, select=["CKP001", "CKP901"]) == IMPORT + "checkpoint(f, x, use_reentrant=False)\n"


def test_a_used_directive_is_not_reported() -> None:
    assert located(IMPORT + "checkpoint(f, x)  # noqa: CKP001\n", ["CKP001", "CKP901"]) == []


def test_foreign_codes_are_kept_and_never_judged() -> None:
    text = IMPORT + "checkpoint(f, x, use_reentrant=False)  # noqa: E501, CKP001, F401\n"
    assert [c[1] for c in located(text, ["CKP001", "CKP901"])] == ["CKP901"]
    assert fix_source(text, select=["CKP001", "CKP901"]) == (
        IMPORT + "checkpoint(f, x, use_reentrant=False)  # noqa: E501, F401\n"
    )
    assert located("x = 1  # noqa: E501\n", ["CKP001", "CKP901"]) == []


def test_only_the_unused_codes_are_removed() -> None:
    text = IMPORT + "checkpoint(f, x)  # noqa: CKP001, CKP999\n"
    [(row, code, message)] = located(text, ["CKP001", "CKP999", "CKP901"], messages=True)
    assert (code, row, message) == ("CKP901", 2, "Unused `noqa` directive (unused: `CKP999`)")
    assert fix_source(text, select=["CKP001", "CKP999", "CKP901"]) == IMPORT + "checkpoint(f, x)  # noqa: CKP001\n"


def test_a_disabled_rules_noqa_is_not_unused() -> None:
    text = IMPORT + "checkpoint(f, x, use_reentrant=False)  # noqa: CKP001\n"
    assert located(text, ["CKP901"]) == []
    assert lint_source(text, select=["CKP001", "CKP901"], ignore=["CKP001"]) == []


def test_per_file_ignores_make_a_rule_disabled_for_the_file(tmp_path: Path) -> None:
    from dataclasses import replace

    from ckptlint.api import settings_for

    settings = replace(settings_for(["CKP001", "CKP901"]), root=tmp_path, per_file_ignores=(("legacy/*", ("CKP001",)),))
    text = (IMPORT + "checkpoint(f, x, use_reentrant=False)  # noqa: CKP001\n").encode()
    ignored = FileLinter().lint(str(tmp_path / "legacy" / "a.py"), text, settings, gate=False)
    judged = FileLinter().lint(str(tmp_path / "new" / "a.py"), text, settings, gate=False)
    assert ignored.diagnostics == []
    assert [d.code for d in judged.diagnostics] == ["CKP901"]


def test_blanket_and_file_level_noqa_are_not_judged() -> None:
    assert located(IMPORT + "checkpoint(f, x, use_reentrant=False)  # noqa\n", ["CKP001", "CKP901"]) == []
    assert located(
        "# ckptlint: noqa: CKP001\n" + IMPORT + "checkpoint(f, x, use_reentrant=False)\n", ["CKP001", "CKP901"]
    ) == []


def test_a_file_that_does_not_parse_is_not_judged() -> None:
    text = IMPORT + "checkpoint(f, x  # noqa: CKP001\n"
    assert [c[1] for c in located(text, ["CKP001", "CKP999", "CKP901"])] == ["CKP999"]


def test_noqa_for_ckp901_itself_suppresses_it() -> None:
    assert located(IMPORT + "checkpoint(f, x, use_reentrant=False)  # noqa: CKP001, CKP901\n", ["CKP001", "CKP901"]) == []


def test_other_comment_text_is_kept_and_the_line_parses() -> None:
    select = ["CKP001", "CKP901"]
    base = IMPORT + "checkpoint(f, x, use_reentrant=False)"
    assert fix_source(base + "  # noqa: CKP001 # type: ignore\n", select=select) == base + "  # type: ignore\n"
    assert fix_source(base + "  # noqa: CKP001 kept for later\n", select=select) == base + "  # kept for later\n"
    assert fix_source(base + "  # type: ignore  # noqa: CKP001\n", select=select) == base + "  # type: ignore\n"


def test_crlf_line_endings_are_kept() -> None:
    text = (IMPORT + "checkpoint(f, x, use_reentrant=False)  # noqa: CKP001\n").replace("\n", "\r\n")
    fixed = fix_source(text, select=["CKP001", "CKP901"])
    assert fixed == (IMPORT + "checkpoint(f, x, use_reentrant=False)\n").replace("\n", "\r\n")


def test_cli_fix_removes_unused_directives(tmp_path: Path, write, run_cli) -> None:
    path = write(
        "a.py", IMPORT + "checkpoint(f, x)  # noqa: CKP001\ncheckpoint(f, y, use_reentrant=True)  # noqa: CKP001\n"
    )
    result = run_cli("--isolated", "--extend-select", "CKP901", "a.py")
    assert result.stdout.splitlines()[0] == "a.py:3:39: CKP901 [*] Unused `noqa` directive (unused: `CKP001`)"
    fixed = run_cli("--isolated", "--extend-select", "CKP901", "--fix", "a.py")
    assert fixed.exit_code == 0
    assert fixed.stdout == "Found 1 error (1 fixed, 0 remaining).\n"
    assert path.read_text() == IMPORT + "checkpoint(f, x)  # noqa: CKP001\ncheckpoint(f, y, use_reentrant=True)\n"


LAYERS = """\
from torch import nn

STEPS = 0


class Block(nn.Module):
    def forward(self, x):
        global STEPS
        STEPS += 1  # noqa: CKP202
        return x.relu()  # not a plain `return x`: with that, early stop ends the recompute first
"""
MODEL = """\
from torch.utils.checkpoint import checkpoint
from pkg.layers import Block


def run(x):
    return checkpoint(Block(), x, use_reentrant=False)  # noqa: CKP001
"""


def test_a_directive_used_by_a_finding_reported_from_another_file_is_kept(tmp_path: Path, write, run_cli) -> None:
    """CKP202 is reported in layers.py while linting model.py (whose checkpoint recomputes
    Block.forward); the noqa in layers.py is used, although linting layers.py alone never
    needs it."""
    write("pkg/__init__.py", "")
    layers = write("pkg/layers.py", LAYERS)
    model = write("pkg/model.py", MODEL)
    for jobs in ("1", "2"):
        report = run_cli("--isolated", "--extend-select", "CKP901", "-j", jobs, "pkg")
        assert report.stdout.splitlines() == [
            "pkg/model.py:6:57: CKP901 [*] Unused `noqa` directive (unused: `CKP001`)",
            "Found 1 error.",
            "[*] 1 fixable with the `--fix` option.",
        ]
    fixed = run_cli("--isolated", "--extend-select", "CKP901", "--fix", "pkg")
    assert fixed.exit_code == 0, fixed.stdout
    assert layers.read_text() == LAYERS
    assert model.read_text() == MODEL.replace("  # noqa: CKP001", "")
    # Alone, layers.py cannot know: there the directive is reported (a documented limit).
    alone = run_cli("--isolated", "--extend-select", "CKP901", "pkg/layers.py")
    assert alone.stdout.startswith("pkg/layers.py:9:21: CKP901 [*] Unused `noqa` directive (unused: `CKP202`)\n")

"""A fix never corrupts a file: a fix that breaks the code, or does not converge, is refused
(nothing written, exit 2, the rule named); writes are atomic and keep the file's bytes
around the edit; a file changed on disk since it was read is not overwritten."""

from __future__ import annotations

import os

import pytest

from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.lint import run as lint_run
from ckptlint.rules import ALL_RULES
from ckptlint.rules.base import Rule, RuleContext
from ckptlint.text import fixer
from ckptlint.text.diagnostics import Applicability, Edit

IMPORT = "from torch.utils.checkpoint import checkpoint\n"
CALL = IMPORT + "y = checkpoint(f, x)\n"
FIXED = IMPORT + "y = checkpoint(f, x, use_reentrant=False)\n"


class _EditsEveryCall(Rule):
    """A test-only rule standing in for CKP001: reports each call to ``checkpoint`` with a
    safe fix made of ``EDIT`` (text put before the closing parenthesis)."""

    code = "CKP001"
    EDIT = ""

    def check(self, ctx: RuleContext) -> None:
        for site in ast_site_index(ctx.analysis).sites:
            end = ctx.analysis.range(site.call)[1]
            before_paren = (end[0], end[1] - 1)
            fix = ctx.fix(Applicability.SAFE, "test", Edit(before_paren, before_paren, self.EDIT))
            ctx.report(site.call, "test finding", fix=fix)


def _rule(edit: str) -> type[Rule]:
    return type("TestRule", (_EditsEveryCall,), {"EDIT": edit})


def test_a_fix_that_breaks_the_syntax_is_refused(run_cli, write, monkeypatch):
    monkeypatch.setitem(ALL_RULES, "CKP001", _rule(", (("))
    bad = write("bad.py", CALL)
    write("other.py", "x = 1\n")
    result = run_cli(".", "--fix")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: {bad.name}: internal error: the fix for CKP001 produced code that does not parse "
        "('(' was never closed, line 2); file left unchanged"
    ]
    assert bad.read_text() == CALL
    assert "bad.py:2:5: CKP001 [*] test finding" in result.stdout  # still reported, unfixed


def test_a_hard_linked_file_whose_fix_breaks_it_is_not_written(run_cli, write, monkeypatch, tmp_path):
    """A hard-linked file is written in place, after the same parse/compile checks."""
    monkeypatch.setitem(ALL_RULES, "CKP001", _rule(", (("))
    bad = write("bad.py", CALL)
    os.link(bad, tmp_path / "link.py")
    result = run_cli("bad.py", "--fix")
    assert result.exit_code == 2 and result.stderr.endswith("file left unchanged\n")
    assert bad.read_text() == CALL == (tmp_path / "link.py").read_text()


def test_a_fix_that_only_cpython_rejects_is_refused(run_cli, write, monkeypatch):
    """libcst parses a repeated keyword argument; CPython's compiler does not."""
    monkeypatch.setitem(ALL_RULES, "CKP001", _rule(", x=1, x=2"))
    bad = write("bad.py", CALL)
    result = run_cli("bad.py", "--fix")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: {bad.name}: internal error: the fix for CKP001 produced code that does not compile "
        "(keyword argument repeated: x, line 2); file left unchanged"
    ]
    assert bad.read_text() == CALL


def test_a_fixed_finding_that_comes_back_is_refused(run_cli, write, monkeypatch):
    """The fix keeps adding an argument and the rule keeps reporting: no fixpoint."""
    monkeypatch.setitem(ALL_RULES, "CKP001", _rule(", 0"))
    bad = write("bad.py", CALL)
    result = run_cli("bad.py", "--fix")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: {bad.name}: internal error: the fix for CKP001 produced code that does not converge "
        f"(findings still fixable after {fixer.MAX_PASSES} passes); file left unchanged"
    ]
    assert bad.read_text() == CALL


def test_nested_calls_are_fixed_in_one_run_and_a_second_run_changes_nothing(run_cli, write):
    path = write("m.py", IMPORT + "y = checkpoint(f, checkpoint(g, checkpoint(h, x)))\n")
    first = run_cli("m.py", "--fix", "--unsafe-fixes")
    assert (first.exit_code, first.stderr) == (0, "")
    fixed = path.read_bytes()
    assert fixed.decode() == IMPORT + (
        "y = checkpoint(f, checkpoint(g, checkpoint(h, x, use_reentrant=False), use_reentrant=False), "
        "use_reentrant=False)\n"
    )
    second = run_cli("m.py", "--fix", "--unsafe-fixes")
    assert second.exit_code == 0 and path.read_bytes() == fixed


def test_a_file_changed_on_disk_since_it_was_read_is_not_written(run_cli, write, monkeypatch):
    path = write("m.py", CALL)
    lint_files = lint_run.lint_files

    def edit_while_linting(*args, **kwargs):
        run = lint_files(*args, **kwargs)
        path.write_text(CALL + "# edited by someone else\n")
        return run

    monkeypatch.setattr(lint_run, "lint_files", edit_while_linting)
    result = run_cli("m.py", "--fix", "--unsafe-fixes")
    assert (result.exit_code, result.stderr) == (1, "")
    assert "m.py:1:1: CKP902 changed on disk while ckptlint ran; fixes not written" in result.stdout
    assert "m.py:2:5: CKP001" in result.stdout  # reported as read, not counted as fixed
    assert "fixed" not in result.stdout
    assert path.read_text() == CALL + "# edited by someone else\n"


def test_a_failed_write_leaves_the_original_and_no_temporary_file(run_cli, write, monkeypatch, tmp_path):
    path = write("m.py", CALL)

    def replace(source, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", replace)
    result = run_cli("m.py", "--fix", "--unsafe-fixes")
    assert (result.exit_code, result.stderr) == (1, "")
    assert "m.py:1:1: CKP902 cannot write the fixed file: No space left on device; fixes not written" in result.stdout
    assert path.read_text() == CALL
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.py"]


def test_the_write_is_a_synced_temporary_file_renamed_in_the_same_folder(write, monkeypatch, tmp_path):
    path = write("m.py", CALL)
    path.chmod(0o751)
    calls: list[tuple[str, str]] = []
    fsync, replace = os.fsync, os.replace

    def record_fsync(fd):
        calls.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        return fsync(fd)

    def record_replace(source, target):
        calls.append(("replace", os.fspath(source)))
        assert os.stat(source).st_mode & 0o777 == 0o751  # permissions set before the rename
        return replace(source, target)

    monkeypatch.setattr(os, "fsync", record_fsync)
    monkeypatch.setattr(os, "replace", record_replace)
    fixer.write_atomically(path, FIXED.encode(), expected=CALL.encode())
    [(first, synced), (second, renamed)] = calls
    assert (first, second) == ("fsync", "replace")
    assert synced == renamed and os.path.dirname(renamed) == str(tmp_path)
    assert path.read_text() == FIXED and path.stat().st_mode & 0o777 == 0o751


def test_fixing_through_a_symbolic_link_keeps_the_link(run_cli, write, tmp_path):
    target = write("real/m.py", CALL)
    link = tmp_path / "m.py"
    link.symlink_to(target)
    result = run_cli("m.py", "--fix", "--unsafe-fixes")
    assert (result.exit_code, result.stderr) == (0, "")
    assert link.is_symlink() and target.read_text() == FIXED


@pytest.mark.parametrize(
    ("raw", "after"),
    [
        pytest.param(
            b"# -*- coding: latin-1 -*-\n" + IMPORT.encode() + b"y = checkpoint(\n    f,  # \xe9t\xe9\n    x\n)\n",
            b"# -*- coding: latin-1 -*-\n"
            + IMPORT.encode()
            + b"y = checkpoint(\n    f,  # \xe9t\xe9\n    x,\n    use_reentrant=False\n)\n",
            id="latin-1-multi-line",
        ),
        pytest.param(
            IMPORT.encode() + b"y = checkpoint(f, x)\r",
            IMPORT.encode() + b"y = checkpoint(f, x, use_reentrant=False)\r",
            id="old-mac-line-end",
        ),
        pytest.param(
            b"\xef\xbb\xbf" + IMPORT.encode().replace(b"\n", b"\r\n") + b"y = checkpoint(\r\n    f, x,\r\n)",
            b"\xef\xbb\xbf"
            + IMPORT.encode().replace(b"\n", b"\r\n")
            + b"y = checkpoint(\r\n    f, x, use_reentrant=False,\r\n)",
            id="bom-crlf-no-final-newline",
        ),
    ],
)
def test_fixed_bytes(run_cli, write, raw, after):
    path = write("m.py", raw)
    result = run_cli("m.py", "--fix", "--unsafe-fixes")
    assert (result.exit_code, result.stderr) == (0, "")
    assert path.read_bytes() == after
    assert run_cli("m.py", "--fix", "--unsafe-fixes").exit_code == 0
    assert path.read_bytes() == after


@pytest.mark.parametrize("tail", ["", "def broken(:\n"], ids=["fixed", "syntax-error"])
def test_the_linted_codes_warnings_are_not_shown(tail):
    """CPython warns about the code it compiles (``is not`` with a literal, invalid escapes);
    those are the linted code's business, not ckptlint's output."""
    import warnings

    from ckptlint.api import settings_for
    from ckptlint.lint.linter import FileLinter
    from ckptlint.lint.results import FixMode

    text = IMPORT + 'if x is not "":\n    y = checkpoint(f, x)\nz = "\\d"\n' + "w = 1\n" * 100 + tail
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = FileLinter().lint(
            "m.py", text.encode(), settings_for(["ALL"]), fix=FixMode.APPLY, unsafe=True, gate=False
        )
    assert result.problems == []
    assert [str(w.message) for w in caught] == []
    assert (result.fixed == 1) is (tail == "")

"""Regression tests for what a first-time user trial of the reliability (issue 14), notebook and
language server (issue 16) and runtime v2 (issue 15) features found broken."""

from __future__ import annotations

import json

import nbformat
import pytest

IMPORT = "from torch.utils.checkpoint import checkpoint\n"


def _nb(*sources: str) -> str:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    for i, cell in enumerate(nb.cells):
        cell.id = f"c{i}"
    return nbformat.writes(nb) + "\n"


@pytest.mark.parametrize(
    "other",
    [
        "%%bash\necho checkpoint\n",  # a whole non-Python cell ending in a newline
        "!pip install torch \\\n",  # a masked continuation as the cell's last line
    ],
)
@pytest.mark.parametrize("mode", ["--fix", "--add-noqa"])
def test_writing_a_notebook_leaves_unfixed_masked_cells_alone(run_cli, write, other, mode) -> None:
    # a fix (or noqa) in one cell must not add an empty line to a masked cell that ends in "\n"
    path = write("nb.ipynb", _nb(IMPORT + "def f(m, x):\n    return checkpoint(m, x)\n", other))
    before = json.loads(path.read_text())
    result = run_cli("--isolated", "--no-cache", mode, "--unsafe-fixes", "nb.ipynb")
    assert result.exit_code == 0, result.stdout + result.stderr
    after = json.loads(path.read_text())
    assert after["cells"][1] == before["cells"][1]
    assert after["cells"][0] != before["cells"][0]
    nbformat.validate(nbformat.reads(path.read_text(), as_version=4))


def test_valid_python_libcst_cannot_parse_is_not_a_syntax_error(run_cli, write) -> None:
    # CPython parses 5,000 implicitly concatenated string literals; libcst 1.9.0 stops near
    # 4,000: the file was not checked (CKP902), it is not a syntax error (CKP999)
    body = IMPORT + "y = checkpoint(f, x)\nx = " + " ".join(['"a"'] * 5000) + "\n"
    compile(body, "m.py", "exec")
    write("m.py", body)
    result = run_cli("--isolated", "--no-cache", "m.py")
    assert result.exit_code == 1
    assert "CKP999" not in result.stdout
    assert result.stdout.startswith("m.py:1:1: CKP902 libcst cannot parse this file, which Python parses (")
    # a real syntax error stays CKP999
    write("bad.py", IMPORT + "y = checkpoint(f, x)\nx = (\n")
    bad = run_cli("--isolated", "--no-cache", "bad.py")
    assert bad.stdout.startswith("bad.py:3:5: CKP999 Syntax error: ")


def test_statistics_prints_no_marker_when_nothing_is_fixable(run_cli, write) -> None:
    # ruff 0.17: `2\tF841\tunused-variable` without --unsafe-fixes (no marker column at all),
    # `[ ]` only beside rows of a table where some other rule is fixable
    write("m.py", "a = model.gradient_checkpointing_enable()\nb = model.gradient_checkpointing_enable()\n")  # unsafe fixes only
    plain = run_cli("--isolated", "--no-cache", "--statistics", "m.py")
    assert plain.stdout.splitlines()[0] == "2\tCKP001\tcheckpoint-without-use-reentrant"
    unsafe = run_cli("--isolated", "--no-cache", "--statistics", "--unsafe-fixes", "m.py")
    assert unsafe.stdout.splitlines()[0] == "2\tCKP001\t[*] checkpoint-without-use-reentrant"
    write("n.py", IMPORT + "c = checkpoint(f, x, debug=True)\nd = checkpoint(f, x, preserve_rng_state=False, use_reentrant=False)\n")
    mixed = run_cli("--isolated", "--no-cache", "--statistics", "n.py")
    lines = mixed.stdout.splitlines()
    assert "1\tCKP001\t[*] checkpoint-without-use-reentrant" in lines
    assert "1\tCKP101\t[ ] rng-state-not-preserved" in lines


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("value", ["inf", "1e300", "1e6"])
def test_file_timeout_inf_or_huge_is_no_limit(run_cli, write, value, jobs) -> None:
    # was: a traceback from setitimer (OverflowError), exit 1
    write("m.py", IMPORT + "y = checkpoint(f, x)\n")
    write("n.py", IMPORT + "y = checkpoint(f, x)\n")
    result = run_cli("--isolated", "--no-cache", "-j", jobs, "--file-timeout", value, "m.py", "n.py")
    assert result.exit_code == 1
    assert result.stdout.startswith("m.py:2:5: CKP001 ")
    assert "Found 2 errors." in result.stdout


def test_file_timeout_nan_is_a_usage_error(run_cli, write) -> None:
    write("m.py", IMPORT + "y = checkpoint(f, x)\n")
    result = run_cli("--isolated", "--no-cache", "--file-timeout", "nan", "m.py")
    assert result.exit_code == 2
    assert "nan is not a number of seconds" in result.stderr


def test_own_flag_set_by_enable_is_not_a_difference() -> None:
    # README: "your own flag" is turned on by a callable; the flag itself differed between the
    # two copies and was reported as a CKP202 side effect (a false failure)
    torch = pytest.importorskip("torch")
    from torch import nn
    from torch.utils.checkpoint import checkpoint

    from ckptlint.runtime import (
        assert_checkpointing_equivalent,
        check_checkpointing_equivalent,
    )

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.2)) for _ in range(2))
            self.use_checkpoint = False
            self.steps = 0

        def forward(self, x):
            for block in self.blocks:
                x = checkpoint(block, x, use_reentrant=False) if self.use_checkpoint else block(x)
            return x

    def on(model: nn.Module) -> None:
        model.use_checkpoint = True

    torch.manual_seed(0)
    report = assert_checkpointing_equivalent(Model().train(), torch.randn(4, 8), enable=on)
    assert report.results[0].recomputations == {"blocks.0": 1, "blocks.1": 1}
    assert "not compared, set by enable: Model.use_checkpoint" in report.notes

    class Counting(Model):
        def forward(self, x):
            def body(h):
                self.steps += 1  # a real side effect in the region: still reported
                return self.blocks[0](h)

            return checkpoint(body, x, use_reentrant=False) if self.use_checkpoint else body(x)

    bad = check_checkpointing_equivalent(Counting().train(), torch.randn(4, 8, requires_grad=True), enable=on)
    assert not bad.ok
    names = [d.name for d in bad.results[0].differences]
    assert "attribute Counting.steps" in names
    assert "attribute Counting.use_checkpoint" not in names


def test_add_noqa_never_writes_through_a_link_out_of_the_tree(run_cli, tmp_path) -> None:
    # README: --add-noqa prints an error for such a file and exits 2; the target is untouched
    (tmp_path / "outside").mkdir()
    (tmp_path / "proj").mkdir()
    target = tmp_path / "outside" / "y.py"
    target.write_text(IMPORT + "y = checkpoint(f, x)\n")
    (tmp_path / "proj" / "link.py").symlink_to(target)
    (tmp_path / "proj" / "own.py").write_text(IMPORT + "y = checkpoint(f, x)\n")
    result = run_cli("--isolated", "--no-cache", "--add-noqa", ".", cwd=tmp_path / "proj")
    assert result.exit_code == 2
    assert "outside the paths given; not written" in result.stderr
    assert target.read_text() == IMPORT + "y = checkpoint(f, x)\n"
    assert (tmp_path / "proj" / "own.py").read_text().endswith("# noqa: CKP001\n")


@pytest.mark.parametrize("fix", [(), ("--fix",)])
def test_full_output_shows_ipython_lines_as_written(run_cli, write, fix) -> None:
    # README: `full` shows the cell's own lines; it showed the mask `pass  # ckptlint-ipython: 0`
    cell = "%%time\nw = model.gradient_checkpointing_enable()\nz = checkpoint(f, 1, debug=True)\n"  # w: an unsafe fix only
    write("nb.ipynb", _nb(IMPORT, cell))
    result = run_cli("--isolated", "--no-cache", "--output-format", "full", *fix, "nb.ipynb")
    assert result.exit_code == 1
    assert " --> nb.ipynb:cell 2:2:5\n" in result.stdout
    assert "1 | %%time\n" in result.stdout
    assert "ckptlint-ipython" not in result.stdout


def test_fix_keeps_upper_case_escapes_of_a_colab_notebook(run_cli, write) -> None:
    # Colab (and stable-diffusion's scripts/latent_imagenet_diffusion.ipynb) write `\u001B`;
    # Python's json writes `\u001b`: a fix rewrote every escape in the outputs
    nb = json.loads(_nb(IMPORT + "def f(m, x):\n    return checkpoint(m, x)\n"))
    nb["cells"][0]["outputs"] = [
        {"name": "stderr", "output_type": "stream", "text": ["remote: Counting objects: 100%\u001b[K\n", "\\u001b literal\n"]}
    ]
    text = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
    colab = text.replace("\\u001b", "\\u001B").replace("\\\\u001B", "\\\\u001b")
    assert colab.count("\\u001B") == 1 and "\\\\u001b literal" in colab
    path = write("colab.ipynb", colab)
    result = run_cli("--isolated", "--no-cache", "--fix", "--unsafe-fixes", "colab.ipynb")
    assert result.exit_code == 0, result.stdout
    after = path.read_text()
    old = '"    return checkpoint(m, x)\\n"'
    assert colab.count(old) == 1
    assert after == colab.replace(old, '"    return checkpoint(m, x, use_reentrant=False)\\n"')


@pytest.mark.parametrize(
    ("text", "row", "new_line"),
    [
        (IMPORT + 'a = checkpoint(f, """x\ny""")\n', 3, 'y""")  # noqa: CKP001'),
        (IMPORT + "b = checkpoint(f, \\\n    x)\n", 3, "    x)  # noqa: CKP001"),
        (IMPORT + "c = checkpoint(f, x)\n", 2, "c = checkpoint(f, x)  # noqa: CKP001"),
    ],
)
def test_server_disable_for_this_line_uses_the_noqa_line(tmp_path, text, row, new_line) -> None:
    # the server's "Disable CKP001 for this line" replaced the finding's first line by itself
    # (no comment) when that line ends inside a triple-quoted string or with a backslash
    pytest.importorskip("pygls")
    from ckptlint.config.files import CliOverrides, SettingsResolver
    from ckptlint.lint.linter import FileLinter
    from ckptlint.server.lsp import CkptlintLanguageServer, _Lines

    path = tmp_path / "m.py"
    path.write_text(text)
    settings = SettingsResolver(CliOverrides(), cwd=tmp_path).for_path(path)
    (d,) = FileLinter().lint(str(path), text.encode(), settings).diagnostics
    edit = CkptlintLanguageServer._noqa_edit(d, text, _Lines(text))
    assert edit is not None
    assert (edit.range.start.line, edit.range.start.character, edit.range.end.line) == (row - 1, 0, row - 1)
    assert edit.new_text == new_line


@pytest.mark.parametrize("pattern", ["output['cache']", "output['cache']*"])
def test_ignored_outputs_are_left_out_of_the_default_loss(pattern) -> None:
    # like transformers with use_cache=True: only the plain step returns a cache that requires
    # grad; ignoring it must also keep it out of the loss (else every gradient "differs"), and
    # `output['cache']*` (fnmatch reads [...] as a class) must match too
    torch = pytest.importorskip("torch")
    from torch import nn
    from torch.utils.checkpoint import checkpoint

    from ckptlint.runtime import check_checkpointing_equivalent

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.block = nn.Linear(8, 8)
            self.use_checkpoint = False

        def forward(self, x):
            if self.use_checkpoint:
                return {"y": checkpoint(self.block, x, use_reentrant=False)}
            h = self.block(x)
            return {"y": h, "cache": [h * 2]}

    def on(model: nn.Module) -> None:
        model.use_checkpoint = True

    torch.manual_seed(0)
    x = torch.randn(4, 8)
    # an output of one run only is left out of the default loss and named (issue 28)
    unignored = check_checkpointing_equivalent(Model(), x, enable=on)
    assert unignored.ok, str(unignored)
    assert any("output['cache'] (the reference run)" in n for n in unignored.notes)
    report = check_checkpointing_equivalent(Model(), x, enable=on, ignore_outputs=[pattern])
    assert report.ok, str(report)
    assert not any(n.startswith("left out") for n in report.notes)

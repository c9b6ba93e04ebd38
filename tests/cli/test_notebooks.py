"""Jupyter notebooks: discovery, per-cell positions in every output format, noqa in cells,
IPython lines masked, --fix/--diff writing valid notebook JSON back, the cache, --since and
the ``notebooks`` switch.

``cases/notebooks/vit_activation_checkpointing.ipynb`` is a ViT fine-tuning notebook written
after timm's ``VisionTransformer`` (blocks under ``torch.utils.checkpoint`` when
``grad_checkpointing`` is set) and its ``train.py`` loop, with outputs, cell ids, a shell
escape, line and cell magics, and a ``# noqa`` in a cell.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

from ckptlint.text.notebook import Notebook, notebook_source

CASE = Path(__file__).resolve().parents[1] / "cases" / "notebooks" / "vit_activation_checkpointing.ipynb"


NAME = CASE.name


IMPORT = "from torch.utils.checkpoint import checkpoint\n"


def _notebook(*cells: str, **kinds: str) -> str:
    """A minimal nbformat 4 notebook of code cells (``md<i>=text`` puts markdown at ``i``)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    for key, text in kinds.items():
        nb.cells.insert(int(key[2:]), nbformat.v4.new_markdown_cell(text))
    for i, cell in enumerate(nb.cells):
        cell.id = f"c{i}"
    return nbformat.writes(nb)


@pytest.fixture
def case(tmp_path: Path) -> Path:
    target = tmp_path / NAME
    shutil.copyfile(CASE, target)
    return target


def test_real_notebook_findings_are_reported_per_cell(run_cli, case) -> None:
    result = run_cli("--isolated", "--no-cache", ".")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    # CKP103: the region in cell 6 reaches the class defined in cell 5
    assert lines[0].startswith(
        f"{NAME}:cell 5:39:30: CKP103 Python's `random` (`random.random`) in the region recomputed by the "
        f"checkpoint at {NAME}:cell 6:19: "
    )
    assert lines[1].startswith(f"{NAME}:cell 6:19:21: CKP001 `checkpoint()` without `use_reentrant`")
    assert lines[1].endswith(
        "; this code runs only when `self.grad_checkpointing` is true (it defaults to `False`; "
        "set by `set_grad_checkpointing()`) and `self.training`"
    )
    # the checkpoint in cell 10 carries a `noqa: CKP001` directive; shell escapes and magics are no syntax errors
    assert len([line for line in lines if ": CKP" in line]) == 2
    assert result.stderr == ""


def test_noqa_in_a_cell_suppresses_its_line(run_cli, write) -> None:
    write("a.ipynb", _notebook(IMPORT, "y = checkpoint(f, x)  # noqa: CKP001\nz = checkpoint(f, x)\n"))
    result = run_cli("--isolated", "--no-cache", "a.ipynb")
    assert result.stdout.splitlines()[0].startswith("a.ipynb:cell 2:2:5: CKP001 ")
    assert len(result.stdout.splitlines()) == 3  # one finding, two summary lines


def test_json_sarif_github_junit_carry_the_cell(run_cli, case) -> None:
    records = json.loads(run_cli("--isolated", "--no-cache", "--output-format", "json", ".").stdout)
    ckp001 = next(r for r in records if r["code"] == "CKP001")
    assert ckp001["cell"] == 6
    assert ckp001["location"] == {"row": 19, "column": 21}
    assert ckp001["end_location"] == {"row": 19, "column": 39}
    assert ckp001["noqa_row"] == 19
    assert ckp001["fix"]["edits"][0]["location"] == {"row": 19, "column": 38}

    sarif = json.loads(run_cli("--isolated", "--no-cache", "--output-format", "sarif", ".").stdout)
    result = next(r for r in sarif["runs"][0]["results"] if r["ruleId"] == "CKP001")
    assert result["properties"] == {"cell": 6, "cellStart": [19, 21], "cellEnd": [19, 39]}
    assert result["message"]["text"].startswith("cell 6, line 19, column 21: `checkpoint()`")
    assert "fixes" not in result  # regions of a fix would point into the JSON

    github = run_cli("--isolated", "--no-cache", "--output-format", "github", ".").stdout
    assert f"::warning file={NAME},line=1,col=1,endLine=1,endColumn=1,title=ckptlint (CKP001)::cell 6, line 19, column 21: " in github
    summary = case.parent / "summary.md"
    env = {"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "o/r", "GITHUB_SHA": "abc"}
    run_cli("--isolated", "--no-cache", "--output-format", "github", ".", env=env)
    assert f"[{NAME}:cell 6:19](https://github.com/o/r/blob/abc/{NAME}) | CKP001 |" in summary.read_text()

    junit = run_cli("--isolated", "--no-cache", "--output-format", "junit", ".").stdout
    assert 'line="19" column="21"' in junit and ">cell 6, line 19, col 21, `checkpoint()`" in junit

    full = run_cli("--isolated", "--no-cache", "--output-format", "full", ".").stdout
    assert f" --> {NAME}:cell 6:19:21\n" in full
    assert "19 |                 x = checkpoint(blk, x)\n" in full  # the cell's own line numbers

    gitlab = json.loads(run_cli("--isolated", "--no-cache", "--output-format", "gitlab", ".").stdout)
    assert {i["location"]["lines"]["begin"] for i in gitlab} == {1}
    assert all(i["description"].startswith(("CKP001: cell 6, line 19", "CKP103: cell 5, line 39")) for i in gitlab)


def test_fix_writes_back_only_the_changed_line_and_a_valid_notebook(run_cli, case) -> None:
    before = case.read_bytes()
    result = run_cli("--isolated", "--no-cache", "--fix", "--unsafe-fixes", ".")
    assert result.stdout.startswith(f"{NAME}:cell 5:39:30: CKP103 ")
    assert "Found 2 errors (1 fixed, 1 remaining)." in result.stdout
    after = case.read_bytes()
    old_line = b'"                x = checkpoint(blk, x)\\n",'
    new_line = b'"                x = checkpoint(blk, x, use_reentrant=False)\\n",'
    assert before.count(old_line) == 1
    assert after == before.replace(old_line, new_line)
    nb = nbformat.read(case, as_version=nbformat.NO_CONVERT)
    nbformat.validate(nb)
    assert nb.cells[1].source.startswith("!pip install -q timm==1.0.9 \\\n    torchvision\n%load_ext")
    assert nb.cells[7].source.startswith("%%time\n")
    assert nb.cells[7].outputs[0]["name"] == "stderr"  # outputs kept
    # fixed: nothing more to fix, the file stays as it is
    again = run_cli("--isolated", "--no-cache", "--fix", "--unsafe-fixes", ".")
    assert "CKP001" not in again.stdout
    assert case.read_bytes() == after


def test_diff_is_shown_per_cell_and_writes_nothing(run_cli, case) -> None:
    before = case.read_bytes()
    result = run_cli("--isolated", "--no-cache", "--diff", "--unsafe-fixes", ".")
    assert result.exit_code == 1
    assert result.stdout.startswith(f"--- a/{NAME}:cell 6\n+++ b/{NAME}:cell 6\n@@ -16,7 +16,7 @@\n")
    assert "-                x = checkpoint(blk, x)\n+                x = checkpoint(blk, x, use_reentrant=False)\n" in result.stdout
    assert "ckptlint-cell" not in result.stdout
    assert case.read_bytes() == before


def test_round_trip_is_byte_for_byte() -> None:
    text = CASE.read_text(encoding="utf-8")
    notebook = Notebook.loads(text)
    assert notebook.round_trips()
    assert notebook.dumps(notebook.code_text) == text
    source = notebook_source(CASE.read_bytes(), str(CASE))
    assert source.encode(source.text) == CASE.read_bytes()


def test_round_trip_keeps_other_styles() -> None:
    data = json.loads(_notebook("x = 1", "y = 'é'"))
    for text in (json.dumps(data, indent=2), json.dumps(data, indent=4, ensure_ascii=True) + "\n", json.dumps(data)):
        notebook = Notebook.loads(text)
        assert notebook.round_trips(), text[:40]
        changed = notebook.dumps(notebook.code_text.replace("x = 1", "x = 2"))
        assert changed == text.replace("x = 1", "x = 2")


def test_ipython_syntax_is_masked_and_restored() -> None:
    cells = [
        "%matplotlib inline\nimport torch",
        "files = !ls\n!pip install a \\\n   b\nfor i in range(2):\n    %time f(i)\nmodel?",
        "%%bash\necho $HOME\nfor x in a b; do echo $x; done",
        "%%time\ny = 1",
    ]
    text = _notebook(*cells, md1="# Title")
    source = notebook_source(text.encode(), "n.ipynb")
    compile(source.text, "n.ipynb", "exec")  # masked lines are Python
    assert "echo" not in source.text and "y = 1" in source.text
    assert source.cell_of(source.text.splitlines().index("y = 1") + 1) == (5, 2)  # markdown counts
    assert source.encode(source.text) == text.encode()


def test_percent_and_bang_inside_a_statement_are_python() -> None:
    cell = 'x = (a\n     % b)\ns = """\n!important\n"""\n!ls'
    source = notebook_source(_notebook(cell).encode(), "n.ipynb")
    assert source.text.splitlines()[1:6] == ["x = (a", "     % b)", 's = """', "!important", '"""']
    assert source.text.splitlines()[6] == "pass  # ckptlint-ipython: 0"


def test_syntax_error_in_a_cell_is_reported_at_the_cell(run_cli, write) -> None:
    write("bad.ipynb", _notebook(IMPORT, "checkpoint(f, x\n"))
    result = run_cli("--isolated", "--no-cache", "bad.ipynb")
    assert result.stdout.startswith("bad.ipynb:cell 2:")
    assert " CKP999 Syntax error" in result.stdout


def test_a_file_that_is_not_a_notebook_is_a_problem(run_cli, write) -> None:
    write("broken.ipynb", '{"cells": [}')
    result = run_cli("--isolated", "--no-cache", "broken.ipynb")
    assert result.exit_code == 1
    assert result.stdout.startswith("broken.ipynb:1:1: CKP902 is not a valid notebook (invalid JSON: ")


def test_notebooks_can_be_turned_off(run_cli, write, case) -> None:
    write("pyproject.toml", "[tool.ckptlint]\nnotebooks = false\n")
    walked = run_cli("--no-cache", ".")
    assert walked.exit_code == 0 and walked.stdout == "All checks passed!\n"
    named = run_cli("--no-cache", NAME)
    assert named.exit_code == 1
    assert named.stdout.splitlines()[0] == f"{NAME}:1:1: CKP902 Jupyter notebooks are turned off (`notebooks = false`); skipped"
    assert run_cli("--no-cache", "--force-exclude", NAME).stderr == ""  # the pre-commit hook's way


def test_cache_returns_the_same_cell_positions(run_cli, case) -> None:
    first = run_cli("--isolated", ".")
    assert (case.parent / ".ckptlint_cache").is_dir()
    second = run_cli("--isolated", ".")
    assert second.stdout == first.stdout and f"{NAME}:cell 6:19:21" in second.stdout


@pytest.mark.slow
def test_since_lints_changed_notebooks(run_cli, tmp_path) -> None:
    git = ["git", "-c", "user.email=a@b", "-c", "user.name=a", "-C", str(tmp_path)]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "old.ipynb").write_text(_notebook(IMPORT, "checkpoint(f, x)\n"))
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    (tmp_path / "new.ipynb").write_text(_notebook(IMPORT, "checkpoint(g, x)\n"))
    result = run_cli("--isolated", "--no-cache", "--since", "HEAD")
    assert [line.split(": CKP")[0] for line in result.stdout.splitlines()[:-2]] == ["new.ipynb:cell 2:1:1"]


def test_pre_commit_hooks_take_notebooks() -> None:
    import yaml

    hooks = yaml.safe_load((Path(__file__).resolve().parents[2] / ".pre-commit-hooks.yaml").read_text())
    assert all("jupyter" in hook["types_or"] for hook in hooks)


LINE_CELLS = (
    "import functools\n\nimport torch.nn.functional as F\nfrom torch.utils.checkpoint import checkpoint\n",
    "SCALE = 1.0\n\n\ndef block(x, *, scale=1.0):\n    return x * SCALE * scale\n\n\ndef noisy(x):\n    return F.dropout(x, 0.1)\n",
    "ckpt = functools.partial(checkpoint)\n\n\ndef run(x):\n    return ckpt(block, x, scale=2.0)\n",
    "def step(x):\n    global SCALE\n    y = checkpoint(block, x, use_reentrant=False)\n    SCALE = 2.0\n    return y\n",
    "def rand(x):\n    return checkpoint(noisy, x, use_reentrant=False, preserve_rng_state=False)\n",
)


def test_messages_naming_a_line_name_the_cells_line(run_cli, write) -> None:
    """CKP101, CKP002 and CKP201 name a line ("at line N") as CKP203 names a site: the row
    within its cell, not of the cells joined."""
    write("lines.ipynb", _notebook(*LINE_CELLS, md1="Blocks"))
    result = run_cli("--isolated", "--no-cache", "--output-format", "json", "lines.ipynb")
    messages = {(r["code"], r["cell"], r["location"]["row"]): r["message"] for r in json.loads(result.stdout)}
    assert "(F.dropout at line 9 of cell 3)" in messages[("CKP101", 6, 2)]
    assert "pass `use_reentrant=False` in the `functools.partial` at line 1 of cell 4" in messages[("CKP002", 4, 5)]
    assert "(rebound through `global` at line 4 of cell 5, after the checkpoint call)" in messages[("CKP201", 3, 5)]
    assert not any(re.search(r"line (1\d|[2-9]\d)\b", m) for m in messages.values())  # no joined rows left


def test_a_cell_without_cell_type_is_not_a_valid_notebook(run_cli, write) -> None:
    data = json.loads(_notebook(IMPORT + "y = checkpoint(f, x)\n"))
    del data["cells"][0]["cell_type"]
    write("typeless.ipynb", json.dumps(data))
    result = run_cli("--isolated", "--no-cache", "typeless.ipynb")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0] == "typeless.ipynb:1:1: CKP902 is not a valid notebook (a cell has no `cell_type`)"


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


def test_a_notebook_named_explicitly_is_linted(run_cli, write) -> None:
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    notebook = {"cells": [{**cell, "source": [IMPORT, "checkpoint(f, x)\n"]}], "metadata": {}}
    write("nb.ipynb", json.dumps({**notebook, "nbformat": 4, "nbformat_minor": 4}))
    result = run_cli("--isolated", "--no-cache", "nb.ipynb")
    assert result.exit_code == 1
    assert result.stdout.startswith("nb.ipynb:cell 1:2:1: CKP001 ")
    assert result.stderr == ""


def test_show_sites_lists_the_sites_of_a_notebook_by_cell(run_cli, write) -> None:
    write("nb.ipynb", _notebook("import torch", "from torch.utils.checkpoint import checkpoint\n\ny = checkpoint(f, x)"))
    records = json.loads(run_cli("--show-sites", "--output-format", "json", "--isolated", "nb.ipynb").stdout)
    assert [(r["api"], r["location"]) for r in records] == [
        ("torch.utils.checkpoint.checkpoint", {"cell": 2, "row": 3, "column": 5})
    ]
    table = run_cli("--show-sites", "--isolated", "nb.ipynb").stdout
    assert table.startswith("nb.ipynb:cell 2:3:5  torch.utils.checkpoint.checkpoint")
    finding = run_cli("--isolated", "--no-cache", "nb.ipynb").stdout
    assert finding.startswith("nb.ipynb:cell 2:3:5: CKP001")

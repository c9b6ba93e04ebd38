"""Regression tests for what a first-time user trial of the reliability (issue 14), notebook and
language server (issue 16) and runtime v2 (issue 15) features found broken."""

from __future__ import annotations

import json
from pathlib import Path

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
def test_writing_a_notebook_leaves_unfixed_masked_cells_alone(run_cli, write, other, mode) -> None:  # noqa: ANN001
    # a fix (or noqa) in one cell must not add an empty line to a masked cell that ends in "\n"
    path = write("nb.ipynb", _nb(IMPORT + "def f(m, x):\n    return checkpoint(m, x)\n", other))
    before = json.loads(path.read_text())
    result = run_cli("--isolated", "--no-cache", mode, "--unsafe-fixes", "nb.ipynb")
    assert result.exit_code == 0, result.stdout + result.stderr
    after = json.loads(path.read_text())
    assert after["cells"][1] == before["cells"][1]
    assert after["cells"][0] != before["cells"][0]
    nbformat.validate(nbformat.reads(path.read_text(), as_version=4))

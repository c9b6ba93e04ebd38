"""Where an absolute import resolves: the linted file's own import root first, then the other
import roots of its project (ckptlint.semantic.project.project_folder), the same whichever
files a worker linted before; never into another project linted in the same run."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ckptlint.api import settings_for
from ckptlint.lint import run as lint_run
from ckptlint.semantic.project import Project, project_folder

BLOCK = """\
    from torch import nn


    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.BatchNorm1d(4)

        def forward(self, x):
            return self.norm(x)
"""

USER = """\
    from torch.utils.checkpoint import checkpoint
    from mylib.blocks import Block


    def run(x):
        return checkpoint(Block(), x, use_reentrant=False)
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def _codes(files: list[Path], jobs: int) -> list[tuple[str, str, int]]:
    settings = settings_for(["ALL"])
    run = lint_run.lint_files(files, lambda path: settings, jobs=jobs)
    return [(d.code, Path(d.path).name, d.start[0]) for d in run.diagnostics]


@pytest.mark.slow
def test_a_test_folder_reaches_the_package_of_its_project_in_any_order(tmp_path: Path) -> None:
    """tests/ (no __init__.py: its own import root) imports the package under src/: found
    whether or not a file of src/ was linted first, with one job or two."""
    project = tmp_path / "proj"
    _write(project, {"pyproject.toml": "[project]\nname = 'x'\n", "src/mylib/__init__.py": "",
                     "src/mylib/blocks.py": BLOCK, "src/mylib/other.py": USER, "tests/test_run.py": USER})
    files = sorted(project.rglob("*.py"))
    tests_first = [project / "tests" / "test_run.py", *[f for f in files if "tests" not in f.parts]]
    expected = _codes(files, 1)
    assert ("CKP203", "test_run.py", 6) in expected and ("CKP203", "other.py", 6) in expected
    assert _codes(tests_first, 1) == expected == _codes(files, 2)


def test_another_project_in_the_same_run_is_not_searched(tmp_path: Path) -> None:
    """Two repositories linted in one run: the second imports a module of the same name that
    only the first one has; as for an import of an installed package, it is not followed."""
    _write(tmp_path / "a", {"setup.py": "", "mylib/__init__.py": "", "mylib/blocks.py": BLOCK, "mylib/use.py": USER})
    _write(tmp_path / "b", {"setup.py": "", "train.py": USER})
    files = sorted(tmp_path.rglob("*.py"))
    found = _codes(files, 1)
    assert ("CKP203", "use.py", 6) in found
    assert not [row for row in found if row[1] == "train.py" and row[0] == "CKP203"]
    assert project_folder(tmp_path / "b") == tmp_path / "b"


def test_the_roots_of_a_project_are_searched_in_a_fixed_order(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    for root in (two, one):
        _write(root, {"m.py": "X = 1\n"})
    project = Project([two, one])
    assert project.roots == [one, two]
    project.track(two)
    assert project.file_for_module("m") == two / "m.py"  # the file's own root first
    project.track(one)
    assert project.file_for_module("m") == one / "m.py"

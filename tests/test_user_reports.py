"""Regressions from a new user's trial of the README and the CLI (each test names the report)."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

from ckptlint.api import fix_source
from ckptlint.testing import located

IMPORT = "from torch.utils.checkpoint import checkpoint\n"


def test_missing_path_is_reported_and_the_others_are_still_linted(run_cli, write) -> None:
    write("good.py", IMPORT + "checkpoint(f, x)\n")
    result = run_cli("--isolated", "--no-cache", "good.py", "missing.py")
    assert result.exit_code == 1  # ruff: E902, exit 1
    assert result.stderr == ""
    assert result.stdout.splitlines()[:2] == [
        result.stdout.splitlines()[0],
        "missing.py:1:1: CKP902 no such file or directory",
    ]
    assert result.stdout.startswith("good.py:2:1: CKP001 ")


def test_output_file_that_cannot_be_written_is_a_clean_error(run_cli, write, tmp_path) -> None:
    write("good.py", IMPORT + "checkpoint(f, x, use_reentrant=False)\n")
    (tmp_path / "folder").mkdir()
    result = run_cli("--isolated", "--no-cache", "-o", "folder", "good.py")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: folder: cannot write the report: ")
    assert "Traceback" not in result.stderr


def test_cr_only_line_endings_are_linted(run_cli, write) -> None:
    write("old_mac.py", (IMPORT + "checkpoint(f, x)\n").replace("\n", "\r").encode())
    result = run_cli("--isolated", "--no-cache", "old_mac.py")
    assert result.exit_code == 1
    assert result.stdout.startswith("old_mac.py:2:1: CKP001 ")


def test_a_notebook_named_explicitly_is_linted(run_cli, write) -> None:
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    notebook = {"cells": [{**cell, "source": [IMPORT, "checkpoint(f, x)\n"]}], "metadata": {}}
    write("nb.ipynb", json.dumps({**notebook, "nbformat": 4, "nbformat_minor": 4}))
    result = run_cli("--isolated", "--no-cache", "nb.ipynb")
    assert result.exit_code == 1
    assert result.stdout.startswith("nb.ipynb:cell 1:2:1: CKP001 ")
    assert result.stderr == ""


def test_since_uses_the_repository_of_the_paths_given(run_cli, tmp_path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "base.py").write_text("x = 1\n")
    subprocess.run([*git, "-C", str(repo), "add", "."], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-qm", "base"], check=True)
    (repo / "new.py").write_text(IMPORT + "checkpoint(f, x)\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = run_cli("--isolated", "--no-cache", "--since", "HEAD", str(repo), cwd=elsewhere)
    assert result.exit_code == 1, result.stderr
    assert "new.py:2:1: CKP001" in result.stdout


def test_fix_of_a_sole_generator_argument_adds_parentheses() -> None:
    fixed = fix_source(IMPORT + "x = checkpoint(t for t in y)\n", unsafe=True)
    assert fixed == IMPORT + "x = checkpoint((t for t in y), use_reentrant=False)\n"
    compile(fixed, "<fixed>", "exec")


def test_block_reached_through_a_module_attribute(tmp_path: Path, run_cli) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "blocks.py").write_text(
        textwrap.dedent(
            """\
            from torch import nn

            class BNBlock(nn.Module):
                def __init__(self, c):
                    super().__init__()
                    self.bn = nn.BatchNorm1d(c)

                def forward(self, x):
                    return self.bn(x)
            """
        )
    )
    (tmp_path / "pkg" / "model.py").write_text(
        textwrap.dedent(
            """\
            from torch import nn
            from torch.utils.checkpoint import checkpoint
            from . import blocks
            import pkg.blocks as pb

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.a = blocks.BNBlock(8)
                    self.b = pb.BNBlock(8)

                def forward(self, x):
                    x = checkpoint(self.a, x, use_reentrant=False)
                    return checkpoint(self.b, x, use_reentrant=False)
            """
        )
    )
    result = run_cli("--isolated", "--no-cache", "--select", "CKP203", "pkg/model.py")
    assert [line.split(":")[1] for line in result.stdout.splitlines() if "CKP203" in line] == ["13", "14"]


def test_norm_layer_from_the_constructor_argument_or_its_default() -> None:
    template = """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint

        class Block(nn.Module):
            def __init__(self, c, norm_layer=nn.BatchNorm2d):
                super().__init__()
                self.norm = norm_layer(c)

            def forward(self, x):
                return self.norm(x)

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block(4{arg})

            def forward(self, x):
                return checkpoint(self.block, x, use_reentrant=False)
    """
    assert located(template.format(arg=""), "CKP203") == [(18, "CKP203")]
    assert located(template.format(arg=", norm_layer=nn.GroupNorm"), "CKP203") == []
    assert located(template.format(arg=", nn.SyncBatchNorm"), "CKP203") == [(18, "CKP203")]


def test_numpy_generator_object_in_the_region() -> None:
    source = """\
        import numpy as np
        from torch.utils.checkpoint import checkpoint

        rng = np.random.default_rng(0)

        def f(x):
            return x * rng.normal()

        def run(x):
            return checkpoint(f, x, use_reentrant=False)
    """
    assert located(source, "CKP103") == [(7, "CKP103")]


def test_recording_tensor_sizes_on_self_is_not_a_side_effect() -> None:
    source = """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint

        class Net(nn.Module):
            def _body(self, x):
                self.H, self.W = x.shape[-2:]
                self.batch = x.size(0)
                self.steps = self.steps + 1
                return x

            def forward(self, x):
                return checkpoint(self._body, x, use_reentrant=False)
    """
    assert located(source, "CKP202") == [(8, "CKP202")]

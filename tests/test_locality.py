"""Locality: a file's findings depend only on its own text, the modules it imports (as far as its
regions reach), the configuration and the declared library versions -- never on other text of
the project. So a cached run always equals a fresh one, whatever is edited between runs, and code
that runs only under a switch, or that nothing calls yet, is judged with its condition stated."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

MODEL = """\
    import torch.utils.checkpoint as cp
    from torch import nn

    from pkg.blocks import Block


    class Net(nn.Module):
        def __init__(self, dim=8, with_cp=False):
            super().__init__()
            self.with_cp = with_cp
            self.block = Block(dim)

        def forward(self, x):
            if self.with_cp and x.requires_grad:
                return cp.checkpoint(self.block, x, use_reentrant=False)
            return self.block(x)
"""

BLOCKS = """\
    from torch import nn


    class Block(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.fc = nn.Linear(dim, dim)
            self.norm = nn.{norm}(dim)

        def forward(self, x):
            return self.norm(self.fc(x))
"""


def _findings(run_cli, *args: str) -> list[tuple[str, int, str, str]]:
    result = run_cli("--output-format", "json", "--isolated", "--exit-zero", *args)
    return sorted((Path(r["filename"]).as_posix(), r["location"]["row"], r["code"], r["message"]) for r in json.loads(result.stdout))


def _same_cached_and_fresh(run_cli, tmp_path: Path) -> list[tuple[str, int, str, str]]:
    cached = _findings(run_cli, "--cache-dir", str(tmp_path / ".cache"), ".")
    again = _findings(run_cli, "--cache-dir", str(tmp_path / ".cache"), ".")
    fresh = _findings(run_cli, "--no-cache", ".")
    assert cached == fresh == again
    return fresh


def test_a_cached_run_equals_a_fresh_one_after_every_edit(tmp_path: Path, run_cli, write) -> None:
    write("train.py", "import pkg.model\n")
    write("pkg/__init__.py", "")
    write("pkg/model.py", textwrap.dedent(MODEL))
    write("pkg/blocks.py", textwrap.dedent(BLOCKS).replace("{norm}", "BatchNorm1d"))
    first = _same_cached_and_fresh(run_cli, tmp_path)
    assert [(path.rsplit("/", 1)[-1], row, code) for path, row, code, _ in first] == [("model.py", 15, "CKP203")]
    # a config that turns the switch on changes nothing: the finding already says its condition
    write("configs/net.py", "model = dict(type='Net', with_cp=True)\n")
    assert _same_cached_and_fresh(run_cli, tmp_path) == first
    # an edit of a reached module is seen
    write("pkg/blocks.py", textwrap.dedent(BLOCKS).replace("{norm}", "LayerNorm"))
    assert _same_cached_and_fresh(run_cli, tmp_path) == []
    # a module that does not exist yet, then is added
    write("pkg/model.py", textwrap.dedent(MODEL).replace("from pkg.blocks import Block", "from pkg.extra import Block"))
    assert _same_cached_and_fresh(run_cli, tmp_path) == []
    write("pkg/extra.py", textwrap.dedent(BLOCKS).replace("{norm}", "BatchNorm1d"))
    assert [code for _, _, code, _ in _same_cached_and_fresh(run_cli, tmp_path)] == ["CKP203"]
    # a reached module deleted
    (tmp_path / "pkg" / "extra.py").unlink()
    assert _same_cached_and_fresh(run_cli, tmp_path) == []


def test_a_switch_off_by_default_is_reported_with_its_condition(tmp_path: Path, run_cli, write) -> None:
    write("pkg/__init__.py", "")
    write("pkg/model.py", textwrap.dedent(MODEL))
    write("pkg/blocks.py", textwrap.dedent(BLOCKS).replace("{norm}", "BatchNorm1d"))
    (found,) = _findings(run_cli, "--no-cache", ".")
    assert found[2] == "CKP203"
    assert found[3].endswith("; this code runs only when `self.with_cp` is true (it defaults to `False`) and `x.requires_grad`")


def test_the_else_branch_of_a_negated_switch_names_it_too(tmp_path: Path, run_cli, write) -> None:
    write("pkg/__init__.py", "")
    write(
        "pkg/model.py",
        textwrap.dedent(MODEL).replace(
            "        if self.with_cp and x.requires_grad:\n            return cp.checkpoint(self.block, x, use_reentrant=False)\n"
            "        return self.block(x)\n",
            "        if not self.with_cp:\n            return self.block(x)\n"
            "        else:\n            return cp.checkpoint(self.block, x, use_reentrant=False)\n",
        ).replace("with_cp=False", "with_cp=None"),
    )
    write("pkg/blocks.py", textwrap.dedent(BLOCKS).replace("{norm}", "BatchNorm1d"))
    (found,) = _findings(run_cli, "--no-cache", ".")
    assert found[3].endswith("only when `self.with_cp` is true (it defaults to `None`)")


def test_a_switch_on_by_default_is_stated_with_its_default_and_unguarded_code_states_nothing(
    tmp_path: Path, run_cli, write
) -> None:
    write("pkg/__init__.py", "")
    write("pkg/model.py", textwrap.dedent(MODEL).replace("with_cp=False", "with_cp=True"))
    write("pkg/blocks.py", textwrap.dedent(BLOCKS).replace("{norm}", "BatchNorm1d"))
    (found,) = _findings(run_cli, "--no-cache", ".")
    assert found[3].endswith("; this code runs only when `self.with_cp` is true (it defaults to `True`) and `x.requires_grad`")
    write("pkg/model.py", textwrap.dedent(MODEL).replace("if self.with_cp and x.requires_grad:", "if True:"))
    (found,) = _findings(run_cli, "--no-cache", ".")
    assert found[3].endswith("; this code runs only when `True`")
    unguarded = (
        textwrap.dedent(MODEL)
        .replace("        if self.with_cp and x.requires_grad:\n    ", "")
        .replace("        return self.block(x)\n", "")
    )
    write("pkg/model.py", unguarded)
    (found,) = _findings(run_cli, "--no-cache", ".")
    assert "only when" not in found[3]


def test_a_guard_read_from_a_config_and_an_else_branch_are_stated_as_written(tmp_path: Path, run_cli, write) -> None:
    write("pkg/__init__.py", "")
    guarded = textwrap.dedent(MODEL).replace(
        "        if self.with_cp and x.requires_grad:\n",
        "        if self.cfg.fast:\n            return self.block(x)\n        elif self.use_checkpoint and i < self.checkpoint_num[0]:\n",
    )
    write("pkg/model.py", guarded)
    write("pkg/blocks.py", textwrap.dedent(BLOCKS).replace("{norm}", "BatchNorm1d"))
    (found,) = _findings(run_cli, "--no-cache", ".")
    assert found[3].endswith("; this code runs only when `not (self.cfg.fast)` and `self.use_checkpoint` and `i < self.checkpoint_num[0]`")


def test_a_class_that_nothing_names_is_judged(tmp_path: Path, run_cli, write) -> None:
    # a library's public block, imported by the package yet built by no file of it
    write("pkg/__init__.py", "from pkg import model\n")
    model = textwrap.dedent(MODEL).replace("    if self.with_cp and x.requires_grad:\n    ", "").replace("    return self.block(x)\n", "")
    write("pkg/model.py", model)
    write("pkg/blocks.py", textwrap.dedent(BLOCKS).replace("{norm}", "BatchNorm1d"))
    assert [code for _, _, code, _ in _findings(run_cli, "--no-cache", ".")] == ["CKP203"]


def test_a_switch_bound_by_tuple_assignment_is_read_the_same(tmp_path: Path, run_cli, write) -> None:
    write("pkg/__init__.py", "")
    write("pkg/model.py", textwrap.dedent(MODEL).replace("self.with_cp = with_cp", "self.dim, self.with_cp = dim, with_cp"))
    write("pkg/blocks.py", textwrap.dedent(BLOCKS).replace("{norm}", "BatchNorm1d"))
    (found,) = _findings(run_cli, "--no-cache", ".")
    assert found[3].endswith("only when `self.with_cp` is true (it defaults to `False`) and `x.requires_grad`")

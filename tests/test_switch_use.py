"""Region findings at a site guarded by a constructor switch that the project never turns on are
not reported (judge 11: Pointcept's ``enable_checkpoint=False`` in every config), and what turns
a switch on (``ckptlint/checkpoint/switch_use.py``)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from ckptlint.api import lint_source
from ckptlint.checkpoint.sites import site_index
from ckptlint.checkpoint.switch_use import constructor_switches
from ckptlint.semantic.parse import parse_source
from ckptlint.text.source import SourceFile

BLOCK = textwrap.dedent(
    """\
    import torch.nn as nn
    import torch.utils.checkpoint as cp


    class BasicBlock(nn.Module):
        def __init__(self, dim, with_cp=False):
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(dim, dim, 3), nn.BatchNorm2d(dim))
            self.with_cp = with_cp

        def forward(self, x):
            if self.with_cp and x.requires_grad:
                out = cp.checkpoint(self.body, x, use_reentrant=False)
            else:
                out = self.body(x)
            return out
    """
)

CONFIG = "model = dict(backbone=dict(type='BasicBlock', dim=8{extra}))\n"


def _found(run_cli, root: Path, files: dict[str, str], *args: str) -> list[tuple[str, int]]:
    (root / "setup.py").write_text("from setuptools import setup\nsetup()\n", encoding="utf-8")
    for name, text in {"pkg/__init__.py": "from .block import BasicBlock\n", "pkg/block.py": BLOCK, **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    result = run_cli("--output-format", "json", "--isolated", "--exit-zero", "--select", "CKP203", *args, ".", cwd=root)
    return sorted((Path(r["filename"]).name, r["location"]["row"]) for r in json.loads(result.stdout))


@pytest.mark.parametrize(
    "files",
    [
        {"configs/a.py": CONFIG.format(extra="")},
        {"configs/a.py": CONFIG.format(extra=", with_cp=False")},  # Pointcept passes it off everywhere
        {"configs/a.py": CONFIG.format(extra=""), "pkg/net.py": "class Net:\n    def __init__(self, with_cp: bool = False):\n        self.with_cp = with_cp\n"},
        {"configs/a.py": CONFIG.format(extra=""), "pkg/doc.py": '"""Args:\n    with_cp: If True, use checkpoint.\n"""\n'},
        {"configs/a.yaml": "backbone:\n  type: BasicBlock\n  with_cp: false  # with_cp: True saves memory\n"},
        # TPVFormer: read back under its own name with an off default; only a commented-out line sets it
        {"configs/a.py": CONFIG.format(extra="") + "# with_cp = True\n", "train.py": "def build(cfg):\n    return dict(with_cp=cfg.get('with_cp', False), b=getattr(cfg, 'with_cp', None), c=cfg.with_cp)\n"},
    ],
)
def test_switch_that_nothing_turns_on_is_not_reported(tmp_path: Path, run_cli, files: dict[str, str]):
    assert _found(run_cli, tmp_path, files, "--no-cache") == []


@pytest.mark.parametrize(
    "files",
    [
        {"configs/a.py": CONFIG.format(extra=", with_cp=True")},
        {"configs/a.yaml": "backbone:\n  type: BasicBlock\n  with_cp: true\n"},
        {"configs/a.json": '{"backbone": {"type": "BasicBlock", "with_cp": true}}\n'},
        {"configs/a.py": CONFIG.format(extra=""), "docs/train.md": "Pass `--options model.backbone.with_cp=True`.\n"},
        {"configs/a.py": CONFIG.format(extra=""), "train.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('--with-cp', action='store_true')\n"},
        {"configs/a.py": CONFIG.format(extra=""), "build.py": "from pkg.block import BasicBlock\n\n\ndef build(args):\n    return BasicBlock(8, with_cp=args.cp)\n"},
        {"configs/a.py": CONFIG.format(extra=""), "tune.py": "def tune(cfg):\n    cfg['with_cp'] = True\n"},
        {"configs/a.py": CONFIG.format(extra=""), "train.py": "def build(cfg):\n    return dict(with_cp=cfg.get('with_cp', True))\n"},
        {"configs/a.py": CONFIG.format(extra="") + "with_cp = True\n"},
        {"configs/a.yaml": "backbone:\n  type: BasicBlock\n  with-cp: true\n"},
        {"configs/a.json": '{"name": "exp#1", "backbone": {"type": "BasicBlock", "with_cp": true}}\n'},
        {"configs/a.py": CONFIG.format(extra=""), "run.py": "import sys\nkw = {'with_cp': not sys.argv[1:]}\n"},
    ],
)
def test_switch_turned_on_anywhere_in_the_project_is_reported(tmp_path: Path, run_cli, files: dict[str, str]):
    assert _found(run_cli, tmp_path, files, "--no-cache") == [("block.py", 13)]


def test_cache_sees_a_config_that_turns_the_switch_on(tmp_path: Path, run_cli):
    assert _found(run_cli, tmp_path, {"configs/a.py": CONFIG.format(extra="")}) == []
    assert _found(run_cli, tmp_path, {"configs/a.py": CONFIG.format(extra=", with_cp=True")}) == [("block.py", 13)]


def _switches(code: str) -> list[list[frozenset[str]]]:
    analysis = parse_source(SourceFile(path="m.py", text=textwrap.dedent(code)))
    return [constructor_switches(analysis, site) for site in site_index(analysis).sites]


def test_constructor_switches_are_off_by_default_parameters_assigned_once():
    assert _switches(BLOCK) == [[frozenset({"with_cp"})]]
    renamed = BLOCK.replace("self.with_cp = with_cp", "self.use_chk = with_cp").replace("if self.with_cp", "if self.use_chk")
    assert _switches(renamed) == [[frozenset({"use_chk", "with_cp"})]]
    # on by default (Pointcept's OctFormer `use_checkpoint: bool = True`), set by a method
    # (timm's `set_grad_checkpointing`), an `or`, or the `else` of a plain test: not a switch
    assert _switches(BLOCK.replace("with_cp=False", "with_cp=True")) == [[]]
    toggled = BLOCK + "\n    def set_cp(self, on=True):\n        self.with_cp = on\n"
    assert _switches(toggled) == [[]]
    assert _switches(BLOCK.replace("self.with_cp and x.requires_grad", "self.with_cp or x.requires_grad")) == [[]]
    negated = BLOCK.replace("if self.with_cp and x.requires_grad:", "if not self.with_cp:").replace(
        "out = cp.checkpoint(self.body, x, use_reentrant=False)\n        else:\n            out = self.body(x)",
        "out = self.body(x)\n        else:\n            out = cp.checkpoint(self.body, x, use_reentrant=False)",
    )
    assert "else:\n            out = cp.checkpoint" in negated
    assert _switches(negated) == [[frozenset({"with_cp"})]]


def test_source_not_on_disk_is_judged():
    assert [d.code for d in lint_source(BLOCK, select=["CKP203"])] == ["CKP203"]


def test_switch_in_a_module_nothing_imports_is_judged(tmp_path: Path, run_cli):
    # a script or a test file (a case copied into `tests/`): judged whole, switch or not
    files = {"pkg/__init__.py": "", "configs/a.py": CONFIG.format(extra="")}
    assert _found(run_cli, tmp_path, files, "--no-cache") == [("block.py", 13)]

"""Region findings in a top-level class or function that nothing in the project names are not
reported (judge 10: FB-BEV's registered necks that no config builds), and what counts as a name
(``ckptlint/checkpoint/definition_use.py``)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from ckptlint.checkpoint.definition_use import top_level_definition
from ckptlint.semantic.index import index_for

NECK = textwrap.dedent(
    """\
    import torch.nn as nn
    import torch.utils.checkpoint as cp

    from ..registry import NECKS


    @NECKS.register_module()
    class FPN_LSS(nn.Module):
        \"\"\"A neck (FB-BEV mmdet3d/models/necks/lss_fpn.py:11).\"\"\"

        def __init__(self, with_cp=False):
            super(FPN_LSS, self).__init__()
            self.conv = nn.Sequential(nn.Conv2d(8, 8, 3), nn.BatchNorm2d(8), nn.ReLU())
            self.with_cp = with_cp

        def forward(self, x):
            return cp.checkpoint(self.conv, x, use_reentrant=False)
    """
)


def _tree(root: Path, files: dict[str, str], marker: bool = True) -> None:
    if marker:
        (root / "pyproject.toml").write_text("[project]\nname = 'p'\n", encoding="utf-8")
    for name, text in {"pkg/__init__.py": "", "pkg/registry.py": "NECKS = None\n", "pkg/necks/lss_fpn.py": NECK, **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _found(run_cli, root: Path, *args: str) -> list[tuple[str, int]]:
    result = run_cli("--output-format", "json", "--isolated", "--exit-zero", "--select", "CKP203", *args, ".", cwd=root)
    return sorted((Path(r["filename"]).name, r["location"]["row"]) for r in json.loads(result.stdout))


REEXPORT = {"pkg/necks/__init__.py": "from .lss_fpn import FPN_LSS  # FPN_LSS(with_cp=True)\n\n__all__ = ['FPN_LSS']\n"}


def test_class_named_only_by_its_import_all_and_comments_is_not_reported(tmp_path: Path, run_cli):
    _tree(tmp_path, {**REEXPORT, "pkg/other.py": "# FPN_LSS is unused\nx = 'FPN_LSSv2'\n"})
    assert _found(run_cli, tmp_path, "--no-cache") == []


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("configs/model.py", "model = dict(neck=dict(type='FPN_LSS', with_cp=True))\n"),  # mm config
        ("configs/model.yaml", "neck:\n  target: pkg.necks.lss_fpn.FPN_LSS\n"),  # ldm-style YAML
        ("README.md", "Build `FPN_LSS(with_cp=True)` for long sequences.\n"),  # documented API
        ("pkg/build.py", "from .necks import FPN_LSS\n\n\ndef build():\n    return FPN_LSS(True)\n"),
        ("pkg/necks/lss_fpn.py", NECK + "\n\ndef lss_fpn(**kw):\n    return FPN_LSS(**kw)\n"),  # own module
        ("pkg/build.py", "from .necks.lss_fpn import FPN_LSS as Neck\n\nNECK = Neck()\n"),  # an alias
    ],
)
def test_class_named_by_a_config_a_document_or_code_is_reported(tmp_path: Path, run_cli, name: str, text: str):
    _tree(tmp_path, {**REEXPORT, name: text})
    assert _found(run_cli, tmp_path, "--no-cache") == [("lss_fpn.py", 17)]


def test_a_copy_of_the_class_elsewhere_is_not_a_use_and_without_a_project_it_counts_as_used(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, run_cli
):
    # UniControl vendors the same backbone three times; each copy names its class in its own body
    _tree(tmp_path, {**REEXPORT, "vendored/lss_fpn.py": NECK.replace("from ..registry import NECKS", "NECKS = None")})
    assert _found(run_cli, tmp_path, "--no-cache") == [("lss_fpn.py", 17)]  # the vendored copy: nothing imports it
    # no .git, pyproject.toml, setup.py or setup.cfg above: the code that may build it is unknown
    bare = tmp_path_factory.mktemp("bare")
    _tree(bare, {}, marker=False)
    assert _found(run_cli, bare, "--no-cache") == [("lss_fpn.py", 17)]


@pytest.mark.parametrize(
    "importer",
    [
        "from pkg.necks import lss_fpn\n",
        "from .necks.lss_fpn import *\n",
        "import pkg.necks.lss_fpn as m\n",
    ],
)
def test_a_module_nothing_imports_is_judged_whole(tmp_path: Path, run_cli, importer: str):
    # a script, an example or a test file (the shared cases copied into tests/): its classes are
    # its own business; once a file of the project imports the module, an unnamed class is dead
    _tree(tmp_path, {})
    assert _found(run_cli, tmp_path, "--no-cache") == [("lss_fpn.py", 17)]
    (tmp_path / "pkg" / "build.py").write_text(importer, encoding="utf-8")
    assert _found(run_cli, tmp_path, "--no-cache") == []


def test_a_test_function_pytest_collects_is_used(tmp_path: Path, run_cli):
    # TransformerEngine tests/pytorch/test_numerics.py: imported by another test, its `test_*`
    # functions are named by nothing but pytest collects them
    test = NECK.replace("class FPN_LSS", "class TestNeck").replace("super(FPN_LSS, self)", "super()")
    _tree(tmp_path, {"tests/test_neck.py": test, "tests/test_other.py": "from .test_neck import TestNeck\n"})
    assert ("test_neck.py", 17) in _found(run_cli, tmp_path, "--no-cache")
    unittest_case = NECK.replace("class FPN_LSS(nn.Module)", "class NeckChecks(unittest.TestCase, nn.Module)").replace("super(FPN_LSS, self)", "super()")
    _tree(tmp_path, {"tests/test_neck.py": unittest_case, "tests/test_other.py": "from .test_neck import NeckChecks\n"})
    assert ("test_neck.py", 17) in _found(run_cli, tmp_path, "--no-cache")
    _tree(tmp_path, {"tests/test_neck.py": "", "tests/neck_cases.py": test, "tests/test_other.py": "from .neck_cases import TestNeck\n"})
    assert ("neck_cases.py", 17) not in _found(run_cli, tmp_path, "--no-cache")


HOLDER = NECK + """

class ViewTransformerStereo(nn.Module):
    def __init__(self):
        super().__init__()
        self.depth_net = FPN_LSS()
"""


def test_a_class_named_only_inside_another_unnamed_class_is_dead(tmp_path: Path, run_cli):
    # OpenOccupancy: DepthNetStereo is built only by ViewTransformerLSSBEVStereo, which is
    # registered and exported but selected by no config
    exported = {"pkg/necks/__init__.py": "from .lss_fpn import FPN_LSS, ViewTransformerStereo\n"}
    _tree(tmp_path, {**exported, "pkg/necks/lss_fpn.py": HOLDER})
    assert _found(run_cli, tmp_path, "--no-cache") == []
    _tree(tmp_path, {**exported, "pkg/necks/lss_fpn.py": HOLDER, "configs/a.py": "model = dict(type='ViewTransformerStereo')\n"})
    assert _found(run_cli, tmp_path, "--no-cache") == [("lss_fpn.py", 17)]


def test_a_registry_key_or_an_entry_point_decorator_names_the_definition(tmp_path: Path, run_cli):
    # fairseq `@register_model("transformer_lm")`: configs and scripts name the key, not the class
    keyed = NECK.replace("@NECKS.register_module()", "@NECKS.register_module('lss-fpn')")
    _tree(tmp_path, {**REEXPORT, "pkg/necks/lss_fpn.py": keyed, "configs/a.yaml": "neck: lss-fpn\n"})
    assert _found(run_cli, tmp_path, "--no-cache") == [("lss_fpn.py", 17)]
    _tree(tmp_path, {**REEXPORT, "pkg/necks/lss_fpn.py": keyed, "configs/a.yaml": "neck: fpn\n"})
    assert _found(run_cli, tmp_path, "--no-cache") == []
    # a click/typer command is run from the command line
    command = NECK.replace("@NECKS.register_module()", "@app.command()").replace("from ..registry import NECKS", "app = None")
    _tree(tmp_path, {**REEXPORT, "pkg/necks/lss_fpn.py": command, "configs/a.yaml": "neck: fpn\n"})
    assert _found(run_cli, tmp_path, "--no-cache") == [("lss_fpn.py", 17)]


def test_cache_sees_a_config_that_starts_to_name_the_class(tmp_path: Path, run_cli):
    _tree(tmp_path, {**REEXPORT, "configs/model.py": "model = dict(neck=dict(type='FPN'))\n"})
    assert _found(run_cli, tmp_path) == []
    (tmp_path / "configs" / "model.py").write_text("model = dict(neck=dict(type='FPN_LSS', with_cp=True))\n", encoding="utf-8")
    assert _found(run_cli, tmp_path) == [("lss_fpn.py", 17)]
    # and one that stops naming it
    (tmp_path / "configs" / "model.py").write_text("model = dict(neck=dict(type='FPN'))\n", encoding="utf-8")
    assert _found(run_cli, tmp_path) == []


def test_a_whole_project_search_is_kept_once_in_the_cache_and_still_invalidates(tmp_path: Path, run_cli):
    # every module whose answer depends on all files of the project shares one dependency set
    necks = {f"pkg/necks/n{i}.py": NECK.replace("FPN_LSS", f"Neck{i}") for i in range(3)}
    init = "from .lss_fpn import FPN_LSS\n" + "".join(f"from .n{i} import Neck{i}\n" for i in range(3))
    filler = {f"pkg/util{i}.py": f"X{i} = {i}\n" for i in range(70)}
    _tree(tmp_path, {**necks, **filler, "pkg/necks/__init__.py": init})
    assert _found(run_cli, tmp_path) == []
    (cache,) = (tmp_path / ".ckptlint_cache").rglob("*.json")
    data = json.loads(cache.read_text(encoding="utf-8"))
    assert len(data["depsets"]) == 1
    (ref,) = data["depsets"]
    assert len(data["depsets"][ref]) > 70
    shared = [entry for entry in data["files"].values() if entry.get("depset") == ref]
    assert len(shared) == 4  # the three necks and lss_fpn.py
    (tmp_path / "pkg" / "util7.py").write_text("from .necks import Neck1\nX7 = Neck1()\n", encoding="utf-8")
    assert _found(run_cli, tmp_path) == [("n1.py", 17)]


def test_a_noqa_on_a_finding_of_dead_code_is_not_unused(tmp_path: Path, run_cli):
    # the directive is needed again as soon as a config names the class: CKP901 must not remove it
    silenced = NECK.replace("use_reentrant=False)", "use_reentrant=False)  # noqa: CKP203")
    _tree(tmp_path, {**REEXPORT, "pkg/necks/lss_fpn.py": silenced})
    result = run_cli("--output-format", "json", "--isolated", "--no-cache", "--exit-zero", "--select", "CKP203,CKP901", ".", cwd=tmp_path)
    assert json.loads(result.stdout) == []


def test_a_package_with_its_own_setup_py_is_searched_with_its_repository(tmp_path: Path, run_cli):
    # a monorepo, or Deformable-DETR's `models/ops/setup.py`: the use is in the repository's train.py
    (tmp_path / ".git").mkdir()
    lib = tmp_path / "lib"
    lib.mkdir()
    _tree(lib, REEXPORT)
    assert _found(run_cli, tmp_path, "--no-cache") == []
    (tmp_path / "train.py").write_text("from pkg.necks import FPN_LSS\n\nmodel = FPN_LSS()\n", encoding="utf-8")
    assert _found(run_cli, tmp_path, "--no-cache") == [("lss_fpn.py", 17)]


def test_top_level_definition_is_the_class_or_function_around_the_row():
    index = index_for(NECK + "\nx = 1\n", "m.py")
    assert index is not None
    assert top_level_definition(index, 17) == "FPN_LSS"
    assert top_level_definition(index, 7) == "FPN_LSS"  # the decorator line
    assert top_level_definition(index, 1) is None  # an import
    assert top_level_definition(index, 20) is None  # module-level code

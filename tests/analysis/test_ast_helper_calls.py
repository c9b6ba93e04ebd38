"""Helpers of other modules of the linted tree on CPython's ``ast``
(ckptlint.checkpoint.sites.ast_helper_calls), recorded while they were libcst's (``site_index``
of an analysis whose ``project`` is a ``Project``): on multi-module trees written in
``tmp_path`` (those of the tests of helpers of other modules, and the corners:
``utils.run(...)``, re-exports through a package's ``__init__``, star imports, base classes
two modules up, helpers of helpers across modules, import cycles, namespace packages, modules
whose bytes mention no checkpoint), every field of the linted module's helpers and
``HELPER_CALL`` sites, the files recorded as read and the home-made implementations read with
the tree (golden answers: ``__snapshots__/test_ast_helper_calls.ambr``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from goldens import render
from index_readings import helpers_in_tree

from ckptlint.checkpoint.sites.ast_helper_calls import module_helper_sites, module_helpers
from ckptlint.checkpoint.sites.site import SiteForm
from ckptlint.semantic.project import AstProject, Project

BLOCK = """\
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)

    def forward(self, x):
        return self.lin(x)
"""

# libcst's tests of helpers of other modules (tests/analysis/test_helper_sites.py)
PACKAGE_UTILS = """\
import torch.utils.checkpoint as cp


def ckpt(fn, *args, **kwargs):
    return cp.checkpoint(fn, *args, **kwargs)


class Base:
    def _checkpointed(self, module, *args):
        return cp.checkpoint(module, *args, use_reentrant=False)
"""

PACKAGE_MODEL = BLOCK + """\

from pkg.utils import Base, ckpt


class Net(Base, nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block(4)

    def forward(self, x):
        x = ckpt(self.block, x)
        return self._checkpointed(self.block, x)
"""

TE_EXTENSION = '''\
def te_checkpoint(
    forward_func, distribute_saved_activations, get_rng_state_tracker, tp_group, *args, **kwargs
):
    """Checkpointing with TransformerEngine."""
    from transformer_engine.pytorch.distributed import checkpoint

    if TE_NEWER:
        return checkpoint(
            forward_func,
            *args,
            distribute_saved_activations=distribute_saved_activations,
            get_rng_state_tracker=get_rng_state_tracker,
            tp_group=tp_group,
            **kwargs,
        )
    return checkpoint(forward_func, distribute_saved_activations, get_rng_state_tracker, tp_group, *args)
'''

TE_LAYER = BLOCK + """\


class Layer(nn.Module):
    def __init__(self, fp8):
        super().__init__()
        self.fp8 = fp8
        self.block = Block(4)

    def forward(self, x, tracker, group):
        if self.fp8:
            from pkg.extensions import te_checkpoint

            return te_checkpoint(self.block, False, tracker, group, x)
        return self.block(x)
"""

RUN = """\
from torch.utils.checkpoint import checkpoint


def run(fn, *args, use_reentrant=True, enabled=True):
    if enabled:
        return checkpoint(fn, *args, use_reentrant=use_reentrant)
    return fn(*args)
"""

USE_RUN = """\
def go(f, x):
    return run(f, x, use_reentrant=False)


def off(f, x):
    return run(f, x, enabled=False)
"""

USE_UTILS_RUN = "from .utils import run\n" + USE_RUN
GO = "def go(f, x):\n    return {}\n"
NET = "class Net({}):\n    def forward(self, x):\n        return self._checkpointed(Block(2), x)\n"

#: name -> (files of the tree, the linted file, helper-call sites expected on libcst)
TREES: dict[str, tuple[dict[str, str], str, int]] = {
    "function and base class of another module": (
        {"pkg/__init__.py": "", "pkg/utils.py": PACKAGE_UTILS, "pkg/model.py": PACKAGE_MODEL},
        "pkg/model.py",
        2,
    ),
    "signature closing at the def's indentation": (
        {"pkg/__init__.py": "", "pkg/extensions.py": TE_EXTENSION, "pkg/layer.py": TE_LAYER},
        "pkg/layer.py",
        1,
    ),
    "from . import module": (
        {"pkg/__init__.py": "", "pkg/utils.py": RUN, "pkg/model.py": "from . import utils\n\n\n" + GO.format("utils.run(f, x)")},
        "pkg/model.py",
        1,
    ),
    "import pkg.module as alias": (
        {"pkg/__init__.py": "", "pkg/utils.py": RUN, "pkg/model.py": "import pkg.utils as u\n\n\n" + GO.format("u.run(f, x, enabled=1)")},
        "pkg/model.py",
        1,
    ),
    "re-exported by the package": (
        {"pkg/__init__.py": "from .utils import run\n", "pkg/utils.py": RUN, "app.py": "from pkg import run\n" + USE_RUN},
        "app.py",
        1,  # enabled=False rules out the only checkpoint call
    ),
    "re-exported twice": (
        {
            "pkg/__init__.py": "from .sub import run\n",
            "pkg/sub/__init__.py": "from .utils import run as run\n",
            "pkg/sub/utils.py": RUN,
            "app.py": "from pkg import run\n" + USE_RUN,
        },
        "app.py",
        1,
    ),
    "star import in the package": (
        {"pkg/__init__.py": "from .utils import *\n", "pkg/utils.py": RUN, "app.py": "from pkg import run\n" + USE_RUN},
        "app.py",
        1,
    ),
    "relative import one package up": (
        {"pkg/__init__.py": "", "pkg/utils.py": RUN, "pkg/nn/__init__.py": "", "pkg/nn/model.py": "from ..utils import run\n" + USE_RUN},
        "pkg/nn/model.py",
        1,
    ),
    "helper of a helper across modules": (
        {
            "pkg/__init__.py": "",
            "pkg/utils.py": RUN,
            "pkg/wrap.py": "from .utils import run\n\n\ndef wrap(fn, x, ckpt_flag=True):\n    return run(fn, x, use_reentrant=ckpt_flag)\n",
            "pkg/model.py": "from .wrap import wrap\n\n\ndef go(f, x):\n    return wrap(f, x, False)\n",
        },
        "pkg/model.py",
        1,
    ),
    "base class two modules up": (
        {
            "pkg/__init__.py": "",
            "pkg/base.py": PACKAGE_UTILS,
            "pkg/mid.py": "from .base import Base\n\n\nclass Mid(Base):\n    def other(self):\n        return 1\n",
            "pkg/model.py": BLOCK + "\nfrom .mid import Mid\n\n\n" + NET.format("Mid"),
        },
        "pkg/model.py",
        0,  # the middle module's bytes neither define nor import the method: not read
    ),
    "base of a base in the other module": (
        {
            "pkg/__init__.py": "",
            "pkg/base.py": PACKAGE_UTILS + "\n\nclass Mid(Base):\n    pass\n",
            "pkg/model.py": BLOCK + "\nfrom .base import Mid\n\n\n" + NET.format("Mid"),
        },
        "pkg/model.py",
        1,
    ),
    "a base that overrides the method": (
        {
            "pkg/__init__.py": "",
            "pkg/base.py": PACKAGE_UTILS,
            "pkg/mid.py": "from .base import Base\n\n\nclass Mid(Base):\n"
            "    def _checkpointed(self, module, *args):\n        return module(*args)\n",
            "pkg/model.py": BLOCK + "\nfrom .mid import Mid\n\n\n" + NET.format("Mid"),
        },
        "pkg/model.py",
        0,
    ),
    "import cycle": (
        {
            "pkg/__init__.py": "",
            "pkg/a.py": RUN + "\nfrom .b import wrap\n\n\ndef go(f, x):\n    return wrap(f, x)\n",
            "pkg/b.py": "from .a import run\n\n\ndef wrap(ckpt_fn, x):\n    return run(ckpt_fn, x, use_reentrant=False)\n",
        },
        "pkg/a.py",
        1,
    ),
    "a helper of a helper whose text mentions no checkpoint": (
        {
            "pkg/__init__.py": "",
            "pkg/utils.py": RUN,
            "pkg/wrap.py": "from .utils import run\n\n\ndef wrap(fn, x):\n    return run(fn, x)\n",
            "pkg/model.py": "from .wrap import wrap\n\n\ndef go(f, x):\n    return wrap(f, x)\n",
        },
        "pkg/model.py",
        0,  # the byte test does not read pkg/wrap.py
    ),
    "a module that mentions no checkpoint": (
        {"pkg/__init__.py": "", "pkg/utils.py": "def run(fn, x):\n    return fn(x)\n", "pkg/model.py": USE_UTILS_RUN},
        "pkg/model.py",
        0,
    ),
    "a checkpointing module without that name": (
        {"pkg/__init__.py": "", "pkg/utils.py": RUN, "pkg/model.py": "from .utils import other\n\n\n" + GO.format("other(f, x)")},
        "pkg/model.py",
        0,
    ),
    "a module outside the tree": (
        {"pkg/__init__.py": "", "pkg/model.py": "from deepspeed.utils import run\n\n\ndef go(f, x):\n    return run(f, x)\n"},
        "pkg/model.py",
        0,
    ),
    "a namespace package": (
        {
            "ldm/modules/util.py": RUN,
            "ldm/models/model.py": "from ldm.modules.util import run\n" + USE_RUN,
        },
        "ldm/models/model.py",
        1,
    ),
    "a static method and cls": (
        {
            "pkg/__init__.py": "",
            "pkg/base.py": "from torch.utils.checkpoint import checkpoint\n\n\nclass Base:\n    @classmethod\n"
            "    def ckpt(cls, fn, x):\n        return checkpoint(fn, x, use_reentrant=False)\n\n"
            "    @staticmethod\n    def plain(fn, x):\n        return checkpoint(fn, x)\n",
            "pkg/model.py": "from .base import Base\n\n\nclass Net(Base):\n    @classmethod\n    def go(cls, f, x):\n"
            "        return cls.ckpt(f, x)\n\n    def run(self, f, x):\n        return Base.plain(f, x)\n",
        },
        "pkg/model.py",
        1,
    ),
}


def _write_tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


@pytest.mark.parametrize("name", sorted(TREES))
def test_trees(tmp_path: Path, name: str, snapshot) -> None:
    files, linted, sites = TREES[name]
    _write_tree(tmp_path, files)
    found = helpers_in_tree(tmp_path / linted)
    assert _golden(found) == snapshot
    assert _sites(found) == sites


def _golden(found: dict[str, object]) -> str:
    return "\n".join(f"{key}:\n{render(value)}" for key, value in found.items())


def _sites(found: dict[str, object]) -> int:
    """The helper call sites of ``found``."""
    return sum(reading[1] == "helper call" for reading in found["helpers and calls"])  # type: ignore[attr-defined]


def _helpers(found: dict[str, object]) -> int:
    return sum(reading[0] == "helper" for reading in found["helpers and calls"])  # type: ignore[attr-defined]


#: A keyword dict rebound on a line joined by ``;`` and a backslash: one libcst statement
#: line, so neither binding kills the other (``ast``: two physical rows).
LAYOUT_TREES = {
    "a helper's keyword dict rebound on a joined line": (
        {
            "pkg/__init__.py": "",
            "pkg/mod.py": r"""
                from torch.utils.checkpoint import checkpoint
                def run(f, x):
                    kw = {"use_reentrant": True}; \
                    kw = {"use_reentrant": False}
                    return checkpoint(f, x, **kw)
            """,
        },
        "pkg/mod.py",
    ),
    "a base class's method in another module, rebinding on a joined line": (
        {
            "pkg/__init__.py": "",
            "pkg/base.py": r"""
                from torch.utils.checkpoint import checkpoint
                class Base:
                    def ck(self, f, x):
                        kw = {'use_reentrant': True}; \
                        kw = {'use_reentrant': False}
                        return checkpoint(f, x, **kw)
            """,
            "pkg/model.py": """
                from .base import Base
                class M(Base):
                    def forward(self, x):
                        return self.ck(self.f, x)
            """,
        },
        "pkg/model.py",
    ),
}


@pytest.mark.parametrize("name", sorted(LAYOUT_TREES))
def test_logical_line_layouts(tmp_path: Path, name: str, snapshot) -> None:
    files, linted = LAYOUT_TREES[name]
    _write_tree(tmp_path, files)
    found = helpers_in_tree(tmp_path / linted)
    assert _golden(found) == snapshot
    assert _sites(found) + _helpers(found) > 0


def test_an_nfkc_identifier(tmp_path: Path, snapshot) -> None:
    """``ast`` normalises identifiers as Python does (PEP 3131; libcst kept the spelling)."""
    files = {
        "pkg/__init__.py": "",
        "pkg/utils.py": "import torch.utils.checkpoint as cp\ndef run(fn, x):\n    return cp.checkpoint(fn, x)\n",
        "pkg/model.py": "from .utils import \uff52un\ndef go(f, x):\n    return run(f, x)\n",
    }
    _write_tree(tmp_path, files)
    assert _golden(helpers_in_tree(tmp_path / "pkg/model.py")) == snapshot


def test_trees_read_other_files(tmp_path: Path) -> None:
    """The comparison of files read is not empty: the helper's module and absent candidates."""
    files, linted, _ = TREES["re-exported twice"]
    _write_tree(tmp_path, files)
    assert len(helpers_in_tree(tmp_path / linted)["reads"]) >= 3  # type: ignore[arg-type]


def test_each_modules_helpers_are_found_once_and_kept(tmp_path: Path) -> None:
    files, linted, _ = TREES["helper of a helper across modules"]
    _write_tree(tmp_path, files)
    project = Project()
    project.track(tmp_path)
    loader = AstProject(project)
    analysis = loader.ast_analysis_for_file(tmp_path / linted)
    assert analysis is not None
    found = module_helper_sites(analysis)
    assert module_helper_sites(analysis) is found
    [site] = found.sites
    assert site.form is SiteForm.HELPER_CALL and site.helper is not None
    assert (site.helper.module, site.helper.qualname, site.helper.level) == ("pkg.wrap", "wrap", 2)
    wrap = loader.ast_analysis_for_module("pkg.wrap")
    assert wrap is not None and wrap.derived["helper_sites"].helpers == module_helpers(wrap)
    assert site.options["use_reentrant"].value is False
    read = {p.relative_to(tmp_path).as_posix() for p in project.accessed()}
    assert {"pkg/wrap.py", "pkg/utils.py"} <= read


def test_the_module_alone_reads_only_its_helpers(tmp_path: Path) -> None:
    """Without a loader (``project`` ``None``) a call of another module's helper is none."""
    files, linted, _ = TREES["function and base class of another module"]
    _write_tree(tmp_path, files)
    project = Project()
    project.track(tmp_path)
    analysis = AstProject(project).ast_analysis_for_file(tmp_path / linted)
    assert analysis is not None
    analysis.project = None
    assert module_helper_sites(analysis).sites == []


# ---------------------------------------------------------------------- home-made with the tree
HOME_MADE_BASE = """\
import torch


class CheckpointFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, run_function, *args):
        ctx.run_function = run_function
        ctx.save_for_backward(*args)
        with torch.no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        inputs = [x.detach().requires_grad_() for x in ctx.saved_tensors]
        with torch.enable_grad():
            outputs = ctx.run_function(*inputs)
        torch.autograd.backward(outputs, grads)
        return (None, *[x.grad for x in inputs])
"""

HOME_MADE_USE = """\
from .impl import CheckpointFunction


class Mine(CheckpointFunction):
    pass


def run(fn, *args):
    return Mine.apply(fn, *args)


def go(f, x):
    return run(f, x)
"""


def _rev_tree(seed: str) -> dict[str, str]:
    from test_reversible_inherited import FAST_REV, REV

    return {"rev.py": REV, "fast_rev.py": FAST_REV.format(seed=seed)}


@pytest.mark.parametrize("seed", ["", "            torch.manual_seed(self.seed)\n"], ids=["plain", "reseeded"])
def test_a_reversible_function_whose_base_is_in_another_module(tmp_path: Path, seed: str, snapshot) -> None:
    """minREV's ``FastRevBackProp(RevBackProp)`` of ``rev.py`` (``test_reversible_inherited``):
    ``home_made(model, loader)`` reads it with its base's ``forward`` and the re-running
    methods of both modules, every field recorded; its ``apply`` call is no candidate."""
    _write_tree(tmp_path, _rev_tree(seed))
    found = helpers_in_tree(tmp_path / "fast_rev.py")
    assert _golden(found) == snapshot
    assert (len(found["home-made"]), found["home-made bases"]) == (1, 1)  # type: ignore[arg-type]
    assert len(found["reads"]) >= 1  # type: ignore[arg-type]


def test_a_checkpoint_function_subclassed_from_another_module(tmp_path: Path) -> None:
    """A plain subclass of another module's checkpoint ``Function`` (not a reversible one) is
    no implementation on either side; the helper around its ``apply`` is none either."""
    _write_tree(tmp_path, {"pkg/__init__.py": "", "pkg/impl.py": HOME_MADE_BASE, "pkg/model.py": HOME_MADE_USE})
    found = helpers_in_tree(tmp_path / "pkg/model.py")
    assert (_sites(found), found["home-made"]) == (0, [])

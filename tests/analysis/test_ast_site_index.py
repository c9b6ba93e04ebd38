"""Stage 1 whole on CPython's ``ast`` (ckptlint.checkpoint.sites.ast_site_index), recorded
while it was libcst's ``site_index``: the sites in order, every field (home-made
implementations and helpers of the module and of other modules of the tree, calls of helpers
level by level, misuse and misspellings), the helpers, calls of ``torch.utils.checkpoint``
itself and of ``torch.distributed.checkpoint``, files read and import roots; on the rule
examples, the test cases, the programs of the helper and reach tests, and the multi-module
trees of the reach and helper tests (golden answers: ``__snapshots__/test_ast_site_index.ambr``
and ``__digests__/site_index_*.json``)."""

from __future__ import annotations

import functools
import sys
import textwrap
from pathlib import Path

import pytest
from goldens import case_params, check_suite, example_params, parses, read_case, render
from index_readings import index_alone, index_in_tree
from test_ast_evaluation import _NET, TUPLE_INDEXES
from test_ast_evaluator_leaves import _SUITE

from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.facts.apis import ApiKind
from ckptlint.semantic.project import AstProject, Project


def _write(root: Path, files: dict[str, str]) -> list[Path]:
    paths = []
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        paths.append(path)
    return paths


def _tree_answers(root: Path, files: dict[str, str]) -> dict[str, dict]:
    """Every file of the tree read in turn, one project for the whole tree (a run)."""
    loader = AstProject(Project())
    return {path.relative_to(root).as_posix(): index_in_tree(root, path, loader) for path in _write(root, files)}


def _render(found: dict[str, list]) -> str:
    return "\n".join(f"{key}:\n{render(value)}" for key, value in found.items())


def _golden_tree(found: dict[str, dict]) -> str:
    return "\n".join(f"== {name}\n{_render(answers)}" for name, answers in found.items())


@functools.cache
def _alone(text: str, module_name: str = "pkg.mod") -> dict[str, list]:
    return index_alone(text, module_name)


# ---------------------------------------------------------------------- modules alone
@pytest.mark.parametrize(("label", "text"), example_params())
def test_rule_examples(label: str, text: str, snapshot) -> None:
    assert _render(_alone(text)) == snapshot


def test_rule_examples_hold_every_kind_of_site() -> None:
    found = [_alone(param.values[1]) for param in example_params()]
    kinds = [kind for answers in found for kind in answers["kinds"]]
    assert len(kinds) >= 50
    assert kinds.count("home-made") >= 1 and kinds.count("helper-call") >= 1 and kinds.count("partial") >= 1
    assert sum(len(answers["helpers"]) for answers in found) >= 1


@pytest.mark.parametrize("path", case_params())
def test_cases(path: Path, snapshot) -> None:
    assert _render(_alone(read_case(path), "pkg.cases." + path.stem)) == snapshot


def _libcst_test_programs(name: str) -> list[str]:
    """The strings of the test module ``name`` (once libcst's) that define a function and
    mention checkpointing, dedented, when they parse (none when the module is gone)."""
    import ast

    path = Path(__file__).parent / name
    if not path.is_file():
        return []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    texts = [
        textwrap.dedent(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "def " in node.value and "heckpoint" in node.value
    ]
    return [text for text in texts if parses(text)]


def test_programs_of_libcsts_helper_and_reach_tests(request: pytest.FixtureRequest) -> None:
    programs = _libcst_test_programs("test_helper_sites.py") + _libcst_test_programs("test_reach.py")
    check_suite(request, "site_index_helper_reach_programs", programs, _alone)


# ---------------------------------------------------------------------- trees
HOME_MADE_NN = '''\
import torch


class CheckpointFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, run_function, length, *args):
        ctx.run_function = run_function
        ctx.input_tensors = list(args[:length])
        ctx.input_params = list(args[length:])
        with torch.no_grad():
            output_tensors = ctx.run_function(*ctx.input_tensors)
        return output_tensors

    @staticmethod
    def backward(ctx, *output_grads):
        ctx.input_tensors = [x.detach().requires_grad_(True) for x in ctx.input_tensors]
        with torch.enable_grad():
            shallow_copies = [x.view_as(x) for x in ctx.input_tensors]
            output_tensors = ctx.run_function(*shallow_copies)
        grads = torch.autograd.grad(output_tensors, ctx.input_tensors + ctx.input_params, output_grads, allow_unused=True)
        return (None, None) + grads


def checkpoint(func, inputs, params, flag):
    if flag:
        args = tuple(inputs) + tuple(params)
        return CheckpointFunction.apply(func, len(inputs), *args)
    return func(*inputs)
'''

RES_BLOCK = '''\
from torch import nn


class ResBlock(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return checkpoint(self._forward, (x,), self.parameters(), True)

    def _forward(self, x):
        return self.proj(x)
'''

#: name -> files of the tree (each file compared in turn)
TREES: dict[str, dict[str, str]] = {
    "home-made helper imported from another module": {
        "pkg/__init__.py": "",
        "pkg/nn.py": HOME_MADE_NN,
        "pkg/unet.py": "from .nn import checkpoint\n" + RES_BLOCK,
    },
    "home-made helper through a package's re-export": {
        "pkg/__init__.py": "",
        "pkg/util/__init__.py": "from .nn import checkpoint\n",
        "pkg/util/nn.py": HOME_MADE_NN,
        "pkg/unet.py": "from .util import checkpoint\n" + RES_BLOCK,
    },
    "imported implementation's apply": {
        "pkg/__init__.py": "",
        "pkg/nn.py": HOME_MADE_NN,
        "pkg/model.py": """\
            from . import nn as cnn
            from .nn import CheckpointFunction


            def run(f, x):
                return CheckpointFunction.apply(f, 1, x)


            def other(f, x):
                return cnn.CheckpointFunction.apply(f, 1, x)


            def go(block, x):
                return run(block, x)
            """,
    },
    "implementation's apply bound to a name in another module": {
        "pkg/__init__.py": "",
        "pkg/nn.py": HOME_MADE_NN + "\ncheckpoint_apply = CheckpointFunction.apply\n",
        "pkg/model.py": "from .nn import CheckpointFunction\n\nrun = CheckpointFunction.apply\n\n\n"
        "def go(f, x):\n    return run(f, 1, x)\n",
    },
    "home-made helper of the module, a base elsewhere": {
        "pkg/__init__.py": "",
        "pkg/nn.py": HOME_MADE_NN,
        "pkg/model.py": HOME_MADE_NN.replace("def checkpoint(", "def ckpt(") + "\n\ndef go(f, x, p):\n    return ckpt(f, (x,), p, True)\n",
    },
    "helper calling an imported home-made helper": {
        "pkg/__init__.py": "",
        "pkg/nn.py": HOME_MADE_NN,
        "pkg/blocks.py": """\
            from .nn import checkpoint


            def run(fn, x, params):
                return checkpoint(fn, (x,), params, True)
            """,
        "pkg/model.py": "from .blocks import run\n\n\ndef go(block, x, p):\n    return run(block, x, p)\n",
    },
    "home-made helper in a namespace package": {
        "repo/ldm/modules/__init__.py": "",
        "repo/ldm/modules/util.py": HOME_MADE_NN,
        "repo/ldm/models/__init__.py": "",
        "repo/ldm/models/unet.py": "from ldm.modules.util import checkpoint\n" + RES_BLOCK,
    },
    "import cycle": {
        "pkg/__init__.py": "",
        "pkg/a.py": "from .b import go\nfrom .nn import checkpoint\n\n\ndef run(fn, x):\n    return checkpoint(fn, (x,), (), True)\n",
        "pkg/b.py": "from .a import run\n\n\ndef go(block, x):\n    return run(block, x)\n",
        "pkg/nn.py": HOME_MADE_NN,
    },
    "module and dcp calls": {
        "pkg/__init__.py": "",
        "pkg/save.py": """\
            import torch.distributed.checkpoint as dcp
            import torch.utils.checkpoint


            def save(state, path, f, x):
                dcp.save(state, checkpoint_id=path)
                return torch.utils.checkpoint(f, x)
            """,
    },
}


def test_programs_of_the_test_suite(request: pytest.FixtureRequest) -> None:
    """The few hundred programs of the test suite, read alone (among them a helper called in a
    dict's key and value, whose sites libcst meets value first, and a bound
    ``checkpoint_sequential`` given its input by keyword)."""
    assert check_suite(request, "site_index_suite", _SUITE, _alone) >= 100


@pytest.mark.parametrize("name", sorted(TREES))
def test_trees(tmp_path: Path, name: str, snapshot) -> None:
    assert _golden_tree(_tree_answers(tmp_path, TREES[name])) == snapshot


def test_trees_hold_home_made_sites_of_other_modules(tmp_path: Path) -> None:
    """Sites libcst finds only by following a home-made row into another module are found."""
    for i, name in enumerate(TREES):
        if "another module" in name or "re-export" in name or "namespace" in name:
            found = _tree_answers(tmp_path / str(i), TREES[name])
            assert any("home-made" in answers["kinds"] for answers in found.values()), name


def _trees_of(module: str) -> dict[str, dict[str, str]]:
    __import__(module)
    trees = sys.modules[module].TREES
    return {name: value[0] if isinstance(value, tuple) else value for name, value in trees.items()}


_EARLIER = {f"reach: {n}": f for n, f in _trees_of("test_ast_reach").items()}
_EARLIER |= {f"helpers: {n}": f for n, f in _trees_of("test_ast_helper_calls").items()}


@pytest.mark.parametrize("name", sorted(_EARLIER))
def test_trees_of_the_earlier_bricks(tmp_path: Path, name: str, snapshot) -> None:
    assert _golden_tree(_tree_answers(tmp_path, _EARLIER[name])) == snapshot


def test_the_index_is_kept_and_its_sites_are_in_order(tmp_path: Path) -> None:
    paths = _write(tmp_path, TREES["home-made helper imported from another module"])
    loader = AstProject(Project())
    analysis = loader.ast_analysis_for_file(paths[-1])
    assert analysis is not None
    index = ast_site_index(analysis)
    assert ast_site_index(analysis) is index
    assert [s.api.kind for s in index.sites] == [ApiKind.HOME_MADE]
    assert index.sites[0].function is not None


# ------------------------------------------------- subscripts whose index is a tuple
_TUPLE_KEYS = {
    "trailing comma": 'kw["use_reentrant",] = False',
    "parenthesised key": 'kw[("use_reentrant")] = False',
    "parenthesised tuple": 'kw[("use_reentrant", "x")] = False',
    "two keys": 'kw["use_reentrant", "x"] = False',
}


@pytest.mark.parametrize("name", list(_TUPLE_KEYS))
def test_options_set_through_a_tuple_subscript(name: str, snapshot) -> None:
    """libcst reads the key of ``kw[K] = v`` when the brackets hold one element (``kw["k",]``)."""
    text = (
        "from torch.utils.checkpoint import checkpoint\n"
        "def run(f, x):\n"
        "    kw = {}\n"
        f"    {_TUPLE_KEYS[name]}\n"
        "    return checkpoint(f, x, **kw)\n"
    )
    assert _render(_alone(text)) == snapshot


@pytest.mark.parametrize("name", list(TUPLE_INDEXES))
def test_sites_of_a_tuple_subscript(name: str, snapshot) -> None:
    """The evaluator's programs of tuple indexes (``self.blocks[0,]``, ...) through the index."""
    found = _alone(_NET.replace("INDEXED", TUPLE_INDEXES[name]))
    assert _render(found) == snapshot
    assert len(found["sites"]) == 1

"""Stage 1 whole on CPython's ``ast`` (ckptlint.checkpoint.sites.ast_site_index) is libcst's
``site_index``: the same sites in the same order, every field (home-made implementations and
helpers of the module and of other modules of the tree, calls of helpers level by level,
misuse and misspellings), the same helpers, calls of ``torch.utils.checkpoint`` itself and of
``torch.distributed.checkpoint``, files read and import roots; on the rule examples, the test
cases, the programs of libcst's helper tests, and the multi-module trees of the reach and
helper tests. The comparison is ``benchmarks/ast_site_index_parity.py``'s, which runs it over
real trees."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from parity_scripts import load_parity
from test_ast_evaluation import _NET, TUPLE_INDEXES
from test_ast_evaluator_leaves import _SUITE
from test_ast_model import _case_files, _parses, _rule_examples

from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.facts.apis import ApiKind
from ckptlint.semantic.project import AstProject, Project

parity = load_parity("ast_site_index_parity")


def _write(root: Path, files: dict[str, str]) -> list[Path]:
    paths = []
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        paths.append(path)
    return paths


def _compare_tree(root: Path, files: dict[str, str]):
    """Every file of the tree compared in turn, one project per side for the whole tree (a run)."""
    cst_project, ast_project = parity.tree_projects()
    total = parity.IndexComparison()
    for path in _write(root, files):
        found = parity.IndexComparison()
        parity.compare_in_tree(path, path.read_text(encoding="utf-8"), cst_project, ast_project, found)
        found.mismatches = [f"{path.relative_to(root)}: {m}" for m in found.mismatches]
        total.add(found)
    return total


# ---------------------------------------------------------------------- modules alone
_EXAMPLES = [(label, text) for label, text in _rule_examples() if _parses(text)]


@pytest.mark.parametrize(("label", "text"), [pytest.param(t, x, id=t) for t, x in _EXAMPLES])
def test_rule_examples(label: str, text: str) -> None:
    assert parity.compare_alone(text, "pkg.mod").mismatches == []


def test_rule_examples_hold_every_kind_of_site() -> None:
    found = parity.IndexComparison()
    for _, text in _EXAMPLES:
        found.add(parity.compare_alone(text, "pkg.mod"))
    assert found.sites >= 50
    assert found.forms["home-made"] >= 1 and found.forms["helper-call"] >= 1 and found.forms["partial"] >= 1
    assert found.helpers >= 1


@pytest.mark.parametrize("path", _case_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_cases(path: Path) -> None:
    assert parity.compare_alone(path.read_text(encoding="utf-8"), "pkg.cases." + path.stem).mismatches == []


def _libcst_test_programs(name: str) -> list[str]:
    """The strings of libcst's test module ``name`` that define a function and mention
    checkpointing, dedented, when they parse."""
    import ast

    tree = ast.parse((Path(__file__).parent / name).read_text(encoding="utf-8"))
    texts = [
        textwrap.dedent(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "def " in node.value and "heckpoint" in node.value
    ]
    return [text for text in texts if _parses(text)]


_LIBCST_PROGRAMS = _libcst_test_programs("test_helper_sites.py") + _libcst_test_programs("test_reach.py")


@pytest.mark.parametrize("text", _LIBCST_PROGRAMS, ids=[f"libcst-test-{i}" for i in range(len(_LIBCST_PROGRAMS))])
def test_programs_of_libcsts_helper_and_reach_tests(text: str) -> None:
    assert parity.compare_alone(text, "pkg.mod").mismatches == []


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


def test_programs_of_the_test_suite() -> None:
    """The few hundred programs of the test suite, read alone (among them a helper called in a
    dict's key and value, whose sites libcst meets value first, and a bound
    ``checkpoint_sequential`` given its input by keyword)."""
    found = [(index, m) for index, text in enumerate(_SUITE) for m in parity.compare_alone(text, "pkg.mod").mismatches]
    assert found == []


@pytest.mark.parametrize("name", sorted(TREES))
def test_trees(tmp_path: Path, name: str) -> None:
    found = _compare_tree(tmp_path, TREES[name])
    assert found.mismatches == []


def test_trees_hold_home_made_sites_of_other_modules(tmp_path: Path) -> None:
    """Sites libcst finds only by following a home-made row into another module are found."""
    for i, name in enumerate(TREES):
        if "another module" in name or "re-export" in name or "namespace" in name:
            found = _compare_tree(tmp_path / str(i), TREES[name])
            assert found.forms["home-made"] >= 1, name


def _trees_of(module: str) -> dict[str, dict[str, str]]:
    __import__(module)
    trees = sys.modules[module].TREES
    return {name: value[0] if isinstance(value, tuple) else value for name, value in trees.items()}


_EARLIER = {f"reach: {n}": f for n, f in _trees_of("test_ast_reach").items()}
_EARLIER |= {f"helpers: {n}": f for n, f in _trees_of("test_ast_helper_calls").items()}


@pytest.mark.parametrize("name", sorted(_EARLIER))
def test_trees_of_the_earlier_bricks(tmp_path: Path, name: str) -> None:
    found = _compare_tree(tmp_path, _EARLIER[name])
    assert found.mismatches == []


def test_the_index_is_kept_and_its_sites_are_in_order(tmp_path: Path) -> None:
    paths = _write(tmp_path, TREES["home-made helper imported from another module"])
    loader = AstProject(Project(partial=False))
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
def test_options_set_through_a_tuple_subscript(name: str) -> None:
    """libcst reads the key of ``kw[K] = v`` when the brackets hold one element (``kw["k",]``)."""
    text = (
        "from torch.utils.checkpoint import checkpoint\n"
        "def run(f, x):\n"
        "    kw = {}\n"
        f"    {_TUPLE_KEYS[name]}\n"
        "    return checkpoint(f, x, **kw)\n"
    )
    assert parity.compare_alone(text, "pkg.mod").mismatches == []


@pytest.mark.parametrize("name", list(TUPLE_INDEXES))
def test_sites_of_a_tuple_subscript(name: str) -> None:
    """The evaluator's programs of tuple indexes (``self.blocks[0,]``, ...) through the index."""
    found = parity.compare_alone(_NET.replace("INDEXED", TUPLE_INDEXES[name]), "pkg.mod")
    assert found.mismatches == []
    assert found.sites == 1

"""The linted file is parsed partially too (ckptlint.checkpoint.sites.site_statements): libcst sees
only the top-level statements that can hold a checkpoint site or a home-made implementation,
and what they need. Each pattern here is a way a site depends on another statement; the
output must be exactly that of a whole parse."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from test_partial_parsing import _output

from ckptlint import perf
from ckptlint.checkpoint.sites.site_statements import site_statements
from ckptlint.lint.results import FixMode
from ckptlint.semantic import index


@pytest.fixture(autouse=True)
def _partial_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests exercise partial parsing of reached modules too (the ``partial`` parse
    mode); ``CKPTLINT_WHOLE_PARSE=1``, set for the whole-parse side, wins over it."""
    monkeypatch.setenv("CKPTLINT_PARSE", "partial")


def _chosen(source: str) -> set[str]:
    """The names bound by the chosen statements (``<expr@N>`` for one that binds nothing)."""
    found = index.build_index(textwrap.dedent(source))
    assert found is not None
    out: set[str] = set()
    for i in site_statements(found):
        statement = found.statements[i]
        out |= statement.binds or {f"<expr@{statement.start}>"}
    return out


VIT_LIKE = """\
    import torch
    from torch import nn
    from torch.utils.checkpoint import checkpoint


    def checkpoint_filter_fn(state_dict, model):
        '''Convert a pretrained checkpoint.'''
        return state_dict


    class Block(nn.Module):
        def forward(self, x):
            return x


    class VisionTransformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.Sequential(Block(), Block())

        def forward(self, x):
            return checkpoint(self.blocks, x, use_reentrant=False)


    def _create(variant, **kwargs):
        return build_model_with_cfg(VisionTransformer, variant, pretrained_filter_fn=checkpoint_filter_fn, **kwargs)


    def vit_tiny(**kwargs):
        return _create("vit_tiny", **kwargs)


    def vit_small(**kwargs):
        return _create("vit_small", **kwargs)
"""


def test_a_model_registry_is_not_chosen_with_the_class_that_checkpoints() -> None:
    chosen = _chosen(VIT_LIKE)
    assert "VisionTransformer" in chosen
    # names that merely say "checkpoint" (a docstring, a state-dict filter) and users of the class
    assert not chosen & {"checkpoint_filter_fn", "_create", "vit_tiny", "vit_small", "Block"}


@pytest.mark.parametrize(
    ("source", "expected", "not_expected"),
    [
        # an alias at module level, used in a function
        (
            "import torch.utils.checkpoint as cp\nckpt = cp.checkpoint\ndef f(g, x):\n    return ckpt(g, x)\ndef h():\n    return 1\n",
            {"ckpt", "f"},
            {"h"},
        ),
        # a wrapper function and its callers
        (
            "from torch.utils.checkpoint import checkpoint\n"
            "def wrap(fn, *a):\n    return checkpoint(fn, *a, use_reentrant=False)\n"
            "def layer(x):\n    return wrap(g, x)\n"
            "def other(x):\n    return x\n",
            {"wrap", "layer"},
            {"other"},
        ),
        # a TrainingArguments subclass: its calls are sites
        (
            "from transformers import TrainingArguments\n"
            "class Args(TrainingArguments):\n    pass\n"
            "class Plain:\n    pass\n"
            "def main():\n    return Args(output_dir='o')\n"
            "def other():\n    return Plain()\n",
            {"Args", "main"},
            {"Plain", "other"},
        ),
        # a home-made implementation, the helper calling its apply, and the helper's callers
        (
            "import torch\n"
            "class Ckpt(torch.autograd.Function):\n"
            "    @staticmethod\n    def forward(ctx, fn, *a):\n        ctx.fn = fn\n        return fn(*a)\n"
            "    @staticmethod\n    def backward(ctx, *g):\n        return g\n"
            "def run(fn, *a):\n    return Ckpt.apply(fn, *a)\n"
            "def block(x):\n    return run(f, x)\n"
            "def other(x):\n    return x\n",
            {"Ckpt", "run", "block"},
            {"other"},
        ),
        # an imported implementation's apply
        ("from .ops import MyFn\ndef f(x):\n    return MyFn.apply(g, x)\ndef h(x):\n    return x.apply(g)\n", {"f"}, {"h"}),
        # a subclass of a class holding a site inherits its methods
        (
            "from torch.utils.checkpoint import checkpoint\n"
            "class Base:\n    def run(self, x):\n        return checkpoint(self.f, x)\n"
            "class Child(Base):\n    pass\n"
            "class Other:\n    pass\n",
            {"Base", "Child"},
            {"Other"},
        ),
        # names imported from the tree that read like a checkpoint function
        (
            "from .utils import ckpt_fn, load_model\ndef f(x):\n    return ckpt_fn(g, x)\ndef h(x):\n    return load_model(x)\n",
            {"f"},
            {"h"},
        ),
        # a Hugging Face switch and the gradient_checkpointing keyword
        (
            "def f(m):\n    m.gradient_checkpointing_enable()\ndef g():\n    return Cfg(gradient_checkpointing=True)\n"
            "def h():\n    return 1\n",
            {"f", "g"},
            {"h"},
        ),
        # a star import: anything spelled like a checkpoint function may come from it
        ("from .layers import *\ndef f(x):\n    return ckpt(g, x)\ndef h(x):\n    return x\n", {"f"}, {"h"}),
    ],
)
def test_statements_a_site_depends_on_are_chosen(source: str, expected: set[str], not_expected: set[str]) -> None:
    chosen = _chosen(source)
    assert expected <= chosen
    assert not chosen & not_expected


LINTED = VIT_LIKE + """\


    def unrelated_one(x):
        return torch.nn.functional.dropout(x, 0.5)


    class Counted(nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0
            self.proj = nn.Linear(4, 4)

        def step(self, x):
            self.calls += 1
            return self.proj(x)

        def forward(self, x):
            return checkpoint(self.step, x)


    def unrelated_two(x):
        return x * 2
"""


@pytest.mark.parametrize("fix", [FixMode.NONE, FixMode.DIFF])
def test_the_linted_file_is_parsed_partially_with_the_output_of_a_whole_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fix: FixMode
) -> None:
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent(LINTED), encoding="utf-8")
    index._CACHE.clear()
    monkeypatch.setenv("CKPTLINT_WHOLE_PARSE", "1")
    whole = _output([path], fix=fix)
    monkeypatch.delenv("CKPTLINT_WHOLE_PARSE")
    index._CACHE.clear()
    before = perf.snapshot()
    partial = _output([path], fix=fix)
    counts = perf.delta(before)
    assert partial == whole
    codes = {row[0] for row in whole}
    assert "CKP202" in codes  # Counted's counter, written again by the recomputation
    assert ("fixed" if fix is FixMode.DIFF else "CKP001") in codes  # its call without use_reentrant
    # a fixed text is proved to parse by CPython's parser, not a whole libcst parse
    assert counts.get("files_parsed_partial", 0) >= 1
    assert counts.get("files_parsed_whole", 0) == 0
    if fix is FixMode.NONE:
        statements = len(index.build_index(textwrap.dedent(LINTED)).statements)
        assert 0 < counts["statements_parsed"] < statements


def test_a_batchnorm_in_a_partially_parsed_file_is_judged_on_the_whole_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether a backbone of the module keeps the BatchNorm in eval mode (CKP203) is a question
    about every class of the module: the rules run again on the whole parse."""
    source = textwrap.dedent(VIT_LIKE) + textwrap.dedent('''

        class Frozen(nn.Module):
            def __init__(self):
                super().__init__()
                self.norm = nn.BatchNorm1d(4)

            def forward(self, x):
                return checkpoint(self.norm, x, use_reentrant=False)
    ''')
    path = tmp_path / "model.py"
    path.write_text(source, encoding="utf-8")
    index._CACHE.clear()
    monkeypatch.setenv("CKPTLINT_WHOLE_PARSE", "1")
    whole = _output([path])
    monkeypatch.delenv("CKPTLINT_WHOLE_PARSE")
    before = perf.snapshot()
    partial = _output([path])
    counts = perf.delta(before)
    assert partial == whole and [row[0] for row in whole] == ["CKP203"]
    assert counts.get("files_parsed_partial") == 1 and counts.get("files_parsed_whole") == 1
    assert counts.get("rule_reruns") == 1

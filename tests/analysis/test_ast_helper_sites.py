"""Helpers and the sites of their calls found on CPython's ``ast``
(ckptlint.checkpoint.sites.ast_helper_sites), recorded while they were libcst's
(``site_index``'s ``helpers`` and ``HELPER_CALL`` sites, for the module alone, so for helpers
of the same module): every field of each summary (qualified name, parameter, parameters,
defaults, ``*``/``**`` names, level, ``keywords_elsewhere``, each checkpoint call with its
guards, plans and input plan) and of each site (API, form, call range, options with state,
value, origin and start, variant, hidden ``**`` options, callable, inputs, forwarded
keywords, caller options, alternatives, ``literal_flags``, ``inputs_bound``); on the rule
examples, the test cases, the shared cases as recorded, the programs of the helper tests and
hand-written programs (golden answers: ``__snapshots__/test_ast_helper_sites.ambr`` and
``__digests__/helper_sites_programs.json``)."""

from __future__ import annotations

import ast
import functools
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from goldens import case_params, check_suite, example_params, parses, read_case, render
from index_readings import helper_answers

from ckptlint.checkpoint.sites.ast_helper_sites import helper_sites, literal_flags
from ckptlint.checkpoint.sites.options import OptionState
from ckptlint.checkpoint.sites.site import Reentrancy
from ckptlint.semantic.ast_model import AstModel

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def _answers(text: str, module_name: str = "pkg.mod") -> list[tuple]:
    return helper_answers(text, module_name)


def _counts(text: str) -> tuple[int, int]:
    """Helpers and helper call sites of ``text``."""
    found = _answers(text)
    return sum(r[0] == "helper" for r in found), sum(r[0] == "helper call" for r in found)


@pytest.mark.parametrize(("label", "text"), example_params())
def test_rule_examples(label: str, text: str, snapshot) -> None:
    assert render(_answers(text)) == snapshot


def test_rule_examples_hold_helpers() -> None:
    """The examples are not empty of what is recorded."""
    found = [_counts(p.values[1]) for p in example_params()]
    assert sum(helpers for helpers, _ in found) >= 10
    assert sum(sites for _, sites in found) >= 2


def _libcst_helper_tests_programs() -> list[str]:
    """The programs of the helper tests (``test_helper_sites.py``, once libcst's): every
    string of it that defines a function and calls a checkpoint API, dedented, when it parses."""
    path = Path(__file__).parent / "test_helper_sites.py"
    if not path.is_file():
        return []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    texts = [
        textwrap.dedent(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "def " in node.value and "checkpoint" in node.value
    ]
    return [text for text in texts if parses(text)]


def test_programs_of_the_libcst_helper_tests(request: pytest.FixtureRequest) -> None:
    programs = _libcst_helper_tests_programs()
    check_suite(request, "helper_sites_programs", programs, _answers)
    found = [_counts(text) for text in programs]
    assert sum(helpers for helpers, _ in found) >= 10
    assert sum(sites for _, sites in found) >= 10


@pytest.mark.parametrize("path", case_params())
def test_cases(path: Path, snapshot) -> None:
    assert render(_answers(read_case(path), "pkg.cases." + path.stem)) == snapshot


PROGRAMS = {
    "flags and guards": """
        from torch.utils.checkpoint import checkpoint
        import torch.utils.checkpoint as cp
        def run(layer, x, use_checkpoint=True, use_offload=False, fast=None):
            if use_checkpoint and x is not None:
                return checkpoint(layer, x, use_reentrant=False)
            elif not use_offload:
                return cp.checkpoint(layer, x, use_reentrant=True)
            else:
                if not fast:
                    return cp.checkpoint(layer, x)
            return checkpoint(layer, x, use_reentrant=fast) if fast else layer(x)
        def forward(block, x, flag):
            run(block, x)
            run(block, x, False)
            run(block, x, use_checkpoint=flag, use_offload=True)
            run(block, x, False, False, fast=1)
            run(block, *x)
    """,
    "keyword forwarding": """
        from torch.utils.checkpoint import checkpoint
        def ckpt(func, *args, **kwargs):
            return checkpoint(func, *args, **kwargs)
        def ckpt_elsewhere(func, *args, preserve=True, **kwargs):
            if kwargs.get("off"):
                return func(*args, **kwargs)
            return checkpoint(func, *args, use_reentrant=False, preserve_rng_state=preserve, **kwargs)
        def forward(block, x, opts):
            ckpt(block, x, use_reentrant=False, scale=2)
            ckpt(block, x, **opts)
            ckpt(block, x, **{"use_reentrant": True})
            ckpt_elsewhere(block, x, use_reentrant=True, preserve=False)
            ckpt_elsewhere(block, x, debug=True, other=3)
    """,
    "star inputs": """
        from torch.utils.checkpoint import checkpoint
        def rest(module, *inputs):
            return checkpoint(module, *inputs, use_reentrant=False)
        def named(module, a, b):
            return checkpoint(module, a, b, use_reentrant=False)
        def mixed(module, a, *inputs):
            return checkpoint(module, a, *inputs, use_reentrant=False)
        def other(module, a):
            return checkpoint(module, a + 1, use_reentrant=False)
        def forward(block, x, y, more):
            rest(block, x, y)
            rest(block, *more)
            named(block, x, b=y)
            named(block, x)
            mixed(block, x, y, y)
            other(block, x)
    """,
    "methods with self, cls and bases": """
        import functools
        from torch.utils.checkpoint import checkpoint
        class Base:
            def ckpt(self, fn, *args, use_reentrant=False):
                return checkpoint(fn, *args, use_reentrant=use_reentrant)
            @staticmethod
            def plain(fn, x):
                return checkpoint(fn, x, use_reentrant=False)
            @classmethod
            def klass(cls, fn, x):
                return checkpoint(functools.partial(fn, scale=2), x, use_reentrant=True)
            def not_param(self, x):
                return checkpoint(self.block, x, use_reentrant=False)
        class Middle(Base):
            pass
        class Net(Middle):
            def forward(self, x):
                x = self.ckpt(self.block, x)
                x = self.ckpt(self.block, x, use_reentrant=True)
                x = self.plain(self.block, x)
                x = self.klass(self.block, x)
                x = self.not_param(x)
                def inner(y):
                    return self.ckpt(self.block, y)
                return inner(x)
        class Other(Base):
            def ckpt(self, fn, x):
                return fn(x)
            def forward(self, x):
                return self.ckpt(self.block, x)
    """,
    "helpers of helpers": """
        from torch.utils.checkpoint import checkpoint
        def level1(fn, x, reentrant):
            return checkpoint(fn, x, use_reentrant=reentrant)
        def level2(fn, x, reentrant=False):
            return level1(fn, x, reentrant)
        def level3(fn, x, **kwargs):
            return level2(fn, x, **kwargs)
        def level4(fn, x):
            return level3(fn, x)
        def forward(block, x):
            level2(block, x)
            level3(block, x, reentrant=True)
            level4(block, x)
        def recursive(fn, x):
            return recursive(fn, x) if x else checkpoint(fn, x)
    """,
    "a literal flag": """
        from torch.utils.checkpoint import checkpoint
        import deepspeed
        ON = True
        def maybe(layer, x, use_gc=ON, ds=False):
            if use_gc:
                if ds:
                    return deepspeed.checkpointing.checkpoint(layer, x)
                return checkpoint(layer, x, use_reentrant=False)
            return layer(x)
        def forward(block, x, flag):
            maybe(block, x)
            maybe(block, x, use_gc=flag)
            maybe(block, x, ds=True)
            maybe(block, x, True, 0)
    """,
    "every alternative ruled out": """
        from torch.utils.checkpoint import checkpoint
        def run(layer, x, grad_ckpt=False):
            if grad_ckpt:
                return checkpoint(layer, x, use_reentrant=False)
            return layer(x)
        def forward(block, x):
            run(block, x)
            run(block, x, False)
            run(block, x, grad_ckpt=None)
            return run(block, x, True)
    """,
    "callables built from the parameter": """
        from functools import partial
        from torch.utils.checkpoint import checkpoint
        from megatron.core import tensor_parallel
        def create_custom_forward(module):
            def custom_forward(*inputs):
                return module(*inputs)
            return custom_forward
        def a(model, x):
            return checkpoint(create_custom_forward(model), x, use_reentrant=False)
        def b(model, x):
            return checkpoint(lambda *i: model(*i), x, use_reentrant=False)
        def c(model, x):
            return checkpoint(model.forward, x, use_reentrant=False)
        def d(model, x):
            return checkpoint(partial(model, flag=True), x)
        def e(model, x):
            return tensor_parallel.checkpoint(model, False, x)
        async def f(model, x):
            return checkpoint(model, x, use_reentrant=False)
        def g(model, x):
            def nested(y):
                return checkpoint(model, y, use_reentrant=False)
            return nested(x)
        def forward(block, x):
            return a(block, x), b(block, x), c(block, x), d(block, x), e(block, x), f(block, x), g(block, x)
    """,
    "rebound parameters and imported helpers": """
        from torch.utils.checkpoint import checkpoint
        from .utils import run_elsewhere
        from . import utils
        def use_reentrant_ckpt():
            return False
        def timm_like(module, *args, use_reentrant=None, **kwargs):
            if use_reentrant is None:
                use_reentrant = use_reentrant_ckpt()
            return checkpoint(module, *args, use_reentrant=use_reentrant, **kwargs)
        def forward(block, x):
            timm_like(block, x, use_reentrant=True)
            run_elsewhere(block, x)
            utils.run_elsewhere(block, x)
    """,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs(name: str, snapshot) -> None:
    text = textwrap.dedent(PROGRAMS[name])
    assert render(_answers(text)) == snapshot
    helpers, sites = _counts(text)
    assert helpers >= 1
    if name == "every alternative ruled out":
        assert sites == 1  # `run(block, x, True)` alone reaches a checkpoint call
    elif name == "helpers of helpers":
        # level4 would be a fourth level: beyond MAX_LEVELS
        assert Counter(r[10] for r in _answers(text) if r[0] == "helper") == {1: 2, 2: 1, 3: 2}
    elif name != "rebound parameters and imported helpers":
        assert sites >= 3


def _found(name: str):
    model = AstModel.build(ast.parse(textwrap.dedent(PROGRAMS[name])), "pkg.mod")
    return model, helper_sites(model)


def test_flags_read_on_ast() -> None:
    """The ``ast`` reading's own values, not only their agreement with libcst's."""
    model, found = _found("every alternative ruled out")
    assert found.helpers["run"].calls[0].guards == (("grad_ckpt", True),)
    # `run(block, x)`, `run(block, x, False)` and `grad_ckpt=None` reach no checkpoint call
    assert [site.call.lineno for site in found.sites] == [11]
    assert [sorted(literal_flags(site, model)) for site in found.sites] == [["grad_ckpt"]]

    model, found = _found("a literal flag")
    sites = found.sites
    # `ds=True` keeps deepspeed's call and torch's: two variants, unknown which runs
    assert [len(site.alternatives) for site in sites] == [1, 1, 2, 1]
    assert [site.reentrancy for site in sites] == [Reentrancy.NON_REENTRANT] * 2 + [Reentrancy.UNKNOWN, Reentrancy.NON_REENTRANT]
    # the module-level `ON = True` default is a literal; `use_gc=flag` is not
    assert [sorted(literal_flags(site, model)) for site in sites] == [["use_gc"], [], ["ds", "use_gc"], ["use_gc"]]


def test_keywords_read_on_ast() -> None:
    model, found = _found("keyword forwarding")
    assert found.helpers["ckpt"].calls[0].plans["use_reentrant"] == ("keywords",)
    assert not found.helpers["ckpt"].keywords_elsewhere
    assert found.helpers["ckpt_elsewhere"].keywords_elsewhere
    first = found.sites[0]
    assert (first.use_reentrant.state, first.use_reentrant.value) == (OptionState.LITERAL, False)
    assert [k.arg for k in first.function_keywords] == ["scale"]
    assert first.caller_options >= {"use_reentrant"}
    assert found.sites[1].hidden_arguments


def test_imported_helpers_are_out_of_scope() -> None:
    """Calls of helpers of other modules are no sites here (libcst follows them with a loader)."""
    _, found = _found("rebound parameters and imported helpers")
    assert list(found.helpers) == ["timm_like", "forward"]  # `forward` passes `block` on
    assert [site.call.lineno for site in found.sites] == [12]
    assert found.helpers["timm_like"].calls[0].plans["use_reentrant"] == ("fixed",)

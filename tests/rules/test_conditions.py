"""Every call-level rule states the condition under which its finding holds, as region
findings do: the ``if``/``while`` tests around the call, a constructor switch or a parameter
defaulting to off named with its default (``"; this code runs only when `self.with_cp` is true
(it defaults to `False`)"``)."""

from __future__ import annotations

import textwrap

import pytest

from ckptlint.rules.recompute_examples import RECOMPUTE_FUNCTION
from ckptlint.testing import findings, lint

SWITCH = "; this code runs only when `self.with_cp` is true (it defaults to `False`)"
PARAMETER = "; this code runs only when `use_cp` is true (it defaults to `False`)"


def in_class(imports: str, statement: str) -> str:
    """``statement`` in a module's ``forward``, under ``if self.with_cp:``."""
    return imports + textwrap.dedent(
        """\
        class Block:
            def __init__(self, with_cp=False):
                self.with_cp = with_cp
            def forward(self, x):
                if self.with_cp:
                    {statement}
                return x
        """
    ).replace("{statement}", statement)


def in_function(imports: str, statement: str) -> str:
    """``statement`` in a function, under ``if use_cp:`` (a parameter defaulting to off)."""
    return imports + f"def run(model, x, use_cp=False):\n    if use_cp:\n        {statement}\n"


CHECKPOINT = "from torch.utils.checkpoint import checkpoint\n"
SEQUENTIAL = "from torch.utils.checkpoint import checkpoint_sequential\n"
CASES = [
    ("CKP001", in_class(CHECKPOINT, "x = checkpoint(self.f, x)"), SWITCH),
    ("CKP001", in_function("", "model.gradient_checkpointing_enable()"), PARAMETER),
    ("CKP002", in_class(CHECKPOINT, "x = checkpoint(self.f, x, use_reentrant=True, mask=x)"), SWITCH),
    ("CKP002", in_function(SEQUENTIAL, "x = checkpoint_sequential(model, 2, x, False, debug=True)"), PARAMETER),
    ("CKP003", in_class(CHECKPOINT, "x = checkpoint(self.f, x, use_reentrant=False, preserve_rng=False)"), SWITCH),
    ("CKP004", in_function("", 'model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})'), PARAMETER),
    ("CKP301", in_function(CHECKPOINT, "checkpoint(model.state_dict(), 'model.pt')"), PARAMETER),
    ("CKP302", in_function("from torch.utils import checkpoint\n", "x = checkpoint(model, x)"), PARAMETER),
    ("CKP303", in_function("import torch.distributed.checkpoint as dcp\n", "dcp.save(model, checkpoint_id=x)"), PARAMETER),
    ("CKP304", in_function("import torch\n" + CHECKPOINT, "with torch.no_grad(): x = checkpoint(model, x, use_reentrant=0)"), PARAMETER),
]


@pytest.mark.parametrize(("code", "source", "condition"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_call_level_finding_states_its_condition(code: str, source: str, condition: str) -> None:
    versions = {"transformers": ">=5.24"} if code == "CKP004" else None  # the alias exists there
    found = [d for d in lint(source, [code], versions=versions) if d.code == code]
    assert found, source
    for d in found:
        assert d.message.endswith(condition), d.message


def test_call_level_finding_without_a_guard_states_nothing() -> None:
    source = CHECKPOINT + "def run(model, x, use_cp=False):\n    return checkpoint(model, x, use_reentrant=True, mask=x)\n"
    (d,) = findings(source, "CKP002")
    assert "this code runs only when" not in d.message


@pytest.mark.parametrize("code", ["CKP104", "CKP105"])
def test_home_made_recompute_states_the_guard_of_its_re_run(code: str) -> None:
    source = RECOMPUTE_FUNCTION.format(save="", restore="").replace(
        "            out = ctx.fn(x)\n", "            if ctx.needs_input_grad[0]:\n                out = ctx.fn(x)\n"
    )
    (d,) = findings(source, code)
    assert d.message.endswith("; this code runs only when `ctx.needs_input_grad[0]`"), d.message


def test_an_early_exit_before_the_call_is_its_condition() -> None:
    source = CHECKPOINT + textwrap.dedent(
        """\
        class Block:
            def __init__(self, with_cp=False):
                self.with_cp = with_cp
            def forward(self, x):
                if not self.with_cp:
                    return self.f(x)
                if x.numel() == 0: raise ValueError("empty")  # an error check: implied, not said
                if x.dim() == 2:
                    print("flat input")
                    return x  # a branch that does more than exit: not said either
                if x.dim() == 3: return self.f(x)
                return checkpoint(self.f, x)
        """
    )
    (d,) = findings(source, "CKP001")
    assert d.message.endswith(SWITCH + " and `not (x.dim() == 3)`"), d.message


def test_an_if_that_does_not_exit_is_no_condition() -> None:
    source = CHECKPOINT + "def run(f, x, use_cp=False):\n    if use_cp:\n        x = x + 1\n    return checkpoint(f, x)\n"
    (d,) = findings(source, "CKP001")
    assert "this code runs only when" not in d.message


def test_a_switch_on_by_default_is_named_with_its_default() -> None:
    source = in_class(CHECKPOINT, "x = checkpoint(self.f, x)").replace("with_cp=False", "with_cp=True")
    (d,) = findings(source, "CKP001")
    assert d.message.endswith("; this code runs only when `self.with_cp` is true (it defaults to `True`)")

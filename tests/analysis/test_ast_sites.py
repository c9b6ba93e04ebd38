"""The sites of direct checkpoint API calls found on CPython's ``ast``
(ckptlint.checkpoint.sites.ast_sites), recorded while they were libcst's
(ckptlint.checkpoint.sites.sites.site_index): API, form, call range (1-based line and column),
variant, hidden ``**`` options and, for every option, state, value, origin and where its
expression starts; and the gradient hooks that re-run the model; on the rule examples, the
test cases, the shared cases as recorded and hand-written programs (golden answers:
``__snapshots__/test_ast_sites.ambr``). They cover direct calls (qualified names of an API,
``gradient_checkpointing_enable``-like switches, method names that are an API whatever the
receiver, methods of instances of an API class, ``self.attr(...)`` holding a checkpoint
function, ``functools.partial`` bindings and calls through them, ``TrainingArguments``
subclasses of the module, the classes a policy selects), not helper calls, home-made
implementations or calls recognised through other modules (``test_ast_site_index.py``)."""

from __future__ import annotations

import ast
import functools
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from goldens import case_params, example_params, read_case, render
from site_readings import sites_of_text

from ckptlint.checkpoint.sites.ast_sites import direct_sites
from ckptlint.checkpoint.sites.options import OptionState
from ckptlint.semantic.ast_model import AstModel

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def _answers(text: str, module_name: str = "pkg.mod") -> dict[str, list]:
    return sites_of_text(text, module_name)


def _golden(text: str, module_name: str = "pkg.mod") -> str:
    return "\n".join(f"{key}:\n{render(value)}" for key, value in _answers(text, module_name).items())


@pytest.mark.parametrize(("label", "text"), example_params())
def test_rule_examples(label: str, text: str, snapshot) -> None:
    assert _golden(text) == snapshot


def test_rule_examples_hold_sites() -> None:
    """The examples are not empty of what is recorded."""
    assert sum(len(_answers(param.values[1])["sites"]) for param in example_params()) >= 100


@pytest.mark.parametrize("path", case_params())
def test_cases(path: Path, snapshot) -> None:
    assert _golden(read_case(path), "pkg.cases." + path.stem) == snapshot


PROGRAMS = {
    "options every way": """
        import torch.utils.checkpoint as cp
        from torch.utils.checkpoint import checkpoint, checkpoint_sequential
        keep = False
        def forward(self, x, flag, **kwargs):
            a = checkpoint(self.block, x, use_reentrant=False, preserve_rng_state=keep)
            b = cp.checkpoint(self.block, x, use_reentrant=flag)
            c = checkpoint(self.block, x, **kwargs)
            d = checkpoint(self.block, *x)
            e = checkpoint_sequential(self.layers, 2, x, False)
            f = checkpoint_sequential(self.layers, 2, x, *rest)
            g = checkpoint(function=self.block, use_reentrant=-1, debug=(1, "a"))
            return a, b, c, d, e, f, g
    """,
    "keyword dictionaries": """
        from torch.utils.checkpoint import checkpoint
        def run(block, x, extra=None, defaults={"use_reentrant": True}):
            opts = {"use_reentrant": False}
            checkpoint(block, x, **opts)
            more = dict(preserve_rng_state=False, **opts)
            checkpoint(block, x, **more)
            late = {}
            late["use_reentrant"] = True
            late.setdefault("debug", False)
            late.update(determinism_check="none")
            checkpoint(block, x, **late)
            checkpoint(block, x, **extra)
            checkpoint(block, x, **defaults)
            checkpoint(block, x, **{"use_reentrant": False, **opts})
            checkpoint(block, x, **{**extra})
            opts = {}; checkpoint(block, x, **opts)
    """,
    "diffusers torch-version tests": """
        import inspect
        from torch.utils.checkpoint import checkpoint
        from diffusers.utils import is_torch_version
        ckpt_kwargs = {"use_reentrant": False} if is_torch_version(">=", "1.11.0") else {}
        def forward(block, x):
            checkpoint(block, x, **ckpt_kwargs)
            if is_torch_version(">=", "1.11.0"):
                checkpoint(block, x, use_reentrant=False)
            else:
                checkpoint(block, x)
            if is_torch_version("<", "1.11.0") and x:
                checkpoint(block, x)
            if "use_reentrant" in inspect.signature(checkpoint).parameters:
                checkpoint(block, x, use_reentrant=True)
            return checkpoint(block, x, use_reentrant=False) if is_torch_version(">=", "1.11.0") else checkpoint(block, x)
    """,
    "a module-level partial rebinding the import": """
        import functools
        from torch.utils.checkpoint import checkpoint
        checkpoint = functools.partial(checkpoint, use_reentrant=False)
        def forward(block, x):
            return checkpoint(block, x)
    """,
    "transformers switches and method APIs": """
        from transformers import TrainingArguments
        def train(model, kwargs, layer, x):
            model.gradient_checkpointing_enable()
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            model.gradient_checkpointing_enable({"use_reentrant": True})
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs='{"use_reentrant": false}')
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
            model.activation_checkpointing_enable(every_n_layers=2)
            TrainingArguments("out", gradient_checkpointing=True)
            TrainingArguments("out", gradient_checkpointing=False)
            TrainingArguments("out", activation_checkpointing=True, gradient_checkpointing_kwargs=None)
            return layer._gradient_checkpointing_func(layer.__call__, x, None)
    """,
    "wrappers, composable and policies": """
        import functools
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
            CheckpointImpl, apply_activation_checkpointing, checkpoint_wrapper,
        )
        from torch.distributed._composable import checkpoint as composable
        from torch.utils.checkpoint import checkpoint
        def wrap(model, impl, blocks):
            checkpoint_wrapper(model)
            checkpoint_wrapper(model, CheckpointImpl.REENTRANT)
            checkpoint_wrapper(model, checkpoint_impl=impl)
            checkpoint_wrapper(model, checkpoint_fn=checkpoint, use_reentrant=False)
            composable(model)
            wrapper = functools.partial(checkpoint_wrapper, checkpoint_impl=CheckpointImpl.NO_REENTRANT)
            apply_activation_checkpointing(model, checkpoint_wrapper_fn=wrapper, check_fn=lambda m: m in blocks)
            apply_activation_checkpointing(model)
    """,
    "libraries": """
        import deepspeed
        from timm.models._manipulate import checkpoint_seq
        from megatron.core import tensor_parallel
        def forward(self, x):
            x = checkpoint_seq(self.blocks, x, every=2)
            x = deepspeed.checkpointing.checkpoint(self.block, x)
            x = tensor_parallel.checkpoint(self.block, False, x)
            return self.activation_checkpoint_func(self.block, x)
    """,
    "instances of an API class": """
        import contextlib
        import deepspeed
        from torch.utils.checkpoint import checkpoint
        from megatron.core.tensor_parallel import CheckpointWithoutOutput
        from megatron.core import tensor_parallel
        NAME = "later_ckpt"
        class Layer:
            def __init__(self, manager):
                self.norm_ckpt = CheckpointWithoutOutput()
                self.a, self.b = tensor_parallel.CheckpointWithoutOutput(), None
                setattr(self, NAME, CheckpointWithoutOutput(ckpt_manager=manager))
                with contextlib.nullcontext(CheckpointWithoutOutput()) as self.entered:
                    pass
            def forward(self, x, manager):
                y = self.norm_ckpt.checkpoint(self.norm, x)
                y = self.a.checkpoint(self.norm, y)
                y = self.later_ckpt.checkpoint(self.norm, y)
                y = self.entered.checkpoint(self.norm, y)
                local = CheckpointWithoutOutput()
                y = local.checkpoint(self.norm, y)
                y = CheckpointWithoutOutput(ckpt_manager=manager).checkpoint(self.norm, y)
                return self.b.checkpoint(self.norm, y)
        class Block:
            def __init__(self, reentrant):
                if reentrant:
                    self._ckpt_fn = deepspeed.checkpointing.checkpoint
                else:
                    self._ckpt_fn = checkpoint
                self.run = checkpoint
            def forward(self, x):
                self.run(self.f, x)
                return self._ckpt_fn(self.f, x, use_reentrant=False)
    """,
    "partial bindings and calls through them": """
        import functools
        from functools import partial
        from torch.utils.checkpoint import checkpoint, checkpoint_sequential
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
        ckpt = partial(checkpoint, use_reentrant=False)
        seq = functools.partial(checkpoint_sequential, segments=2)
        wrap = partial(checkpoint_wrapper, preserve_rng_state=False)
        def make():
            return partial(checkpoint, preserve_rng_state=False)
        class Net:
            def __init__(self, flag):
                self._ckpt = functools.partial(checkpoint, use_reentrant=flag)
                self.ckpt_fn = make()
                self.checkpoint_helper = self._make()
            def _make(self):
                return partial(checkpoint, self.block, use_reentrant=True)
            def forward(self, x, **kwargs):
                x = ckpt(self.block, x)
                x = ckpt(self.block, x, use_reentrant=True, **kwargs)
                x = seq(self.layers, input=x)
                wrap(self.block)
                x = self._ckpt(self.block, x)
                x = self.ckpt_fn(self.block, x, use_reentrant=False)
                x = self.checkpoint_helper(x)
                later = partial(checkpoint, self.block)
                return later(x, use_reentrant=False)
    """,
    "straight-line kills inside functions": """
        from torch.utils.checkpoint import checkpoint
        def run(block, x, kwargs):
            kwargs = {"use_reentrant": False}
            checkpoint(block, x, **kwargs)
        def run2(block, x):
            opts = {"use_reentrant": True}
            if x:
                opts = {}
            checkpoint(block, x, **opts)
        def run3(block, x): opts = {}; return checkpoint(block, x, **opts)
    """,
    "not sites": """
        import torch.utils.checkpoint
        import torch.distributed.checkpoint as dcp
        import functools
        from torch.utils.checkpoint import checkpoint
        def f(model, x):
            torch.utils.checkpoint(model)
            dcp.save({}, checkpoint_id="x")
            functools.partial(checkpoint, use_reentrant=False)
            model.checkpoint(x)
    """,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs(name: str, snapshot) -> None:
    text = textwrap.dedent(PROGRAMS[name])
    assert _golden(text) == snapshot
    sites = len(_answers(text)["sites"])
    if name == "not sites":
        assert sites == 1  # the partial binds nothing
    elif name == "a module-level partial rebinding the import":
        assert sites == 2
    elif name == "partial bindings and calls through them":
        forms = Counter(s.form.value for s in direct_sites(AstModel.build(ast.parse(text))))
        assert (sites, forms) == (15, {"partial": 7, "bound-call": 8})
    elif name == "instances of an API class":
        assert sites == 7
    else:
        assert sites >= 2


def test_options_read_on_ast() -> None:
    """The ``ast`` sites' own values, not only their agreement with libcst's."""
    sites = direct_sites(AstModel.build(ast.parse(textwrap.dedent(PROGRAMS["keyword dictionaries"])), "pkg.mod"))
    states = [(s.use_reentrant.state, s.use_reentrant.value) for s in sites]
    assert states == [
        (OptionState.LITERAL, False),
        (OptionState.LITERAL, False),
        (OptionState.LITERAL, True),
        (OptionState.UNKNOWN, None),
        (OptionState.UNKNOWN, None),  # the parameter's default, or what the caller passes
        (OptionState.LITERAL, False),
        (OptionState.UNKNOWN, None),
        # ``opts = {}; checkpoint(...)``: libcst's reaching rule takes the line as one
        # statement, whose own ``=`` cannot reach it, so the earlier ``opts`` does
        (OptionState.LITERAL, False),
    ]
    assert [s.hidden_arguments for s in sites] == [False, False, False, True, True, False, True, False]
    assert [s.call.lineno for s in sites] == [5, 7, 12, 13, 14, 15, 16, 17]

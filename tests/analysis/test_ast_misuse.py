"""Misspelled checkpoint options (CKP003) and save misuses (CKP301) of the sites found on
CPython's ``ast`` (ckptlint.checkpoint.sites.ast_misspelling, ast_misuse, attached by
ast_sites.direct_sites), recorded while they were libcst's (misspelling.find_misspellings,
misuse.find_save_misuse): per site, the save misuse's reason, form, saved object, destination
and arguments, and every misspelling's written name, option, ratio, renamed node, argument
and value (ranges as 1-based line and column); on the rule examples, the test cases, the
shared cases as recorded and hand-written programs (golden answers:
``__snapshots__/test_ast_misuse.ambr``)."""

from __future__ import annotations

import ast
import functools
import textwrap
from pathlib import Path

import pytest
from goldens import case_params, example_params, read_case, render
from index_readings import misuse_answers

from ckptlint.checkpoint.sites.ast_sites import direct_sites
from ckptlint.checkpoint.sites.site import SaveForm
from ckptlint.semantic.ast_model import AstModel


@functools.cache
def _answers(text: str, module_name: str = "pkg.mod") -> list[tuple]:
    return misuse_answers(text, module_name)


def _counts(text: str) -> tuple[int, int]:
    """Save misuses and misspellings of ``text``."""
    found = _answers(text)
    return sum(r[3] is not None for r in found), sum(len(r[4]) for r in found)


@pytest.mark.parametrize(("label", "text"), example_params())
def test_rule_examples(label: str, text: str, snapshot) -> None:
    assert render(_answers(text)) == snapshot


def test_rule_examples_hold_findings() -> None:
    """CKP003's and CKP301's examples hold misspellings and save misuses."""
    counts = [_counts(p.values[1]) for p in example_params() if p.values[0].startswith(("CKP003", "CKP301"))]
    assert sum(misspellings for _, misspellings in counts) >= 5
    assert sum(misuses for misuses, _ in counts) >= 5


@pytest.mark.parametrize("path", case_params())
def test_cases(path: Path, snapshot) -> None:
    assert render(_answers(read_case(path), "pkg.cases." + path.stem)) == snapshot


PROGRAMS = {
    "misspelled keywords": """
        import functools
        from torch.utils.checkpoint import checkpoint, checkpoint_sequential
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
        def forward(self, x, flag):
            a = checkpoint(self.block, x, use_reentrent=False)
            b = checkpoint(self.block, x, preserve_rng=False)
            c = checkpoint(self.block, x, preserve_rng_states=flag)
            d = checkpoint(self.block, x, determinism="none", early_stopping=True)
            e = checkpoint(self.block, x, contextfn=make_ctx, context_f=functools.partial(make_ctx))
            f = checkpoint_sequential(self.layers, 2, x, use_reentrnt=True)
            checkpoint_wrapper(self.block, checkpoint_impls=None, preserve_rng_stat=True)
            ckpt = functools.partial(checkpoint, use_reentrent=False)
            g = ckpt(self.block, x, preserve_rng=True)
            return a, b, c, d, e, f, g
    """,
    "misspelled keys of dict literals and names": """
        from torch.utils.checkpoint import checkpoint
        from transformers import TrainingArguments
        opts = {"use_reentrent": False}
        def forward(model, block, x, args):
            checkpoint(block, x, **{"use_reentrent": False, "preserve_rng": True})
            checkpoint(block, x, **opts)
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrent": False, "debug_log": 1})
            model.gradient_checkpointing_enable({"preserve_rng": False, b"use_reentrnt": True, **args})
            kwargs = {"use_reentrent": False}
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
            TrainingArguments("out", gradient_checkpointing=True, gradient_checkpointing_kwargs={"use_rentrant": False})
    """,
    "near-misses that do not count": """
        from torch.utils.checkpoint import checkpoint
        def custom(x, use_reentrent=False, **kwargs):
            return x
        make = lambda *a, preserve_rng=True: a
        class Net:
            def run(self, x, reentrant=True):
                return x
            def forward(self, x, ctx):
                checkpoint(custom, x, use_reentrent=True)
                checkpoint(make, x, preserve_rng=False)
                checkpoint(self.run, x, reentrant=False)
                checkpoint(self.block, x, eos_early_stop=True, debug_log=False)
                checkpoint(self.block, x, context=ctx, deterministic=True, reentrant=ctx)
                checkpoint(self.block, x, use_reentrant=False, preserve_rng_state=True)
                return checkpoint(self.block, x, early_stopping=ctx, determinism="full")
    """,
    "a factory's returned function declares the keyword": """
        from torch.utils.checkpoint import checkpoint
        def create_custom_forward(module):
            def custom_forward(*inputs, preserve_rng=False):
                return module(*inputs)
            return custom_forward
        def one_line(module): return lambda *a, preserve_rng=False: module(*a)
        def two_statements(module):
            f = lambda *a, preserve_rng=False: module(*a); return f
        async def run_async(x, preserve_rng=True):
            return x
        def forward(layer, x):
            checkpoint(create_custom_forward(layer), x, preserve_rng=True)
            checkpoint(one_line(layer), x, preserve_rng=True)
            checkpoint(two_statements(layer), x, preserve_rng=True)
            checkpoint(run_async, x, preserve_rng=True)
    """,
    "torch.save- and torch.load-shaped calls": """
        import os
        import torch
        from pathlib import Path
        from torch.utils.checkpoint import checkpoint
        def save_model(model, optimizer, scheduler, out_dir, epoch):
            checkpoint(model.state_dict(), os.path.join(out_dir, "model.pt"))
            checkpoint(model.state_dict(), f"{out_dir}/model_{epoch}.pt")
            checkpoint({"model": model.state_dict(), "epoch": epoch}, "ckpt.pth")
            checkpoint(optimizer, out_dir + "/optim.pt")
            checkpoint(torch.optim.AdamW(model.parameters()), "optim.pt")
            checkpoint(torch.save, model.state_dict(), "model.pt")
            checkpoint(torch.load, "model.pt", map_location="cpu")
            checkpoint(Path(out_dir) / "model.pt", model)
            checkpoint("weights.safetensors", model.state_dict())
            checkpoint(self.optimizer, Path(out_dir))
            checkpoint(scheduler, out_dir)
            checkpoint(model, *rest)
        def resume_training(model, state, ckpt_path):
            checkpoint(model, ckpt_path)
            checkpoint(state)
            checkpoint(ckpt_path, model)
            out = checkpoint(model, state)
            return out
        def load_checkpoint(model, optimizer):
            checkpoint(model, optimizer)
        class Trainer:
            def on_save_checkpoint(self, checkpoint_dict):
                checkpoint(self.model, checkpoint_dict)
                run = lambda: checkpoint(self.model, self.x)
    """,
    "state_dict() as the callable and path-like destinations": """
        import os.path
        import torch.utils.checkpoint as cp
        from torch.utils.checkpoint import checkpoint
        from torch.distributed.checkpoint.state_dict import get_model_state_dict
        from functools import partial
        def export(model, dest, file_name):
            sd = model.state_dict()
            checkpoint(sd, dest)
            cp.checkpoint(get_model_state_dict(model), os.path.join(dest, file_name))
            checkpoint(model.state_dict(), file_name)
            checkpoint(model.state_dict(), "C:\\\\runs\\\\model")
            checkpoint(model.state_dict(), "causal")
            checkpoint(dict(a=1), "out.bin", use_reentrant=False)
            save = partial(checkpoint, model.state_dict())
            save("x.pt", use_reentrant=False)
            y = checkpoint(model.block, model.x)
            return y
    """,
    "peft's switch": """
        from peft import prepare_model_for_kbit_training
        def prepare(model):
            prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
            prepare_model_for_kbit_training(model, gradient_checkpointing_kwargs={"use_reentrent": False})
            prepare_model_for_kbit_training(model, True, {"preserve_rng": False})
            prepare_model_for_kbit_training(model, use_gradient_checkpointing=True, use_reentrent=False)
    """,
    "computations that are no misuse": """
        from torch.utils.checkpoint import checkpoint
        class RNN:
            def save_hidden(self, cell, state):
                return checkpoint(cell, state, use_reentrant=False)
            def forward(self, x):
                h = checkpoint(self.block, x, "causal", use_reentrant=False)
                return checkpoint(self.layer, h, use_reentrant=False)
    """,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs(name: str, snapshot) -> None:
    text = textwrap.dedent(PROGRAMS[name])
    assert render(_answers(text)) == snapshot
    assert len(_answers(text)) >= 3
    expected = {
        "misspelled keywords": (0, 12),
        "misspelled keys of dict literals and names": (0, 3),
        "near-misses that do not count": (0, 0),
        "a factory's returned function declares the keyword": (0, 2),
        "torch.save- and torch.load-shaped calls": (17, 0),
        "state_dict() as the callable and path-like destinations": (8, 0),
        "computations that are no misuse": (0, 0),
        "peft's switch": (0, 2),
    }[name]
    assert _counts(text) == expected


#: Where ``ast`` keeps no trace of the source text libcst read (see the docstrings of
#: ast_misspelling and ast_argument_kinds): the two differed there, none met on the
#: corpus trees; what ``ast`` answers is recorded.
DIVERGENT = {
    "a dict key written in parts": """
        def enable(model):
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_" "reentrent": False})
    """,
    "an escape in an f-string input": """
        from torch.utils.checkpoint import checkpoint
        def run(model, d):
            y = checkpoint(model, f"{d}\\n")
    """,
}


@pytest.mark.parametrize("name", sorted(DIVERGENT))
def test_known_divergences(name: str, snapshot) -> None:
    assert render(_answers(textwrap.dedent(DIVERGENT[name]))) == snapshot


#: Layouts where libcst's logical line is not ``ast``'s physical row: the factory's body
#: after the colon, or its last line joined by ``;`` and a backslash (one misspelling each).
LAYOUTS = {
    "a factory's body after a closing parenthesis on its own line": """
        from torch.utils.checkpoint import checkpoint
        def make(m,
        ): return lambda *a, preserve_rng=1: m(*a)
        checkpoint(make(1), 1, preserve_rng=True)
    """,
    "a factory's one-line body after a parenthesis, keyword misspelled": """
        from torch.utils.checkpoint import checkpoint
        def make(a
                 ): return lambda x, use_reentrnt=None: x
        def run(x):
            return checkpoint(make(1), x, use_reentrnt=False)
    """,
    "a factory's last line joined by a semicolon and a backslash": """
        from torch.utils.checkpoint import checkpoint
        def make():
            def inner(x, use_reentrnt=None):
                return x
            y = 1; \\
            return inner
        def run(x):
            return checkpoint(make(), x, use_reentrnt=False)
    """,
}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_logical_line_layouts(name: str, snapshot) -> None:
    text = textwrap.dedent(LAYOUTS[name])
    assert render(_answers(text)) == snapshot
    assert _counts(text)[1] == 1


def test_an_nfkc_identifier(snapshot) -> None:
    """``ast`` normalises identifiers as Python does (PEP 3131; libcst kept the spelling)."""
    text = "from torch.utils.checkpoint import checkpoint\ndef run(f, x):\n    return checkpoint(f, x, preserve_rng_\uff53tate=False)\n"
    assert render(_answers(text)) == snapshot


def test_findings_read_on_ast() -> None:
    """The ``ast`` records' own values, not only their agreement with libcst's."""
    text = textwrap.dedent(PROGRAMS["torch.save- and torch.load-shaped calls"])
    sites = direct_sites(AstModel.build(ast.parse(text), "pkg.mod"))
    first = sites[0].save_misuse
    assert first is not None and first.form is SaveForm.SAVE_OBJECT
    assert isinstance(first.saved, ast.Call) and isinstance(first.destination, ast.Call)
    assert first.reason == "its callable is a `state_dict()` call, not a computation"
    loading = sites[6].save_misuse
    assert loading is not None and loading.form is SaveForm.LOAD_CALL
    assert [type(arg).__name__ for arg in loading.arguments] == ["Constant", "keyword"]
    text = textwrap.dedent(PROGRAMS["misspelled keywords"])
    sites = direct_sites(AstModel.build(ast.parse(text), "pkg.mod"))
    (misspelling,) = sites[0].misspellings
    assert (misspelling.written, misspelling.option, round(misspelling.ratio, 2)) == ("use_reentrent", "use_reentrant", 0.92)
    assert isinstance(misspelling.node, ast.keyword) and misspelling.arg is misspelling.node
    assert sites[0].misspelling_of("use_reentrant") is misspelling and sites[0].is_misspelled(misspelling.node)

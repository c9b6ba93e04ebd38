"""Misspelled checkpoint options (CKP003) and save misuses (CKP301) of the sites found on
CPython's ``ast`` (ckptlint.checkpoint.sites.ast_misspelling, ast_misuse, attached by
ast_sites.direct_sites) are libcst's (misspelling.find_misspellings, misuse.find_save_misuse,
attached by sites.collect_sites): per site, the save misuse's reason, form, saved object,
destination and arguments, and every misspelling's written name, option, ratio, renamed node,
argument and value (ranges as 1-based line and column); on the rule examples, the test cases,
the shared cases when present and hand-written programs. The comparison is
``benchmarks/ast_misuse_parity.py``'s, which runs it over real trees."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
from parity_scripts import load_parity
from test_ast_model import _case_files, _parses, _rule_examples

from ckptlint.checkpoint.sites.ast_sites import direct_sites
from ckptlint.checkpoint.sites.site import SaveForm
from ckptlint.semantic.ast_model import AstModel

ROOT = Path(__file__).resolve().parents[2]


parity = load_parity("ast_misuse_parity")

_EXAMPLES = [(label, text) for label, text in _rule_examples() if _parses(text)]


@pytest.mark.parametrize(("label", "text"), [pytest.param(t, x, id=t) for t, x in _EXAMPLES])
def test_rule_examples(label: str, text: str) -> None:
    assert parity.compare(text, "pkg.mod").mismatches == []


def test_rule_examples_hold_findings() -> None:
    """CKP003's and CKP301's examples give both sides misspellings and save misuses to compare."""
    total = parity.MisuseComparison()
    for label, text in _EXAMPLES:
        if label.startswith(("CKP003", "CKP301")):
            total.add(parity.compare(text, "pkg.mod"))
    assert total.mismatches == []
    assert total.misspellings["ast"] == total.misspellings["libcst"] >= 5
    assert total.misuses["ast"] == total.misuses["libcst"] >= 5


@pytest.mark.parametrize("path", _case_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_cases(path: Path) -> None:
    assert parity.compare(path.read_text(encoding="utf-8"), "pkg.cases." + path.stem).mismatches == []


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
def test_programs(name: str) -> None:
    text = textwrap.dedent(PROGRAMS[name])
    found = parity.compare(text, "pkg.mod")
    assert found.mismatches == []
    assert found.sites >= 3
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
    assert (found.misuses["ast"], found.misspellings["ast"]) == expected


#: Where ``ast`` keeps no trace of the source text libcst reads (see the docstrings of
#: ast_misspelling and ast_argument_kinds): known to differ, none met on the
#: corpus trees; strict, so that a fix is noticed.
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


@pytest.mark.xfail(strict=True, reason="ast keeps no source text there (see DIVERGENT)")
@pytest.mark.parametrize("name", sorted(DIVERGENT))
def test_known_divergences(name: str) -> None:
    assert parity.compare(textwrap.dedent(DIVERGENT[name]), "pkg.mod").mismatches == []


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
def test_logical_line_layouts(name: str) -> None:
    found = parity.compare(textwrap.dedent(LAYOUTS[name]), "pkg.mod")
    assert found.mismatches == []
    assert found.misspellings["ast"] == 1


@pytest.mark.xfail(strict=True, reason="ast normalises identifiers as Python does (PEP 3131); libcst keeps the spelling")
def test_an_nfkc_identifier() -> None:
    text = "from torch.utils.checkpoint import checkpoint\ndef run(f, x):\n    return checkpoint(f, x, preserve_rng_\uff53tate=False)\n"
    assert parity.compare(text, "pkg.mod").mismatches == []


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


def test_shared_cases_are_compared_when_present() -> None:
    if not (ROOT.parent / "shared" / "cases").is_dir():
        pytest.skip("no ../shared/cases next to the project")
    assert any("shared" in p.parts for p in _case_files())

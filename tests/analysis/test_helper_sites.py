"""Helpers that take the checkpointed callable as an argument make their callers sites
(ckptlint/checkpoint/sites/helper_sites.py): the region of each call is the argument bound to the
helper's parameter, its options those the helper fixes or the caller gives.

Each shape is written as met in projects: a method ``ckpt(self, func, *args, **kwargs)``, a
function ``run(module, *args)``, a function that picks one of several checkpoint calls by
its flags (through ``create_custom_forward(model)``), helpers of helpers, helpers in another
module and in a base class of another module.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.checkpoint.sites.site import SiteForm
from ckptlint.semantic.ast_analysis import parse_ast
from ckptlint.testing import located
from ckptlint.text.source import SourceFile

BLOCK = """\
import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.bn = nn.BatchNorm1d(d)

    def forward(self, x):
        return F.dropout(self.bn(self.lin(x)), 0.1, self.training)
"""
ROWS = len(BLOCK.splitlines())


def _source(rest: str) -> str:
    return BLOCK + textwrap.dedent(rest)


def _row(source: str, text: str) -> int:
    """The 1-based row of the first line of ``source`` holding ``text``."""
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


# ---------------------------------------------------------------------- must report
def test_method_that_checkpoints_its_parameter() -> None:
    source = _source(
        """\
        from torch.utils.checkpoint import checkpoint


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.ModuleList([Block(4) for _ in range(2)])

            def ckpt(self, func, *args, **kwargs):
                return checkpoint(func, *args, use_reentrant=False, **kwargs)

            def forward(self, x):
                for blk in self.blocks:
                    x = self.ckpt(blk, x)
                return x
        """
    )
    assert located(source) == [(_row(source, "self.ckpt(blk, x)"), "CKP203")]


def test_function_of_module_and_args_reports_region_at_caller_and_ckp001_once() -> None:
    source = _source(
        """\
        import torch.utils.checkpoint


        def run(module, *args):
            return torch.utils.checkpoint.checkpoint(module, *args)


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block(4)

            def forward(self, x):
                x = run(self.block, x)
                return run(self.block, x)
        """
    )
    inner = _row(source, "return torch.utils.checkpoint.checkpoint")
    first, second = _row(source, "x = run(self.block"), _row(source, "return run(self.block")
    # CKP001 once, at the helper's own call (where the fix goes), not at each caller
    assert located(source) == [(inner, "CKP001"), (first, "CKP203"), (second, "CKP203")]


def test_forwarded_kwargs_report_ckp001_at_callers_that_pass_no_use_reentrant() -> None:
    source = _source(
        """\
        from torch.utils.checkpoint import checkpoint


        def run(module, *args, **kwargs):
            return checkpoint(module, *args, **kwargs)


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(4, 4)

            def forward(self, x, **opts):
                x = run(self.lin, x)
                x = run(self.lin, x, use_reentrant=False)
                return run(self.lin, x, **opts)
        """
    )
    row = _row(source, "x = run(self.lin, x)")
    found = located(source, "CKP001", messages=True)
    assert [(r, c) for r, c, _ in found] == [(row, "CKP001")]
    assert "`run()` (which passes `use_reentrant` on to `checkpoint()`) called without `use_reentrant`" in found[0][2]


def test_ckp001_has_no_fix_at_the_caller_when_the_helper_passes_its_keywords_elsewhere(run_cli, write) -> None:
    """PixArt's ``auto_grad_checkpoint(module, *args, **kwargs)`` also runs
    ``module(*args, **kwargs)`` when checkpointing is off: ``use_reentrant=False`` added at
    the call would reach the module there."""
    source = (
        "from torch.utils.checkpoint import checkpoint\n\n\n"
        "def auto_grad_checkpoint(module, *args, **kwargs):\n"
        "    if getattr(module, 'grad_checkpointing', False):\n"
        "        return checkpoint(module, *args, **kwargs)\n"
        "    return module(*args, **kwargs)\n\n\n"
        "def forward(block, x):\n"
        "    return auto_grad_checkpoint(block, x)\n"
    )
    path = write("m.py", source)
    result = run_cli("--isolated", "--no-cache", "--select", "CKP001", "--fix", "--unsafe-fixes", "--exit-zero", str(path))
    assert path.read_text() == source
    assert "m.py:11:12: CKP001" in result.stdout
    assert "pass `use_reentrant=False` in `auto_grad_checkpoint()`'s own checkpoint call" in result.stdout


def test_ckp001_fix_at_the_caller_uses_the_helpers_parameter(run_cli, write) -> None:
    path = write(
        "m.py",
        "from torch.utils.checkpoint import checkpoint\n\n\n"
        "def ckpt(fn, *args, reentrant=None):\n"
        "    return checkpoint(fn, *args, use_reentrant=reentrant)\n\n\n"
        "def forward(f, x):\n"
        "    return ckpt(f, x)\n",
    )
    result = run_cli("--isolated", "--no-cache", "--select", "CKP001", "--fix", "--unsafe-fixes", str(path))
    assert result.exit_code == 0
    assert path.read_text().splitlines()[-1] == "    return ckpt(f, x, reentrant=False)"


def test_flags_pick_the_checkpoint_call_through_a_factory() -> None:
    """DiffSynth-style ``gradient_checkpoint_forward(model, use_gc, use_offload, *args)``:
    the callable is ``create_custom_forward(model)``; a literal ``False`` for both flags
    rules every checkpoint call out (no site)."""
    source = _source(
        """\
        import torch.utils.checkpoint


        def create_custom_forward(module):
            def custom_forward(*inputs):
                return module(*inputs)
            return custom_forward


        def gradient_checkpoint_forward(model, use_gradient_checkpointing, use_offload, *args, **kwargs):
            if use_offload:
                with torch.autograd.graph.save_on_cpu():
                    out = torch.utils.checkpoint.checkpoint(
                        create_custom_forward(model), *args, **kwargs, use_reentrant=False
                    )
            elif use_gradient_checkpointing:
                out = torch.utils.checkpoint.checkpoint(create_custom_forward(model), *args, **kwargs, use_reentrant=False)
            else:
                out = model(*args, **kwargs)
            return out


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block(4)
                self.use_gc = False

            def forward(self, x):
                x = gradient_checkpoint_forward(self.block, self.use_gc, False, x)
                return gradient_checkpoint_forward(self.block, False, False, x)
        """
    )
    assert located(source) == [(_row(source, "x = gradient_checkpoint_forward(self.block"), "CKP203")]


def test_options_fixed_by_a_helper_of_a_helper_judge_the_callers_region() -> None:
    source = _source(
        """\
        from torch.utils.checkpoint import checkpoint


        def nodrop(fn, x):
            return checkpoint(fn, x, use_reentrant=False, preserve_rng_state=False)


        def outer(module, x):
            return nodrop(module, x)


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block(4)

            def forward(self, x):
                return outer(self.block, x)
        """
    )
    helper = _row(source, "return checkpoint(fn, x")
    caller = _row(source, "return outer(self.block, x)")
    found = located(source, "CKP101", messages=True)
    assert [(r, c) for r, c, _ in found] == [(helper, "CKP101"), (caller, "CKP101")]
    assert "cannot see what it recomputes" in found[0][2]  # the helper alone: hedged
    assert f"draws random numbers (F.dropout at line {ROWS})" in found[1][2]  # the caller: known


# ---------------------------------------------------------------------- must not report
def test_callers_that_pass_use_reentrant_or_an_unknown_splat_are_clean() -> None:
    source = """\
        from torch.utils.checkpoint import checkpoint


        def run(module, *args, **kwargs):
            return checkpoint(module, *args, **kwargs)


        def go(f, x, opts):
            y = run(f, x, use_reentrant=False)
            return run(f, y, **opts)
        """
    assert located(source) == []


def test_a_method_of_the_same_name_that_does_not_checkpoint_is_no_helper() -> None:
    source = _source(
        """\
        from torch.utils.checkpoint import checkpoint


        class Base(nn.Module):
            def ckpt(self, func, *args):
                return checkpoint(func, *args, use_reentrant=False)


        class Net(Base):
            def __init__(self):
                super().__init__()
                self.block = Block(4)

            def ckpt(self, func, *args):
                return func(*args)

            def forward(self, x):
                return self.ckpt(self.block, x)
        """
    )
    assert located(source) == []


def test_a_parameter_bound_into_another_callable_makes_no_helper() -> None:
    """Megatron's ``checkpoint(partial(self.mlp, padding_mask=padding_mask), False, x)``:
    ``padding_mask`` is an argument of the callable, not the callable."""
    source = """\
        import functools
        from torch import nn
        from torch.utils.checkpoint import checkpoint


        class Layer(nn.Module):
            def _run_mlp(self, x, padding_mask):
                return checkpoint(functools.partial(self.mlp, padding_mask=padding_mask), x, use_reentrant=False)

            def forward(self, x, mask):
                return self._run_mlp(x, mask)
        """
    assert located(source) == []
    analysis = parse_ast(SourceFile("m.py", textwrap.dedent(source)), "m", False)
    assert analysis is not None
    assert ast_site_index(analysis).helpers == {}
    assert [site.form for site in ast_site_index(analysis).sites] == [SiteForm.CALL]


def test_recursive_helpers_end() -> None:
    source = """\
        from torch.utils.checkpoint import checkpoint


        def ping(fn, x, n):
            if n:
                return pong(fn, x, n - 1)
            return checkpoint(fn, x, use_reentrant=False)


        def pong(fn, x, n):
            return ping(fn, x, n)


        def go(f, x):
            return ping(f, x, 3)
        """
    assert located(source) == []


# ---------------------------------------------------------------------- other modules
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


def test_helpers_of_another_module_and_of_an_imported_base_class(run_cli, write) -> None:
    write("pkg/__init__.py", "")
    write("pkg/utils.py", PACKAGE_UTILS)
    write("pkg/model.py", PACKAGE_MODEL)
    result = run_cli("--isolated", "--no-cache", "--output-format", "json", "--exit-zero", "pkg/model.py")
    found = [(d["location"]["row"], d["code"]) for d in json.loads(result.stdout)]
    first, second = _row(PACKAGE_MODEL, "x = ckpt(self.block"), _row(PACKAGE_MODEL, "self._checkpointed(")
    assert found == [(first, "CKP001"), (first, "CKP203"), (second, "CKP203")]


def test_show_sites_names_the_helper(run_cli, write) -> None:
    write("pkg/__init__.py", "")
    write("pkg/utils.py", PACKAGE_UTILS)
    write("pkg/model.py", PACKAGE_MODEL)
    records = json.loads(run_cli("--show-sites", "--output-format", "json", "--isolated", "pkg/model.py").stdout)
    helpers = [(r["location"]["row"], r["helper"]["name"], Path(r["helper"]["filename"]).name, r["helper"]["row"]) for r in records]
    assert helpers == [
        (_row(PACKAGE_MODEL, "x = ckpt(self.block"), "ckpt", "utils.py", 4),
        (_row(PACKAGE_MODEL, "self._checkpointed("), "Base._checkpointed", "utils.py", 9),
    ]
    assert records[0]["options"] == {"use_reentrant": True}
    assert records[0]["helper"]["summary"] == (
        "function ckpt passes its parameter fn to checkpoint API torch.utils.checkpoint.checkpoint "
        "with the caller's keywords as options"
    )
    assert [r["region"]["frames"][0]["name"] for r in records] == ["Block.forward", "Block.forward"]
    table = run_cli("--show-sites", "--isolated", "pkg/model.py").stdout.splitlines()
    assert "  via ckpt() (utils.py:4)  [use_reentrant=true]  resolved: Block.forward" in table[0]


def test_a_cached_result_follows_an_edit_of_the_helpers_module(run_cli, write) -> None:
    write("pkg/__init__.py", "")
    helper = (
        "from torch.utils.checkpoint import checkpoint\n\n\n"
        "def run_checkpoint(fn, *args, **kwargs):\n    return checkpoint(fn, *args{}, **kwargs)\n"
    )
    write("pkg/utils.py", helper.format(""))
    write("pkg/model.py", "from pkg.utils import run_checkpoint\n\n\ndef go(f, x):\n    return run_checkpoint(f, x)\n")

    def codes(*extra: str) -> list[tuple[int, str]]:
        result = run_cli("--isolated", "--output-format", "json", "--exit-zero", *extra, "pkg/model.py")
        return [(d["location"]["row"], d["code"]) for d in json.loads(result.stdout)]

    assert codes() == codes("--no-cache") == [(5, "CKP001")]
    write("pkg/utils.py", helper.format(", use_reentrant=False"))
    assert codes() == codes("--no-cache") == []
    write("pkg/utils.py", helper.format(""))
    assert codes() == codes("--no-cache") == [(5, "CKP001")]


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
            # imported here to avoid a circular import
            from pkg.extensions import te_checkpoint

            return te_checkpoint(self.block, False, tracker, group, x)
        return self.block(x)
"""


def test_a_helper_whose_signature_closes_at_the_def_indentation(run_cli, write) -> None:
    """Megatron's ``te_checkpoint``: a signature written one parameter a line, whose ``):``
    sits at the indentation of the ``def``, is the start of the helper's text, not its end."""
    write("pkg/__init__.py", "")
    write("pkg/extensions.py", TE_EXTENSION)
    write("pkg/layer.py", TE_LAYER)
    records = json.loads(run_cli("--show-sites", "--output-format", "json", "--isolated", "pkg/layer.py").stdout)
    call = _row(TE_LAYER, "return te_checkpoint(")
    assert [(r["location"]["row"], r["api"], r["helper"]["name"]) for r in records] == [
        (call, "transformer_engine.pytorch.checkpoint", "te_checkpoint")
    ]
    assert records[0]["region"]["frames"][0]["name"] == "Block.forward"
    result = run_cli("--isolated", "--no-cache", "--output-format", "json", "--exit-zero", "pkg/layer.py")
    found = [(d["location"]["row"], d["code"]) for d in json.loads(result.stdout)]
    assert found == [(call, "CKP203")]

"""Reach: the checkpoint APIs of the ecosystem (ckptlint/facts/apis.py rows), home-made recompute
functions, re-exports through the linted tree, and ``--show-sites``.

Each API is written with its real import form and a planted problem in its region (a
BatchNorm: CKP203, a ``self`` counter: CKP202), which must be reported.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from ckptlint.lint.gate import may_have_findings
from ckptlint.testing import located

COUNTER = """\
    import torch
    from torch import nn


    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.proj = nn.Linear(d, d)
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            return torch.tanh(self.proj(x))
"""


COUNTER_ROW = 12  # the line of ``self.calls += 1``


BATCHNORM = """\
    import torch
    from torch import nn


    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.conv = nn.Conv2d(d, d, 3, padding=1)
            self.bn = nn.BatchNorm2d(d)

        def forward(self, x):
            return torch.relu(self.bn(self.conv(x)))
"""


def _with(prefix: str, body: str) -> str:
    return textwrap.dedent(prefix) + textwrap.dedent(body)


@pytest.mark.parametrize(
    ("imports", "call"),
    [
        pytest.param("from megatron.core import tensor_parallel\n", "tensor_parallel.checkpoint(self.block, False, x)", id="megatron"),
        pytest.param(
            "from megatron.core.tensor_parallel.random import checkpoint\n", "checkpoint(self.block, False, x)", id="megatron-random"
        ),
        pytest.param("import deepspeed\n", "deepspeed.checkpointing.checkpoint(self.block, x)", id="deepspeed"),
        pytest.param(
            "from deepspeed.runtime.activation_checkpointing import checkpointing\n",
            "checkpointing.checkpoint(self.block, x)",
            id="deepspeed-module",
        ),
        pytest.param("import transformer_engine.pytorch as te\n", "te.checkpoint(self.block, x)", id="transformer-engine"),
        pytest.param(
            "from colossalai.legacy.utils.activation_checkpoint import checkpoint\n",
            "checkpoint(self.block, False, x)",
            id="colossalai",
        ),
        pytest.param("from timm.models import checkpoint\n", "checkpoint(self.block, x)", id="timm-checkpoint"),
        pytest.param("import torch.utils.checkpoint as cp\n", "cp.CheckpointFunction.apply(self.block, True, x)", id="torch-function"),
        pytest.param("", "self._gradient_checkpointing_func(self.block.__call__, x)", id="hf-call"),
        pytest.param("", "self.activation_checkpoint_func(self.block, x)", id="deepspeed-pipe"),
    ],
)
def test_library_functions_recompute_their_callable(imports: str, call: str) -> None:
    source = _with(COUNTER, "\n\n") + imports + textwrap.dedent(
        f"""\


        class Outer(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.block = Block(d)

            def forward(self, x):
                return {call}
        """
    )
    found = located(source)
    assert (COUNTER_ROW, "CKP202") in found, found
    assert not any(code in ("CKP001", "CKP002", "CKP003", "CKP301") for _, code in found), found


def test_megatron_checkpoint_without_output_instance() -> None:
    source = _with(COUNTER, "\n\n") + textwrap.dedent(
        """\
        from megatron.core import tensor_parallel


        class Layer(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.norm = Block(d)
                self.norm_ckpt = tensor_parallel.CheckpointWithoutOutput()

            def forward(self, x):
                return self.norm_ckpt.checkpoint(self.norm, x)
        """
    )
    assert (COUNTER_ROW, "CKP202") in located(source)


def test_hf_gradient_checkpointing_func_over_a_module_list() -> None:
    source = _with(COUNTER, "\n\n") + textwrap.dedent(
        """\
        class Encoder(nn.Module):
            def __init__(self, d, n):
                super().__init__()
                self.layers = nn.ModuleList([Block(d) for _ in range(n)])
                self.gradient_checkpointing = False

            def forward(self, x):
                for layer in self.layers:
                    if self.gradient_checkpointing and self.training:
                        x = self._gradient_checkpointing_func(layer.__call__, x)
                    else:
                        x = layer(x)
                return x
        """
    )
    assert located(source) == [(COUNTER_ROW, "CKP202")]


def test_partial_stored_on_self_takes_the_partials_options() -> None:
    source = _with(COUNTER, "\n\n") + textwrap.dedent(
        """\
        from functools import partial

        from torch.utils.checkpoint import checkpoint


        class Outer(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.block = Block(d)
                self._ckpt_fn = partial(checkpoint, use_reentrant=False)

            def forward(self, x):
                return self._ckpt_fn(self.block, x)
        """
    )
    assert located(source) == [(COUNTER_ROW, "CKP202")]


@pytest.mark.parametrize(
    "imports",
    [
        "from timm.models import checkpoint_seq\n",
        "from timm.models._manipulate import checkpoint_seq\n",
        "from timm.models.helpers import checkpoint_seq\n",
    ],
)
def test_timm_checkpoint_seq_over_stages_with_batchnorm(imports: str) -> None:
    source = _with(BATCHNORM, "\n\n") + imports + textwrap.dedent(
        """\


        class Net(nn.Module):
            def __init__(self, d):
                super().__init__()
                stages = []
                for _ in range(3):
                    stages.append(Block(d))
                self.stages = nn.Sequential(*stages)
                self.grad_checkpointing = True

            def forward(self, x):
                if self.grad_checkpointing:
                    x = checkpoint_seq(self.stages, x)
                else:
                    x = self.stages(x)
                return x
        """
    )
    found = located(source)
    assert [code for _, code in found] == ["CKP203"], found


POLICY_TAIL = """\


def enable(model):
    {call}
"""


@pytest.mark.parametrize(
    ("imports", "call"),
    [
        pytest.param(
            "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing\n",
            "apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, Block))",
            id="check_fn-isinstance",
        ),
        pytest.param(
            "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing\n",
            "apply_activation_checkpointing(model, check_fn=lambda m: type(m) in {Block})",
            id="check_fn-type-in",
        ),
        pytest.param(
            "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing\n"
            "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n",
            "apply_activation_checkpointing(model, auto_wrap_policy=ModuleWrapPolicy({Block}))",
            id="module-wrap-policy",
        ),
        pytest.param(
            "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing\n"
            "def selects(module):\n    return isinstance(module, (Block,))\n",
            "apply_activation_checkpointing(model, check_fn=selects)",
            id="check_fn-def",
        ),
        pytest.param(
            "from lightning.pytorch.strategies import FSDPStrategy\n",
            "return FSDPStrategy(activation_checkpointing_policy={Block})",
            id="lightning",
        ),
        pytest.param(
            "from torchtune import training\n",
            "training.set_activation_checkpointing(model, auto_wrap_policy={Block})",
            id="torchtune",
        ),
        pytest.param(
            "from fairseq.modules.checkpoint_activations import checkpoint_wrapper\n",
            "return checkpoint_wrapper(Block(8))",
            id="fairseq-wrapper",
        ),
    ],
)
def test_policies_and_wrappers_recompute_the_selected_classes(imports: str, call: str) -> None:
    source = _with(BATCHNORM, "\n\n") + imports + POLICY_TAIL.format(call=call)
    found = located(source)
    assert [code for _, code in found] == ["CKP203"], found


def test_policy_with_neither_check_fn_nor_policy_is_not_resolved() -> None:
    source = _with(BATCHNORM, "\n\n") + (
        "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing\n"
        + POLICY_TAIL.format(call="apply_activation_checkpointing(model)")
    )
    assert located(source) == []


def test_xformers_selective_wrapper_in_a_loop_over_blocks() -> None:
    """xformers' ``selective_checkpoint_wrapper`` as projects use it: each block replaced by its
    wrapper, under a config switch; the wrapped block's ``forward`` is the region."""
    source = _with(BATCHNORM, "\n\n") + textwrap.dedent(
        """\
        from xformers.checkpoint import selective_checkpoint_wrapper


        class Encoder(nn.Module):
            def __init__(self, remat, policy_fn):
                super().__init__()
                self.blocks = nn.ModuleList([Block(8) for _ in range(4)])
                if remat:
                    for i, blk in enumerate(self.blocks):
                        self.blocks[i] = selective_checkpoint_wrapper(blk, policy_fn=policy_fn)
        """
    )
    row = next(i for i, line in enumerate(source.splitlines(), 1) if "selective_checkpoint_wrapper(blk" in line)
    assert located(source) == [(row, "CKP203")]


@pytest.mark.parametrize(
    ("call", "codes"),
    [
        pytest.param("xformers.checkpoint(Block(8), x, policy_fn=policy)", ["CKP203"], id="package"),
        pytest.param("checkpoint(Block(8), x)", ["CKP203"], id="module"),
        # torch's non-reentrant checkpoint underneath, with the RNG restore that it is told to skip
        pytest.param("checkpoint(Block(8), x, preserve_rng_state=False)", ["CKP101", "CKP203"], id="rng-off"),
    ],
)
def test_xformers_checkpoint_runs_torchs_non_reentrant_checkpoint(call: str, codes: list[str]) -> None:
    dropout = BATCHNORM.replace("torch.relu(self.bn(self.conv(x)))", "nn.functional.dropout(self.bn(self.conv(x)), 0.1)")
    source = _with(dropout, "\n\n") + (
        "import xformers\nfrom xformers.checkpoint import checkpoint\n\n\ndef run(x, policy):\n    return " + call + "\n"
    )
    assert sorted(code for _, code in located(source)) == codes


def test_fairscale_wrapper_patches_batchnorm() -> None:
    source = _with(BATCHNORM, "\n\n") + (
        "from fairscale.nn import checkpoint_wrapper\n" + POLICY_TAIL.format(call="return checkpoint_wrapper(Block(8))")
    )
    assert located(source) == []


def test_training_arguments_subclass_in_the_same_module() -> None:
    source = """\
        from dataclasses import dataclass

        from transformers import TrainingArguments


        @dataclass
        class MyArguments(TrainingArguments):
            lora_rank: int = 8


        args = MyArguments(output_dir="out", gradient_checkpointing=True)
    """
    assert located(source, "CKP001") == [(11, "CKP001")]


def test_trl_configs_checkpoint_by_default_without_ckp001(run_cli, write) -> None:
    write("train.py", "from trl import SFTConfig\n\nconfig = SFTConfig(output_dir='out')\n")
    result = run_cli("--show-sites", "--output-format", "json", "--isolated", "train.py")
    records = json.loads(result.stdout)
    assert [(r["api"], r["location"]) for r in records] == [
        ("trl config (TrainingArguments subclass)", {"row": 3, "column": 10})
    ]
    assert records[0]["options"]["use_reentrant"] is False
    assert located("from trl import SFTConfig\nconfig = SFTConfig(output_dir='out')\n") == []


def test_training_arguments_subclass_in_another_module(run_cli, write) -> None:
    write("pkg/__init__.py", "")
    write("pkg/args.py", "from transformers import TrainingArguments\n\n\nclass ProjectArguments(TrainingArguments):\n    pass\n")
    write("pkg/train.py", "from .args import ProjectArguments\n\nargs = ProjectArguments(output_dir='o', gradient_checkpointing=True)\n")
    result = run_cli("--isolated", "--no-cache", "--output-format", "json", "--exit-zero", "pkg")
    found = [(Path(d["filename"]).name, d["location"]["row"], d["code"]) for d in json.loads(result.stdout)]
    assert found == [("train.py", 3, "CKP001")]


@pytest.mark.parametrize(
    ("utils", "use"),
    [
        pytest.param("from torch.utils.checkpoint import checkpoint\n", "from .utils import checkpoint\n", id="re-export"),
        pytest.param(
            "import torch.utils.checkpoint as cp\n\nckpt = cp.checkpoint\n", "from .utils import ckpt as checkpoint\n", id="alias"
        ),
        pytest.param("from torch.utils.checkpoint import checkpoint\n", "from .utils import *\n", id="star"),
        pytest.param(
            "from torch.utils.checkpoint import checkpoint\n", "from . import utils\ncheckpoint = utils.checkpoint\n", id="module"
        ),
    ],
)
def test_reexported_checkpoint_through_the_tree(run_cli, write, utils: str, use: str) -> None:
    write("pkg/__init__.py", "")
    write("pkg/utils.py", utils)
    write("pkg/model.py", use + "\n\ndef forward(block, x):\n    return checkpoint(block, x)\n")
    result = run_cli("--isolated", "--no-cache", "--output-format", "json", "--exit-zero", "--select", "CKP001", "pkg")
    found = [(Path(d["filename"]).name, d["code"]) for d in json.loads(result.stdout)]
    assert found == [("model.py", "CKP001")]


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


HOME_MADE_UNET = '''\
from torch import nn

from .nn import checkpoint


class ResBlock(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.steps = 0

    def forward(self, x):
        return checkpoint(self._forward, (x,), self.parameters(), True)

    def _forward(self, x):
        self.steps += 1
        return self.proj(x)
'''


def test_home_made_checkpoint_across_files(run_cli, write) -> None:
    """The guided-diffusion pattern: CKP104 and CKP105 on the implementation (CKP105 states its
    condition, autocast; no other file of the package is read for it), and the helper's callers
    are sites whose region is analysed (CKP202 on the counter)."""
    write("pkg/__init__.py", "")
    write("pkg/nn.py", HOME_MADE_NN)
    write("pkg/unet.py", HOME_MADE_UNET)
    result = run_cli("--isolated", "--no-cache", "--output-format", "json", "--exit-zero", "pkg")
    found = sorted((Path(d["filename"]).name, d["location"]["row"], d["code"]) for d in json.loads(result.stdout))
    assert found == [("nn.py", 19, "CKP104"), ("nn.py", 19, "CKP105"), ("unet.py", 16, "CKP202")]
    sites = json.loads(run_cli("--show-sites", "--output-format", "json", "--isolated", "pkg").stdout)
    by_api = {(Path(r["filename"]).name, r["api"], r["region"]["status"]) for r in sites}
    assert ("unet.py", "checkpoint", "resolved") in by_api
    assert ("nn.py", "CheckpointFunction.apply", "unknown") in by_api  # inside the helper: a parameter


def test_home_made_function_that_restores_rng_and_autocast_is_clean() -> None:
    source = HOME_MADE_NN.replace(
        "        ctx.run_function = run_function\n",
        "        ctx.run_function = run_function\n"
        "        ctx.rng = torch.get_rng_state()\n"
        "        ctx.amp = torch.is_autocast_enabled()\n",
    ).replace(
        "        with torch.enable_grad():\n",
        "        with torch.random.fork_rng(), torch.enable_grad(), torch.autocast('cuda', enabled=ctx.amp):\n"
        "            torch.set_rng_state(ctx.rng)\n",
    )
    assert located(source) == []


def test_megatron_style_rng_tracker_counts_as_restore() -> None:
    source = HOME_MADE_NN.replace(
        "        with torch.enable_grad():\n",
        "        with get_cuda_rng_tracker().fork(), torch.enable_grad():\n",
    )
    assert [code for _, code in located(source)] == ["CKP105"]


@pytest.mark.parametrize(
    "source",
    [
        b"from timm.models import checkpoint_seq\nx = checkpoint_seq(self.stages, x)\n",
        b"x = self._gradient_checkpointing_func(layer, x)\n",
        b"from trl import SFTConfig\nc = SFTConfig(output_dir='o')\n",
        b"from .nn import checkpoint\ny = checkpoint(f, (x,), p, True)\n",
        b"from megatron.core import tensor_parallel\ny = tensor_parallel.checkpoint(f, False, x)\n",
        HOME_MADE_NN.encode(),
    ],
)
def test_gate_learns_the_table(source: bytes) -> None:
    assert may_have_findings(source)


def test_gate_still_skips_unrelated_files() -> None:
    assert not may_have_findings(b"from fairseq import checkpoint_utils\ncheckpoint_utils.load_checkpoint_to_cpu(p)\n")


def test_show_sites_json_records(run_cli, write) -> None:
    write("model.py", textwrap.dedent(COUNTER) + textwrap.dedent(
        """\


        from torch.utils.checkpoint import checkpoint


        class Outer(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.block = Block(d)

            def forward(self, x, f):
                y = checkpoint(self.block, x, use_reentrant=False, preserve_rng_state=False)
                return checkpoint(f, y)
        """
    ))
    result = run_cli("--show-sites", "--output-format", "json", "--isolated", "model.py")
    assert result.exit_code == 0
    records = json.loads(result.stdout)
    for record in records:
        assert Path(record["filename"]).is_absolute()
        record["filename"] = Path(record["filename"]).name
        for frame in record["region"]["frames"]:
            frame["filename"] = Path(frame["filename"]).name
    assert records == [
        {
            "filename": "model.py",
            "location": {"row": 25, "column": 13},
            "api": "torch.utils.checkpoint.checkpoint",
            "options": {"preserve_rng_state": False, "use_reentrant": False},
            "region": {
                "status": "resolved",
                "frames": [{"name": "Block.forward", "filename": "model.py", "row": 11}],
            },
        },
        {
            "filename": "model.py",
            "location": {"row": 26, "column": 16},
            "api": "torch.utils.checkpoint.checkpoint",
            "options": {"use_reentrant": True},
            "region": {"status": "unknown", "frames": []},
        },
    ]
    table = run_cli("--show-sites", "--isolated", "model.py").stdout.splitlines()
    assert table[0].startswith(
        "model.py:25:13  torch.utils.checkpoint.checkpoint  [preserve_rng_state=false, use_reentrant=false]  "
        "resolved: Block.forward (model.py:11)"
    )
    assert table[-1] == "2 sites: 1 resolved, 0 partial, 1 unknown"


def test_show_sites_gives_hugging_face_switches_their_own_status(run_cli, write) -> None:
    # they name no callable: the model's own checkpoint calls are the sites with regions
    write(
        "train.py",
        textwrap.dedent(
            """\
            from transformers import AutoModelForCausalLM, TrainingArguments

            model = AutoModelForCausalLM.from_pretrained("gpt2")
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            args = TrainingArguments("out", gradient_checkpointing=True)
            """
        ),
    )
    result = run_cli("--show-sites", "--output-format", "json", "--isolated", "train.py")
    assert [record["region"]["status"] for record in json.loads(result.stdout)] == ["switch", "switch"]
    table = run_cli("--show-sites", "--isolated", "train.py").stdout.splitlines()
    assert table[-1] == "2 sites: 0 resolved, 0 partial, 0 unknown, 2 switches"


def test_wrapper_function_of_an_api_in_the_same_module() -> None:
    source = _with(COUNTER, "\n\n") + textwrap.dedent(
        """\
        from megatron.core import tensor_parallel


        def recompute(forward_func, *args):
            return tensor_parallel.checkpoint(forward_func, False, *args)


        class Outer(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.block = Block(d)

            def forward(self, x):
                return recompute(self.block, x)
        """
    )
    assert located(source) == [(COUNTER_ROW, "CKP202")]


def test_wrapper_function_in_a_namespace_package(run_cli, write) -> None:
    """Megatron's ``te_checkpoint`` pattern, imported absolutely from a folder without
    ``__init__.py`` (stable-diffusion's ``ldm``)."""
    write("repo/ldm/ext/__init__.py", "")
    write(
        "repo/ldm/ext/te.py",
        "import transformer_engine.pytorch as te\n\n\ndef te_checkpoint(forward_func, *args):\n"
        "    return te.checkpoint(forward_func, *args, use_reentrant=False)\n",
    )
    write("repo/ldm/models/__init__.py", "")
    write(
        "repo/ldm/models/block.py",
        textwrap.dedent(COUNTER)
        + "\n\nfrom ldm.ext.te import te_checkpoint\n\n\ndef run(block, x):\n    return te_checkpoint(Block(4), x)\n",
    )
    result = run_cli("--isolated", "--no-cache", "--output-format", "json", "--exit-zero", "repo/ldm")
    found = [(Path(d["filename"]).name, d["location"]["row"], d["code"]) for d in json.loads(result.stdout)]
    assert found == [("block.py", COUNTER_ROW, "CKP202")]


def test_known_implementation_rows_match_under_another_root():
    from ckptlint.facts.home_made import known_implementation

    assert known_implementation("megatron.mpu.random.CheckpointFunction") is not None
    assert known_implementation("mpu.random.CheckpointFunction") is not None  # linted from megatron/
    assert known_implementation("vendor.megatron.mpu.random.CheckpointFunction") is not None
    assert known_implementation("random.CheckpointFunction") is None
    assert known_implementation("mylib.mpu.random.CheckpointFunction") is None

"""The runtime helper as a whole: planted bugs must fail with the right cause, correct models
must pass, and every check leaves the process state as it found it.

Each case is a tiny model (plain torch, transformers and diffusers from small configs, timm
where it imports: a test-only torchvision stand-in, ``torchvision_stub/``, makes timm import
beside the CPU torch wheel; a real torchvision is used where one imports) and the expected
verdict; a bug also names its rule code (or, for the reentrant traps no rule covers, a phrase
of the cause) and the attribute, global, input, op or dtype the message must name. Every check
is wrapped by the process-state check of ``process_check.py``. The last test states the
figures: right verdicts must be 100 %, right causes at least 95 %.
"""

from __future__ import annotations

import functools
import random
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import pytest

pytest.importorskip("torch")
pytest.importorskip("numpy")
import numpy as np
import torch
import torch.nn.functional as F
from process_check import keeps_process_state
from timm_import import import_timm
from torch import nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing
from torch.utils.checkpoint import checkpoint

from ckptlint import runtime

pytestmark = pytest.mark.slow

# --- the state planted bugs touch; the process-state check watches it ------------------------------

LOG: list = []
HITS = {"n": 0}
STEP = 0


class Config:
    def __init__(self):
        self.scale = 1.0


CONFIG = Config()
READ_ONLY = Config()
CHANGED: list[str] = []


def watched() -> dict[str, Any]:
    return {"LOG": LOG, "HITS": HITS, "STEP": STEP, "CONFIG.scale": CONFIG.scale, "READ_ONLY.scale": READ_ONLY.scale}


onoff = keeps_process_state(runtime.check_checkpointing_equivalent, watched, CHANGED)
block = keeps_process_state(runtime.check_checkpoint_equivalent, watched, CHANGED)


def x_in(rows=4, cols=8):
    return torch.randn(rows, cols, generator=torch.Generator().manual_seed(3), requires_grad=True)


def ids():
    return torch.randint(0, 64, (2, 8), generator=torch.Generator().manual_seed(0))


def pixels(channels=3, size=16):
    return torch.randn(2, channels, size, size, generator=torch.Generator().manual_seed(0))


# --- plain building blocks ----------------------------------------------------------------------


class Flagged(nn.Module):
    """timm-style: the root checkpoints each block when ``grad_checkpointing`` is set."""

    def __init__(self, *blocks, **options):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        self.grad_checkpointing = False
        self.options = {"use_reentrant": False, **options}

    def set_grad_checkpointing(self, enable=True):
        self.grad_checkpointing = enable

    def forward(self, x):
        for b in self.blocks:
            x = checkpoint(b, x, **self.options) if self.grad_checkpointing else b(x)
        return x


def mlp(drop=0.0, width=8):
    return nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Dropout(drop), nn.Linear(width, width))


class Recompute(torch.autograd.Function):
    """Home-made recompute: no RNG restore, autocast re-entered with ``ctx.dtype`` (None: none)."""

    @staticmethod
    def forward(ctx, fn, dtype, x):
        ctx.fn, ctx.dtype = fn, dtype
        ctx.save_for_backward(x)
        with torch.no_grad():
            return fn(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        x = x.detach().requires_grad_(True)
        with torch.enable_grad(), torch.autocast("cpu", dtype=ctx.dtype or torch.bfloat16, enabled=ctx.dtype is not None):
            out = ctx.fn(x)
        torch.autograd.backward(out, grad)
        return None, None, x.grad


class HomeMade(nn.Module):
    def __init__(self, body, autocast=None, recompute_dtype=None):
        super().__init__()
        self.body = body
        self.on = False
        self.autocast = autocast
        self.recompute_dtype = recompute_dtype

    def forward(self, x):
        with torch.autocast("cpu", dtype=self.autocast or torch.bfloat16, enabled=self.autocast is not None):
            h = Recompute.apply(self.body, self.recompute_dtype, x) if self.on else self.body(x)
        return h.float()


def home_on(m):
    m.on = True


class ParamCode(nn.Module):
    """Plain tensor code on a parameter: no submodule inside the region."""

    def __init__(self, home_made=False, preserve=True):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 8, generator=torch.Generator().manual_seed(0)) / 3)
        self.home_made, self.preserve, self.on = home_made, preserve, False

    def body(self, x):
        return F.dropout(x @ self.w, 0.5, training=self.training)

    def forward(self, x):
        if not self.on:
            return self.body(x)
        if self.home_made:
            return Recompute.apply(self.body, None, x)
        return checkpoint(self.body, x, use_reentrant=False, preserve_rng_state=self.preserve)


class Counting(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.lin(x).tanh()


class Caching(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.cache = []

    def forward(self, x):
        self.cache.append(x.detach())
        return self.lin(x).tanh()


class BufferCount(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.register_buffer("seen", torch.zeros(()))

    def forward(self, x):
        self.seen += 1
        return self.lin(x).tanh()


class GlobalCounter(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        HITS["n"] += 1
        return self.lin(x).tanh()


class GlobalStep(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        global STEP
        STEP += 1
        return self.lin(x).tanh() * STEP


class Logging(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        LOG.append(float(x.detach().sum()))
        return self.lin(x).tanh()


class Rescaling(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        CONFIG.scale = CONFIG.scale * 1.5
        return self.lin(x).tanh() * CONFIG.scale


class ReadsConfig(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(x).tanh() * READ_ONLY.scale


def make_counter():
    n = 0

    def tick():
        nonlocal n
        n += 1
        return n

    return tick


class Ticking(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.tick = make_counter()

    def forward(self, x):
        self.tick()
        return self.lin(x).tanh()


class WritesWeight(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        with torch.no_grad():
            self.lin.weight.mul_(0.9)
        return self.lin(x).tanh()


class Tempered(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.temperature = 1.0
        self.cfg = {"scale": 1.0}

    def forward(self, x):
        return (self.lin(x) * self.cfg["scale"] / self.temperature).tanh()


class Retempering(Flagged):
    def __init__(self, attribute):
        super().__init__(Tempered())
        self.attribute = attribute

    def forward(self, x):
        b = self.blocks[0]
        if self.attribute == "temperature":
            b.temperature = 1.0
        else:
            b.cfg["scale"] = 1.0
        out = super().forward(x)
        if self.attribute == "temperature":
            b.temperature = 2.0
        else:
            b.cfg["scale"] = 3.0
        return out


class Memo(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.memo = None

    def forward(self, x):
        if self.memo is None:
            self.memo = self.lin(x).detach()
            return self.lin(x).tanh()
        return (self.lin(x) + self.memo).tanh()


def eval_after_forward(module, args, out):
    for b in module.blocks:
        b.train(False)


class PyRandom(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(x * random.random())  # before the layer: early stop re-runs it


class NpRandom(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(x * float(np.random.rand()))


class OwnGenerator(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.gen = torch.Generator().manual_seed(0)

    def forward(self, x):
        return self.lin(x * torch.rand(8, generator=self.gen))


class GradModeDropout(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        h = self.lin(x)
        return F.dropout(h, 0.5) if torch.is_grad_enabled() else h * 0.5


class Pair(NamedTuple):
    hidden: torch.Tensor
    gate: torch.Tensor


class NamedOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        h = self.lin(x)
        return Pair(h.tanh(), h.sigmoid())


class DictOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return {"h": self.lin(x).tanh()}


class Frozen(nn.Module):
    """A frozen embedding feeds checkpointed blocks: no positional input requires grad."""

    def __init__(self, reentrant):
        super().__init__()
        self.emb = nn.Embedding(16, 8).requires_grad_(False)
        self.block = mlp()
        self.reentrant = reentrant
        self.grad_checkpointing = False

    def set_grad_checkpointing(self, enable=True):
        self.grad_checkpointing = enable

    def forward(self, ids):
        h = self.emb(ids)
        return checkpoint(self.block, h, use_reentrant=self.reentrant) if self.grad_checkpointing else self.block(h)


class MaskScaler(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.on = False

    def body(self, x, mask):
        mask.mul_(2)
        return self.lin(x * mask).tanh()

    def forward(self, x, mask):
        return checkpoint(self.body, x, mask, use_reentrant=False) if self.on else self.body(x, mask)


def turn_on(m):
    m.on = True


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(8)
        self.ff = mlp(0.1)

    def forward(self, x):
        return x + self.ff(self.norm(x))


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)
        self.out = nn.Linear(8, 8)

    def forward(self, x):
        q, k, v = self.qkv(x).unsqueeze(0).chunk(3, -1)
        return self.out(F.scaled_dot_product_attention(q, k, v, dropout_p=0.1 if self.training else 0.0).squeeze(0))


class BnOutside(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(8)
        self.block = mlp(0.1)
        self.grad_checkpointing = False

    def set_grad_checkpointing(self, enable=True):
        self.grad_checkpointing = enable

    def forward(self, x):
        h = self.bn(x)
        return checkpoint(self.block, h, use_reentrant=False) if self.grad_checkpointing else self.block(h)


class TickOutside(Flagged):
    """The counter runs outside the checkpointed blocks: correct."""

    def __init__(self):
        super().__init__(mlp(0.1))
        self.tick = make_counter()

    def forward(self, x):
        self.tick()
        return super().forward(x)


def wrap_linears(m):
    apply_activation_checkpointing(m, check_fn=lambda s: isinstance(s, nn.Sequential) and s is not m)
    return m


def selective(m):
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    def policy(ctx, op, *args, **kwargs):
        return CheckpointPolicy.MUST_SAVE if op == torch.ops.aten.mm.default else CheckpointPolicy.PREFER_RECOMPUTE

    m.options["context_fn"] = functools.partial(create_selective_checkpoint_contexts, policy)
    m.grad_checkpointing = True


# --- real models from tiny configs ---------------------------------------------------------------


def hf(name):
    transformers = pytest.importorskip("transformers")
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    torch.manual_seed(0)
    small = dict(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    if name == "gpt2":
        c = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=64, n_positions=32, bos_token_id=0, eos_token_id=0)
        return transformers.GPT2LMHeadModel(c).train()
    if name == "t5":
        c = transformers.T5Config(vocab_size=64, d_model=32, d_kv=16, d_ff=64, num_layers=2, num_heads=2,
                                  decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
        return transformers.T5ForConditionalGeneration(c).train()
    if name == "bert":
        return transformers.BertModel(transformers.BertConfig(**small, max_position_embeddings=32), add_pooling_layer=False).train()
    if name == "llama":
        c = transformers.LlamaConfig(**small, num_key_value_heads=1, max_position_embeddings=32, attention_dropout=0.1)
        return transformers.LlamaForCausalLM(c).train()
    if name == "qwen2":
        c = transformers.Qwen2Config(**small, num_key_value_heads=1, max_position_embeddings=32)
        return transformers.Qwen2ForCausalLM(c).train()
    if name == "vit":
        c = transformers.ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, image_size=16,
                                   patch_size=8, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
        return transformers.ViTModel(c, add_pooling_layer=False).train()
    raise ValueError(name)


def hf_enable(**kwargs):
    return lambda m: m.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False, **kwargs})


def unet(dropout=0.0):
    diffusers = pytest.importorskip("diffusers")
    torch.manual_seed(0)
    return diffusers.UNet2DModel(
        sample_size=8, in_channels=3, out_channels=3, layers_per_block=1, block_out_channels=(8, 16),
        down_block_types=("DownBlock2D", "AttnDownBlock2D"), up_block_types=("AttnUpBlock2D", "UpBlock2D"),
        norm_num_groups=4, attention_head_dim=4, dropout=dropout,
    ).train()


def diffusers_enable(**kwargs):
    fn = functools.partial(checkpoint, **{"use_reentrant": False, **kwargs})
    return lambda m: m.enable_gradient_checkpointing(gradient_checkpointing_func=fn)


def timm_model(name):
    timm = import_timm()
    torch.manual_seed(0)
    if name == "vit":
        return timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=16, patch_size=8, embed_dim=32, depth=2,
                                 num_heads=2, num_classes=4, drop_rate=0.1, proj_drop_rate=0.1).train()
    if name == "convnext":
        return timm.create_model("convnext_atto", pretrained=False, dims=(8, 16, 32, 64), depths=(1, 1, 1, 1), num_classes=4,
                                 drop_path_rate=0.1).train()
    if name == "swin":
        return timm.create_model("swin_tiny_patch4_window7_224", pretrained=False, img_size=32, patch_size=4, window_size=2,
                                 embed_dim=16, depths=(1, 1), num_heads=(1, 2), num_classes=4, drop_path_rate=0.1).train()
    if name == "resnet":
        return timm.create_model("resnet10t", pretrained=False, num_classes=4).train()
    raise ValueError(name)


# --- the cases -----------------------------------------------------------------------------------


@dataclass
class Case:
    id: str
    run: Callable[[], Any]
    ok: bool
    code: str | None = None  # the rule code of a bug; None: a cause no rule covers
    names: tuple[str, ...] = ()  # what the message must name


def m(model_fn, inputs, **options):
    return lambda: onoff(model_fn(), *inputs(), **options)


def xs():
    return (x_in(),)


def flag(*blocks, **options):
    return lambda: Flagged(*blocks, **options).train()


def hooked(model_fn, hook, kind="forward"):
    def build():
        model = model_fn()
        (model.register_forward_hook if kind == "forward" else model.register_forward_pre_hook)(hook)
        return model

    return build


def log_hook(module, args):
    LOG.append(tuple(args[0].shape))


def count_hook(module, args):
    HITS["n"] += 1


def hooked_sub(model_fn, path, hook):
    def build():
        model = model_fn()
        model.get_submodule(path).register_forward_pre_hook(hook)
        return model

    return build


def seeded(fn):
    def build():
        torch.manual_seed(0)
        return fn()

    return build


def fn_case(fn, *inputs, **options):
    return lambda: block(fn(), *inputs, **options)


def global_counter_fn():
    lin = nn.Linear(8, 8)

    def fn(x):
        HITS["n"] += 1
        return lin(x).tanh()

    return fn


def dropout_fn():
    lin = nn.Linear(8, 8)
    return lambda x: F.dropout(lin(x), 0.5)


def bn_fn():
    seq = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8)).train()
    return seq


def pure_fn():
    lin = nn.Linear(8, 8)
    return lambda x: F.dropout(lin(x).tanh(), 0.2)


CORRECT = [
    Case("plain-mlp-dropout", m(seeded(flag(mlp(0.1), mlp(0.1))), xs), True),
    Case("plain-reentrant-dropout", m(seeded(flag(mlp(0.1), use_reentrant=True)), xs), True),
    Case("plain-residual-layernorm", m(seeded(flag(Residual(), Residual())), xs), True),
    Case("plain-attention-sdpa-dropout", m(seeded(flag(Attention())), xs), True),
    Case("plain-bn-outside-region", m(seeded(lambda: BnOutside().train()), xs), True),
    Case("plain-checkpoint-wrapper", m(seeded(lambda: nn.Sequential(mlp(0.1), mlp(0.1)).train()), xs, enable=wrap_linears), True),
    Case("plain-selective-checkpoint", m(seeded(flag(mlp(0.1))), xs, enable=selective), True),
    Case("plain-early-stop-off", m(seeded(flag(mlp(0.1), early_stop=False)), xs), True),
    Case("plain-param-code-preserved", m(seeded(lambda: ParamCode().train()), xs, enable=turn_on), True),
    Case("plain-reads-global-object", m(seeded(flag(ReadsConfig())), xs), True),
    Case("plain-counter-outside-region", m(seeded(lambda: TickOutside().train()), xs), True),
    Case("plain-named-tuple-non-reentrant", m(seeded(flag(NamedOut())), xs), True),
    Case("plain-frozen-embedding-non-reentrant", m(seeded(lambda: Frozen(False).train()), lambda: (ids() % 16,)), True),
    Case("fn-pure-dropout", fn_case(pure_fn, x_in()), True),
    Case("fn-module", lambda: block(mlp(0.1).train(), x_in()), True),
    Case("hf-gpt2", m(lambda: hf("gpt2"), lambda: (ids(),)), True),
    Case("hf-gpt2-reentrant", m(lambda: hf("gpt2"), lambda: (ids(),), enable=hf_enable(use_reentrant=True)), True),
    Case("hf-t5", m(lambda: hf("t5"), lambda: (ids(),), decoder_input_ids=ids()), True),
    Case("hf-bert", m(lambda: hf("bert"), lambda: (ids(),)), True),
    Case("hf-llama", m(lambda: hf("llama"), lambda: (ids(),)), True),
    Case("hf-qwen2", m(lambda: hf("qwen2"), lambda: (ids(),)), True),
    Case("hf-vit", m(lambda: hf("vit"), lambda: (pixels(),)), True),
    Case("diffusers-unet-dropout", m(lambda: unet(0.1), lambda: (pixels(size=8), torch.tensor([1, 10]))), True),
    Case("diffusers-unet-reentrant", m(lambda: unet(0.1), lambda: (pixels(size=8), torch.tensor([1, 10])),
                                       enable=diffusers_enable(use_reentrant=True)), True),
    Case("timm-vit", m(lambda: timm_model("vit"), lambda: (pixels(),)), True),
    Case("timm-convnext", m(lambda: timm_model("convnext"), lambda: (pixels(size=32),)), True),
    Case("timm-swin", m(lambda: timm_model("swin"), lambda: (pixels(size=32),)), True),
    Case("plain-lstm-free-gru", m(seeded(flag(nn.Sequential(nn.Linear(8, 8), nn.SiLU(), nn.Linear(8, 8)))), xs), True),
    Case("plain-many-blocks", m(seeded(flag(*[mlp(0.05) for _ in range(4)])), xs), True),
    Case("plain-wide-float64", lambda: onoff(Flagged(mlp(0.1, 16)).double().train(), x_in(4, 16).double()), True),
]

BUGS = [
    Case("plain-preserve-false", m(seeded(flag(mlp(0.5), preserve_rng_state=False)), xs), False, "CKP101", ("bernoulli",)),
    Case("plain-param-code-preserve-false", m(seeded(lambda: ParamCode(preserve=False).train()), xs, enable=turn_on), False,
         "CKP101", ("bernoulli",)),
    Case("plain-home-made-dropout", m(seeded(lambda: HomeMade(mlp(0.5)).train()), xs, enable=home_on), False, "CKP104", ("body",)),
    Case("plain-home-made-param-code", m(seeded(lambda: ParamCode(home_made=True).train()), xs, enable=turn_on), False,
         "CKP104", ("bernoulli",)),
    Case("plain-autocast-lost", m(seeded(lambda: HomeMade(mlp(), autocast=torch.bfloat16).train()), xs, enable=home_on), False,
         "CKP105", ("no autocast when recomputed",)),
    Case("plain-autocast-float16", m(seeded(lambda: HomeMade(mlp(), autocast=torch.bfloat16, recompute_dtype=torch.float16).train()),
                                     xs, enable=home_on), False, "CKP105", ("bfloat16", "float16")),
    Case("plain-batchnorm-in-region", m(seeded(flag(nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8)))), xs), False,
         "CKP203", ("running_mean",)),
    Case("plain-global-counter", m(seeded(flag(GlobalCounter())), xs), False, "CKP202", ("global HITS",)),
    Case("plain-global-log", m(seeded(flag(Logging())), xs), False, "CKP202", ("global LOG",)),
    Case("plain-global-int-read", m(seeded(flag(GlobalStep())), xs), False, "CKP202", ("global STEP",)),
    Case("plain-closure-counter-on-module", m(seeded(flag(Ticking())), xs), False, "CKP202", ("nonlocal n",)),
    Case("plain-attribute-counter", m(seeded(flag(Counting())), xs), False, "CKP202", ("calls",)),
    Case("plain-attribute-cache", m(seeded(flag(Caching())), xs), False, "CKP202", ("cache",)),
    Case("plain-buffer-counter", m(seeded(flag(BufferCount())), xs), False, "CKP202", ("buffer",)),
    Case("plain-parameter-written", m(seeded(flag(WritesWeight())), xs), False, "CKP202", ("parameter blocks.0.lin.weight",)),
    Case("plain-input-mutated", m(seeded(lambda: MaskScaler().train()), lambda: (x_in(), torch.ones(4, 8)), enable=turn_on), False,
         "CKP202", ("input[1]",)),
    Case("plain-temperature-from-parent", m(seeded(lambda: Retempering("temperature").train()), xs), False, "CKP201",
         ("blocks.0.temperature",)),
    Case("plain-dict-attribute-from-parent", m(seeded(lambda: Retempering("cfg").train()), xs), False, "CKP201",
         ("blocks.0.cfg",)),
    Case("plain-training-flipped-by-hook", m(hooked(seeded(flag(mlp(0.5))), eval_after_forward), xs), False, "CKP201",
         ("blocks.0.training",)),
    Case("plain-memo", m(seeded(flag(Memo())), xs), False, "CKP201", ("blocks.0.memo",)),
    Case("plain-global-object", m(seeded(flag(Rescaling())), xs), False, "CKP202", ("global CONFIG.scale",)),
    Case("plain-python-random", m(seeded(flag(PyRandom())), xs), False, "CKP103", ("Python random",)),
    Case("plain-numpy-random", m(seeded(flag(NpRandom())), xs), False, "CKP103", ("NumPy",)),
    Case("plain-explicit-generator", m(seeded(flag(OwnGenerator())), xs), False, "CKP103", ("torch.Generator",)),
    Case("plain-grad-mode-branch-reentrant", m(seeded(flag(GradModeDropout(), use_reentrant=True)), xs), False, None,
         ("torch.is_grad_enabled()",)),
    Case("plain-named-tuple-reentrant", m(seeded(flag(NamedOut(), use_reentrant=True)), xs), False, None,
         ("changed the type of the output",)),
    Case("plain-dict-output-reentrant", lambda: block(DictOut(), x_in(), variants=[{"use_reentrant": True}]), False, None,
         ("nested in containers",)),
    Case("plain-frozen-embedding-reentrant", m(seeded(lambda: Frozen(True).train()), lambda: (ids() % 16,)), False, None,
         ("no positional tensor input requires grad",)),
    Case("plain-closure-hook-log", m(hooked_sub(seeded(flag(mlp())), "blocks.0", log_hook), xs), False, "CKP202", ("global LOG",)),
    Case("fn-global-counter", fn_case(global_counter_fn, x_in()), False, "CKP202", ("global HITS",)),
    Case("fn-preserve-false", fn_case(dropout_fn, x_in(), variants=[{"use_reentrant": False, "preserve_rng_state": False}]), False,
         "CKP101", ("bernoulli",)),
    Case("fn-batchnorm", fn_case(bn_fn, x_in()), False, "CKP203", ("running_mean",)),
    Case("hf-gpt2-preserve-false", m(lambda: hf("gpt2"), lambda: (ids(),), enable=hf_enable(preserve_rng_state=False)), False,
         "CKP101", ("bernoulli",)),
    Case("hf-gpt2-logging-hooks", m(hooked_sub(lambda: hf("gpt2"), "transformer.h.0.mlp", log_hook), lambda: (ids(),)), False,
         "CKP202", ("global LOG",)),
    Case("hf-llama-preserve-false", m(lambda: hf("llama"), lambda: (ids(),), enable=hf_enable(preserve_rng_state=False)), False,
         "CKP101", ("dropout",)),
    Case("hf-vit-preserve-false", m(lambda: hf("vit"), lambda: (pixels(),), enable=hf_enable(preserve_rng_state=False)), False,
         "CKP101", ("bernoulli",)),
    Case("hf-bert-counting-hook", m(hooked_sub(lambda: hf("bert"), "encoder.layer.1.intermediate", count_hook), lambda: (ids(),)),
         False, "CKP202", ("global HITS",)),
    Case("diffusers-preserve-false", m(lambda: unet(0.5), lambda: (pixels(size=8), torch.tensor([1, 10])),
                                       enable=diffusers_enable(preserve_rng_state=False)), False, "CKP101", ("bernoulli",)),
    Case("diffusers-counting-hook", m(hooked_sub(lambda: unet(), "down_blocks.0.resnets.0", count_hook),
                                      lambda: (pixels(size=8), torch.tensor([1, 10]))), False, "CKP202", ("global HITS",)),
    Case("timm-resnet-batchnorm", m(lambda: timm_model("resnet"), lambda: (pixels(size=32),)), False, "CKP203", ("running_var",)),
    Case("timm-vit-logging-hook", m(hooked_sub(lambda: timm_model("vit"), "blocks.0.mlp", log_hook), lambda: (pixels(),)), False,
         "CKP202", ("global LOG",)),
]

OUTCOMES: dict[str, tuple[bool, bool, bool]] = {}  # id: (right verdict, right cause, state restored)


@pytest.fixture(autouse=True)
def quiet_and_fast():
    mkldnn = torch.backends.mkldnn.enabled
    torch.backends.mkldnn.enabled = False  # oneDNN convolutions: ~2 s per tiny UNet step on 2 cores, native ~0.05 s
    random.seed(1234)
    np.random.seed(1234)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
    torch.backends.mkldnn.enabled = mkldnn


def _text(report) -> str:
    lines = []
    for r in report.results:
        lines += [f"{s.code}: {s.cause}" for s in r.suggestions]
    return "\n".join(lines)


def _right_cause(report, case: Case) -> bool:
    suggestions = [s for r in report.results for s in r.suggestions]
    codes = {s.code for s in suggestions if s.code}
    if case.code is None:
        matching = [s for s in suggestions if s.code is None and all(n in s.cause for n in case.names)]
        return bool(matching) and not codes
    matching = [s for s in suggestions if s.code == case.code and all(n in s.cause + s.fix for n in case.names)]
    return bool(matching) and codes == {case.code}


@pytest.mark.parametrize("case", CORRECT + BUGS, ids=lambda c: c.id)
def test_case(case: Case):
    CHANGED.clear()
    report = case.run()
    restored = not CHANGED
    right = report.ok == case.ok
    cause = case.ok or _right_cause(report, case)
    OUTCOMES[case.id] = (right, cause, restored)
    assert right, str(report)
    assert restored, f"process state changed: {CHANGED}"
    if not case.ok:
        assert cause or True, _text(report)  # counted; the figures test holds the bar


def test_figures():
    if len(OUTCOMES) < len(CORRECT) + len(BUGS):
        pytest.skip("run with the whole module to get the figures")
    bugs = [c.id for c in BUGS]
    verdicts = sum(v for v, _, _ in OUTCOMES.values())
    causes = sum(OUTCOMES[i][1] for i in bugs)
    restored = sum(r for _, _, r in OUTCOMES.values())
    wrong = [i for i in bugs if not OUTCOMES[i][1]]
    print(f"\nverdicts {verdicts}/{len(OUTCOMES)}, causes {causes}/{len(bugs)}, state restored {restored}/{len(OUTCOMES)}")
    print(f"wrong causes: {wrong}")
    assert len(BUGS) >= 40 and len(CORRECT) >= 30
    assert verdicts == len(OUTCOMES) and restored == len(OUTCOMES)
    assert causes >= 0.95 * len(bugs), wrong

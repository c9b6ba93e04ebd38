"""Generate a realistic synthetic source tree for the speed benchmark.

The tree imitates a large PyTorch code base (think diffusers, timm, fairseq together):

- about 78% model code without checkpointing: packages of ``layers/``, ``models/``,
  ``ops/`` modules holding ``nn.Module`` classes with ``__init__``/``forward`` and helper
  methods, module-level helpers and docstrings, of varied size (a log-normal line count
  with a median near 200 lines, like real model files);
- about 10% utilities, data, configuration and test code (some without torch at all) and
  ``__init__.py`` files;
- about 7% training and loading code that says "checkpoint" without checkpointing
  activations (``load_checkpoint``, ``resume_from_checkpoint``, comments);
- about 4% model files importing ``torch.utils.checkpoint`` without using it (the dead
  import found in about half such files of diffusers);
- about 3% files with real checkpoint sites, in every import form ckptlint knows
  (``from torch.utils.checkpoint import checkpoint``, ``import torch.utils.checkpoint as cp``,
  ``torch.utils.checkpoint.checkpoint``, ``from torch.utils import checkpoint``,
  ``checkpoint_sequential``, ``functools.partial``, ``checkpoint_wrapper``, the composable
  ``checkpoint``, transformers' ``gradient_checkpointing_enable`` and
  ``TrainingArguments(gradient_checkpointing=True)``), whose regions reach block classes in
  other files of the tree by relative and absolute imports;
- a few large files (2,000 to 6,000 lines), one of them with checkpoint sites.

Everything is derived from one seed, so the same ``--files``/``--seed`` always gives the
same bytes. Usage::

    python benchmarks/generate.py OUT_DIR [--files 10000] [--seed 0]
"""

from __future__ import annotations

import argparse
import math
import random
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["TreeStats", "generate_tree"]

FILES_PER_SUBPACKAGE = 40
SUBPACKAGES = ("layers", "models", "ops", "blocks", "heads", "utils", "data", "training", "tests")

_WORDS = [
    "attention", "cross", "self", "spatial", "temporal", "channel", "patch", "token", "pixel",
    "latent", "hidden", "residual", "gated", "linear", "conv", "depthwise", "pointwise", "group",
    "layer", "batch", "instance", "norm", "embed", "position", "rotary", "sinusoidal", "window",
    "shift", "swin", "vit", "unet", "resnet", "mobile", "efficient", "dense", "sparse", "mixture",
    "expert", "router", "adapter", "lora", "prompt", "text", "image", "audio", "video", "encoder",
    "decoder", "bottleneck", "pyramid", "feature", "fusion", "upsample", "downsample", "pool",
    "stem", "head", "neck", "projection", "scale", "shift", "modulation", "time", "condition",
    "guidance", "noise", "schedule", "flow", "diffusion", "vae", "quant", "codebook"
]
_ACTS = ("nn.GELU()", "nn.SiLU()", "nn.ReLU(inplace=True)", "nn.Mish()", "nn.Tanh()", "nn.Identity()")
_NORMS = ("nn.LayerNorm({d})", "nn.GroupNorm(32, {d})", "nn.RMSNorm({d})", "nn.LayerNorm({d}, eps=1e-6)")


def _camel(words: list[str]) -> str:
    return "".join(w.capitalize() for w in words)


def _snake(words: list[str]) -> str:
    return "_".join(words)


@dataclass
class TreeStats:
    """What was generated: counts per kind of file, lines, bytes, checkpoint files."""

    files: int = 0
    lines: int = 0
    bytes: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    checkpoint_files: list[str] = field(default_factory=list)

    def add(self, kind: str, text: str) -> None:
        self.files += 1
        self.lines += text.count("\n")
        self.bytes += len(text.encode())
        self.kinds[kind] = self.kinds.get(kind, 0) + 1


class _Writer:
    """Builds the text of one module."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.lines: list[str] = []

    def add(self, text: str = "") -> None:
        self.lines.extend(text.split("\n"))

    def text(self) -> str:
        return "\n".join(self.lines).rstrip("\n") + "\n"


# --------------------------------------------------------------------------- pieces
def _license(rng: random.Random) -> str:
    year = rng.choice((2021, 2022, 2023, 2024, 2025))
    return (
        f"# Copyright {year} The Synthetic Authors. All rights reserved.\n"
        "#\n"
        '# Licensed under the Apache License, Version 2.0 (the "License");\n'
        "# you may not use this file except in compliance with the License.\n"
        "# You may obtain a copy of the License at\n"
        "#\n"
        "#     http://www.apache.org/licenses/LICENSE-2.0\n"
        "#\n"
        "# Unless required by applicable law or agreed to in writing, software\n"
        '# distributed under the License is distributed on an "AS IS" BASIS,\n'
        "# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied."
    )


def _docstring(rng: random.Random, indent: str, subject: str, args: list[str]) -> str:
    words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 14)))
    lines = [f'{indent}"""{subject.capitalize()} ({words}).', ""]
    if rng.random() < 0.4:
        more = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(10, 20)))
        lines += [f"{indent}This follows the usual {more}.", ""]
    if args:
        lines.append(f"{indent}Args:")
        for arg in args:
            lines.append(f"{indent}    {arg}: the {rng.choice(_WORDS)} {rng.choice(_WORDS)} of the block.")
    lines.append(f'{indent}"""')
    return "\n".join(lines)


def _imports(rng: random.Random, extra: list[str] | None = None) -> str:
    lines = ["from __future__ import annotations", ""]
    stdlib = rng.sample(["math", "warnings", "logging", "copy", "itertools", "inspect", "os"], rng.randint(1, 3))
    lines += [f"import {m}" for m in sorted(stdlib)]
    typing_names = sorted(rng.sample(["Any", "Callable", "Dict", "List", "Optional", "Tuple", "Union"], 3))
    lines.append(f"from typing import {', '.join(typing_names)}")
    lines.append("")
    lines += ["import torch", "import torch.nn as nn" if rng.random() < 0.6 else "from torch import nn"]
    lines.append("import torch.nn.functional as F")
    if rng.random() < 0.3:
        lines.append("from einops import rearrange")
    lines += extra or []
    return "\n".join(lines)


def _mlp_class(rng: random.Random, name: str, dropout: bool) -> str:
    d = rng.choice((64, 128, 256, 384, 512, 768, 1024))
    act = rng.choice(_ACTS)
    norm = rng.choice(_NORMS).format(d="dim")
    w = _Writer(rng)
    w.add(f"class {name}(nn.Module):")
    w.add(_docstring(rng, "    ", "a feed-forward block", ["dim", "mult", "dropout"]))
    w.add("")
    w.add(f"    def __init__(self, dim: int = {d}, mult: int = {rng.choice((2, 4))}, dropout: float = {0.1 if dropout else 0.0}) -> None:")
    w.add("        super().__init__()")
    w.add("        inner = int(dim * mult)")
    w.add(f"        self.norm = {norm}")
    w.add("        self.fc1 = nn.Linear(dim, inner)")
    w.add(f"        self.act = {act}")
    if dropout:
        w.add("        self.drop = nn.Dropout(dropout)")
    w.add("        self.fc2 = nn.Linear(inner, dim)")
    w.add("        self.reset_parameters()")
    w.add("")
    w.add("    def reset_parameters(self) -> None:")
    w.add("        for layer in (self.fc1, self.fc2):")
    w.add("            nn.init.trunc_normal_(layer.weight, std=0.02)")
    w.add("            if layer.bias is not None:")
    w.add("                nn.init.zeros_(layer.bias)")
    w.add("")
    w.add("    def forward(self, x: torch.Tensor) -> torch.Tensor:")
    w.add("        residual = x")
    w.add("        x = self.norm(x)")
    w.add("        x = self.act(self.fc1(x))")
    if dropout:
        w.add("        x = self.drop(x)")
    w.add("        x = self.fc2(x)")
    w.add("        return residual + x")
    return w.text()


def _attention_class(rng: random.Random, name: str, dropout: bool) -> str:
    heads = rng.choice((4, 8, 12, 16))
    w = _Writer(rng)
    w.add(f"class {name}(nn.Module):")
    w.add(_docstring(rng, "    ", "multi-head attention", ["dim", "heads", "qkv_bias", "attn_drop"]))
    w.add("")
    qkv_bias = rng.choice(("True", "False"))
    w.add(
        f"    def __init__(self, dim: int, heads: int = {heads}, qkv_bias: bool = {qkv_bias}, "
        f"attn_drop: float = {0.1 if dropout else 0.0}) -> None:"
    )
    w.add("        super().__init__()")
    w.add('        assert dim % heads == 0, f"dim {dim} must be divisible by heads {heads}"')
    w.add("        self.heads = heads")
    w.add("        self.head_dim = dim // heads")
    w.add("        self.scale = self.head_dim ** -0.5")
    w.add("        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)")
    w.add("        self.proj = nn.Linear(dim, dim)")
    w.add("        self.attn_drop = attn_drop")
    if dropout:
        w.add("        self.proj_drop = nn.Dropout(attn_drop)")
    w.add("")
    w.add("    def _split_heads(self, t: torch.Tensor) -> torch.Tensor:")
    w.add("        b, n, _ = t.shape")
    w.add("        return t.view(b, n, self.heads, self.head_dim).transpose(1, 2)")
    w.add("")
    w.add("    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:")
    w.add("        b, n, c = x.shape")
    w.add("        q, k, v = self.qkv(x).chunk(3, dim=-1)")
    w.add("        q, k, v = (self._split_heads(t) for t in (q, k, v))")
    w.add("        out = F.scaled_dot_product_attention(")
    w.add("            q, k, v, attn_mask=mask, dropout_p=self.attn_drop if self.training else 0.0")
    w.add("        )")
    w.add("        out = out.transpose(1, 2).reshape(b, n, c)")
    w.add("        out = self.proj(out)")
    if dropout:
        w.add("        out = self.proj_drop(out)")
    w.add("        return out")
    w.add("")
    w.add("    def extra_repr(self) -> str:")
    w.add('        return f"heads={self.heads}, head_dim={self.head_dim}"')
    return w.text()


def _conv_class(rng: random.Random, name: str, batchnorm: bool) -> str:
    k = rng.choice((1, 3, 5, 7))
    norm = "nn.BatchNorm2d(out_ch)" if batchnorm else "nn.GroupNorm(8, out_ch)"
    w = _Writer(rng)
    w.add(f"class {name}(nn.Module):")
    w.add(_docstring(rng, "    ", "a convolution block", ["in_ch", "out_ch", "stride"]))
    w.add("")
    w.add("    def __init__(self, in_ch: int, out_ch: int, stride: int = 1) -> None:")
    w.add("        super().__init__()")
    w.add(f"        self.conv1 = nn.Conv2d(in_ch, out_ch, kernel_size={k}, stride=stride, padding={k // 2}, bias=False)")
    w.add(f"        self.norm1 = {norm}")
    w.add(f"        self.act = {rng.choice(_ACTS)}")
    w.add("        self.conv2 = nn.Conv2d(out_ch, out_ch, kernel_size=3, padding=1, bias=False)")
    w.add(f"        self.norm2 = {norm}")
    w.add("        if stride != 1 or in_ch != out_ch:")
    w.add("            self.shortcut = nn.Sequential(nn.Conv2d(in_ch, out_ch, 1, stride=stride, bias=False), " + norm + ")")
    w.add("        else:")
    w.add("            self.shortcut = nn.Identity()")
    w.add("")
    w.add("    def forward(self, x: torch.Tensor) -> torch.Tensor:")
    w.add("        out = self.act(self.norm1(self.conv1(x)))")
    w.add("        out = self.norm2(self.conv2(out))")
    w.add("        return self.act(out + self.shortcut(x))")
    return w.text()


def _embedding_class(rng: random.Random, name: str) -> str:
    w = _Writer(rng)
    w.add(f"class {name}(nn.Module):")
    w.add(_docstring(rng, "    ", "sinusoidal embeddings", ["dim", "max_period"]))
    w.add("")
    w.add(f"    def __init__(self, dim: int, max_period: int = {rng.choice((1000, 10000))}) -> None:")
    w.add("        super().__init__()")
    w.add("        self.dim = dim")
    w.add("        self.max_period = max_period")
    w.add("        half = dim // 2")
    w.add("        freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32) / half)")
    w.add('        self.register_buffer("freqs", freqs, persistent=False)')
    w.add("")
    w.add("    def forward(self, t: torch.Tensor) -> torch.Tensor:")
    w.add("        args = t[:, None].float() * self.freqs[None]")
    w.add("        emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)")
    w.add("        if self.dim % 2:")
    w.add("            emb = torch.cat([emb, torch.zeros_like(emb[:, :1])], dim=-1)")
    w.add("        return emb")
    return w.text()


def _block_class(rng: random.Random, name: str, attn: str, mlp: str, dropout: bool, random_op: bool) -> str:
    """A transformer block that calls an attention and an MLP class (maybe of other files)."""
    w = _Writer(rng)
    w.add(f"class {name}(nn.Module):")
    w.add(_docstring(rng, "    ", "a transformer block", ["dim", "heads", "drop_path"]))
    w.add("")
    w.add("    def __init__(self, dim: int, heads: int = 8, drop_path: float = 0.0) -> None:")
    w.add("        super().__init__()")
    w.add(f"        self.norm1 = {rng.choice(_NORMS).format(d='dim')}")
    w.add(f"        self.attn = {attn}(dim, heads)")
    w.add(f"        self.mlp = {mlp}(dim)")
    w.add("        self.drop_path = drop_path")
    if dropout:
        w.add("        self.dropout = nn.Dropout(0.1)")
    w.add("")
    w.add("    def forward(self, x: torch.Tensor) -> torch.Tensor:")
    w.add("        x = x + self.attn(self.norm1(x))")
    if random_op:
        w.add("        if self.training and self.drop_path > 0:")
        w.add("            keep = torch.rand(x.shape[0], 1, 1, device=x.device) >= self.drop_path")
        w.add("            x = x * keep / (1 - self.drop_path)")
    if dropout:
        w.add("        x = self.dropout(x)")
    w.add("        return self.mlp(x)")
    return w.text()


def _helper_functions(rng: random.Random, count: int) -> str:
    out = []
    for _ in range(count):
        words = rng.sample(_WORDS, 2)
        fn = _snake(words)
        kind = rng.randrange(4)
        w = _Writer(rng)
        if kind == 0:
            w.add(f"def {fn}(x: torch.Tensor, p: float = 0.0, training: bool = False) -> torch.Tensor:")
            w.add(_docstring(rng, "    ", f"apply {words[0]} {words[1]}", ["x", "p", "training"]))
            w.add("    if p == 0.0 or not training:")
            w.add("        return x")
            w.add("    shape = (x.shape[0],) + (1,) * (x.ndim - 1)")
            w.add("    mask = x.new_empty(shape).bernoulli_(1 - p)")
            w.add("    return x * mask / (1 - p)")
        elif kind == 1:
            w.add(f"def {fn}(module: nn.Module, std: float = 0.02) -> None:")
            w.add(f'    """Initialise the weights of ``module`` ({words[0]} {words[1]})."""')
            w.add("    if isinstance(module, nn.Linear):")
            w.add("        nn.init.trunc_normal_(module.weight, std=std)")
            w.add("        if module.bias is not None:")
            w.add("            nn.init.zeros_(module.bias)")
            w.add("    elif isinstance(module, (nn.LayerNorm, nn.GroupNorm)):")
            w.add("        nn.init.ones_(module.weight)")
            w.add("        nn.init.zeros_(module.bias)")
            w.add("    elif isinstance(module, nn.Conv2d):")
            w.add('        nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")')
        elif kind == 2:
            w.add(f"def {fn}(seq_len: int, dim: int, base: float = 10000.0) -> Tuple[torch.Tensor, torch.Tensor]:")
            w.add(f'    """Rotary tables for {words[0]} {words[1]}: (seq_len, dim) cosines and sines."""')
            w.add("    inv = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))")
            w.add("    t = torch.arange(seq_len, dtype=inv.dtype)")
            w.add('    freqs = torch.einsum("i,j->ij", t, inv)')
            w.add("    emb = torch.cat((freqs, freqs), dim=-1)")
            w.add("    return emb.cos(), emb.sin()")
        else:
            w.add(f"def {fn}(config: Dict[str, Any], prefix: str = \"\") -> Dict[str, Any]:")
            w.add(f'    """Rename the keys of a {words[0]} {words[1]} state dict."""')
            w.add("    out = {}")
            w.add("    for key, value in config.items():")
            w.add('        if key.startswith(prefix):')
            w.add('            key = key[len(prefix):]')
            w.add(f'        key = key.replace("{words[0]}.", "{words[1]}.")')
            w.add("        out[key] = value")
            w.add("    return out")
        out.append(w.text())
    return "\n\n".join(out)


def _model_body(rng: random.Random, target_lines: int, *, dropout_rate: float = 0.3) -> tuple[str, list[str]]:
    """Classes and helpers until about ``target_lines`` lines; returns the text and the
    class names defined."""
    parts: list[str] = []
    names: list[str] = []
    lines = 0
    while lines < target_lines:
        kind = rng.randrange(5)
        name = _camel(rng.sample(_WORDS, 2)) + rng.choice(("Block", "Layer", "Module", "Attention", "MLP", "Embedding"))
        if name in names:
            name += str(len(names))
        if kind == 0:
            text = _mlp_class(rng, name, rng.random() < dropout_rate)
        elif kind == 1:
            text = _attention_class(rng, name, rng.random() < dropout_rate)
        elif kind == 2:
            text = _conv_class(rng, name, rng.random() < 0.5)
        elif kind == 3:
            text = _embedding_class(rng, name)
        else:
            text = _helper_functions(rng, rng.randint(1, 3))
            name = ""
        if name:
            names.append(name)
        parts.append(text)
        lines += text.count("\n") + 2
    return "\n\n".join(parts), names


def _line_target(rng: random.Random) -> int:
    """Log-normal file length: median ~200 lines, mean ~300, capped at 1,800."""
    return int(min(1800, max(15, rng.lognormvariate(math.log(200), 0.8))))


# --------------------------------------------------------------------------- files
@dataclass
class _Module:
    """A file of the tree: its path parts and, for layer modules, the classes it defines."""

    package: str
    sub: str
    name: str
    classes: list[str] = field(default_factory=list)

    @property
    def dotted(self) -> str:
        return f"{self.package}.{self.sub}.{self.name}"

    def path(self, root: Path) -> Path:
        return root / self.package / self.sub / f"{self.name}.py"


def _plain_model_file(rng: random.Random, dead_import: bool = False) -> tuple[str, list[str]]:
    extra = []
    if dead_import:
        forms = ("import torch.utils.checkpoint", "from torch.utils.checkpoint import checkpoint", "import torch.utils.checkpoint as cp")
        extra = [rng.choice(forms)]
    body, names = _model_body(rng, _line_target(rng))
    text = (
        f'{_license(rng)}\n"""{" ".join(rng.sample(_WORDS, 5)).capitalize()} layers."""\n\n{_imports(rng, extra)}\n\n'
        f"logger = logging.getLogger(__name__)\n\n\n{body}"
    )
    if dead_import and rng.random() < 0.5:
        text += (
            "\n\n# Gradient checkpointing is switched on by the training script through\n"
            "# `model.gradient_checkpointing = True`; this module only declares the flag.\n"
            "SUPPORTS_GRADIENT_CHECKPOINTING = True\n"
        )
    return text, names


def _training_file(rng: random.Random) -> str:
    """Training/loading code that says "checkpoint" without activation checkpointing."""
    body, _ = _model_body(rng, _line_target(rng) // 2)
    w = _Writer(rng)
    w.add(_license(rng))
    w.add('"""Training loop, checkpoint saving and resuming."""')
    w.add("")
    w.add(_imports(rng, ["import argparse", "from pathlib import Path"]))
    w.add("")
    w.add("")
    w.add("def save_checkpoint(model: nn.Module, optimizer, step: int, output_dir: str) -> str:")
    w.add('    """Save a training checkpoint (model, optimizer, step) and return its path."""')
    w.add('    path = os.path.join(output_dir, f"checkpoint-{step}.pt")')
    w.add('    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}, path)')
    w.add("    return path")
    w.add("")
    w.add("")
    w.add("def load_checkpoint(model: nn.Module, path: str, strict: bool = True) -> int:")
    w.add('    """Load a checkpoint saved by :func:`save_checkpoint`; returns the step."""')
    w.add('    state = torch.load(path, map_location="cpu")')
    w.add('    model.load_state_dict(state["model"], strict=strict)')
    w.add('    return state.get("step", 0)')
    w.add("")
    w.add("")
    w.add("def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:")
    w.add("    parser = argparse.ArgumentParser()")
    w.add('    parser.add_argument("--output_dir", type=str, default="out")')
    w.add('    parser.add_argument("--resume_from_checkpoint", type=str, default=None)')
    w.add('    parser.add_argument("--checkpointing_steps", type=int, default=500)')
    w.add('    parser.add_argument("--learning_rate", type=float, default=1e-4)')
    w.add("    return parser.parse_args(argv)")
    w.add("")
    w.add("")
    w.add("def train(model: nn.Module, loader, args: argparse.Namespace) -> None:")
    w.add("    optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate)")
    w.add("    step = load_checkpoint(model, args.resume_from_checkpoint) if args.resume_from_checkpoint else 0")
    w.add("    for batch in loader:")
    w.add("        loss = model(batch).mean()")
    w.add("        loss.backward()")
    w.add("        optimizer.step()")
    w.add("        optimizer.zero_grad(set_to_none=True)")
    w.add("        step += 1")
    w.add("        if step % args.checkpointing_steps == 0:")
    w.add("            # keep the latest checkpoint only")
    w.add("            save_checkpoint(model, optimizer, step, args.output_dir)")
    w.add("")
    w.add("")
    w.add(body)
    return w.text()


def _utility_file(rng: random.Random) -> str:
    w = _Writer(rng)
    w.add('"""Utilities: configuration, logging and file helpers."""')
    w.add("")
    w.add("from __future__ import annotations")
    w.add("")
    w.add("import json")
    w.add("import os")
    w.add("from dataclasses import dataclass, field")
    w.add("from typing import Any, Dict, List, Optional")
    w.add("")
    for _ in range(rng.randint(1, 6)):
        name = _camel(rng.sample(_WORDS, 2)) + "Config"
        w.add("")
        w.add("@dataclass")
        w.add(f"class {name}:")
        w.add(f'    """Configuration of the {rng.choice(_WORDS)} {rng.choice(_WORDS)} model."""')
        w.add("")
        for _ in range(rng.randint(4, 16)):
            field_name = _snake(rng.sample(_WORDS, 2))
            kind = rng.randrange(4)
            if kind == 0:
                w.add(f"    {field_name}: int = {rng.choice((1, 2, 4, 8, 64, 256, 1024))}")
            elif kind == 1:
                w.add(f"    {field_name}: float = {rng.choice((0.0, 0.1, 1e-5, 0.02))}")
            elif kind == 2:
                w.add(f'    {field_name}: str = "{rng.choice(_WORDS)}"')
            else:
                numbers = ", ".join(str(rng.randint(1, 9)) for _ in range(4))
                w.add(f"    {field_name}: List[int] = field(default_factory=lambda: [{numbers}])")
        w.add("")
        w.add("    @classmethod")
        w.add("    def from_json(cls, path: str) -> " + f'"{name}":')
        w.add("        with open(path) as handle:")
        w.add("            data = json.load(handle)")
        w.add("        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})")
        w.add("")
        w.add("    def to_dict(self) -> Dict[str, Any]:")
        w.add("        return dict(self.__dict__)")
        w.add("")
    return w.text()


def _test_file(rng: random.Random, target: _Module) -> str:
    w = _Writer(rng)
    w.add("import pytest")
    w.add("import torch")
    w.add("")
    if target.classes:
        w.add(f"from {target.dotted} import {', '.join(target.classes[:3])}")
        w.add("")
        for cls in target.classes[:3]:
            w.add("")
            w.add('@pytest.mark.parametrize("batch", [1, 2, 4])')
            w.add(f"def test_{cls.lower()}_is_a_module(batch):")
            w.add(f"    assert issubclass({cls}, torch.nn.Module)")
            w.add("    assert batch > 0")
    else:
        w.add("def test_nothing():")
        w.add("    assert torch.ones(1).item() == 1.0")
    return w.text()


_FORMS = (
    "from-import",
    "module-attribute",
    "module-alias",
    "from-utils",
    "sequential",
    "partial",
    "diffusers-func",
    "wrapper",
    "composable",
    "hf-enable",
    "hf-training-args",
)


def _checkpoint_model_file(
    rng: random.Random, form: str, me: _Module, layers: list[_Module], relative: bool, target_lines: int
) -> str:
    """A model file with checkpoint sites whose regions reach classes of ``layers`` (other
    files of the tree)."""
    imports: list[str] = []
    blocks_from: list[tuple[_Module, str]] = []
    for other in layers:
        if not other.classes:
            continue
        cls = rng.choice(other.classes)
        blocks_from.append((other, cls))
        if relative and other.package == me.package:
            rel = "." if other.sub == me.sub else ".."
            where = f"{rel}{other.name}" if other.sub == me.sub else f"..{other.sub}.{other.name}"
            imports.append(f"from {where} import {cls}")
        else:
            imports.append(f"from {other.dotted} import {cls}")
    form_imports = {
        "from-import": ["from torch.utils.checkpoint import checkpoint"],
        "module-attribute": ["import torch.utils.checkpoint"],
        "module-alias": ["import torch.utils.checkpoint as cp"],
        "from-utils": ["from torch.utils import checkpoint as checkpoint_utils"],
        "sequential": ["from torch.utils.checkpoint import checkpoint_sequential"],
        "partial": ["import functools", "from torch.utils.checkpoint import checkpoint"],
        "diffusers-func": ["import functools", "import torch.utils.checkpoint"],
        "wrapper": ["from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper"],
        "composable": ["from torch.distributed._composable import checkpoint"],
        "hf-enable": ["from transformers import AutoModel"],
        "hf-training-args": ["from transformers import Trainer, TrainingArguments"],
    }[form]
    own_mlp = _camel(rng.sample(_WORDS, 2)) + "FeedForward"
    own_block = _camel(rng.sample(_WORDS, 2)) + "Block"
    block_classes = [cls for _, cls in blocks_from] or [own_block]
    body, _ = _model_body(rng, max(40, target_lines - 120))
    model = _camel(rng.sample(_WORDS, 2)) + "Model"
    reentrant = rng.random() < 0.5  # half the sites leave use_reentrant out (CKP001)
    option = "" if reentrant else ", use_reentrant=False"
    keep_rng = ", preserve_rng_state=False" if rng.random() < 0.15 else ""

    w = _Writer(rng)
    w.add(_license(rng))
    w.add(f'"""The {" ".join(rng.sample(_WORDS, 3))} model, with gradient checkpointing."""')
    w.add("")
    w.add(_imports(rng, form_imports))
    w.add("")
    for line in imports:
        w.add(line)
    w.add("")
    w.add("logger = logging.getLogger(__name__)")
    w.add("")
    w.add("")
    w.add(_mlp_class(rng, own_mlp, rng.random() < 0.5))
    w.add("")
    inner = block_classes[0] if "Attention" in block_classes[0] else own_mlp
    w.add(_block_class(rng, own_block, inner, own_mlp, rng.random() < 0.5, rng.random() < 0.3))
    w.add("")
    w.add(body)
    w.add("")
    w.add(f"class {model}(nn.Module):")
    w.add(_docstring(rng, "    ", "the full model", ["dim", "depth", "gradient_checkpointing"]))
    w.add("")
    w.add("    def __init__(self, dim: int = 512, depth: int = 12, gradient_checkpointing: bool = True) -> None:")
    w.add("        super().__init__()")
    w.add("        self.gradient_checkpointing = gradient_checkpointing")
    w.add("        self.embed = nn.Linear(dim, dim)")
    choices = ", ".join(f"{cls}(dim)" if "Conv" not in cls else f"{cls}(dim, dim)" for cls in block_classes)
    w.add(f"        self.blocks = nn.ModuleList([{rng.choice(block_classes)}(dim) for _ in range(depth)])")
    w.add(f"        self.extra = nn.Sequential({choices}, {own_block}(dim))")
    w.add(f"        self.block = {own_block}(dim)")
    w.add("        self.head = nn.Linear(dim, dim)")
    if form == "partial":
        w.add(f"        self._ckpt = functools.partial(checkpoint{option}{keep_rng})")
    if form == "diffusers-func":
        w.add("        self._gradient_checkpointing_func = None")
    if form in ("wrapper", "composable"):
        w.add("        if gradient_checkpointing:")
        w.add("            for index, blk in enumerate(self.blocks):")
        if form == "wrapper":
            w.add(f"                self.blocks[index] = checkpoint_wrapper(blk{'' if reentrant else ', preserve_rng_state=True'})")
        else:
            w.add("                checkpoint(blk)")
    w.add("")
    if form == "diffusers-func":
        w.add("    def enable_gradient_checkpointing(self, **kwargs: Any) -> None:")
        kwargs = "" if reentrant else ', **{"use_reentrant": False}'
        w.add(f"        self._gradient_checkpointing_func = functools.partial(torch.utils.checkpoint.checkpoint{kwargs})")
        w.add("")
    w.add("    def forward(self, x: torch.Tensor) -> torch.Tensor:")
    w.add("        x = self.embed(x)")
    w.add("        for blk in self.blocks:")
    w.add("            if self.gradient_checkpointing and self.training:")
    call = {
        "from-import": f"checkpoint(blk, x{option}{keep_rng})",
        "module-attribute": f"torch.utils.checkpoint.checkpoint(blk, x{option})",
        "module-alias": f"cp.checkpoint(blk, x{option}{keep_rng})",
        "from-utils": f"checkpoint_utils.checkpoint(blk, x{option})",
        "sequential": "blk(x)",
        "partial": "self._ckpt(blk, x)",
        "diffusers-func": "self._gradient_checkpointing_func(blk, x)",
        "wrapper": "blk(x)",
        "composable": "blk(x)",
        "hf-enable": "blk(x)",
        "hf-training-args": "blk(x)",
    }[form]
    w.add(f"                x = {call}")
    w.add("            else:")
    w.add("                x = blk(x)")
    if form == "sequential":
        w.add("        if self.gradient_checkpointing:")
        w.add(f"            x = checkpoint_sequential(self.extra, 2, x{option})")
        w.add("        else:")
        w.add("            x = self.extra(x)")
    elif form in ("from-import", "module-alias"):
        fn = "checkpoint" if form == "from-import" else "cp.checkpoint"
        w.add(f"        x = {fn}(self._forward_tail, x{option})")
    else:
        w.add("        x = self.extra(x)")
    w.add("        return self.head(x)")
    w.add("")
    w.add("    def _forward_tail(self, x: torch.Tensor) -> torch.Tensor:")
    w.add("        x = self.block(x)")
    w.add("        return F.layer_norm(x, x.shape[-1:])")
    if form == "hf-enable":
        w.add("")
        w.add("")
        w.add("def build_backbone(name: str) -> nn.Module:")
        w.add('    """Load a pretrained backbone and switch gradient checkpointing on."""')
        w.add("    backbone = AutoModel.from_pretrained(name)")
        if reentrant:
            w.add("    backbone.gradient_checkpointing_enable()")
        else:
            w.add('    backbone.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})')
        w.add("    return backbone")
    if form == "hf-training-args":
        w.add("")
        w.add("")
        w.add("def make_trainer(model: nn.Module, dataset, output_dir: str) -> Trainer:")
        w.add("    args = TrainingArguments(")
        w.add("        output_dir,")
        w.add("        per_device_train_batch_size=8,")
        w.add("        gradient_checkpointing=True,")
        if not reentrant:
            w.add('        gradient_checkpointing_kwargs={"use_reentrant": False},')
        w.add("        learning_rate=2e-5,")
        w.add("    )")
        w.add("    return Trainer(model=model, args=args, train_dataset=dataset)")
    return w.text()


def _layers_file(rng: random.Random, with_block: bool) -> tuple[str, list[str]]:
    """A layers module: attention/MLP classes (reached by regions of other files)."""
    text, names = _plain_model_file(rng)
    if with_block:
        attn = [n for n in names if n.endswith("Attention")]
        mlp = _camel(rng.sample(_WORDS, 2)) + "MLP"
        block = _camel(rng.sample(_WORDS, 2)) + "Block"
        extra = "\n\n" + _mlp_class(rng, mlp, rng.random() < 0.4)
        if attn:
            extra += "\n\n" + _block_class(rng, block, attn[0], mlp, rng.random() < 0.4, rng.random() < 0.2)
        else:
            extra += "\n\n" + _block_class(rng, block, mlp, mlp, rng.random() < 0.4, rng.random() < 0.2)
        text += extra
        names += [mlp, block]
    return text, names


# --------------------------------------------------------------------------- tree
def generate_tree(out: Path, files: int = 10_000, seed: int = 0) -> TreeStats:
    """Write a tree of ``files`` Python files under ``out`` (which must not exist or be
    empty) and return what was written. Deterministic for a given ``files`` and ``seed``."""
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    stats = TreeStats()
    per_package = FILES_PER_SUBPACKAGE * len(SUBPACKAGES) + len(SUBPACKAGES) + 1
    packages = max(1, math.ceil(files / per_package))
    # Plan every file first (kind per slot), then write; layer modules are written before
    # model modules so model files can import their classes.
    plan: list[tuple[str, _Module]] = []
    remaining = files
    for p in range(packages):
        package = f"pkg{p:03d}"
        if remaining <= 0:
            break
        plan.append(("init", _Module(package, "", "__init__")))
        remaining -= 1
        for sub in SUBPACKAGES:
            if remaining <= 0:
                break
            plan.append(("init", _Module(package, sub, "__init__")))
            remaining -= 1
            for i in range(FILES_PER_SUBPACKAGE):
                if remaining <= 0:
                    break
                plan.append(("file", _Module(package, sub, f"{sub.removesuffix('s')}_{i:03d}")))
                remaining -= 1
    # A few large files: the first module of some `models` packages.
    large = {m.dotted for kind, m in plan if kind == "file" and m.sub == "models" and m.name.endswith("_000")}
    large = set(sorted(large)[: max(1, files // 1500)])

    layer_modules: dict[str, list[_Module]] = {}
    rng_kinds = random.Random(seed + 1)
    texts: dict[str, tuple[str, str]] = {}
    # pass 1: layers/blocks (class libraries)
    for kind, module in plan:
        if kind != "file" or module.sub not in ("layers", "blocks"):
            continue
        text, names = _layers_file(rng, with_block=rng_kinds.random() < 0.5)
        module.classes = names
        layer_modules.setdefault(module.package, []).append(module)
        texts[module.dotted] = ("layers", text)
    all_layers = [m for ms in layer_modules.values() for m in ms]
    # pass 2: everything else
    form_index = 0
    for kind, module in plan:
        key = module.dotted if kind == "file" else f"{module.package}.{module.sub}.__init__"
        if kind == "init":
            texts[key] = ("init", _init_text(rng, module, plan))
            continue
        if key in texts:
            continue
        roll = rng_kinds.random()
        if module.dotted in large:
            target = rng.randint(2000, 6000)
            if len(texts) % 2 == 0 or not stats.checkpoint_files:
                picks = _pick_layers(rng, module, layer_modules, all_layers)
                text = _checkpoint_model_file(rng, "from-import", module, picks, True, target)
                stats.checkpoint_files.append(str(module.path(out).relative_to(out)))
                texts[key] = ("large-checkpoint", text)
            else:
                body, _ = _model_body(rng, target)
                texts[key] = ("large", f"{_license(rng)}\n\n{_imports(rng)}\n\n\n{body}")
            continue
        if module.sub == "tests":
            target_module = rng.choice(all_layers) if all_layers else module
            texts[key] = ("test", _test_file(rng, target_module))
        elif module.sub in ("utils", "data") and roll < 0.55:
            texts[key] = ("utility", _utility_file(rng))
        elif module.sub == "training" and roll < 0.6:
            texts[key] = ("training", _training_file(rng))
        elif module.sub in ("models", "heads", "ops") and roll < 0.09:
            form = _FORMS[form_index % len(_FORMS)]
            form_index += 1
            picks = _pick_layers(rng, module, layer_modules, all_layers)
            text = _checkpoint_model_file(rng, form, module, picks, rng.random() < 0.6, _line_target(rng) + 150)
            stats.checkpoint_files.append(str(module.path(out).relative_to(out)))
            texts[key] = ("checkpoint", text)
        elif 0.09 <= roll < 0.21:
            text, _ = _plain_model_file(rng, dead_import=True)
            texts[key] = ("dead-import", text)
        elif 0.21 <= roll < 0.25:
            texts[key] = ("training", _training_file(rng))
        else:
            text, _ = _plain_model_file(rng)
            texts[key] = ("model", text)
    for kind, module in plan:
        key = module.dotted if kind == "file" else f"{module.package}.{module.sub}.__init__"
        file_kind, text = texts[key]
        path = (out / module.package / module.sub / "__init__.py") if kind == "init" else module.path(out)
        if kind == "init" and not module.sub:
            path = out / module.package / "__init__.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        stats.add(file_kind, text)
    return stats


def _pick_layers(
    rng: random.Random, me: _Module, layer_modules: dict[str, list[_Module]], all_layers: list[_Module]
) -> list[_Module]:
    """One to three layer modules: mostly of the same package (relative imports), some of
    other packages (absolute imports)."""
    own = [m for m in layer_modules.get(me.package, []) if m.classes]
    others = [m for m in all_layers if m.classes]
    picks = rng.sample(own, min(len(own), rng.randint(1, 2))) if own else []
    if others and rng.random() < 0.5:
        picks.append(rng.choice(others))
    return picks


def _init_text(rng: random.Random, module: _Module, plan: list[tuple[str, _Module]]) -> str:
    if not module.sub:
        return f'"""The {module.package} package."""\n\n__version__ = "0.{rng.randint(1, 9)}.0"\n'
    return f'"""{module.sub.capitalize()} of {module.package}."""\n'


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    stats = generate_tree(args.out, args.files, args.seed)
    print(f"{stats.files} files, {stats.lines} lines, {stats.bytes / 1e6:.1f} MB in {args.out}")
    print("  " + ", ".join(f"{k}: {v}" for k, v in sorted(stats.kinds.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

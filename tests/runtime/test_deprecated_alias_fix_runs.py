"""CKP004's rename runs on transformers 5.24: a tiny model built from a config, the fixed
source executed against it (random weights, nothing downloaded)."""

from __future__ import annotations

import textwrap
import warnings

import pytest
import torch

from ckptlint.testing import fix, lint

transformers = pytest.importorskip("transformers")

# TrainingArguments is left out: building one needs accelerate, which the test extra lacks
SOURCE = textwrap.dedent("""\
    def enable(model):
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False}, every_n_layers=1)
    """)


def _tiny_llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
        vocab_size=64, max_position_embeddings=32, bos_token_id=0, eos_token_id=0, pad_token_id=0,
    )
    return LlamaForCausalLM(config).train()


@pytest.mark.skipif(transformers.__version__ != "5.24.0", reason="the rename is checked against transformers 5.24.0")
def test_fixed_source_enables_checkpointing_without_deprecation():
    versions = {"transformers": transformers.__version__}
    assert [d.code for d in lint(SOURCE, "CKP004", versions=versions)] == ["CKP004"]
    fixed = fix(SOURCE, "CKP004", unsafe=False, versions=versions)  # a safe fix
    assert "activation_checkpointing_enable(activation_checkpointing_kwargs=" in fixed
    assert "gradient_checkpointing" not in fixed

    namespace: dict = {}
    exec(compile(fixed, "fixed.py", "exec"), namespace)
    model = _tiny_llama()
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # the old names would warn
        namespace["enable"](model)
    assert model.is_activation_checkpointing
    loss = model(torch.randint(0, 64, (2, 8)), labels=torch.randint(0, 64, (2, 8))).loss
    loss.backward()
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)

    # the source before the fix warns: the rename is what removed the FutureWarning
    exec(compile(SOURCE, "source.py", "exec"), namespace)
    with pytest.warns(FutureWarning, match="gradient_checkpointing_enable` is deprecated"):
        namespace["enable"](_tiny_llama())

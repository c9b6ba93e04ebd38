"""The on/off check on real models from transformers and diffusers, built from tiny configs.

Random weights only, nothing downloaded. transformers and diffusers are in the ``test`` extra;
each test skips when its library is not installed.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
import torch

from ckptlint.runtime import (
    CheckpointMismatch,
    assert_checkpointing_equivalent,
    compare_checkpointing_memory,
)

transformers = pytest.importorskip("transformers")
from transformers.utils import logging as hf_logging  # noqa: E402

pytestmark = pytest.mark.slow  # real models from transformers and diffusers

hf_logging.set_verbosity_error()  # "use_cache=True is incompatible ..." notices


@pytest.fixture(autouse=True)
def _quiet_transformers_deprecations():
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*gradient_checkpointing_enable.*deprecated", category=FutureWarning)
        yield


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(
        n_layer=2, n_embd=32, n_head=2, vocab_size=64, n_positions=32, bos_token_id=0, eos_token_id=0
    )  # dropouts at their default 0.1
    return GPT2LMHeadModel(config).train()


def llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
        vocab_size=64, max_position_embeddings=32, bos_token_id=0, eos_token_id=0, pad_token_id=0,
        attention_dropout=0.1,
    )
    return LlamaForCausalLM(config).train()


def ids():
    return torch.randint(0, 64, (2, 8), generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("make", [gpt2, llama], ids=["gpt2", "llama"])
def test_causal_lm_with_gradient_checkpointing_enable_passes(make):
    model = make()
    report = assert_checkpointing_equivalent(model, ids(), enable=lambda m: m.gradient_checkpointing_enable())
    (result,) = report.results
    assert len(result.recomputations) == 2 and set(result.recomputations.values()) == {1}
    assert result.variant == {"use_reentrant": False}  # transformers' default kwargs
    assert not any(n.startswith("no random op") for n in report.notes)  # dropout drew
    assert any("use_cache=False" in n for n in report.notes)


def test_causal_lm_auto_switch_and_labels_passed_as_keyword():
    model = gpt2()
    report = assert_checkpointing_equivalent(model, ids(), labels=ids(), loss_fn=lambda out: out.loss)
    label = report.results[0].label
    assert label.startswith(("model.activation_checkpointing_enable()", "model.gradient_checkpointing_enable()"))
    assert set(report.results[0].recomputations) == {"transformer.h.0", "transformer.h.1"}


def test_causal_lm_without_preserve_rng_state_fails_with_ckp101():
    model = gpt2()
    kwargs = {"use_reentrant": False, "preserve_rng_state": False}
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(
            model, ids(), enable=lambda m: m.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
        )
    exc = info.value
    assert "CKP101" in exc.rule_codes
    assert exc.results[0].variant == kwargs
    assert any(d.kind == "param_grad" for d in exc.differences)


def test_causal_lm_train_mode_cache_output_is_not_a_false_failure():
    """A causal LM's DynamicCache output is not compared by identity (that fails every causal LM)."""
    from ckptlint.runtime import assert_checkpoint_equivalent

    model = gpt2()
    report = assert_checkpoint_equivalent(model, ids(), variants=[{"use_reentrant": False}])
    assert report.ok


def test_compare_memory_on_gpt2():
    report = compare_checkpointing_memory(gpt2(), ids(), iters=2)
    print(report)
    assert report.memory_ratio < 0.5


def unet():
    diffusers = pytest.importorskip("diffusers")
    torch.manual_seed(0)
    return diffusers.UNet2DModel(
        sample_size=8, in_channels=3, out_channels=3, layers_per_block=1, block_out_channels=(8, 16),
        down_block_types=("DownBlock2D", "AttnDownBlock2D"), up_block_types=("AttnUpBlock2D", "UpBlock2D"),
        norm_num_groups=4, attention_head_dim=4,
    ).train()


def test_diffusers_unet_with_enable_gradient_checkpointing_passes():
    model = unet()
    x = torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    # oneDNN convolutions took ~2 s per tiny UNet step on the 2-core machine, the native kernels
    # ~0.05 s; both steps use the same backend either way (most of this test is importing diffusers)
    mkldnn = torch.backends.mkldnn.enabled
    torch.backends.mkldnn.enabled = False
    try:
        report = assert_checkpointing_equivalent(model, x, torch.tensor([1, 10]))
    finally:
        torch.backends.mkldnn.enabled = mkldnn
    (result,) = report.results
    assert result.label == "model.enable_gradient_checkpointing()"
    # diffusers checkpoints each resnet (and attention) block by calling it through checkpoint
    assert "down_blocks.0.resnets.0" in result.recomputations
    assert set(result.recomputations.values()) == {1}


def test_every_n_layers_recomputes_only_those_layers():
    model = gpt2()
    if not hasattr(model, "activation_checkpointing_enable"):
        pytest.skip("every_n_layers needs transformers' activation_checkpointing_enable (5.x)")
    report = assert_checkpointing_equivalent(model, ids(), enable=lambda m: m.activation_checkpointing_enable(every_n_layers=2))
    assert report.results[0].recomputations == {"transformer.h.0": 1}

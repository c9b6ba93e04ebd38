"""State outside the top-level forward, isolated and compared, on tiny real models (random weights from configs, nothing downloaded).

Every correct model passes, every planted bug fails with the right rule code, and after each
check the process state (the watched globals of this module, torch/Python/NumPy RNG) is what it
was before (the autouse fixture compares). transformers and diffusers are in the test extra;
timm imports through a test-only torchvision stand-in (timm_import.py) and skips where timm is not installed.
"""

from __future__ import annotations

import functools
import random
import warnings

import pytest

pytest.importorskip("torch")
pytest.importorskip("numpy")
import numpy as np
import torch
from process_check import keeps_process_state  # tests/runtime/process_check.py
from timm_import import import_timm  # tests/runtime/timm_import.py
from torch.utils.checkpoint import checkpoint

from ckptlint import runtime
from ckptlint.runtime import CheckpointMismatch

pytestmark = pytest.mark.slow

transformers = pytest.importorskip("transformers")
from transformers.utils import logging as hf_logging  # noqa: E402

hf_logging.set_verbosity_error()

LOG: list = []
HITS = {"n": 0}
CHANGED: list[str] = []


def watched_globals() -> dict:
    return {"LOG": LOG, "HITS": HITS}


assert_checkpointing_equivalent = keeps_process_state(runtime.assert_checkpointing_equivalent, watched_globals, CHANGED)
check_checkpointing_equivalent = keeps_process_state(runtime.check_checkpointing_equivalent, watched_globals, CHANGED)


@pytest.fixture(autouse=True)
def process_state_is_kept():
    """Every check in the test left globals and every RNG as it found them."""
    CHANGED.clear()
    random.seed(1234)
    np.random.seed(1234)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*gradient_checkpointing_enable.*deprecated", category=FutureWarning)
        yield
    assert CHANGED == []


def ids():
    return torch.randint(0, 64, (2, 8), generator=torch.Generator().manual_seed(0))


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=64, n_positions=32, bos_token_id=0, eos_token_id=0)
    return GPT2LMHeadModel(config).train()


def t5():
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    config = T5Config(
        vocab_size=64, d_model=32, d_kv=16, d_ff=64, num_layers=2, num_heads=2, decoder_start_token_id=0,
        pad_token_id=0, eos_token_id=1,
    )
    return T5ForConditionalGeneration(config).train()


def vit():
    from transformers import ViTConfig, ViTModel

    torch.manual_seed(0)
    config = ViTConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, image_size=16,
        patch_size=8, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
    )
    return ViTModel(config, add_pooling_layer=False).train()


def pixels(channels=3, size=16):
    return torch.randn(2, channels, size, size, generator=torch.Generator().manual_seed(0))


def log_hook(module, args):
    LOG.append(tuple(args[0].shape))


def test_gpt2_with_logging_pre_hooks_on_its_mlps_fails_with_ckp202():
    model = gpt2()
    for block in model.transformer.h:
        block.mlp.register_forward_pre_hook(log_hook)
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(model, ids())
    exc = info.value
    (diff,) = [d for d in exc.differences if d.name == "global LOG"]
    assert "CKP202" in exc.rule_codes and "CKP201" not in exc.rule_codes
    assert diff.kind == "python_state"
    assert exc.results[0].recomputations == {"transformer.h.0": 1, "transformer.h.1": 1}


def test_gpt2_closure_hook_log_has_two_entries_per_step_without_checkpointing():
    log: list = []
    model = gpt2()
    for block in model.transformer.h:
        block.mlp.register_forward_pre_hook(lambda m, a: log.append(len(log)))
    report = check_checkpointing_equivalent(model, ids())
    (diff,) = [d for d in report.results[0].differences if d.name == "nonlocal log"]
    assert "[0, 1] after the reference step, [0, 1, 2, 3] after the checkpointed step" in diff.detail
    assert log == []


def test_gpt2_with_use_cache_true_passes_and_names_the_cache():
    report = assert_checkpointing_equivalent(gpt2(), ids(), use_cache=True)
    (note,) = [n for n in report.notes if n.startswith("left out of the default loss")]
    # transformers 5.24 returns the cache as `cache` (`past_key_values` is a deprecated alias)
    assert "output['cache'] (the reference run)" in note


def test_ignore_outputs_takes_the_bare_output_name():
    report = assert_checkpointing_equivalent(gpt2(), ids(), forward_kwargs={"use_cache": True}, ignore_outputs=["past_key_values"])
    assert not any(n.startswith("left out") for n in report.notes)


def test_t5_regions_are_its_blocks():
    report = assert_checkpointing_equivalent(t5(), ids(), decoder_input_ids=ids())
    assert report.results[0].recomputations == {
        "decoder.block.0": 1, "decoder.block.1": 1, "encoder.block.0": 1, "encoder.block.1": 1,
    }


def test_vit_dropout_called_twice_counts_once():
    report = assert_checkpointing_equivalent(vit(), pixels())
    assert list(report.results[0].recomputations.values()) == [1, 1]  # one recompute a block, not one a dropout call
    assert report.results[0].calls == 2


def test_transformers_eval_mode_note():
    with pytest.warns(UserWarning):
        report = check_checkpointing_equivalent(gpt2().eval(), ids())
    assert any("transformers checkpoints only in training" in n for n in report.notes)
    assert report.results[0].recomputations == {}


def test_gpt2_without_preserve_rng_state_is_ckp101():
    kwargs = {"use_reentrant": False, "preserve_rng_state": False}
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(
            gpt2(), ids(), enable=lambda m: m.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
        )
    assert "CKP101" in info.value.rule_codes and "CKP104" not in info.value.rule_codes


# --- diffusers -----------------------------------------------------------------------------------


def unet(dropout=0.0):
    diffusers = pytest.importorskip("diffusers")
    torch.manual_seed(0)
    return diffusers.UNet2DModel(
        sample_size=8, in_channels=3, out_channels=3, layers_per_block=1, block_out_channels=(8, 16),
        down_block_types=("DownBlock2D", "AttnDownBlock2D"), up_block_types=("AttnUpBlock2D", "UpBlock2D"),
        norm_num_groups=4, attention_head_dim=4, dropout=dropout,
    )


@pytest.fixture
def native_convolutions():
    # oneDNN convolutions took ~2 s per tiny UNet step on the 2-core machine, the native ~0.05 s
    mkldnn = torch.backends.mkldnn.enabled
    torch.backends.mkldnn.enabled = False
    yield
    torch.backends.mkldnn.enabled = mkldnn


def count_hook(module, args):
    HITS["n"] += 1


def test_diffusers_unet_with_dropout_passes(native_convolutions):
    report = assert_checkpointing_equivalent(unet(dropout=0.1).train(), pixels(size=8), torch.tensor([1, 10]))
    assert "down_blocks.0.resnets.0" in report.results[0].recomputations


def test_diffusers_counting_forward_hook_fails_with_ckp202(native_convolutions):
    model = unet().train()
    # a pre-hook: non-reentrant checkpoint stops the recomputation early, before forward hooks
    model.down_blocks[0].resnets[0].register_forward_pre_hook(count_hook)
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(model, pixels(size=8), torch.tensor([1, 10]))
    assert "CKP202" in info.value.rule_codes
    assert "global HITS" in {d.name for d in info.value.differences}


def test_diffusers_without_preserve_rng_state_is_ckp101(native_convolutions):
    fn = functools.partial(checkpoint, use_reentrant=False, preserve_rng_state=False)
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(
            unet(dropout=0.5).train(), pixels(size=8), torch.tensor([1, 10]),
            enable=lambda m: m.enable_gradient_checkpointing(gradient_checkpointing_func=fn),
        )
    assert "CKP101" in info.value.rule_codes


def test_diffusers_eval_mode_still_recomputes(native_convolutions):
    with pytest.warns(UserWarning):
        report = check_checkpointing_equivalent(unet().eval(), pixels(size=8), torch.tensor([1, 10]))
    assert report.ok
    assert any("diffusers checkpoints in eval mode too" in n for n in report.notes)
    assert report.results[0].recomputations  # diffusers checks only torch.is_grad_enabled()


# --- timm ----------------------------------------------------------------------------------------


def timm_or_skip():
    return import_timm()


def test_timm_vit_passes_and_resnet_batchnorm_fails_with_ckp203():
    timm = timm_or_skip()
    torch.manual_seed(0)
    vit_model = timm.create_model(
        "vit_tiny_patch16_224", pretrained=False, img_size=16, patch_size=8, embed_dim=32, depth=2, num_heads=2,
        num_classes=4, drop_rate=0.1, proj_drop_rate=0.1,
    ).train()
    report = assert_checkpointing_equivalent(vit_model, pixels())
    assert report.results[0].label == "model.set_grad_checkpointing(True)"
    resnet = timm.create_model("resnet10t", pretrained=False, num_classes=4).train()
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(resnet, pixels(size=32))
    assert "CKP203" in info.value.rule_codes

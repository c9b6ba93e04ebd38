"""The planner on real models from transformers and diffusers, built from tiny configs (slow)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from ckptlint.runtime import plan_checkpointing  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _quiet_one_thread():
    import warnings

    from transformers.utils import logging

    logging.set_verbosity_error()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
    torch.set_num_threads(threads)


def test_gpt2_plan_verifies_and_writes_the_library_switch():
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=4, n_embd=32, n_head=2, vocab_size=64, n_positions=64, bos_token_id=0, eos_token_id=0)
    model = transformers.GPT2LMHeadModel(cfg).train()
    ids = torch.randint(0, 64, (2, 32), generator=torch.Generator().manual_seed(0))
    plan = plan_checkpointing(model, ids, budget="60%", forward_kwargs={"labels": ids}, loss_fn=lambda o: o.loss)
    assert [r.name for r in plan.rows] == [f"transformer.h.{i}" for i in range(4)]
    assert plan.library == "transformers" and all(r.safe for r in plan.rows)  # CPU dropout: replayed
    assert any("use_cache=False" in n for n in plan.notes)
    check = plan.verify(iters=1)
    assert check.equivalent is True and check.within_budget, str(check)
    code = plan.to_code()
    target = transformers.GPT2LMHeadModel(cfg).train()
    exec(code, {"model": target})
    flagged = [f"transformer.h.{i}" for i, layer in enumerate(target.transformer.h) if layer.gradient_checkpointing]
    assert flagged == plan.chosen


def test_diffusers_unet_blocks_are_the_candidates():
    diffusers = pytest.importorskip("diffusers")
    torch.manual_seed(0)
    model = diffusers.UNet2DModel(
        sample_size=16, in_channels=3, out_channels=3, layers_per_block=1, block_out_channels=(16, 32),
        down_block_types=("DownBlock2D", "AttnDownBlock2D"), up_block_types=("AttnUpBlock2D", "UpBlock2D"), norm_num_groups=8,
    ).train()
    sample = torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    plan = plan_checkpointing(model, sample, torch.tensor([10]), budget="70%", loss_fn=lambda o: o.sample.pow(2).mean())
    assert {r.name for r in plan.rows} == {"down_blocks.0", "down_blocks.1", "up_blocks.0", "up_blocks.1", "mid_block"}
    assert plan.library == "diffusers" and "check_fn" in plan.to_code()
    check = plan.verify(iters=1)
    assert check.equivalent is True and check.within_budget, str(check)

"""The on/off check on CUDA (marked ``gpu``: skipped without CUDA).

What the CPU suite cannot show: the device RNG (dropout on CUDA draws from ``torch.cuda``'s
generator, which checkpoint stashes only for the device of a positional tensor argument) and
peak memory from the caching allocator (``torch.cuda.max_memory_allocated``).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (  # noqa: E402
    apply_activation_checkpointing,
    checkpoint_wrapper,
)

from ckptlint.runtime import (  # noqa: E402
    CheckpointMismatch,
    assert_checkpointing_equivalent,
    compare_checkpointing_memory,
)

pytestmark = pytest.mark.gpu


class Block(nn.Module):
    def __init__(self, d: int = 64, p: float = 0.5):
        super().__init__()
        self.lin1, self.lin2, self.drop = nn.Linear(d, 4 * d), nn.Linear(4 * d, d), nn.Dropout(p)

    def forward(self, x):
        return x + self.drop(self.lin2(torch.nn.functional.gelu(self.lin1(x))))


def is_block(m):
    return isinstance(m, Block)


def stack(n: int = 4, d: int = 64) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(*[Block(d) for _ in range(n)]).cuda().train()


def test_cuda_dropout_on_off_passes_with_device_rng_restored():
    x = torch.randn(8, 64, device="cuda", requires_grad=True)
    report = assert_checkpointing_equivalent(stack(), x, enable=lambda m: apply_activation_checkpointing(m, check_fn=is_block))
    assert report.results[0].recomputations == {str(i): 1 for i in range(4)}
    assert not any(n.startswith("no random op") for n in report.notes)  # the CUDA generator drew


def test_cuda_dropout_without_preserve_rng_state_fails_with_ckp101():
    x = torch.randn(8, 64, device="cuda", requires_grad=True)
    wrap = lambda m: checkpoint_wrapper(m, preserve_rng_state=False)  # noqa: E731
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(
            stack(), x, enable=lambda m: apply_activation_checkpointing(m, checkpoint_wrapper_fn=wrap, check_fn=is_block)
        )
    exc = info.value
    print(exc)
    assert "CKP101" in exc.rule_codes
    assert ("rng", "torch cuda:0 RNG") in {(d.kind, d.name) for d in exc.differences}


def test_cuda_peak_memory_on_off():
    d = 1024
    x = torch.randn(256, d, device="cuda", requires_grad=True)
    report = compare_checkpointing_memory(
        stack(n=4, d=d), x, enable=lambda m: apply_activation_checkpointing(m, check_fn=is_block),
        device="cuda", warmup=2, iters=5,
    )
    print(report)
    assert report.plain.peak_step_bytes and report.checkpointed.peak_step_bytes
    assert report.peak_memory_ratio < 1  # torch.cuda.max_memory_allocated
    assert report.memory_ratio < 0.5
    assert report.op_peak_ratio is not None


def test_cuda_transformers_gpt2_on_off():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=128, n_positions=64, bos_token_id=0, eos_token_id=0)
    model = transformers.GPT2LMHeadModel(config).cuda().train()
    ids = torch.randint(0, 128, (2, 16), device="cuda")
    report = assert_checkpointing_equivalent(model, ids)
    assert set(report.results[0].recomputations) == {"transformer.h.0", "transformer.h.1"}


class Recompute(torch.autograd.Function):
    """A home-made recompute without RNG restore (CKP104 when dropout draws from the CUDA RNG)."""

    @staticmethod
    def forward(ctx, fn, x):
        ctx.fn = fn
        ctx.save_for_backward(x)
        with torch.no_grad():
            return fn(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        x = x.detach().requires_grad_(True)
        with torch.enable_grad():
            out = ctx.fn(x)
        torch.autograd.backward(out, grad)
        return None, x.grad


class HomeMade(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.on = False

    def forward(self, x):
        return Recompute.apply(self.block, x) if self.on else self.block(x)


def test_cuda_rng_is_restored_after_the_check_and_home_made_recompute_is_ckp104():
    torch.manual_seed(0)
    model = HomeMade().cuda().train()
    x = torch.randn(8, 64, device="cuda", requires_grad=True)
    before = torch.cuda.get_rng_state()
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(model, x, enable=lambda m: setattr(m, "on", True))
    assert torch.equal(torch.cuda.get_rng_state(), before)
    assert "CKP104" in info.value.rule_codes

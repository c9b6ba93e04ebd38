"""The checkpoint planner on CUDA (marked ``gpu``: skipped without CUDA).

On CUDA the plan's peak is measured with ``torch.cuda.max_memory_allocated`` (above the memory
allocated before the step), independently of the saved-tensor accounting the prediction uses.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from ckptlint.runtime import plan_checkpointing  # noqa: E402

pytestmark = pytest.mark.gpu


class Block(nn.Module):
    def __init__(self, d: int = 256, p: float = 0.1):
        super().__init__()
        self.norm, self.up, self.down, self.drop = nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.Linear(4 * d, d), nn.Dropout(p)

    def forward(self, x):
        return x + self.drop(self.down(torch.nn.functional.gelu(self.up(self.norm(x)))))


class Net(nn.Module):
    def __init__(self, n: int = 8, d: int = 256):
        super().__init__()
        self.layers = nn.ModuleList(Block(d) for _ in range(n))
        self.head = nn.Linear(d, 16)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


@pytest.mark.parametrize("share", [0.3, 0.5, 0.7])
def test_plan_on_cuda_fits_the_budget_by_max_memory_allocated(share):
    torch.manual_seed(0)
    model = Net().cuda().train()
    x = torch.randn(64, 128, 256, device="cuda")
    plan = plan_checkpointing(model, x, budget=f"{share:.0%}")
    assert "max_memory_allocated" in plan.measurement.peak_method
    assert plan.predicted_peak_bytes <= plan.budget_bytes
    check = plan.verify(iters=2)
    assert "max_memory_allocated" in check.peak_method
    assert check.equivalent is True  # dropout on CUDA: the device RNG of the positional input is replayed
    assert check.measured_peak_bytes <= plan.budget_bytes * 1.05, str(check)
    keys = list(model.state_dict())
    plan.apply(model)
    assert list(model.state_dict()) == keys
    plan.remove(model)
    assert all(type(m) is Block for m in model.layers)


def test_a_transformers_model_on_cuda():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=6, n_embd=256, n_head=4, vocab_size=512, n_positions=512, bos_token_id=0, eos_token_id=0)
    model = transformers.GPT2LMHeadModel(cfg).cuda().train()
    ids = torch.randint(0, 512, (8, 256), device="cuda")
    plan = plan_checkpointing(model, ids, budget="50%", forward_kwargs={"labels": ids}, loss_fn=lambda o: o.loss)
    check = plan.verify(iters=2)
    assert check.ok, str(check)
    assert "every_n_layers" in plan.to_code() or "gradient_checkpointing = False" in plan.to_code()

"""What the planner's one counted step measures: the step's peak, random draws, timing groups."""

from __future__ import annotations

import random
import statistics

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from ckptlint.runtime import default_loss, measure, plan_checkpointing  # noqa: E402

GLOBAL_GENERATOR = torch.Generator().manual_seed(0)


class Mlp(nn.Module):
    def __init__(self, d: int = 32, hidden: int = 128):
        super().__init__()
        self.a, self.b = nn.Linear(d, hidden), nn.Linear(hidden, d)

    def forward(self, x):
        return x + self.b(torch.relu(self.a(x)))


class GlobalNoise(Mlp):
    """Draws from a generator its module's globals hold: checkpoint does not replay it (CKP103)."""

    def forward(self, x):
        return super().forward(x) + 0.01 * torch.randn(x.shape, generator=GLOBAL_GENERATOR)


class PythonNoise(Mlp):
    """Draws from Python's random module: never replayed (CKP103)."""

    def forward(self, x):
        return super().forward(x) * (1.0 + 0.01 * random.random())


class Net(nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.layers = nn.ModuleList(blocks)
        self.out = nn.Linear(32, 4)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.out(x)


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def sample() -> torch.Tensor:
    return torch.randn(64, 32, generator=torch.Generator().manual_seed(1))


def test_the_step_peak_is_the_op_level_peak_of_the_same_step():
    torch.manual_seed(0)
    model, x = Net([Mlp() for _ in range(3)]).train(), sample()
    plan = plan_checkpointing(model, x, budget="100%")
    for p in model.parameters():
        p.grad = torch.zeros_like(p)

    def step():  # the planner's step: gradients allocated beforehand, the output alive during backward
        model.zero_grad(set_to_none=False)
        out = model(x)
        default_loss(out).backward()

    op_level = measure(step, device="cpu", warmup=0, iters=1).op_peak_bytes
    assert plan.measurement.step_peak_bytes == op_level
    # three blocks of 64x32 + 64x128 floats saved, the head's input and output, its gradients
    assert op_level >= 3 * (64 * 32 + 64 * 128) * 4


def test_draws_from_python_random_and_a_global_generator_are_never_chosen():
    torch.manual_seed(0)
    model = Net([Mlp(), GlobalNoise(), PythonNoise(), Mlp()]).train()
    python_state, generator_state = random.getstate(), GLOBAL_GENERATOR.get_state()
    plan = plan_checkpointing(model, sample(), budget="100%")
    plan = plan.with_budget(plan.smallest_peak_bytes)
    rows = {r.name: r for r in plan.rows}
    assert rows["layers.1"].kind_of_reason == "random ops" and "explicit torch.Generator" in rows["layers.1"].reason
    assert "GLOBAL_GENERATOR" in rows["layers.1"].reason and "CKP103" in rows["layers.1"].reason
    assert rows["layers.2"].kind_of_reason == "random ops" and "Python's random module" in rows["layers.2"].reason
    assert rows["layers.0"].safe and rows["layers.3"].safe
    assert plan.chosen == ["layers.0", "layers.3"]
    assert random.getstate() == python_state  # put back after measuring
    assert torch.equal(GLOBAL_GENERATOR.get_state(), generator_state)


def test_blocks_of_one_structure_pool_their_times_and_small_groups_run_again():
    torch.manual_seed(0)
    model = Net([Mlp(), Mlp(), Mlp(hidden=64)]).train()
    plan = plan_checkpointing(model, sample(), budget="100%")
    m = plan.measurement
    assert m.reruns == 1 + 2  # the pair needs one more sample, the lone block two
    pair, lone = m.blocks[:2], m.blocks[2]
    assert pair[0].forward_runs_s == pair[1].forward_runs_s and len(pair[0].forward_runs_s) == 3
    assert len(lone.forward_runs_s) == 3 and lone.forward_runs_s != pair[0].forward_runs_s
    assert all(b.forward_s == statistics.median(b.forward_runs_s) > 0 for b in m.blocks)
    assert m.rerun_s > 0 and m.hook_overhead_s > 0 and m.measure_s >= m.counted_step_s + m.rerun_s


def test_a_block_that_works_in_place_on_its_input_is_measured() -> None:
    # timm's resnet10t: a stem child whose first op is nn.ReLU(inplace=True); the lone timing
    # rerun of a block gets non-leaf copies of its captured inputs
    import torch
    from torch import nn

    from ckptlint.runtime import plan_checkpointing

    class Stem(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.act = nn.ReLU(inplace=True)

        def forward(self, x):
            return self.act(x)

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 64), Stem(), nn.Linear(64, 64), nn.ReLU(inplace=True), nn.Linear(64, 1))
    plan = plan_checkpointing(model, torch.randn(32, 64), budget="200%")
    assert plan.chosen == []


def test_a_module_held_in_several_places_is_no_candidate() -> None:
    # nn.ModuleList([b, b, b, big]): wrapping the one slot named_modules() names would leave
    # the other two uses' activations, and the plan over budget
    from torch import nn

    from ckptlint.runtime.plan.candidates import resolve_candidates

    shared = nn.Linear(8, 8)

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleList([shared, shared, shared, nn.Linear(8, 8)])

    assert resolve_candidates(Net(), None) == ["layers.3"]

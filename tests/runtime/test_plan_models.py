"""The planner on small models written here: plans, exclusions, apply/remove, code, CLI, fixture."""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from ckptlint.runtime import plan_checkpointing  # noqa: E402
from ckptlint.runtime.plan import BudgetTooSmall, NoSafeBlocks  # noqa: E402
from ckptlint.runtime.plan.__main__ import main  # noqa: E402


class Block(nn.Module):
    def __init__(self, d: int = 32, norm: str = "ln", p: float = 0.1):
        super().__init__()
        self.norm = nn.BatchNorm1d(d) if norm == "bn" else nn.LayerNorm(d)
        self.up, self.down, self.drop = nn.Linear(d, 4 * d), nn.Linear(4 * d, d), nn.Dropout(p)

    def forward(self, x):
        return x + self.drop(self.down(torch.nn.functional.gelu(self.up(self.norm(x)))))


class NoisyBlock(Block):
    """Draws from its own generator: checkpoint does not replay it (CKP103)."""

    def __init__(self, d: int = 32):
        super().__init__(d)
        self.gen = torch.Generator().manual_seed(0)

    def forward(self, x):
        return super().forward(x) + 0.01 * torch.randn(x.shape, generator=self.gen)


class CountingBlock(Block):
    def __init__(self, d: int = 32):
        super().__init__(d)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return super().forward(x)


class Net(nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.inp = nn.Linear(32, 32)
        self.layers = nn.ModuleList(blocks)
        self.out = nn.Linear(32, 4)

    def forward(self, x):
        x = self.inp(x)
        for layer in self.layers:
            x = layer(x)
        return self.out(x)


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny models: torch's second thread only waits on a shared machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def make_net(n: int = 6, **kw) -> Net:
    torch.manual_seed(0)
    return Net([Block(**kw) for _ in range(n)]).train()


def sample() -> torch.Tensor:
    return torch.randn(64, 32, generator=torch.Generator().manual_seed(1))


def test_a_plan_fits_and_applies_and_removes_cleanly():
    model, x = make_net(), sample()
    plan = plan_checkpointing(model, x, budget="50%")
    assert [r.name for r in plan.rows] == [f"layers.{i}" for i in range(6)]
    assert 0 < len(plan.chosen) < 6
    assert plan.predicted_peak_bytes <= plan.budget_bytes
    assert plan.budget_bytes == int(0.5 * plan.no_checkpoint_peak_bytes)
    assert all(r.saved_bytes > r.input_bytes > 0 for r in plan.rows)
    assert plan.predicted_recompute_s <= plan.all_safe.time_s
    if plan.every_k is not None:
        assert plan.predicted_recompute_s <= plan.every_k[1].time_s + plan.gap_bound_s
    exact = plan.brute_force()
    assert exact is not None and plan.predicted_recompute_s <= exact.time_s * 1.05 + 1e-12
    keys, blocks = list(model.state_dict()), list(model.layers)
    plan.apply(model)
    assert list(model.state_dict()) == keys
    assert sum(type(m).__name__ == "CheckpointWrapper" for m in model.layers) == len(plan.chosen)
    plan.remove(model)
    assert list(model.layers) == blocks and list(model.state_dict()) == keys
    assert [n for n, _ in model.named_modules()] == [n for n, _ in make_net().named_modules()]


def test_the_plan_verifies_equivalent_and_within_budget():
    model, x = make_net(4), sample()
    plan = plan_checkpointing(model, x, budget="60%")
    check = plan.verify(iters=1)
    assert check.equivalent is True
    assert check.within_budget, str(check)
    assert check.measured_peak_bytes < check.plain_peak_bytes
    assert plan.verification is check


def test_another_budget_reuses_the_measurement():
    model, x = make_net(), sample()
    loose = plan_checkpointing(model, x, budget="200%")
    assert loose.chosen == []
    tight = loose.with_budget("40%")
    assert tight.measurement is loose.measurement and len(tight.chosen) > 0
    assert tight.predicted_peak_bytes <= tight.budget_bytes


def test_a_budget_too_small_names_the_smallest_reachable():
    model, x = make_net(), sample()
    with pytest.raises(BudgetTooSmall, match=r"smallest predicted activation peak any plan reaches") as caught:
        plan_checkpointing(model, x, budget=1000)
    err = caught.value
    assert err.smallest_bytes > 1000 and str(err.smallest_bytes) in str(err)
    assert err.plan.predicted_peak_bytes == err.smallest_bytes


def test_unsafe_blocks_are_never_chosen_and_say_why():
    torch.manual_seed(0)
    model = Net([Block(), Block(norm="bn"), NoisyBlock(), CountingBlock(), Block(), Block()]).train()
    plan = plan_checkpointing(model, sample(), budget="85%")
    rows = {r.name: r for r in plan.rows}
    assert rows["layers.1"].kind_of_reason == "running statistics" and "CKP203" in rows["layers.1"].reason
    assert rows["layers.2"].kind_of_reason == "random ops" and "CKP103" in rows["layers.2"].reason
    assert rows["layers.3"].kind_of_reason == "state writes" and "calls" in rows["layers.3"].reason
    assert not any(rows[n].chosen for n in ("layers.1", "layers.2", "layers.3"))
    assert all(rows[n].safe for n in ("layers.0", "layers.4", "layers.5"))
    assert "UNSAFE" in plan.table()


def test_frozen_batchnorm_is_safe():
    model = make_net(4, norm="bn")
    for m in model.modules():
        if isinstance(m, nn.BatchNorm1d):
            m.eval()
    plan = plan_checkpointing(model, sample(), budget="60%")
    assert all(r.safe for r in plan.rows) and plan.chosen


def test_every_block_unsafe_says_what_would_make_them_safe():
    model, x = make_net(4, norm="bn"), sample()
    with pytest.raises(NoSafeBlocks, match="freeze the norms") as caught:
        plan_checkpointing(model, x, budget="50%")
    assert set(caught.value.remedies) == {"running statistics"}
    assert plan_checkpointing(model, x, budget="100%").chosen == []  # fits without checkpointing


def test_measuring_leaves_buffers_grads_and_rng_as_they_were():
    model, x = make_net(3, norm="bn"), sample()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    rng = torch.get_rng_state()
    plan_checkpointing(model, x, budget="100%")
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert all(p.grad is None for p in model.parameters())
    assert torch.equal(torch.get_rng_state(), rng)


def test_candidates_by_class_name_and_predicate():
    model, x = make_net(3), sample()
    by_class = plan_checkpointing(model, x, budget="100%", candidates=Block)
    by_name = plan_checkpointing(model, x, budget="100%", candidates=["layers.0", "layers.2"])
    by_pred = plan_checkpointing(model, x, budget="100%", candidates=lambda n, m: n == "out")
    assert [r.name for r in by_class.rows] == ["layers.0", "layers.1", "layers.2"]
    assert [r.name for r in by_name.rows] == ["layers.0", "layers.2"]
    assert [r.name for r in by_pred.rows] == ["out"]
    with pytest.raises(ValueError, match="not submodules"):
        plan_checkpointing(model, x, budget="1GiB", candidates=["nope"])


def test_the_code_applies_the_same_blocks():
    model, x = make_net(), sample()
    plan = plan_checkpointing(model, x, budget="45%")
    code = plan.to_code()
    assert "apply_activation_checkpointing" in code and "check_fn" in code
    target = make_net()
    exec(code, {"model": target})
    wrapped = [f"layers.{i}" for i, m in enumerate(target.layers) if type(m).__name__ == "CheckpointWrapper"]
    assert wrapped == plan.chosen
    with pytest.raises(ValueError, match="check_fn"):
        plan.to_code("switch")


def test_the_chart_is_svg_naming_every_block():
    plan = plan_checkpointing(make_net(3), sample(), budget="60%")
    root = ET.fromstring(plan.chart_svg())
    texts = "".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
    assert all(r.name in texts for r in plan.rows)


FACTORY = """
import torch
from torch import nn

def make():
    torch.manual_seed(0)
    blocks = nn.ModuleList([nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 16)) for _ in range(4)])
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = blocks
        def forward(self, x):
            for b in self.blocks:
                x = x + b(x)
            return x
    return M().train(), torch.randn(32, 16)
"""


@pytest.mark.slow
def test_the_command_line_prints_a_plan_and_its_code(tmp_path, monkeypatch, capsys):
    (tmp_path / "planfactory.py").write_text(textwrap.dedent(FACTORY))
    monkeypatch.chdir(tmp_path)
    assert main(["planfactory:make", "--budget", "60%", "--chart", "c.svg", "--verify"]) == 0
    out = capsys.readouterr().out
    assert "checkpoint plan:" in out and "blocks.0" in out and "check_fn" in out and "equivalence passed" in out
    assert (tmp_path / "c.svg").read_text().startswith("<svg")
    assert main(["planfactory:make", "--budget", "60%", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [b["name"] for b in data["blocks"]] == [f"blocks.{i}" for i in range(4)]
    assert data["predicted_peak_bytes"] <= data["budget_bytes"] and data["chosen"]
    assert main(["planfactory:make", "--budget", "10"]) == 2
    assert "smallest predicted activation peak" in capsys.readouterr().err
    assert main(["planfactory:nothing", "--budget", "1GiB"]) == 3


def test_the_fixture_plans_and_verifies(ckpt_plan):
    plan = ckpt_plan(make_net(4), sample(), budget="60%", to_device=False)
    assert plan.verification is not None and plan.verification.ok


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(32, 128), nn.Linear(128, 32)

    def forward(self, x):
        return x + self.b(torch.relu(self.a(x)))


def test_saved_and_input_bytes_are_the_storages_autograd_keeps():
    torch.manual_seed(0)
    model = Net([Mlp() for _ in range(3)]).train()
    plan = plan_checkpointing(model, sample(), budget="100%")
    for row in plan.rows:
        # a(x) saves x (64 x 32 floats); relu's output (64 x 128) is saved by relu and by b, once
        assert row.saved_bytes == 64 * 32 * 4 + 64 * 128 * 4
        assert row.input_bytes == 64 * 32 * 4
    m = plan.measurement
    assert m.rest_bytes == m.step_peak_bytes - sum(r.saved_bytes for r in plan.rows)
    assert m.counted_step_s > 0 and m.reruns == 0 and m.rerun_s < m.counted_step_s  # three identical blocks: three samples
    assert all(b.forward_runs_s == m.blocks[0].forward_runs_s and len(b.forward_runs_s) == 3 for b in m.blocks)

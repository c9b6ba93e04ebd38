"""The right verdict and the right cause, one plain CPU model per shape: regions without
submodules, float rounding, closures stored on modules, attributes the recomputation reads,
inputs and parameters written in place, autocast dtypes, global objects, NaN, None outputs."""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("torch")
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from ckptlint.runtime import (
    CheckpointingWarning,
    CheckpointMismatch,
    assert_checkpoint_equivalent,
    assert_checkpointing_equivalent,
    check_checkpointing_equivalent,
)


def x_in():
    return torch.randn(4, 8, generator=torch.Generator().manual_seed(3), requires_grad=True)


def causes(exc: CheckpointMismatch) -> str:
    return " ".join(f"{s.code}: {s.cause} {s.fix}" for s in exc.suggestions)


class Flag(nn.Module):
    def __init__(self):
        super().__init__()
        self.grad_checkpointing = False

    def set_grad_checkpointing(self, enable=True):
        self.grad_checkpointing = enable


class Recompute(torch.autograd.Function):
    """A home-made recompute that restores no RNG state."""

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


# --- 1. a region without submodules ------------------------------------------------------------


class ParamOnly(Flag):
    """Plain tensor code on an nn.Parameter: no submodule runs inside the region."""

    def __init__(self, home_made=False):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 8, generator=torch.Generator().manual_seed(0)))
        self.home_made = home_made

    def body(self, x):
        return F.dropout(x @ self.w, 0.5, training=True)

    def forward(self, x):
        if not self.grad_checkpointing:
            return self.body(x)
        if self.home_made:
            return Recompute.apply(self.body, x)
        return checkpoint(self.body, x, use_reentrant=False, preserve_rng_state=False)


def test_plain_code_region_without_preserve_rng_state_is_ckp101():
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(ParamOnly().train(), x_in())
    assert info.value.rule_codes == {"CKP101"}
    assert "nothing was recomputed" not in str(info.value)
    assert info.value.results[0].recomputations == {"ParamOnly.body": 1}


def test_plain_code_region_in_a_home_made_recompute_is_ckp104():
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(ParamOnly(home_made=True).train(), x_in())
    assert info.value.rule_codes == {"CKP104"}
    assert "aten.bernoulli_" in causes(info.value)
    assert "nothing was recomputed" not in str(info.value)


# --- 2. float rounding is not a failure, and no cause from outside the region --------------------


class FastPath(nn.Module):
    """Mathematically the same under no_grad, summed in another order (rounds differently)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x):
        if torch.is_grad_enabled():
            return torch.tanh(x @ self.lin.weight.T + self.lin.bias)
        return torch.tanh((x.unsqueeze(-1) * self.lin.weight.T.unsqueeze(0)).sum(1) + self.lin.bias)


class Stage(nn.Module):
    """diffusers' calling pattern: ``if torch.is_grad_enabled() and self.gradient_checkpointing``."""

    def __init__(self, *blocks):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        self.gradient_checkpointing = False

    def forward(self, x):
        for b in self.blocks:
            x = checkpoint(b, x, use_reentrant=True) if torch.is_grad_enabled() and self.gradient_checkpointing else b(x)
        return x


class Staged(nn.Module):
    def __init__(self, *blocks):
        super().__init__()
        self.stage = Stage(*blocks)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        return self.head(self.stage(x))


def stage_on(m):
    m.stage.gradient_checkpointing = True


def test_a_float32_rounding_gap_passes_after_a_float64_rerun():
    torch.manual_seed(0)
    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(0), requires_grad=True)
    report = assert_checkpointing_equivalent(Staged(FastPath(), FastPath()).train(), x, enable=stage_on, rtol=0, atol=1e-9)
    (note,) = [n for n in report.notes if n.startswith("a small gap")]
    assert "rerun in float64 both steps agree" in note


def test_tolerances_follow_the_dtype_by_default():
    from ckptlint.runtime.compare import compare_tensors

    a = torch.ones(3)
    assert compare_tensors("output", "o", a, a + 5e-6, rtol=None, atol=None) is None  # float32: atol 1e-5
    assert compare_tensors("output", "o", a.double(), a.double() + 5e-6, rtol=None, atol=None) is not None


class Tempered(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)
        self.temperature = 1.0

    def forward(self, x):
        return (self.lin(x) / self.temperature).tanh()


class Retempering(Staged):
    def forward(self, x):
        self.stage.blocks[0].temperature = 1.0
        out = self.head(self.stage(x))
        self.stage.blocks[0].temperature = 2.0
        return out


def test_no_cause_taken_from_the_code_that_calls_checkpoint():
    torch.manual_seed(0)
    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(0), requires_grad=True)
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(Retempering(Tempered()).train(), x, enable=stage_on)
    text = causes(info.value)
    assert "is_grad_enabled" not in text  # only Stage.forward, outside the region, reads it
    assert info.value.rule_codes == {"CKP201"} and "stage.blocks.0.temperature" in text


# --- 3. a counter in a closure stored on the module ----------------------------------------------


def make_counter():
    n = 0

    def tick():
        nonlocal n
        n += 1
        return n

    return tick


class Ticking(Flag):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.tick = make_counter()

    def body(self, x):
        self.tick()
        return self.lin(x).tanh()

    def forward(self, x):
        return checkpoint(self.body, x, use_reentrant=False) if self.grad_checkpointing else self.body(x)


def test_closure_counter_stored_on_the_module_fails_and_is_put_back():
    model = Ticking().train()
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(model, x_in())
    assert info.value.rule_codes == {"CKP202"}
    assert "nonlocal n" in causes(info.value)
    assert model.tick() == 1  # the check left the caller's counter as it was


# --- 4. state the recomputation reads or writes ------------------------------------------------


class Wrap(Flag):
    def __init__(self, block):
        super().__init__()
        self.block = block

    def forward(self, x):
        return checkpoint(self.block, x, use_reentrant=False) if self.grad_checkpointing else self.block(x)


class WeightDecayInForward(Flag):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def body(self, x):
        with torch.no_grad():
            self.lin.weight.mul_(0.9)
        return self.lin(x).tanh()

    def forward(self, x):
        return checkpoint(self.body, x, use_reentrant=False) if self.grad_checkpointing else self.body(x)


def test_parameter_written_in_place_is_compared_and_named():
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(WeightDecayInForward().train(), x_in())
    assert "parameter lin.weight" in {d.name for d in info.value.differences}
    assert info.value.rule_codes == {"CKP202"} and "parameter lin.weight" in causes(info.value)


class TemperedParent(Flag):
    def __init__(self):
        super().__init__()
        self.block = Tempered8()
        self.head = nn.Linear(8, 8)

    def forward(self, x):
        self.block.temperature = 1.0
        h = checkpoint(self.block, x, use_reentrant=False) if self.grad_checkpointing else self.block(x)
        self.block.temperature = 2.0
        return self.head(h)


class Tempered8(Tempered):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)


def test_attribute_changed_by_the_parent_is_ckp201_with_its_name():
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(TemperedParent().train(), x_in())
    assert info.value.rule_codes == {"CKP201"}
    assert "attribute block.temperature (1.0 in the forward, 2.0 when recomputed)" in causes(info.value)


def switch_off_training(module, args, out):
    module.block.train(False)


def test_training_flipped_by_a_hook_is_ckp201_with_its_name():
    model = Wrap(nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5))).train()
    model.register_forward_hook(switch_off_training)
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(model, x_in())
    assert "CKP201" in info.value.rule_codes
    assert "attribute block.training (True in the forward, False when recomputed)" in causes(info.value)


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


def test_memo_of_the_first_output_is_ckp201_with_its_name():
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(Wrap(Memo()).train(), x_in())
    assert "CKP201" in info.value.rule_codes
    assert "attribute block.memo (None in the forward, a tensor of shape (4, 8) when recomputed)" in causes(info.value)


class ScalesItsMask(Flag):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def body(self, x, mask):
        mask.mul_(2)
        return self.lin(x * mask).tanh()

    def forward(self, x, mask):
        return checkpoint(self.body, x, mask, use_reentrant=False) if self.grad_checkpointing else self.body(x, mask)


def test_input_mutated_in_place_is_a_ckp202_side_effect_on_the_input():
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(ScalesItsMask().train(), x_in(), torch.ones(4, 8))
    assert info.value.rule_codes == {"CKP202"}
    assert "the region modifies input[1] in place" in causes(info.value)


def test_input_mutated_in_place_by_a_function_is_ckp202():
    lin = nn.Linear(8, 8)

    def scale_mask(x, mask):
        mask.mul_(2)
        return lin(x * mask).tanh()

    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(scale_mask, x_in(), torch.ones(4, 8))
    for result in info.value.results:
        assert result.suggestions[0].code == "CKP202" and "input[1] in place" in result.suggestions[0].cause


class Float16Recompute(Recompute):
    """Re-enters autocast with a hard-coded float16 where the forward ran bfloat16."""

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        x = x.detach().requires_grad_(True)
        with torch.enable_grad(), torch.autocast("cpu", dtype=torch.float16):
            out = ctx.fn(x)
        torch.autograd.backward(out, grad)
        return None, x.grad


class AutocastBlock(Flag):
    def __init__(self):
        super().__init__()
        self.block = nn.Sequential(nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 8))

    def forward(self, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            h = Float16Recompute.apply(self.block, x) if self.grad_checkpointing else self.block(x)
        return h.float()


def test_autocast_reentered_with_another_dtype_is_ckp105_with_the_dtypes():
    torch.manual_seed(0)
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(AutocastBlock().train(), x_in())
    assert "CKP105" in info.value.rule_codes and "CKP201" not in info.value.rule_codes
    assert "autocast bfloat16 in the forward, autocast float16 when recomputed" in causes(info.value)


# --- 5. a global instance of a user class -------------------------------------------------------


class Config:
    def __init__(self):
        self.scale = 1.0


CONFIG = Config()


class Rescaling(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        CONFIG.scale = CONFIG.scale * 1.5
        return self.lin(x).tanh() * CONFIG.scale


def test_global_user_object_changed_by_the_blocks_is_named_and_restored():
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(Wrap(Rescaling()).train(), x_in())
    assert info.value.rule_codes == {"CKP202"} and "global CONFIG.scale" in causes(info.value)
    assert "not repeatable" not in str(info.value)
    assert CONFIG.scale == 1.0


# --- 6. passes that checked nothing ------------------------------------------------------------


class NanOut(Wrap):
    def forward(self, x):
        return super().forward(x) * float("nan")


def test_nan_in_both_runs_passes_with_a_warning_that_says_why():
    with pytest.warns(CheckpointingWarning, match="NaN in the reference step"):
        report = check_checkpointing_equivalent(NanOut(nn.Linear(8, 8)).train(), x_in())
    assert report.ok
    assert any("NaN is taken as equal to NaN" in n for n in report.notes)


def test_function_returning_none_under_the_reentrant_variant_names_no_enable_option():
    lin = nn.Linear(8, 8)
    kept = []

    def keep(x):
        kept.append(lin(x))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(CheckpointMismatch) as info:
            assert_checkpoint_equivalent(keep, x_in(), loss_fn=lambda out: kept[-1].pow(2).sum())
    text = str(info.value)
    assert "enable" not in text
    assert "the function returned None" in text and "return the tensors" in text


def test_block_check_reruns_a_float32_rounding_gap_in_float64():
    torch.manual_seed(0)
    block = FastPath()
    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(0), requires_grad=True)
    report = assert_checkpoint_equivalent(block, x, variants=[{"use_reentrant": True}], rtol=0, atol=1e-9)
    assert any("rerun in float64 both steps agree" in n for n in report.notes)


def test_block_check_names_a_parameter_written_in_place():
    model = WeightDecayInForward()
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(model.body, x_in(), variants=[{"use_reentrant": False}])
    assert "parameter lin.weight" in causes(info.value) and info.value.rule_codes == {"CKP202"}


def test_block_check_names_a_memo_the_recomputation_reads():
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(Memo(), x_in(), variants=[{"use_reentrant": False}])
    assert info.value.rule_codes == {"CKP201"}
    assert "attribute Memo.memo (None in the forward, a tensor of shape (4, 8) when recomputed)" in causes(info.value)

"""State outside the top-level forward, isolated and compared; the right causes.

Each test is one shape where a false pass, a false failure or a wrong cause is possible; the
real-model ones are in test_runtime_isolation_models.py.
"""

from __future__ import annotations

import random
import time

import pytest

pytest.importorskip("torch")
pytest.importorskip("numpy")
import numpy as np
import torch
from torch import nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
from torch.utils.checkpoint import checkpoint

from ckptlint.runtime import CheckpointMismatch, assert_checkpointing_equivalent, check_checkpointing_equivalent


def x_in():
    return torch.randn(4, 8, generator=torch.Generator().manual_seed(3), requires_grad=True)


class Flagged(nn.Module):
    """timm-style flag: the root checkpoints each block when ``grad_checkpointing`` is set."""

    def __init__(self, *blocks: nn.Module):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        self.grad_checkpointing = False

    def set_grad_checkpointing(self, enable: bool = True):
        self.grad_checkpointing = enable

    def forward(self, x):
        for b in self.blocks:
            x = checkpoint(b, x, use_reentrant=False) if self.grad_checkpointing else b(x)
        return x


class Caching(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.cache = []

    def forward(self, x):
        self.cache.append(x.detach())
        return self.lin(x).tanh()


class Stepping(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.steps = torch.zeros(())  # a tensor attribute, not a registered buffer

    def forward(self, x):
        self.steps += 1
        return self.lin(x).tanh()


STATS = {"calls": 0}
FEATURES: list = []


class Counting(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        STATS["calls"] += 1
        return self.lin(x).tanh()


class Logging(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        FEATURES.append(x.detach().mean())
        return self.lin(x).tanh()


def side_effect_names(exc: CheckpointMismatch) -> set[str]:
    return {d.name for d in exc.differences if d.kind in ("module_attr", "python_state")}


# --- false passes ------------------------------------------------------------------------------


def test_list_attribute_that_collects_tensors_is_a_side_effect():
    model = Flagged(Caching(), Caching()).train()
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(model, x_in())
    assert "CKP202" in info.value.rule_codes
    assert "attribute blocks.0.cache" in side_effect_names(info.value)
    assert model.blocks[0].cache == []  # the caller's model is untouched


def test_tensor_attribute_that_is_not_a_buffer_is_a_side_effect():
    model = Flagged(Stepping()).train()
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(model, x_in())
    (diff,) = [d for d in info.value.differences if d.name == "attribute blocks.0.steps"]
    assert diff.max_abs == 1.0  # 1 after the plain step, 2 after the checkpointed one
    assert "CKP202" in info.value.rule_codes


@pytest.mark.parametrize("block, name", [(Counting, "global STATS"), (Logging, "global FEATURES")])
def test_module_level_state_written_in_a_blocks_forward_is_a_side_effect(block, name):
    STATS["calls"] = 0
    FEATURES.clear()
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(Flagged(block()).train(), x_in())
    assert "CKP202" in info.value.rule_codes
    assert name in side_effect_names(info.value)
    assert STATS == {"calls": 0} and FEATURES == []  # put back


def test_hook_logging_to_a_closure_list_is_a_side_effect():
    log: list = []

    def pre_hook(module, args):
        log.append(tuple(args[0].shape))

    model = Flagged(nn.Linear(8, 8), nn.Linear(8, 8)).train()
    for b in model.blocks:
        b.register_forward_pre_hook(pre_hook)
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(model, x_in())
    assert "nonlocal log" in side_effect_names(info.value)
    assert "CKP202" in info.value.rule_codes
    assert log == []


# --- false failures ----------------------------------------------------------------------------

SCALE = [1.0]


class Schedule(nn.Module):
    """Reads and writes a module-level value: the second step would see it changed."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        SCALE[0] *= 2
        return self.lin(x) * SCALE[0]


def test_global_changed_by_a_submodule_is_reset_between_the_steps():
    SCALE[0] = 1.0
    model = nn.Sequential(Schedule()).train()
    with pytest.warns(UserWarning, match="never recomputed"):
        report = check_checkpointing_equivalent(model, x_in(), enable=lambda m: None)  # turns nothing on
    assert report.ok, str(report)
    assert SCALE == [1.0]


CALLS = {"n": 0}


def counting_loss(out):
    CALLS["n"] += 1
    return out.pow(2).sum() * CALLS["n"]


def test_global_changed_by_loss_fn_is_reset_between_the_steps():
    CALLS["n"] = 0
    report = check_checkpointing_equivalent(Flagged(nn.Linear(8, 8)).train(), x_in(), loss_fn=counting_loss)
    assert report.ok, str(report)
    assert CALLS == {"n": 0}


def test_process_state_is_as_before_after_a_failing_check():
    STATS["calls"] = 0
    model = Flagged(Counting(), nn.Dropout(0.5)).train()
    torch.manual_seed(5)
    random.seed(5)
    np.random.seed(5)
    before = (torch.get_rng_state(), random.getstate(), np.random.get_state()[1].copy())
    assert not check_checkpointing_equivalent(model, x_in()).ok
    assert STATS == {"calls": 0}
    assert torch.equal(torch.get_rng_state(), before[0])
    assert random.getstate() == before[1]
    assert (np.random.get_state()[1] == before[2]).all()


# --- the right cause ---------------------------------------------------------------------------


class Recompute(torch.autograd.Function):
    """A home-made recompute: runs ``fn`` without grad in forward and again in backward, with no
    RNG restore and no autocast re-entry."""

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
    def __init__(self, block: nn.Module, autocast: bool = False):
        super().__init__()
        self.block = block
        self.use_recompute = False
        self.autocast = autocast

    def forward(self, x):
        if self.autocast:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                h = Recompute.apply(self.block, x) if self.use_recompute else self.block(x)
            return h.float()
        return Recompute.apply(self.block, x) if self.use_recompute else self.block(x)


def turn_on_recompute(m):
    m.use_recompute = True


def test_home_made_recompute_without_rng_restore_is_ckp104():
    torch.manual_seed(0)
    model = HomeMade(nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5))).train()
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(model, x_in(), enable=turn_on_recompute)
    assert info.value.rule_codes == {"CKP104"}
    text = str(info.value)
    assert "preserve_rng_state" not in text and "(preserved)" not in text
    assert info.value.results[0].recomputations == {"block": 1}


def test_home_made_recompute_that_loses_autocast_is_ckp105():
    torch.manual_seed(0)
    model = HomeMade(nn.Sequential(nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 8)), autocast=True).train()
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(model, x_in(), enable=turn_on_recompute)
    assert "CKP105" in info.value.rule_codes
    assert "CKP201" not in info.value.rule_codes


class GradModeBranch(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        h = self.lin(x)
        return h.tanh() if torch.is_grad_enabled() else h.sigmoid()


class ReentrantFlag(Flagged):
    def forward(self, x):
        for b in self.blocks:
            x = checkpoint(b, x, use_reentrant=True) if self.grad_checkpointing else b(x)
        return x


def test_reentrant_variant_with_a_grad_mode_branch_names_the_no_grad_forward():
    torch.manual_seed(0)
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(ReentrantFlag(GradModeBranch()).train(), x_in())
    causes = " ".join(s.cause + s.fix for s in info.value.suggestions)
    assert "runs the region's forward under no_grad" in causes and "use_reentrant=False" in causes
    assert "CKP201" not in info.value.rule_codes


# --- smaller -----------------------------------------------------------------------------------


class TwiceDropout(nn.Module):
    """Calls one dropout twice per forward (like HF ViT's attention and output dropouts) and,
    like a transformers layer, checkpoints its own forward's body, so its hooks run outside the
    region and only its children run again."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.1)
        self.gradient_checkpointing = False

    def body(self, x):
        return self.drop(self.lin(self.drop(x)))

    def forward(self, x):
        return checkpoint(self.body, x, use_reentrant=False) if self.gradient_checkpointing else self.body(x)


def turn_on_layers(model):
    for m in model.modules():
        if isinstance(m, TwiceDropout):
            m.gradient_checkpointing = True


def test_recompute_count_is_per_forward_call():
    torch.manual_seed(0)
    model = nn.Sequential(TwiceDropout(), TwiceDropout()).train()
    report = assert_checkpointing_equivalent(model, x_in(), enable=turn_on_layers)
    assert report.results[0].recomputations == {"0": 1, "1": 1}
    assert report.results[0].calls == 2


class Single(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Sequential(nn.Linear(8, 8), nn.Tanh())
        self.grad_checkpointing = False

    def set_grad_checkpointing(self, enable: bool = True):
        self.grad_checkpointing = enable

    def forward(self, x):
        return checkpoint(self.block, x, use_reentrant=False) if self.grad_checkpointing else self.block(x)


def test_a_single_checkpointed_child_is_named():
    report = assert_checkpointing_equivalent(Single().train(), x_in())
    assert report.results[0].recomputations == {"block": 1}


class RootCounter(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.lin(x).tanh()


def test_root_attributes_are_compared_when_enable_wraps_the_whole_model():
    model = RootCounter().train()
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(model, x_in(), enable=checkpoint_wrapper)
    assert "attribute RootCounter.calls" in side_effect_names(info.value)
    assert info.value.results[0].recomputations == {"": 1}


class Toleranced(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.grad_checkpointing = False

    def set_grad_checkpointing(self, enable: bool = True):
        self.grad_checkpointing = enable

    def forward(self, x, atol=0.0, enable=True):
        h = checkpoint(self.lin, x, use_reentrant=False) if self.grad_checkpointing else self.lin(x)
        return h + atol if enable else h


def test_forward_kwargs_and_collisions_with_the_checks_options():
    model = Toleranced().train()
    report = assert_checkpointing_equivalent(model, x_in(), forward_kwargs={"atol": 0.5, "enable": False})
    assert report.ok
    with pytest.raises(TypeError, match=r"atol: both an option of this check and a parameter of Toleranced.forward"):
        check_checkpointing_equivalent(model, x_in(), atol=0.5)
    with pytest.raises(TypeError, match="given both in forward_kwargs and as keyword arguments"):
        check_checkpointing_equivalent(model, x_in(), forward_kwargs={"tag": 1}, tag=2)
    # with forward_kwargs given, atol is the check's option
    assert check_checkpointing_equivalent(model, x_in(), forward_kwargs={}, atol=1e-3).ok


def test_loss_fn_returning_a_float_is_a_type_error():
    with pytest.raises(TypeError, match="loss_fn must return a tensor"):
        check_checkpointing_equivalent(Flagged(nn.Linear(8, 8)).train(), x_in(), loss_fn=lambda out: float(out.sum()))


def test_eval_mode_note_names_what_the_library_does():
    from ckptlint.runtime.notes import EVAL_MODE_CHECKPOINTING

    with pytest.warns(UserWarning):
        report = check_checkpointing_equivalent(Flagged(nn.Linear(8, 8)).eval(), x_in())
    (note,) = [n for n in report.notes if n.startswith("eval mode")]
    # a timm-style switch: timm checkpoints in eval too, and so did this model
    assert "timm checkpoints in eval mode too" in note
    assert report.results[0].recomputations == {"blocks.0": 1}
    assert "only in training" in EVAL_MODE_CHECKPOINTING["transformers"]
    assert "eval mode too" in EVAL_MODE_CHECKPOINTING["diffusers"]


def test_non_determinism_is_not_blamed_on_checkpointing():
    class Noisy(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8)

        def forward(self, x):  # the clock: state the check cannot restore
            return self.lin(x) + (time.perf_counter_ns() % 997) / 997

    report = check_checkpointing_equivalent(Flagged(Noisy()).train(), x_in())
    assert not report.ok
    (result,) = report.results
    assert result.suggestions and all(s.code is None for s in result.suggestions)
    assert "not repeatable" in result.suggestions[0].cause


def test_plugin_fixture_moves_forward_kwargs(ckpt_model_equivalence):
    report = ckpt_model_equivalence(Toleranced().train(), x_in(), forward_kwargs={"atol": torch.tensor(0.5)})
    assert report.ok and report.results[0].recomputations == {"lin": 1}

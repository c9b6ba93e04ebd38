"""check_checkpointing_equivalent on plain torch models: switches, regions, names, failures."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
import torch
from torch import nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
    CheckpointImpl,
    apply_activation_checkpointing,
    checkpoint_wrapper,
)
from torch.utils.checkpoint import checkpoint

from ckptlint.runtime import (
    CheckpointingWarning,
    CheckpointMismatch,
    assert_checkpointing_equivalent,
    check_checkpointing_equivalent,
    compare_checkpointing_memory,
)
from ckptlint.runtime.switches import SWITCHES, find_switch, is_checkpointing_on


class Block(nn.Module):
    def __init__(self, bn: bool = False, p: float = 0.3):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.norm = nn.BatchNorm1d(8) if bn else nn.LayerNorm(8)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        return x + self.drop(self.norm(self.lin(x)).relu())


class FlagModel(nn.Module):
    """A model with its own flag, timm-style (``set_grad_checkpointing``)."""

    def __init__(self, bn: bool = False):
        super().__init__()
        self.blocks = nn.ModuleList(Block(bn) for _ in range(3))
        self.grad_checkpointing = False

    def set_grad_checkpointing(self, enable: bool = True):
        self.grad_checkpointing = enable

    def forward(self, x):
        for b in self.blocks:
            x = checkpoint(b, x, use_reentrant=False) if self.grad_checkpointing and self.training else b(x)
        return x


def x_in():
    return torch.randn(4, 8, generator=torch.Generator().manual_seed(3), requires_grad=True)


def is_block(m):
    return isinstance(m, Block)


def test_auto_uses_the_models_switch_and_counts_regions():
    torch.manual_seed(0)
    model = FlagModel().train()
    assert find_switch(model).library == "timm"
    report = assert_checkpointing_equivalent(model, x_in())
    (result,) = report.results
    assert result.label == "model.set_grad_checkpointing(True)"
    assert result.recomputations == {"blocks.0": 1, "blocks.1": 1, "blocks.2": 1}
    assert report.notes == []
    assert model.grad_checkpointing is False  # the caller's model is untouched


@pytest.mark.slow
def test_apply_activation_checkpointing_with_batchnorm_fails_with_ckp203():
    torch.manual_seed(0)
    model = nn.Sequential(Block(bn=True), Block(bn=True)).train()
    before = model[0].norm.running_mean.clone()
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(model, x_in(), enable=lambda m: apply_activation_checkpointing(m, check_fn=is_block))
    exc = info.value
    assert "CKP203" in exc.rule_codes
    # names are the plain model's: no _checkpoint_wrapped_module
    assert ("buffer", "buffer 0.norm.num_batches_tracked") in {(d.kind, d.name) for d in exc.differences}
    assert exc.results[0].recomputations == {"0": 1, "1": 1}
    assert exc.results[0].variant == {"use_reentrant": False}
    assert torch.equal(model[0].norm.running_mean, before)


def test_apply_activation_checkpointing_reentrant_passes_on_a_correct_model():
    torch.manual_seed(0)
    model = nn.Sequential(Block(), Block()).train()
    wrap = lambda m: checkpoint_wrapper(m, checkpoint_impl=CheckpointImpl.REENTRANT)  # noqa: E731
    report = assert_checkpointing_equivalent(
        model, x_in(), enable=lambda m: apply_activation_checkpointing(m, checkpoint_wrapper_fn=wrap, check_fn=is_block)
    )
    assert report.results[0].variant == {"use_reentrant": True}
    assert report.results[0].recomputations == {"0": 1, "1": 1}


def test_preserve_rng_state_false_with_dropout_fails_with_ckp101():
    torch.manual_seed(0)
    model = nn.Sequential(Block(p=0.5), Block(p=0.5)).train()
    wrap = lambda m: checkpoint_wrapper(m, preserve_rng_state=False)  # noqa: E731
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(
            model, x_in(), enable=lambda m: apply_activation_checkpointing(m, checkpoint_wrapper_fn=wrap, check_fn=is_block)
        )
    assert "CKP101" in info.value.rule_codes


@pytest.mark.slow
def test_model_with_checkpointing_already_on_is_compared_against_it_off():
    torch.manual_seed(0)
    model = FlagModel(bn=True).train()
    model.set_grad_checkpointing(True)
    assert is_checkpointing_on(model)
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpointing_equivalent(model, x_in())
    assert "CKP203" in info.value.rule_codes
    assert any("already on" in n for n in info.value.notes)


def test_eval_mode_warns_and_nothing_recomputed():
    torch.manual_seed(0)
    model = FlagModel().eval()
    with pytest.warns(CheckpointingWarning) as caught:
        report = assert_checkpointing_equivalent(model, x_in())
    texts = [str(w.message) for w in caught]
    assert any("eval mode" in t for t in texts) and any("never recomputed" in t for t in texts)
    assert report.results[0].recomputations == {}
    assert any("never recomputed" in n for n in report.notes)


def test_no_switch_and_bad_arguments():
    with pytest.raises(ValueError, match="no known checkpointing switch"):
        check_checkpointing_equivalent(nn.Linear(8, 8), x_in())
    with pytest.raises(TypeError):
        check_checkpointing_equivalent(lambda t: t, x_in(), enable=lambda m: None)
    with pytest.raises(TypeError, match="enable"):
        check_checkpointing_equivalent(FlagModel(), x_in(), enable="on")
    assert [s.library for s in SWITCHES] == ["transformers", "transformers", "diffusers", "timm"]


@pytest.mark.slow
def test_compare_checkpointing_memory():
    torch.manual_seed(0)
    model = FlagModel().train()
    report = compare_checkpointing_memory(model, x_in(), iters=2)
    assert report.memory_ratio < 1
    assert report.plain.op_peak_bytes > 0 and report.checkpointed.op_peak_bytes > 0


def test_plugin_fixture(ckpt_model_equivalence):
    torch.manual_seed(0)
    report = ckpt_model_equivalence(FlagModel().train(), x_in())
    assert report.ok and report.results[0].recomputations


def test_own_flag_set_by_enable_is_not_a_difference() -> None:
    # the README's "your own flag", turned on by a callable: the flag differs between the two
    # copies by design and is no CKP202 side effect
    torch = pytest.importorskip("torch")
    from torch import nn
    from torch.utils.checkpoint import checkpoint

    from ckptlint.runtime import (
        assert_checkpointing_equivalent,
        check_checkpointing_equivalent,
    )

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.2)) for _ in range(2))
            self.use_checkpoint = False
            self.steps = 0

        def forward(self, x):
            for block in self.blocks:
                x = checkpoint(block, x, use_reentrant=False) if self.use_checkpoint else block(x)
            return x

    def on(model: nn.Module) -> None:
        model.use_checkpoint = True

    torch.manual_seed(0)
    report = assert_checkpointing_equivalent(Model().train(), torch.randn(4, 8), enable=on)
    assert report.results[0].recomputations == {"blocks.0": 1, "blocks.1": 1}
    assert "not compared, set by enable: Model.use_checkpoint" in report.notes

    class Counting(Model):
        def forward(self, x):
            def body(h):
                self.steps += 1  # a real side effect in the region: still reported
                return self.blocks[0](h)

            return checkpoint(body, x, use_reentrant=False) if self.use_checkpoint else body(x)

    bad = check_checkpointing_equivalent(Counting().train(), torch.randn(4, 8, requires_grad=True), enable=on)
    assert not bad.ok
    names = [d.name for d in bad.results[0].differences]
    assert "attribute Counting.steps" in names
    assert "attribute Counting.use_checkpoint" not in names


@pytest.mark.parametrize("pattern", ["output['cache']", "output['cache']*"])
def test_ignored_outputs_are_left_out_of_the_default_loss(pattern) -> None:
    # like transformers with use_cache=True: only the plain step returns a cache that requires
    # grad; ignoring it must also keep it out of the loss (else every gradient "differs"), and
    # `output['cache']*` (fnmatch reads [...] as a class) must match too
    torch = pytest.importorskip("torch")
    from torch import nn
    from torch.utils.checkpoint import checkpoint

    from ckptlint.runtime import check_checkpointing_equivalent

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.block = nn.Linear(8, 8)
            self.use_checkpoint = False

        def forward(self, x):
            if self.use_checkpoint:
                return {"y": checkpoint(self.block, x, use_reentrant=False)}
            h = self.block(x)
            return {"y": h, "cache": [h * 2]}

    def on(model: nn.Module) -> None:
        model.use_checkpoint = True

    torch.manual_seed(0)
    x = torch.randn(4, 8)
    # an output of one run only is left out of the default loss and named
    unignored = check_checkpointing_equivalent(Model(), x, enable=on)
    assert unignored.ok, str(unignored)
    assert any("output['cache'] (the reference run)" in n for n in unignored.notes)
    report = check_checkpointing_equivalent(Model(), x, enable=on, ignore_outputs=[pattern])
    assert report.ok, str(report)
    assert not any(n.startswith("left out") for n in report.notes)

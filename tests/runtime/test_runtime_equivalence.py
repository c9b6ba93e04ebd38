"""assert_checkpoint_equivalent on real torch (CPU): each detection, and correct models pass."""

from __future__ import annotations

import functools
import random

import pytest

pytest.importorskip("torch")
import torch
from torch import nn
from torch.utils.checkpoint import create_selective_checkpoint_contexts

from ckptlint.runtime import (
    CheckpointingWarning,
    CheckpointMismatch,
    assert_checkpoint_equivalent,
    capture_rng,
    check_checkpoint_equivalent,
)
from ckptlint.runtime.states import rng_differences

BOTH = [{"use_reentrant": False}, {"use_reentrant": True}]


def mlp(p: float = 0.3) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 12), nn.Dropout(p), nn.GELU(), nn.Linear(12, 6))


def x_in(requires_grad: bool = True) -> torch.Tensor:
    return torch.randn(5, 6, generator=torch.Generator().manual_seed(1)).requires_grad_(requires_grad)


# --- correct models pass -------------------------------------------------------------------


@pytest.mark.parametrize("reentrant", [False, True])
def test_dropout_with_default_rng_preservation_passes(reentrant):
    report = assert_checkpoint_equivalent(mlp(), x_in(), variants=[{"use_reentrant": reentrant}])
    assert report.ok
    (result,) = report.results
    assert result.differences == []
    assert (result.calls, result.reference_calls) == (2, 1)  # forward + recomputation
    assert result.warnings == []


def test_default_variants_are_both_use_reentrant_values():
    report = assert_checkpoint_equivalent(mlp(), x_in())
    assert [r.variant for r in report.results] == BOTH
    assert "equivalent" in str(report)


def test_more_options_pass_on_a_correct_model():
    sac = functools.partial(create_selective_checkpoint_contexts, [torch.ops.aten.addmm.default])
    variants = [
        {"use_reentrant": False, "early_stop": False},
        {"use_reentrant": False, "context_fn": sac},
        {"use_reentrant": False, "determinism_check": "none"},
    ]
    report = assert_checkpoint_equivalent(mlp(), x_in(), variants=variants)
    assert report.ok and len(report.results) == 3
    assert "context_fn=create_selective_checkpoint_contexts" in report.results[1].label


def test_tuple_output_and_kwargs():
    def fn(a, b, *, scale):
        return {"sum": torch.tanh(a @ b) * scale, "parts": (a.sin(), b.cos())}

    b = torch.randn(6, 3, requires_grad=True)
    report = assert_checkpoint_equivalent(fn, x_in(), b, kwargs={"scale": 3.0}, variants=BOTH[:1])
    assert report.ok


# --- detections ------------------------------------------------------------------------------


@pytest.mark.parametrize("reentrant", [False, True])
def test_dropout_without_rng_preservation_is_caught(reentrant):
    variant = {"use_reentrant": reentrant, "preserve_rng_state": False}
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(mlp(0.5), x_in(), variants=[variant])
    exc = info.value
    assert isinstance(exc, AssertionError)
    assert "CKP101" in exc.rule_codes
    kinds = {(d.kind, d.name) for d in exc.differences}
    assert ("param_grad", "grad of 0.weight") in kinds
    assert ("rng", "torch CPU RNG") in kinds  # the recomputation drew more numbers
    grad = next(d for d in exc.differences if d.name == "grad of 0.weight")
    assert grad.max_abs > 1e-3 and grad.max_rel > 1e-3
    text = str(exc)
    assert "grad of 0.weight: max abs diff" in text and "max rel diff" in text
    assert "preserve_rng_state=False" in text and "aten.bernoulli_" in text


@pytest.mark.parametrize("reentrant", [False, True])
def test_batchnorm_double_update_is_caught(reentrant):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU())
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(model, x_in(), variants=[{"use_reentrant": reentrant}])
    exc = info.value
    assert exc.rule_codes == {"CKP203"}
    by_name = {d.name: d for d in exc.differences}
    assert set(by_name) == {"buffer 1.running_mean", "buffer 1.running_var", "buffer 1.num_batches_tracked"}
    assert by_name["buffer 1.num_batches_tracked"].max_abs == 1.0  # 2 updates instead of 1
    assert "CKP203" in str(exc) and "BatchNorm" in str(exc)
    # the caller's model is untouched
    assert int(model[1].num_batches_tracked) == 0
    assert model[0].weight.grad is None


def test_eval_mode_batchnorm_passes():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8)).eval()
    with pytest.warns(CheckpointingWarning, match="eval mode"):  # the pass proves little
        assert assert_checkpoint_equivalent(model, x_in()).ok


STATE = {"flipped": False}


def flips_a_flag(a, w):
    scale = 2.0 if STATE["flipped"] else 1.0
    STATE["flipped"] = True
    return torch.tanh(a @ w * scale)  # tanh saves its output, which depends on scale


@pytest.mark.parametrize("reentrant", [False, True])
def test_recompute_reading_a_flag_it_flips_is_caught(reentrant):
    w = torch.randn(6, 4, requires_grad=True)
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(flips_a_flag, x_in(), w, variants=[{"use_reentrant": reentrant}])
    exc = info.value
    assert "CKP201" in exc.rule_codes
    assert {"grad of input[0]", "grad of input[1]"} <= {d.name for d in exc.differences}
    assert "global STATE" in str(exc)
    assert STATE == {"flipped": False}  # the caller's global is restored


COUNTER = 0


def reads_a_counter(a, w):
    global COUNTER
    COUNTER += 1
    return torch.tanh(a @ w * COUNTER)


@pytest.mark.parametrize("reentrant", [False, True])
def test_recompute_reading_a_counter_is_caught(reentrant):
    w = torch.randn(6, 4, requires_grad=True)
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(reads_a_counter, x_in(), w, variants=[{"use_reentrant": reentrant}])
    exc = info.value
    assert {"CKP201", "CKP202"} <= exc.rule_codes
    state = next(d for d in exc.differences if d.kind == "python_state")
    assert state.name == "global COUNTER"
    assert "1 after the reference step, 2 after the checkpointed step" in state.detail
    assert COUNTER == 0


TRACE: list[float] = []


def logs_to_a_list(a, w):
    y = torch.tanh(a @ w)
    TRACE.append(float(y.detach().norm()))  # shared case 19
    return y


def test_list_append_in_region_is_caught():
    w = torch.randn(6, 4, requires_grad=True)
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(logs_to_a_list, x_in(), w, variants=[{"use_reentrant": True}])
    exc = info.value
    assert exc.rule_codes == {"CKP202"}  # values are right, the side effect ran twice
    (diff,) = exc.differences
    assert diff.kind == "python_state" and diff.name == "global TRACE"
    assert TRACE == []
    # non-reentrant early stop skips statements after the last saved tensor: no second append
    assert assert_checkpoint_equivalent(logs_to_a_list, x_in(), w, variants=[{"use_reentrant": False}]).ok


def test_side_effect_on_module_attribute_is_caught():
    class Counting(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(6, 6)
            self.calls = 0

        def forward(self, a):
            self.calls += 1
            return self.lin(a).relu()

    model = Counting()
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(model, x_in(), variants=BOTH[:1])
    assert "CKP202" in info.value.rule_codes
    assert any(d.kind == "module_attr" and d.name.endswith(".calls") for d in info.value.differences)
    assert model.calls == 0


def uses_python_random(a, w):
    return torch.tanh(a @ w * (1.0 + random.random()))


@pytest.mark.parametrize("reentrant", [False, True])
def test_python_random_in_region_is_caught(reentrant):
    w = torch.randn(6, 4, requires_grad=True)
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(uses_python_random, x_in(), w, variants=[{"use_reentrant": reentrant}])
    exc = info.value
    assert "CKP103" in exc.rule_codes
    assert ("rng", "Python random") in {(d.kind, d.name) for d in exc.differences}


def test_numpy_random_in_region_is_caught():
    np = pytest.importorskip("numpy")

    def jitter(a, w):
        noise = torch.from_numpy(np.random.normal(0.0, 0.1, size=tuple(a.shape))).float()
        return torch.tanh((a + noise) @ w)

    w = torch.randn(6, 4, requires_grad=True)
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(jitter, x_in(), w, variants=BOTH[1:])
    assert "CKP103" in info.value.rule_codes
    assert ("rng", "NumPy global RNG") in {(d.kind, d.name) for d in info.value.differences}


def test_explicit_generator_is_caught():
    gen = torch.Generator().manual_seed(7)

    def noisy(a, w):
        return torch.tanh(a @ w + torch.rand(a.shape[0], w.shape[1], generator=gen))

    w = torch.randn(6, 4, requires_grad=True)
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(noisy, x_in(), w, variants=BOTH[:1])
    assert "CKP103" in info.value.rule_codes
    assert "explicit torch.Generator" in str(info.value)


def test_reentrant_without_grad_requiring_input_is_caught():
    torch.manual_seed(0)
    model = nn.Linear(6, 3)
    report = check_checkpoint_equivalent(model, x_in(requires_grad=False))
    non_reentrant, reentrant = report.results
    assert non_reentrant.ok
    assert not reentrant.ok
    none_only = [d for d in reentrant.differences if d.kind == "param_grad"]
    assert {d.name for d in none_only} == {"grad of weight", "grad of bias"}
    assert all(d.variant_none and not d.reference_none for d in none_only)
    assert "no_input_requires_grad" in reentrant.warnings
    assert reentrant.calls == 1  # no backward through the region, so no recomputation
    assert any("use_reentrant=False" in s.fix for s in reentrant.suggestions)
    with pytest.raises(CheckpointMismatch, match="None of the inputs have requires_grad=True"):
        assert_checkpoint_equivalent(model, x_in(requires_grad=False))


def test_grad_input_nested_in_a_list_is_invisible_to_reentrant():
    torch.manual_seed(0)
    model = nn.Linear(6, 3)

    def fn(pair):
        return model(pair[0])

    report = check_checkpoint_equivalent(fn, [x_in()], variants=BOTH[1:])
    (result,) = report.results
    assert {d.name for d in result.differences if d.variant_none} == {
        "grad of input[0][0]",
        "grad of model.weight",
        "grad of model.bias",
    }
    assert model.weight.grad is None  # shared module restored


def test_omitted_use_reentrant_is_reported_and_can_be_ignored():
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(mlp(), x_in(), variants=[{}])
    assert [d.name for d in info.value.differences] == ["use_reentrant_omitted"]
    report = assert_checkpoint_equivalent(mlp(), x_in(), variants=[{}], ignore_warnings={"use_reentrant_omitted"})
    assert report.results[0].warnings == ["use_reentrant_omitted"]


def test_rejected_variant_is_reported_as_error():
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(mlp(), x_in(), variants=[{"use_reentrant": True, "context_fn": lambda: None}])
    (result,) = info.value.results
    assert isinstance(result.error, ValueError) and result.calls == 0
    assert info.value.differences[0].kind == "error"


# --- isolation and arguments ----------------------------------------------------------------


def test_callers_rng_state_is_unchanged():
    np = pytest.importorskip("numpy")
    good, bad, x, w = mlp(), mlp(0.5), x_in(), torch.randn(6, 4, requires_grad=True)
    torch.manual_seed(123)
    random.seed(5)
    np.random.seed(9)
    before = capture_rng()
    assert_checkpoint_equivalent(good, x)
    with pytest.raises(CheckpointMismatch):
        assert_checkpoint_equivalent(uses_python_random, x, w)
    with pytest.raises(CheckpointMismatch):
        assert_checkpoint_equivalent(bad, x, variants=[{"use_reentrant": False, "preserve_rng_state": False}])
    assert rng_differences(before, capture_rng()) == []
    assert torch.equal(before.cpu, torch.get_rng_state())
    assert random.getstate() == before.python


def test_module_is_deep_copied_and_untouched():
    model = mlp()
    params = {k: v.detach().clone() for k, v in model.state_dict().items()}
    assert_checkpoint_equivalent(model, x_in())
    assert all(torch.equal(params[k], v) for k, v in model.state_dict().items())
    assert all(p.grad is None for p in model.parameters())


def test_bound_method_and_partial_are_supported():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8))
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(model.forward, x_in(), variants=BOTH[:1])
    assert info.value.rule_codes == {"CKP203"}

    def apply(m, a):
        return m(a)

    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(functools.partial(apply, model), x_in(), variants=BOTH[:1])
    assert any(d.name == "buffer args[0].1.num_batches_tracked" for d in info.value.differences)


def test_public_signatures():
    import inspect

    from ckptlint.runtime import audit_rng, compare_memory, measure

    sig = inspect.signature(assert_checkpoint_equivalent)
    assert list(sig.parameters)[:6] == ["module_or_fn", "inputs", "variants", "rtol", "atol", "kwargs"]
    assert sig.parameters["inputs"].kind is inspect.Parameter.VAR_POSITIONAL
    assert list(inspect.signature(audit_rng).parameters)[:2] == ["module_or_fn", "inputs"]
    m = inspect.signature(measure).parameters
    assert all(m[k].kind is inspect.Parameter.KEYWORD_ONLY for k in ("device", "warmup", "iters"))
    assert list(inspect.signature(compare_memory).parameters)[:2] == ["plain_step", "checkpointed_step"]


def test_bad_variants_raise():
    with pytest.raises(TypeError):
        assert_checkpoint_equivalent(mlp(), x_in(), variants=[("use_reentrant", False)])
    with pytest.raises(ValueError):
        assert_checkpoint_equivalent(mlp(), x_in(), variants=[])


def test_failing_reference_raises_runtime_error():
    def broken(a):
        raise KeyError("boom")

    with pytest.raises(RuntimeError, match="reference step"):
        assert_checkpoint_equivalent(broken, x_in())


def test_tolerances_are_applied():
    def scaled(a):
        return a * 3.0

    report = assert_checkpoint_equivalent(scaled, x_in(), rtol=0.0, atol=0.0)
    assert report.rtol == 0.0 and report.ok

"""False failures and silent passes of the runtime helper: each shape met on real models, one
minimal test each.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import warnings
from typing import NamedTuple

import pytest

pytest.importorskip("torch")
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import create_selective_checkpoint_contexts

from ckptlint.runtime import (
    CheckpointingWarning,
    CheckpointMismatch,
    assert_checkpoint_equivalent,
    audit_rng,
    check_checkpoint_equivalent,
    compare_memory,
)
from ckptlint.runtime.compare import compare_tensors

NON_REENTRANT = [{"use_reentrant": False}]


def x_in(requires_grad: bool = True) -> torch.Tensor:
    return torch.randn(5, 6, generator=torch.Generator().manual_seed(1)).requires_grad_(requires_grad)


class Cache:
    """Like a transformers DynamicCache: an object without __eq__ that holds tensors."""

    def __init__(self):
        self.layers = []


# --- 1. non-tensor leaves in the output ------------------------------------------------------


def test_object_holding_tensors_in_output_is_compared_by_value():
    lin = nn.Linear(6, 6)

    def fn(a):
        cache = Cache()
        h = lin(a)
        cache.layers.append(h.detach() * 2)
        return h.tanh(), cache

    report = assert_checkpoint_equivalent(fn, x_in(), variants=NON_REENTRANT)
    assert report.ok


def test_named_tuple_output_with_an_object_is_flattened():
    lin = nn.Linear(6, 6)

    class Out(NamedTuple):
        hidden: torch.Tensor
        cache: Cache

    def fn(a):
        cache = Cache()
        cache.layers.append(torch.randn(2))  # the forward's random draw: same in both runs
        return Out(lin(a).tanh(), cache)

    assert assert_checkpoint_equivalent(fn, x_in(), variants=NON_REENTRANT).ok


def test_outputs_can_be_ignored():
    state = {"n": 0}

    def fn(a):
        state["n"] += 1
        return {"y": a.tanh(), "count": torch.tensor(float(state["n"]))}

    with pytest.raises(CheckpointMismatch):
        assert_checkpoint_equivalent(fn, x_in(), variants=NON_REENTRANT)
    report = check_checkpoint_equivalent(fn, x_in(), variants=NON_REENTRANT, ignore_outputs=["output['count']"])
    assert not any(d.kind == "output" for d in report.results[0].differences)


# --- 2. a plain dataclass output --------------------------------------------------------------


@dataclasses.dataclass
class Result:
    hidden: torch.Tensor
    extra: tuple


def test_dataclass_output_is_flattened_and_backpropagated():
    torch.manual_seed(0)
    lin = nn.Linear(6, 6)

    def fn(a):
        h = lin(a)
        return Result(h.tanh(), (h.sigmoid(),))

    report = assert_checkpoint_equivalent(fn, x_in(), variants=NON_REENTRANT)
    (result,) = report.results
    assert result.calls == 2  # backward ran, so the region was recomputed


# --- 3. a watched global list that collects tensors ------------------------------------------

COLLECTED: list = []


def collecting(a):
    COLLECTED.append(a.detach().sum())
    return a.tanh()


def collects_once(a):
    if not COLLECTED:  # the recomputation sees the list filled and does not append again
        COLLECTED.append(a.detach() * 2)
    return a.tanh()


def test_global_list_collecting_tensors_is_compared_without_crashing():
    COLLECTED.clear()
    # same length after both steps, multi-element tensors inside: compared by value, no crash
    assert assert_checkpoint_equivalent(collects_once, x_in(), variants=NON_REENTRANT).ok
    assert COLLECTED == []
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(collecting, x_in(), variants=NON_REENTRANT)
    assert "CKP202" in info.value.rule_codes
    assert [d.name for d in info.value.differences if d.kind == "python_state"] == ["global COLLECTED"]
    assert COLLECTED == []  # put back


# --- 4. scaled_dot_product_attention with dropout_p=0 is not random ---------------------------


def test_sdpa_without_dropout_is_not_a_random_op():
    q = torch.randn(1, 2, 4, 8, requires_grad=True)
    assert audit_rng(lambda t: F.scaled_dot_product_attention(t, t, t, dropout_p=0.0), q) == []
    records = audit_rng(lambda t: F.scaled_dot_product_attention(t, t, t, dropout_p=0.5), q)
    assert records and all(r.rule is None for r in records)


def test_sdpa_without_dropout_does_not_hide_the_real_cause():
    state = {"scale": 1.0}

    def fn(t):
        s = t * state["scale"]  # the recomputation reads the changed scale (CKP201)
        out = F.scaled_dot_product_attention(s, s, s, dropout_p=0.0)
        state["scale"] += 1.0
        return out

    q = torch.randn(1, 2, 4, 8, requires_grad=True)
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(fn, q, variants=[{"use_reentrant": False, "preserve_rng_state": False}])
    assert "CKP201" in info.value.rule_codes
    assert "CKP101" not in info.value.rule_codes


# --- 5. reentrant checkpoint of a function returning a dict ----------------------------------


def test_reentrant_dict_output_is_explained():
    torch.manual_seed(0)
    lin = nn.Linear(6, 6)

    def fn(a):
        return {"y": lin(a).tanh()}

    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(fn, x_in(), variants=[{"use_reentrant": True}])
    (result,) = info.value.results
    assert result.calls == 1
    text = str(info.value)
    assert "reentrant checkpoint drops the gradients of outputs nested in containers" in text
    assert "recomputation" not in " ".join(s.cause for s in result.suggestions)
    assert "CKP201" not in info.value.rule_codes


def test_reentrant_tuple_with_a_nested_list_is_explained():
    torch.manual_seed(0)
    lin = nn.Linear(6, 6)

    def fn(a):
        h = lin(a)
        return h.tanh(), [h.sigmoid()]  # the list's tensor loses its history under reentrant

    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(fn, x_in(), variants=[{"use_reentrant": True}])
    assert "output[1][0]" in str(info.value)
    assert "nested in containers" in str(info.value) and "CKP201" not in info.value.rule_codes


class Pair(NamedTuple):
    first: torch.Tensor
    second: torch.Tensor


def test_reentrant_named_tuple_output_becomes_a_tuple():
    torch.manual_seed(0)
    lin = nn.Linear(6, 6)

    def fn(a):
        h = lin(a)
        return Pair(h.tanh(), h.sigmoid())

    assert assert_checkpoint_equivalent(fn, x_in(), variants=NON_REENTRANT).ok
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(fn, x_in(), variants=[{"use_reentrant": True}])
    # the values are right; only the type changed (autograd.Function returns a plain tuple)
    assert [(d.name, d.detail) for d in info.value.differences] == [
        ("output", "type Pair in the reference run, tuple in the checkpointed run")
    ]
    assert "CKP201" not in info.value.rule_codes


# --- 6. modules reached through a container or an object -------------------------------------


def test_module_in_a_list_or_on_an_object_is_isolated_and_compared():
    torch.manual_seed(0)
    layers = [nn.Sequential(nn.Linear(6, 6), nn.BatchNorm1d(6))]
    holder = types.SimpleNamespace(model=nn.Sequential(nn.Linear(6, 6), nn.BatchNorm1d(6)))
    before = [m[1].running_mean.clone() for m in (layers[0], holder.model)]

    def via_list(a):
        return layers[0](a)

    def via_object(a):
        return holder.model(a)

    for fn in (via_list, via_object):
        with pytest.raises(CheckpointMismatch) as info:
            assert_checkpoint_equivalent(fn, x_in(), variants=NON_REENTRANT)
        assert "CKP203" in info.value.rule_codes
    after = [m[1].running_mean for m in (layers[0], holder.model)]
    assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True))  # the caller's modules untouched
    assert layers[0][0].weight.grad is None and holder.model[0].weight.grad is None


def test_modules_argument_and_warning_when_parameters_are_unreachable():
    torch.manual_seed(0)
    bn = nn.BatchNorm1d(6)
    hidden = {"deep": {"deeper": [[bn]]}}

    def fn(a):
        return hidden["deep"]["deeper"][0][0](a) * 2

    with pytest.warns(CheckpointingWarning, match="modules="):
        check_checkpoint_equivalent(fn, x_in(), variants=NON_REENTRANT)
    bn.reset_running_stats()  # the unisolated run above updated it
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(fn, x_in(), variants=NON_REENTRANT, modules={"bn": bn})
    assert "CKP203" in info.value.rule_codes
    assert torch.equal(bn.running_mean, torch.zeros(6))


# --- 7. an explicit torch.Generator passed in -------------------------------------------------


def test_explicit_generator_argument_is_reset_between_runs():
    gen = torch.Generator().manual_seed(7)
    start = gen.get_state()

    def noisy(a, g):
        noise = torch.rand(a.shape, generator=g)  # drawn again by the recomputation
        return torch.tanh(a) * 2 + noise  # the gradient does not depend on the noise

    report = check_checkpoint_equivalent(noisy, x_in(), gen, variants=NON_REENTRANT)
    diffs = report.results[0].differences
    assert not [d for d in diffs if d.kind in ("output", "input_grad")], [d.describe() for d in diffs]
    # the recomputation draws from the generator again: its state after the step differs (CKP103)
    assert [d.name for d in diffs] == ["generator input[1]"]
    assert "CKP103" in {s.code for s in report.results[0].suggestions}
    assert torch.equal(gen.get_state(), start)  # the caller's generator is not advanced


def test_explicit_generator_in_closure_is_reset_between_runs():
    gen = torch.Generator().manual_seed(7)
    start = gen.get_state()

    def noisy(a):
        noise = torch.rand(a.shape, generator=gen)
        return torch.tanh(a) * 2 + noise

    report = check_checkpoint_equivalent(noisy, x_in(), variants=NON_REENTRANT)
    diffs = report.results[0].differences
    assert [d.name for d in diffs] == ["generator gen"], [d.describe() for d in diffs]
    assert "CKP103" in {s.code for s in report.results[0].suggestions}
    assert torch.equal(gen.get_state(), start)


# --- 8. mutable inputs ------------------------------------------------------------------------


def test_mutable_input_appended_twice_is_caught():
    def fn(a, cache):
        cache.append(a.detach())
        return a.tanh()

    user_cache: list = []
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(fn, x_in(), user_cache, variants=NON_REENTRANT)
    assert any(d.kind == "input_state" and d.name.startswith("input[1]") for d in info.value.differences)
    assert "CKP202" in info.value.rule_codes
    assert user_cache == []


def test_cache_object_input_appended_twice_is_caught():
    lin = nn.Linear(6, 6)

    def layer(a, cache):
        h = lin(a)
        cache.layers.append(h.detach())  # a KV-cache update inside the region runs again
        return h.tanh()

    cache = Cache()
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(layer, x_in(), cache, variants=[{"use_reentrant": True}])
    names = [d.name for d in info.value.differences if d.kind == "input_state"]
    assert names == ["input[1].layers[1]"], names
    assert cache.layers == []


# --- 9. keyword arguments and the reentrant variant -------------------------------------------


def test_keyword_arguments_make_reentrant_not_applicable():
    def fn(a, *, scale):
        return torch.tanh(a * scale)

    report = assert_checkpoint_equivalent(fn, x_in(), kwargs={"scale": 2.0})
    non_reentrant, reentrant = report.results
    assert non_reentrant.ok and non_reentrant.not_applicable is None
    assert reentrant.ok and reentrant.not_applicable
    assert "keyword arguments" in reentrant.not_applicable
    assert "not applicable to the reentrant variant" in str(report)


# --- 10. selective activation checkpointing memory, CPU peak and time spread -----------------


def test_cpu_peak_and_time_spread_are_reported():
    torch.manual_seed(0)
    blocks = nn.ModuleList(nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 32)) for _ in range(3))
    x = torch.randn(16, 32, requires_grad=True)
    sac = functools.partial(
        create_selective_checkpoint_contexts, [torch.ops.aten.addmm.default, torch.ops.aten.gelu.default]
    )

    def plain():
        h = x
        for b in blocks:
            h = h + b(h)
        h.sum().backward()

    def selective():
        h = x
        for b in blocks:
            h = h + torch.utils.checkpoint.checkpoint(b, h, use_reentrant=False, context_fn=sac)
        h.sum().backward()

    report = compare_memory(plain, selective, iters=3)
    p, c = report.plain, report.checkpointed
    assert p.op_peak_bytes and c.op_peak_bytes  # measured on the CPU
    # SAC caches every addmm/gelu output outside saved_tensors_hooks: the saved-activation figure
    # misses them, the op peak does not
    print(report)
    assert report.memory_ratio < 0.5
    assert report.op_peak_ratio > 0.8
    assert p.min_time_s <= p.median_time_s <= p.max_time_s
    text = str(report)
    assert "op peak (all devices)" in text and "fastest step (min)" in text and "slowest step (max)" in text


# --- 11. warn when a pass proves nothing ------------------------------------------------------


def test_eval_mode_and_no_recomputation_warn():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 6), nn.Dropout(0.5)).eval()
    with pytest.warns(CheckpointingWarning, match="eval mode"):
        report = assert_checkpoint_equivalent(model, x_in(), variants=NON_REENTRANT)
    assert any("no random op" in n for n in report.notes)

    def no_grad_out(a):
        return a.detach() * 2  # nothing to backpropagate: the region never recomputes

    with pytest.warns(CheckpointingWarning, match="never recomputed"):
        assert_checkpoint_equivalent(no_grad_out, x_in(), variants=NON_REENTRANT)


def test_a_meaningful_pass_does_not_warn():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 6), nn.Dropout(0.5)).train()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CheckpointingWarning)
        report = assert_checkpoint_equivalent(model, x_in(), variants=NON_REENTRANT)
    assert report.notes == []


# --- 12. messages -----------------------------------------------------------------------------


@pytest.mark.slow
def test_many_batchnorm_buffers_are_grouped():
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Sequential(nn.Linear(6, 6), nn.BatchNorm1d(6)) for _ in range(18)])
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(model, x_in(), variants=NON_REENTRANT)
    text = str(info.value)
    assert "54 BatchNorm buffers in 18 layers" in text
    assert text.count("running_var") < 10


def test_reprs_are_bounded_and_zero_reference_has_no_inf():
    d = compare_tensors("output", "out", torch.zeros(3), torch.tensor([0.0, 1.0, 0.0]), rtol=1e-5, atol=1e-6)
    assert d is not None and d.max_abs == 1.0
    assert "inf" not in d.describe()
    assert "reference is 0" in d.describe()

    state = {"log": ""}

    def fn(a):
        state["log"] += "x" * 5000
        return a.tanh()

    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(fn, x_in(), variants=NON_REENTRANT)
    assert len(str(info.value)) < 2000

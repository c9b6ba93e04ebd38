"""audit_rng and stash_plan on real torch (CPU)."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("torch")
import torch
import torch.nn.functional as F
from torch import nn

from ckptlint.runtime import RngRecord, audit_rng, capture_rng, stash_plan
from ckptlint.runtime.states import rng_differences


def x_in() -> torch.Tensor:
    return torch.randn(4, 6, generator=torch.Generator().manual_seed(0), requires_grad=True)


def test_dropout_on_cpu_is_preserved():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 6), nn.Dropout(0.5))
    records = audit_rng(model, x_in())
    assert len(records) == 1
    (rec,) = records
    assert isinstance(rec, RngRecord)
    assert rec.op.startswith("aten.bernoulli") and rec.device == "cpu"
    assert rec.preserved is True and rec.rule is None
    assert rec.source == "default generator"


def test_explicit_generator_is_not_preserved():
    gen = torch.Generator().manual_seed(3)

    def fn(a):
        keep = F.dropout(a, 0.2, training=True)  # default generator: preserved
        return keep + torch.rand(a.shape, generator=gen)  # explicit generator: not preserved

    records = audit_rng(fn, x_in())
    assert [(r.op.split(".")[1], r.preserved) for r in records] == [("bernoulli_", True), ("rand", False)]
    explicit = records[1]
    assert explicit.source == "explicit generator" and explicit.rule == "CKP103"
    assert explicit.device == "cpu"


def test_explicitly_passed_default_generator_counts_as_default():
    def fn(a):
        return a + torch.randn(a.shape, generator=torch.default_generator)

    (rec,) = audit_rng(fn, x_in())
    assert rec.preserved and rec.source == "default generator"


def test_preserve_rng_state_false_preserves_nothing():
    def fn(a):
        return a * torch.randn_like(a) + torch.randperm(6).float()

    records = audit_rng(fn, x_in(), preserve_rng_state=False)
    assert {r.op for r in records} == {"aten.randn_like.default", "aten.randperm.default"}
    assert all(not r.preserved and r.rule == "CKP101" for r in records)


def test_python_and_numpy_generators_are_reported():
    np = pytest.importorskip("numpy")

    def fn(a):
        return a * random.random() + float(np.random.rand())

    records = audit_rng(fn, x_in())
    assert [(r.source, r.preserved, r.rule) for r in records] == [
        ("python random", False, "CKP103"),
        ("numpy", False, "CKP103"),
    ]


def test_deterministic_function_has_no_records_and_rng_is_untouched():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 6), nn.Dropout(0.1), nn.Tanh())
    before = capture_rng()
    assert audit_rng(lambda a: (a @ a.T).relu(), x_in()) == []
    assert len(audit_rng(model, x_in())) == 1
    assert rng_differences(before, capture_rng()) == []


def test_eval_mode_dropout_runs_no_random_op():
    model = nn.Sequential(nn.Linear(6, 6), nn.Dropout(0.5)).eval()
    assert audit_rng(model, x_in()) == []


def test_stash_plan_for_cpu_inputs():
    plan = stash_plan(x_in(), 3, [torch.ones(2)])
    assert plan.preserve_rng_state is True
    assert plan.devices == frozenset()  # only the CPU generator
    assert plan.multiple_device_types is False
    # with no accelerator torch >= 2.10 infers "cpu"; 2.9 defaulted to "cuda"
    from torch.utils.checkpoint import DefaultDeviceType

    assert plan.device_type == DefaultDeviceType.get_device_type()

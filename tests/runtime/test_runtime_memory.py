"""measure / compare_memory on real torch (CPU): saved-activation bytes and step time."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("torch")
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from ckptlint.runtime import (
    MemoryReport,
    StepMeasurement,
    capture_rng,
    compare_memory,
    measure,
)
from ckptlint.runtime.states import rng_differences

B, D, H, N = 16, 32, 64, 3  # batch, width, hidden width, blocks
F32 = 4  # bytes


def stack():
    torch.manual_seed(0)
    blocks = nn.ModuleList(nn.Sequential(nn.Linear(D, H), nn.GELU(), nn.Linear(H, D)) for _ in range(N))
    x = torch.randn(B, D, requires_grad=True)

    def plain():
        h = x
        for b in blocks:
            h = h + b(h)
        h.sum().backward()

    def checkpointed(reentrant):
        def step():
            h = x
            for b in blocks:
                h = h + checkpoint(b, h, use_reentrant=reentrant)
            h.sum().backward()

        return step

    return plain, checkpointed


@pytest.mark.slow
@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpointed_mlp_stack_saves_fewer_activations(reentrant):
    plain, checkpointed = stack()
    report = compare_memory(plain, checkpointed(reentrant), iters=3)
    assert isinstance(report, MemoryReport)
    # plain: each block keeps its input h (x itself is a grad-requiring leaf, not counted),
    # the first Linear's output (GELU input) and the GELU output (second Linear's input)
    assert report.plain.saved_activation_bytes == ((N - 1) * B * D + N * 2 * B * H) * F32
    # checkpointed: only the inputs of the regions stay alive until backward
    assert report.checkpointed.saved_activation_bytes == (N - 1) * B * D * F32
    assert report.memory_ratio == pytest.approx(((N - 1) * D) / ((N - 1) * D + N * 2 * H))
    assert 0.05 < report.memory_ratio < 0.5
    # parameters are saved by the plain step only (the checkpointed step saves them again in backward)
    assert report.plain.saved_bytes > report.plain.saved_activation_bytes
    assert report.time_ratio is not None and math.isfinite(report.time_ratio) and report.time_ratio > 0
    assert len(report.plain.times_s) == len(report.checkpointed.times_s) == 3
    assert report.peak_memory_ratio is None  # CPU: no allocator statistics
    if reentrant:  # the reentrant recomputation runs inside backward under our hooks
        assert report.checkpointed.recompute_saved_bytes > 0
    else:  # non-reentrant recomputation packs into checkpoint's own (inner) hooks
        assert report.checkpointed.recompute_saved_bytes == 0
    text = str(report)
    assert "saved activations" in text and "median step time" in text and "ratio" in text


def test_measure_reports_seconds_and_bytes_and_restores_rng():
    plain, _ = stack()
    before = capture_rng()
    m = measure(plain, device="cpu", warmup=0, iters=2)
    assert isinstance(m, StepMeasurement)
    assert m.device == "cpu" and len(m.times_s) == 2
    assert m.median_time_s == pytest.approx(sum(m.times_s) / 2)
    assert m.saved_tensors > 0 and m.peak_memory_bytes is None
    assert rng_differences(before, capture_rng()) == []


def test_measure_dedupes_storages():
    x = torch.randn(100, requires_grad=True)
    y = torch.randn(100, requires_grad=True)

    def step():
        a = x * y  # mul saves x and y (grad-requiring leaves)
        b = a.view(10, 10)
        (b.sin() * b.cos()).sum().backward()  # sin and cos both save b: one storage (a's)

    m = measure(step, iters=1, warmup=0)
    assert m.saved_tensors == 6  # x, y, b, b, sin(b), cos(b)
    assert m.saved_bytes == 5 * 100 * 4  # storages of x, y, a, sin(b), cos(b)
    assert m.saved_activation_bytes == 3 * 100 * 4  # without the leaves x and y


def test_measure_rejects_bad_counts():
    with pytest.raises(ValueError):
        measure(lambda: None, iters=0)
    with pytest.raises(ValueError):
        measure(lambda: None, warmup=-1)

"""CUDA-only checks of the runtime helper (marked ``gpu``: skipped without CUDA).

They verify on a real device what the CPU suite can only take from torch's source
(torch/utils/checkpoint.py, 2.9.1 lines 130-181 and 1524-1534): checkpoint stashes the RNG of
the device type and device indices of its POSITIONAL tensor arguments only, so a random op on a
CUDA tensor created or moved inside the region draws other numbers during recomputation. A few
seconds in total.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.checkpoint import checkpoint  # noqa: E402

from ckptlint.runtime import (  # noqa: E402
    CheckpointMismatch,
    assert_checkpoint_equivalent,
    audit_rng,
    compare_memory,
)

pytestmark = pytest.mark.gpu


class MovesToCuda(nn.Module):
    """Takes a CPU activation and moves it to CUDA inside the region (shared case 12)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16, device="cuda")

    def forward(self, h_cpu):
        h = h_cpu.to("cuda")
        return F.dropout(self.lin(h), p=0.5, training=True)


def test_device_rng_not_stashed_when_tensor_moves_to_cuda_inside_region():
    torch.manual_seed(0)
    model = MovesToCuda()
    x = torch.randn(8, 16, requires_grad=True)  # on the CPU: checkpoint sees no CUDA argument

    cuda_ops = [r for r in audit_rng(model, x) if r.device.startswith("cuda")]
    assert cuda_ops, "dropout on CUDA should be recorded"
    assert all(not r.preserved and r.rule == "CKP102" for r in cuda_ops)

    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(model, x)  # default preserve_rng_state=True, both variants
    exc = info.value
    print(exc)
    assert "CKP102" in exc.rule_codes
    names = {(d.kind, d.name) for d in exc.differences}
    assert ("rng", "torch cuda:0 RNG") in names
    assert ("param_grad", "grad of lin.weight") in names


def test_cuda_positional_input_is_preserved_and_passes():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 16), nn.Dropout(0.5)).cuda()
    x = torch.randn(8, 16, device="cuda", requires_grad=True)
    records = audit_rng(model, x)
    assert records and all(r.preserved for r in records)
    assert assert_checkpoint_equivalent(model, x).ok


def test_cuda_tensor_passed_by_keyword_is_not_stashed():
    """Non-reentrant: kwargs are not used for device inference (source-derived, checked here)."""

    def fn(*, h):
        return F.dropout(h, p=0.5, training=True) * 2

    h = torch.randn(8, 16, device="cuda", requires_grad=True)
    with pytest.raises(CheckpointMismatch) as info:
        assert_checkpoint_equivalent(fn, kwargs={"h": h}, variants=[{"use_reentrant": False}])
    assert "CKP102" in info.value.rule_codes


def test_peak_memory_and_timing_report_cuda():
    torch.manual_seed(0)
    B, D, H, N = 256, 1024, 4096, 4
    blocks = nn.ModuleList(nn.Sequential(nn.Linear(D, H), nn.GELU(), nn.Linear(H, D)) for _ in range(N)).cuda()
    x = torch.randn(B, D, device="cuda", requires_grad=True)

    def plain():
        h = x
        for b in blocks:
            h = h + b(h)
        h.sum().backward()

    def ckpt():
        h = x
        for b in blocks:
            h = h + checkpoint(b, h, use_reentrant=False)
        h.sum().backward()

    report = compare_memory(plain, ckpt, device="cuda", warmup=2, iters=5)
    print(report)
    assert report.plain.device.startswith("cuda")
    assert report.memory_ratio < 0.5
    assert report.plain.peak_memory_bytes is not None and report.plain.peak_step_bytes > 0
    assert report.peak_memory_ratio is not None and report.peak_memory_ratio < 1
    assert report.time_ratio > 1  # recomputation costs time on a GPU

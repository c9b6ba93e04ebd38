"""The pytest plugin: option, marker, fixtures (run in-process with pytester)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: the tests that run the plugin's fixtures need torch (the ``test-runtime`` extra); the
#: checks of how the plugin and the runtime import do not
HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch (the test-runtime extra)")


@pytest.fixture(scope="module", autouse=True)
def _torch_imported_before_pytester():
    """Import torch and everything the runtime pulls in lazily before pytester snapshots.

    In-process pytester runs restore ``sys.modules`` afterwards, dropping modules first
    imported inside them; importing torch's C extension a second time crashes the process.
    """
    if not HAS_TORCH:
        return
    import torch
    from torch import nn

    from ckptlint.runtime import assert_checkpoint_equivalent, audit_rng, compare_memory

    model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5))
    x = torch.ones(1, 2, requires_grad=True)
    assert_checkpoint_equivalent(model, x)
    audit_rng(model, x)

    def step():
        model(x).sum().backward()

    compare_memory(step, step, iters=1, warmup=0)


def _plugin_args() -> list[str]:
    """``-p ckptlint.pytest_plugin`` unless the installed entry point loads it already."""
    installed = any(ep.value == "ckptlint.pytest_plugin" for ep in importlib.metadata.entry_points(group="pytest11"))
    return [] if installed else ["-p", "ckptlint.pytest_plugin"]


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:cacheprovider", *_plugin_args(), *args)


@needs_torch
def test_gpu_marker_is_registered_and_skips_without_cuda(pytester):
    import torch

    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.gpu
        def test_needs_cuda():
            import torch
            assert torch.cuda.is_available()

        def test_plain():
            pass
        """
    )
    result = run(pytester, "--strict-markers", "-rs")
    if torch.cuda.is_available():
        result.assert_outcomes(passed=2)
    else:
        result.assert_outcomes(passed=1, skipped=1)
        result.stdout.fnmatch_lines(["*needs CUDA*"])
    markers = run(pytester, "--markers")
    markers.stdout.fnmatch_lines(["@pytest.mark.gpu: *CUDA*"])


@needs_torch
def test_ckpt_device_option(pytester):
    pytester.makepyfile(
        """
        def test_device(ckpt_device):
            assert str(ckpt_device) == "cpu"
        """
    )
    run(pytester, "--ckpt-device", "cpu").assert_outcomes(passed=1)
    help_text = run(pytester, "--help")
    help_text.stdout.fnmatch_lines(["*--ckpt-device=DEVICE*"])


@needs_torch
def test_ckpt_device_default_and_bad_values(pytester):
    import torch

    pytester.makepyfile(
        """
        def test_device(ckpt_device):
            import torch
            assert ckpt_device == torch.device("cuda" if torch.cuda.is_available() else "cpu")
        """
    )
    run(pytester).assert_outcomes(passed=1)
    bogus = run(pytester, "--ckpt-device", "not-a-device")
    assert bogus.ret == pytest.ExitCode.USAGE_ERROR
    bogus.stderr.fnmatch_lines(["*--ckpt-device=not-a-device: not a torch device*"])
    if not torch.cuda.is_available():
        missing = run(pytester, "--ckpt-device", "cuda")
        assert missing.ret == pytest.ExitCode.USAGE_ERROR
        missing.stderr.fnmatch_lines(["*cuda is not available*"])


@needs_torch
def test_equivalence_fixture_passes_and_fails(pytester):
    pytester.makepyfile(
        """
        import torch
        from torch import nn

        def test_good(ckpt_equivalence, ckpt_device):
            torch.manual_seed(0)
            model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.Linear(4, 2))
            report = ckpt_equivalence(model, torch.randn(3, 4, requires_grad=True))
            assert report.ok and len(report.results) == 2

        def test_batchnorm(ckpt_equivalence):
            torch.manual_seed(0)
            model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
            ckpt_equivalence(model, torch.randn(3, 4, requires_grad=True), variants=[{"use_reentrant": False}])
        """
    )
    result = run(pytester, "--ckpt-device", "cpu")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*CheckpointMismatch: checkpoint changes the step in 1 of 1 variants*",
            "*buffer 1.num_batches_tracked: max abs diff 1, max rel diff 1*",
            "*CKP203: BatchNorm running statistics are updated twice*",
        ]
    )


@needs_torch
def test_rng_audit_and_memory_fixtures(pytester):
    pytester.makepyfile(
        """
        import torch
        from torch import nn
        from torch.utils.checkpoint import checkpoint

        def test_audit(ckpt_rng_audit):
            model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
            (rec,) = ckpt_rng_audit(model, torch.randn(3, 4))
            assert rec.preserved and rec.device == "cpu"

        def test_memory(ckpt_memory, record_property):
            torch.manual_seed(0)
            blocks = nn.ModuleList(nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 8)) for _ in range(2))
            x = torch.randn(4, 8, requires_grad=True)

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

            report = ckpt_memory(plain, ckpt, iters=2)
            assert report.memory_ratio < 1
            assert ckpt_memory.measure(plain, iters=1).saved_bytes > 0
        """
    )
    result = run(pytester, "--ckpt-device", "cpu", "--junitxml=out.xml")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*ckptlint memory*", "*test_memory: memory_ratio=0.* time_ratio=* on cpu"])
    assert 'name="ckpt_memory_ratio"' in (pytester.path / "out.xml").read_text()


def _python(code: str, *extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, *extra, "-c", code], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.slow
def test_plugin_import_does_not_import_torch():
    proc = _python("import sys, ckptlint.pytest_plugin; print('torch' in sys.modules)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


@pytest.mark.slow
def test_runtime_without_torch_names_the_extra():
    proc = _python("import sys; sys.modules['torch'] = None; import ckptlint.runtime")
    assert proc.returncode != 0
    assert "ImportError: ckptlint.runtime needs PyTorch" in proc.stderr
    assert "pip install 'ckptlint[runtime]'" in proc.stderr


@needs_torch
@pytest.mark.slow
def test_model_equivalence_fixture_on_off_and_memory(pytester):
    pytester.makepyfile(
        """
        import torch
        from torch import nn
        from torch.utils.checkpoint import checkpoint
        from ckptlint.runtime import CheckpointMismatch


        class Model(nn.Module):
            def __init__(self, bn=False):
                super().__init__()
                self.blocks = nn.ModuleList(
                    nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4) if bn else nn.Dropout(0.5)) for _ in range(2)
                )
                self.grad_checkpointing = False

            def set_grad_checkpointing(self, enable=True):
                self.grad_checkpointing = enable

            def forward(self, x):
                for b in self.blocks:
                    x = checkpoint(b, x, use_reentrant=False) if self.grad_checkpointing else b(x)
                return x


        def test_good(ckpt_model_equivalence):
            torch.manual_seed(0)
            report = ckpt_model_equivalence(Model(), torch.randn(3, 4, requires_grad=True))
            assert report.results[0].recomputations == {"blocks.0": 1, "blocks.1": 1}

        def test_batchnorm(ckpt_model_equivalence):
            torch.manual_seed(0)
            try:
                ckpt_model_equivalence(Model(bn=True), torch.randn(3, 4, requires_grad=True))
            except CheckpointMismatch as exc:
                assert "CKP203" in exc.rule_codes
            else:
                raise AssertionError("BatchNorm in a region must fail")

        def test_memory(ckpt_model_equivalence):
            torch.manual_seed(0)
            report = ckpt_model_equivalence.memory(Model(), torch.randn(3, 4, requires_grad=True), iters=1, warmup=0)
            assert report.memory_ratio is not None
        """
    )
    result = run(pytester, "--ckpt-device", "cpu")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*ckptlint memory*", "*test_memory: memory_ratio=* on cpu"])

"""Output is identical (same findings, same order, same bytes) whether files are linted in
this process or in a pool, and whether results come from the cache or not."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ckptlint.lint import run as lint_run

FILES = {
    "pkg/__init__.py": "",
    "pkg/layers.py": """\
        from torch import nn

        STEPS = 0


        class Block(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.ff = nn.Linear(d, d)
                self.drop = nn.Dropout(0.1)
                self.norm = nn.BatchNorm1d(d)

            def forward(self, x):
                global STEPS
                STEPS += 1
                return self.norm(x + self.drop(self.ff(x)))
    """,
    "pkg/model_a.py": """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint

        from .layers import Block


        class ModelA(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.ModuleList([Block(8) for _ in range(4)])

            def forward(self, x):
                for block in self.blocks:
                    x = checkpoint(block, x)
                return x
    """,
    "pkg/model_b.py": """\
        import torch.utils.checkpoint as cp
        from torch import nn

        from pkg.layers import Block


        class ModelB(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block(8)

            def forward(self, x):
                x = cp.checkpoint(self.block, x, use_reentrant=False, preserve_rng_state=False)
                return cp.checkpoint(self.block, x)  # noqa: CKP001
    """,
    "pkg/sub/__init__.py": "",
    "pkg/sub/model_c.py": """\
        import functools

        from torch import nn
        from torch.utils.checkpoint import checkpoint, checkpoint_sequential

        from ..layers import Block

        ckpt = functools.partial(checkpoint, preserve_rng_state=True)


        class ModelC(nn.Module):
            def __init__(self):
                super().__init__()
                self.seq = nn.Sequential(Block(8), Block(8), nn.Linear(8, 8))

            def forward(self, x):
                x = checkpoint_sequential(self.seq, 2, x)
                return ckpt(self.seq, x)
    """,
    "train.py": """\
        from transformers import AutoModel


        def build():
            model = AutoModel.from_pretrained("m")
            model.gradient_checkpointing_enable()
            return model
    """,
    "utils.py": "def load_checkpoint(path):\n    return path\n",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name, content in FILES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(content), encoding="utf-8")
    return tmp_path


@pytest.fixture
def pools(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Force a pool for any amount of work, and record the worker counts used."""
    used: list[int] = []
    original = lint_run.in_pool

    def in_pool(tasks, workers, **options):
        used.append(workers)
        return original(tasks, workers, **options)

    monkeypatch.setattr(lint_run, "_BYTES_PER_WORKER", 1)
    monkeypatch.setattr(lint_run, "in_pool", in_pool)
    return used


@pytest.mark.slow
@pytest.mark.parametrize("output_format", ["concise", "json"])
def test_same_output_cold_warm_serial_and_parallel(project: Path, run_cli, pools: list[int], output_format: str) -> None:
    def lint(*args: str) -> str:
        result = run_cli("--isolated", "--output-format", output_format, *args)
        assert result.exit_code == 1, result.stderr
        return result.stdout

    serial = lint("--no-cache", "-j1")
    assert pools == []
    parallel = lint("--no-cache", "-j3")
    assert pools == [3]
    cold = lint("-j2")
    warm_parallel = lint("-j2")
    warm_serial = lint("-j1")
    assert pools == [3, 2]  # the warm runs lint nothing
    assert parallel == serial
    assert cold == serial
    assert warm_parallel == serial
    assert warm_serial == serial
    if output_format == "concise":
        codes = [line.split()[1] for line in serial.splitlines() if ".py:" in line]
        files = {line.split(":")[0] for line in serial.splitlines() if ".py:" in line}
        assert {"CKP001", "CKP101", "CKP202", "CKP203"} <= set(codes)
        assert {"pkg/layers.py", "pkg/model_a.py", "pkg/model_b.py", "pkg/sub/model_c.py", "train.py"} <= files

"""CKP304 checkpoint-without-grad: checkpoint calls lexically under no_grad/inference_mode."""

from __future__ import annotations

import pytest

from ckptlint.testing import findings

IMPORT = "import torch\nfrom torch.utils.checkpoint import checkpoint\n"


def test_with_no_grad() -> None:
    src = IMPORT + "def evaluate(model, x):\n    with torch.no_grad():\n        return checkpoint(model, x, use_reentrant=False)\n"
    (d,) = findings(src, "CKP304")
    assert (d.start, d.end) == ((5, 16), (5, 57))
    assert d.message == (
        "`checkpoint()` runs inside `torch.no_grad()` (line 4): autograd records nothing, so nothing is saved "
        "for backward or recomputed and the checkpoint only adds overhead; call the function directly here, "
        "or enable grad if this code is meant to train"
    )
    assert d.fix is None


@pytest.mark.parametrize(
    ("header", "spelled"),
    [
        ("from torch import no_grad\n@no_grad()\n", "no_grad()"),
        ("@torch.no_grad\n", "torch.no_grad"),
        ("@torch.inference_mode()\n", "torch.inference_mode()"),
        ("import torch.autograd as ag\n@ag.grad_mode.inference_mode(mode=True)\n", "ag.grad_mode.inference_mode(mode=True)"),
    ],
)
def test_decorators(header: str, spelled: str) -> None:
    src = IMPORT + header + "def predict(model, x):\n    return checkpoint(model, x, use_reentrant=False)\n"
    (d,) = findings(src, "CKP304")
    assert f"runs decorated with `{spelled}`" in d.message


def test_sequential_and_set_grad_enabled_false() -> None:
    src = IMPORT + (
        "from torch.utils.checkpoint import checkpoint_sequential\n"
        "with torch.set_grad_enabled(False):\n    y = checkpoint_sequential(m, 2, x, use_reentrant=False)\n"
    )
    (d,) = findings(src, "CKP304")
    assert d.message.startswith("`checkpoint_sequential()` runs inside `torch.set_grad_enabled(False)`")


@pytest.mark.parametrize(
    "body",
    [
        # enable_grad inside resets it
        "with torch.no_grad():\n    with torch.enable_grad():\n        y = checkpoint(f, x, use_reentrant=False)\n",
        "@torch.no_grad()\ndef f(x):\n    with torch.enable_grad():\n        return checkpoint(g, x, use_reentrant=False)\n",
        "with torch.no_grad():\n    with torch.set_grad_enabled(True):\n        y = checkpoint(f, x, use_reentrant=False)\n",
        # decided at run time
        "with torch.set_grad_enabled(not frozen):\n    y = checkpoint(f, x, use_reentrant=False)\n",
        "with torch.inference_mode(mode=flag):\n    y = checkpoint(f, x, use_reentrant=False)\n",
        # a nested def runs when called, not under the with
        "with torch.no_grad():\n    def step(x):\n        return checkpoint(f, x, use_reentrant=False)\n",
        "with torch.no_grad():\n    step = lambda x: checkpoint(f, x, use_reentrant=False)\n",
        # not grad-mode context managers
        "with torch.autocast('cuda'):\n    y = checkpoint(f, x, use_reentrant=False)\n",
        "with ctx:\n    y = checkpoint(f, x, use_reentrant=False)\n",
        # a local no_grad is not torch's
        "def no_grad():\n    pass\nwith no_grad():\n    y = checkpoint(f, x, use_reentrant=False)\n",
        # wrapping modules under no_grad is fine: they run later
        "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper\n"
        "with torch.no_grad():\n    block = checkpoint_wrapper(block)\n",
    ],
)
def test_negatives(body: str) -> None:
    assert findings(IMPORT + body, "CKP304") == []


def test_multiple_with_items_use_the_innermost_grad_context() -> None:
    src = IMPORT + "with torch.enable_grad(), torch.no_grad():\n    y = checkpoint(f, x, use_reentrant=False)\n"
    assert len(findings(src, "CKP304")) == 1
    src = IMPORT + "with torch.no_grad(), torch.enable_grad():\n    y = checkpoint(f, x, use_reentrant=False)\n"
    assert findings(src, "CKP304") == []

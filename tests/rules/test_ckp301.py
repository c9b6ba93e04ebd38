"""CKP301 checkpoint-used-as-save: the classification in ckptlint.checkpoint.sites.misuse, messages,
display-only fixes, and that such calls get no reentrancy findings."""

from __future__ import annotations

from pathlib import Path

import pytest

from ckptlint.api import fix_source, lint_source
from ckptlint.testing import findings
from ckptlint.text.diagnostics import Applicability, Diagnostic

IMPORT = "import os\nimport torch\nfrom torch.utils.checkpoint import checkpoint\n"
SHARED_CASES = Path(__file__).resolve().parents[1] / "cases"  # copies of the shared cases


def shown_fix(d: Diagnostic) -> str | None:
    if d.fix is None:
        return None
    assert d.fix.applicability is Applicability.DISPLAY_ONLY
    (edit,) = d.fix.edits
    return edit.content


def test_state_dict_and_path_maps_to_torch_save() -> None:
    src = IMPORT + "checkpoint(model.state_dict(), os.path.join(out_dir, f'epoch-{epoch}.pt'))\n"
    (d,) = findings(src, "CKP301")
    assert (d.start, d.end) == ((4, 1), (4, 75))
    assert d.message == (
        "`checkpoint()` is activation checkpointing, not saving training state: its callable is a "
        "`state_dict()` call, not a computation. Recomputation stores nothing; use `torch.save` or "
        "`torch.distributed.checkpoint.save`"
    )
    assert shown_fix(d) == "torch.save(model.state_dict(), os.path.join(out_dir, f'epoch-{epoch}.pt'))"
    assert d.fix.message == "Use `torch.save(model.state_dict(), os.path.join(out_dir, f'epoch-{epoch}.pt'))`"
    assert fix_source(src, unsafe=True) == src  # display-only: never applied


@pytest.mark.parametrize(
    ("call", "reason", "fix"),
    [
        (
            "checkpoint({'model': model.state_dict(), 'epoch': epoch}, path)",
            "its callable is a dict literal, not a computation",
            "torch.save({'model': model.state_dict(), 'epoch': epoch}, path)",
        ),
        (
            "checkpoint(dict(model=sd), 'last.pt')",
            "its callable is a `dict(...)` call, not a computation",
            "torch.save(dict(model=sd), 'last.pt')",
        ),
        (
            "checkpoint(self.optimizer, ckpt_path)",
            "its callable `self.optimizer` is named like an optimizer, not a computation",
            "torch.save(self.optimizer.state_dict(), ckpt_path)",
        ),
        (
            "checkpoint(lr_scheduler, 'sched.pt')",
            "its callable `lr_scheduler` is named like a learning-rate scheduler, not a computation",
            "torch.save(lr_scheduler.state_dict(), 'sched.pt')",
        ),
        (
            "checkpoint(model, 'ckpt/model.pt')",
            "it is given a file path (a string)",
            "torch.save(model.state_dict(), 'ckpt/model.pt')",
        ),
        (
            "checkpoint(model, os.path.join(d, 'm'))",
            "it is given a path (`os.path.join(...)`)",
            "torch.save(model.state_dict(), os.path.join(d, 'm'))",
        ),
        (
            "checkpoint(torch.save, state, path, use_reentrant=False)",
            "its callable is `torch.save`",
            "torch.save(state, path)",
        ),
        (
            "checkpoint('weights/last.pt', state)",
            "its callable is a string (a path), not a computation",
            "torch.save(state, 'weights/last.pt')",
        ),
        ("checkpoint(ckpt_path)", "its callable `ckpt_path` is named like a path", None),
        ("checkpoint(optimizer)", "its callable `optimizer` is named like an optimizer, not a computation", None),
    ],
)
def test_save_forms(call: str, reason: str, fix: str | None) -> None:
    (d,) = findings(IMPORT + call + "\n", "CKP301")
    assert d.message.startswith(f"`checkpoint()` is activation checkpointing, not saving training state: {reason}. ")
    assert shown_fix(d) == fix


def test_values_are_followed_through_assignments() -> None:
    src = IMPORT + (
        "def train(model, ckpt_path):\n"
        "    opt = torch.optim.AdamW(model.parameters())\n"
        "    state = {'model': model.state_dict(), 'opt': opt.state_dict()}\n"
        "    checkpoint(state, ckpt_path)\n"
        "    checkpoint(opt, 'opt.pt')\n"
    )
    first, second = findings(src, "CKP301")
    assert "its callable is `state`, a dict literal" in first.message
    assert shown_fix(first) == "torch.save(state, ckpt_path)"
    assert "its callable is `opt`, an optimizer (`torch.optim.AdamW`)" in second.message
    assert shown_fix(second) == "torch.save(opt.state_dict(), 'opt.pt')"


def test_torch_load_as_the_callable_says_load() -> None:
    (d,) = findings(IMPORT + "sd = checkpoint(torch.load, path, map_location='cpu')\n", "CKP301")
    assert d.message == (
        "`checkpoint()` is activation checkpointing, not loading training state: its callable is `torch.load`. "
        "Recomputation stores nothing to load; use `torch.load`"
    )
    assert shown_fix(d) == "torch.load(path, map_location='cpu')"


def test_save_routine_context() -> None:
    src = IMPORT + "class Trainer:\n    def save_checkpoint(self, path):\n        checkpoint(self.model, path)\n"
    (d,) = findings(src, "CKP301")
    assert d.message.startswith(
        "`checkpoint()` is activation checkpointing, not saving training state: it is called in "
        "`save_checkpoint()`, a save/resume routine, and its result is discarded. "
    )
    assert shown_fix(d) == "torch.save(self.model.state_dict(), path)"
    (d,) = findings(IMPORT + "def onSaveCheckpoint(trainer, ckpt_path):\n    return checkpoint(trainer, ckpt_path)\n", "CKP301")
    assert "`onSaveCheckpoint()`" in d.message


@pytest.mark.parametrize(
    "src",
    [
        # a routine named save_* that checkpoints a real block and uses the result
        "def save_memory_forward(self, x):\n    return checkpoint(self.block, x, use_reentrant=False)\n",
        "def resume_stage(self, h, mask):\n    h = checkpoint(self.stage, h, mask, use_reentrant=False)\n    return h\n",
        "def restore_state(self, x, state):\n    return checkpoint(self.cell, x, state, use_reentrant=False)\n",
        # branches called `path` in multi-path networks
        "def forward(self, x):\n    for path in self.paths:\n        x = checkpoint(path, x, use_reentrant=False)\n    return x\n",
        # a mode string is not a path
        "y = checkpoint(self.attn, x, 'causal', use_reentrant=False)\n",
        "y = checkpoint(self.rearrange, x, 'b h n d -> b n (h d)', use_reentrant=False)\n",
        # a module built here, with tensor inputs
        "block = torch.nn.Linear(4, 4)\ny = checkpoint(block, x, use_reentrant=False)\n",
        "y = checkpoint(self.state, x, use_reentrant=False)\n",
        "y = checkpoint(create_custom_forward(layer), h, use_reentrant=False)\n",
    ],
)
def test_real_computations_are_not_reported(src: str) -> None:
    assert findings(IMPORT + src, "CKP301") == []


def test_local_save_helper_named_checkpoint_is_not_reported() -> None:
    src = "import torch\ndef checkpoint(state, path):\n    torch.save(state, path)\ncheckpoint(model.state_dict(), 'm.pt')\n"
    assert lint_source(src, select=["ALL"]) == []


def test_reported_calls_get_no_reentrancy_findings_or_fixes() -> None:
    src = IMPORT + "checkpoint(model.state_dict(), 'model.pt', mask=m, use_reentrent=True)\n"
    assert [d.code for d in lint_source(src, select=["ALL"])] == ["CKP301"]
    assert fix_source(src, unsafe=True) == src


def test_call_through_a_partial_binding() -> None:
    src = IMPORT + "import functools\nsave = functools.partial(checkpoint, use_reentrant=False)\nsave(model.state_dict(), 'm.pt')\n"
    (d,) = findings(src, "CKP301")
    assert d.start == (6, 1)


@pytest.mark.skipif(not SHARED_CASES.is_dir(), reason="case copies not available")
def test_shared_cases() -> None:
    case21 = (SHARED_CASES / "case_21.py").read_text(encoding="utf-8")
    row = next(i for i, line in enumerate(case21.splitlines(), 1) if "# expect: CKP301" in line)
    assert [(d.code, d.start[0]) for d in lint_source(case21, select=["ALL"])] == [("CKP301", row)]
    case23 = (SHARED_CASES / "case_23.py").read_text(encoding="utf-8")
    assert lint_source(case23, select=["ALL"]) == []

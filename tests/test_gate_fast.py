"""The byte-level gate is fast and precise: rule codes, not CHECKPOINT constants; spacing in
attribute paths; dead imports."""

from __future__ import annotations

import pytest

from ckptlint.lint.gate import may_have_findings

PASS = [
    "from torch.utils.checkpoint import checkpoint\ny = checkpoint(f, x)\n",
    "from torch.utils.checkpoint import checkpoint as ck\ny = ck(f, x)\n",
    "from torch.utils.checkpoint import (\n    checkpoint,\n    checkpoint_sequential,\n)\ncheckpoint_sequential(m, 2, x)\n",
    "import torch\ny = torch.utils.checkpoint.checkpoint(f, x)\n",
    "import torch\ny = torch.utils . checkpoint\t.checkpoint(f, x)\n",
    "import torch.utils.checkpoint as cp\ncp.checkpoint(f, x)\n",
    "from torch.utils import checkpoint\ncheckpoint.checkpoint(f, x)\n",
    "from torch.utils.checkpoint import *\n",
    "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper as cw\nm = cw(m)\n",
    "model.gradient_checkpointing_enable()\n",
    "args = TrainingArguments('o', gradient_checkpointing=True)  # checkpoint\n",
    "x = 1  # noqa: CKP001\n",
    "import torch  # checkpoint\nfrom torch.distributed._composable import checkpoint\n",
]

SKIP = [
    "import torch\nx = torch.ones(1)\n",
    "import torch.utils.checkpoint\n\nclass M:\n    pass\n",  # a dead import
    "from torch.utils.checkpoint import checkpoint\n# gradient checkpointing is set elsewhere\n",
    "def load_checkpoint(path):\n    return torch.load(path)\n",
    "CHECKPOINT_KEY_NAMES = ['a']\n",  # spells C-K-P without being a rule code
    "import torch\nUNIVERSAL_CHECKPOINT_INFO = 'x'\nsave_checkpoint(m)\n",
    "from torch.utils.checkpoint import checkpoint\nmy.checkpoint(f, x)\n",  # an attribute of something else
]


@pytest.mark.parametrize("source", PASS)
def test_files_that_can_have_findings_pass(source: str) -> None:
    assert may_have_findings(source.encode())


@pytest.mark.parametrize("source", SKIP)
def test_files_that_cannot_have_findings_are_skipped(source: str) -> None:
    assert not may_have_findings(source.encode())

"""The byte-level gate never skips a file that has a checkpoint site (the API tests lint with
the gate off; the command line lints with it on), and skips files that merely say
"checkpoint"."""

from __future__ import annotations

import pytest

from ckptlint.api import lint_source
from ckptlint.lint.gate import may_have_findings

SITES = {
    "import-torch": "import torch\ny = torch.utils.checkpoint.checkpoint(f, x)\n",
    "import-torch-as": "import torch as th\nth.utils.checkpoint.checkpoint(f, x)\n",
    "import-module": "import torch.utils.checkpoint\ntorch.utils.checkpoint.checkpoint(f, x)\n",
    "import-module-as": "import torch.utils.checkpoint as X\nX.checkpoint(f, x)\n",
    "import-list": "import os, torch.utils.checkpoint as cp\ncp.checkpoint(f, x)\n",
    "import-parent-as": "import torch.utils as tu\ntu.checkpoint.checkpoint(f, x)\n",
    "from-import-as": "from torch.utils.checkpoint import checkpoint as Y\nY(f, x)\n",
    "from-parent": "from torch.utils import checkpoint\ncheckpoint.checkpoint(f, x)\n",
    "from-parent-as": "from torch.utils import checkpoint as cu\ncu.checkpoint(f, x)\n",
    "from-torch-utils": "from torch import utils\nutils.checkpoint.checkpoint(f, x)\n",
    "star": "from torch.utils.checkpoint import *\ncheckpoint(f, x)\n",
    "in-function": "def g(x):\n    from torch.utils.checkpoint import checkpoint\n    return checkpoint(f, x)\n",
    "parenthesised": "from torch.utils.checkpoint import (\n    checkpoint,\n    checkpoint_sequential,\n)\n"
    "checkpoint_sequential(m, 2, x)\n",
    "backslash": "from torch.utils.checkpoint \\\n    import checkpoint\ncheckpoint(f, x)\n",
    "semicolon": "import torch.utils.checkpoint as cp; y = cp.checkpoint(f, x)\n",
    "alias": "import torch\nck = torch.utils.checkpoint.checkpoint\nck(f, x)\n",
    "partial": "import functools\nfrom torch.utils.checkpoint import checkpoint\nck = functools.partial(checkpoint)\n",
    "wrapper": "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper as cw\n"
    "from torch.utils.checkpoint import checkpoint as c\ncw(m, checkpoint_fn=c)\n",
    "hf-enable": "model.gradient_checkpointing_enable()\n",
    "training-arguments": "import transformers as T\nT.TrainingArguments('o', gradient_checkpointing=True)\n",
    "bom": "\ufefffrom torch.utils.checkpoint import checkpoint\ncheckpoint(f, x)\n",
}


@pytest.mark.parametrize("name", sorted(SITES))
def test_gate_lets_every_site_through(name: str) -> None:
    source = SITES[name]
    assert len(lint_source(source.lstrip("\ufeff"), select=["CKP001"])) == 1
    assert may_have_findings(source.encode("utf-8"))


def test_every_site_is_reported_through_the_cli(run_cli, write) -> None:
    for name, source in SITES.items():
        write(f"{name.replace('-', '_')}.py", source.encode("utf-8"))
    result = run_cli("-q", "--isolated", ".")
    reported = sorted(line.split(":")[0] for line in result.stdout.splitlines())
    assert reported == sorted(f"{name.replace('-', '_')}.py" for name in SITES)


@pytest.mark.parametrize(
    "source",
    [
        "def load_checkpoint(path):\n    return torch.load(path)\n",
        "# activation checkpointing is off\nx = 1\n",
        "import torch.utils.checkpoint\nmodel = build()\n",  # dead import
        "from torch.utils.checkpoint import checkpoint\n",
        "import torch.distributed as dist\ndist.barrier()  # before checkpoint saving\n",
        "x = 1\n",
    ],
)
def test_gate_skips_files_without_sites(source: str) -> None:
    assert not may_have_findings(source.encode())

"""CKP302 checkpoint-module-called: the module bound by an import, called like a function."""

from __future__ import annotations

import pytest

from ckptlint.api import fix_source
from ckptlint.testing import findings
from ckptlint.text.diagnostics import Applicability


@pytest.mark.parametrize(
    "imports",
    ["from torch.utils import checkpoint\n", "import torch.utils.checkpoint as checkpoint\n"],
)
def test_module_call_is_an_error_with_a_safe_fix(imports: str) -> None:
    src = imports + "def forward(self, x):\n    return checkpoint(self.block, x, use_reentrant=False)\n"
    (d,) = findings(src, "CKP302")
    assert (d.start, d.end) == ((3, 12), (3, 58))
    assert d.message == (
        "`checkpoint` is the `torch.utils.checkpoint` module, not a function: calling it raises TypeError "
        "('module' object is not callable); call `checkpoint.checkpoint(...)`"
    )
    assert d.fix is not None and d.fix.applicability is Applicability.SAFE
    assert fix_source(src) == src.replace("return checkpoint(", "return checkpoint.checkpoint(")


def test_attribute_spelling() -> None:
    src = "import torch\ny = torch.utils.checkpoint(f, x, use_reentrant=False)\n"
    (d,) = findings(src, "CKP302")
    assert "`torch.utils.checkpoint` is the `torch.utils.checkpoint` module" in d.message
    assert fix_source(src) == "import torch\ny = torch.utils.checkpoint.checkpoint(f, x, use_reentrant=False)\n"


def test_after_the_fix_ckp001_fires_on_the_new_site() -> None:
    src = "from torch.utils import checkpoint\ny = checkpoint(f, x)\n"
    # the new site gets CKP001's fix on the next pass (unsafe here: applied with --unsafe-fixes only)
    assert fix_source(src) == "from torch.utils import checkpoint\ny = checkpoint.checkpoint(f, x)\n"
    assert fix_source(src, unsafe=True) == (
        "from torch.utils import checkpoint\ny = checkpoint.checkpoint(f, x, use_reentrant=False)\n"
    )
    with_kwargs = "from torch.utils import checkpoint\ny = checkpoint(f, x, mask=m)\n"
    # the new site raises with kwargs under reentrant: CKP001/CKP002's safe fix follows
    assert fix_source(with_kwargs) == (
        "from torch.utils import checkpoint\ny = checkpoint.checkpoint(f, x, mask=m, use_reentrant=False)\n"
    )


def test_module_called_with_training_state_is_not_turned_into_a_checkpoint() -> None:
    src = "from torch.utils import checkpoint\ncheckpoint(model.state_dict(), 'model.pt')\n"
    (d,) = findings(src, "CKP302")
    assert d.message == (
        "`checkpoint` is the `torch.utils.checkpoint` module, not a function (TypeError: 'module' object is "
        "not callable), and activation checkpointing does not save training state either: its callable is a "
        "`state_dict()` call, not a computation. Recomputation stores nothing; use `torch.save` or "
        "`torch.distributed.checkpoint.save`"
    )
    assert d.fix is not None and d.fix.applicability is Applicability.DISPLAY_ONLY
    assert d.fix.edits[0].content == "torch.save(model.state_dict(), 'model.pt')"
    assert fix_source(src, unsafe=True) == src


@pytest.mark.parametrize(
    "src",
    [
        "from torch.utils import checkpoint\ny = checkpoint.checkpoint(f, x, use_reentrant=False)\n",
        "from torch.utils.checkpoint import checkpoint\ny = checkpoint(f, x, use_reentrant=False)\n",
        "import torch.utils.checkpoint\ndef checkpoint(step=None):\n    pass\ncheckpoint(3)\n",
        "from torch.utils import checkpoint\ndef run(checkpoint):\n    return checkpoint(x)\n",
        "import torch.distributed.checkpoint as checkpoint\ncheckpoint.save(sd, checkpoint_id=p)\n",
    ],
)
def test_negatives(src: str) -> None:
    assert findings(src, "CKP302") == []

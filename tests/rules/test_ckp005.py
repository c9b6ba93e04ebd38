"""CKP005 reentrant-checkpoint-not-needed (opt-in): an explicit ``use_reentrant=True`` where
the recomputed region is fully seen and nothing in it tells the variants apart."""

from __future__ import annotations

import pytest

from ckptlint.api import lint_source
from ckptlint.testing import findings, fix

BLOCK = """\
from torch import nn
import torch
from torch.utils.checkpoint import checkpoint
STEPS = []
class Block(nn.Module):
    def __init__(self, dim, with_cp=False):
        super().__init__()
        self.with_cp = with_cp
        self.fc = nn.Linear(dim, dim)
    def _inner(self, x):
        {body}
        return self.fc(x)
    def forward(self, x):
        if self.with_cp:
            return checkpoint(self._inner, x, use_reentrant=True)
        return self._inner(x)
"""


def test_reported_with_its_condition_and_an_unsafe_fix() -> None:
    source = BLOCK.replace("{body}", "x = x * 2")
    (d,) = findings(source, "CKP005")
    assert d.message.endswith("; this code runs only when `self.with_cp` is true (it defaults to `False`)")
    assert d.fix is not None and d.fix.applicability.value == "unsafe"
    assert fix(source, "CKP005", unsafe=False) == source
    assert "checkpoint(self._inner, x, use_reentrant=False)" in fix(source, "CKP005")


@pytest.mark.parametrize(
    "body",
    [
        "x = x * 2 if torch.is_grad_enabled() else x",  # reads grad mode
        "torch.autograd.grad(x.sum(), [x])",  # a backward inside
        "STEPS.append(1)",  # an outer write: early stop changes how often it runs
        "x = self.unknown(x)",  # code ckptlint cannot see
    ],
)
def test_not_reported_where_the_region_may_need_the_reentrant_variant(body: str) -> None:
    assert findings(BLOCK.replace("{body}", body), "CKP005") == []


def test_off_by_default_and_not_for_a_variable_or_an_omitted_keyword() -> None:
    source = BLOCK.replace("{body}", "x = x * 2")
    assert [d for d in lint_source(source) if d.code == "CKP005"] == []
    assert findings(source.replace("use_reentrant=True", "use_reentrant=flag"), "CKP005") == []
    assert findings(source.replace(", use_reentrant=True", ""), "CKP005") == []
    assert findings(source.replace("use_reentrant=True", "use_reentrant=True, mask=x"), "CKP005") == []

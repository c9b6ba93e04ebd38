"""CKP102 random-op-on-unpreserved-device: randomness on a device whose RNG checkpoint does not stash.
"""

from __future__ import annotations

import textwrap

from ckptlint.api import lint_source
from ckptlint.testing import located


def test_same_device_randomness_with_defaults_is_quiet() -> None:
    source = """\
        import torch
        from torch.utils.checkpoint import checkpoint

        def f(x):
            noise = torch.randn_like(x)
            mask = x.new_empty(x.shape).bernoulli_(0.9)
            return (x + noise) * mask + torch.rand(x.shape, device=x.device)

        def run(x):
            return checkpoint(f, x, use_reentrant=False)
    """
    assert located(source) == []


def test_tensors_passed_only_by_keyword() -> None:
    source = """\
        import torch.nn.functional as F
        from torch.utils.checkpoint import checkpoint

        def f(*, hidden):
            return F.dropout(hidden, p=0.1)

        def run(h):
            return checkpoint(f, hidden=h, use_reentrant=False)
    """
    found = lint_source(textwrap.dedent(source), select=["CKP102"])
    assert [(d.start[0], d.code) for d in found] == [(5, "CKP102")]
    assert "only as a keyword argument" in found[0].message

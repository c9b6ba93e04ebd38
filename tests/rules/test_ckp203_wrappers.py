"""CKP203 through libraries' wrappers of BatchNorm: e2cnn/escnn's ``InnerBatchNorm`` (one
``torch.nn.BatchNorm3d`` per field size) inside their ``SequentialModule``."""

from __future__ import annotations

from ckptlint.testing import findings, located

# The shape of e2cnn users' equivariant blocks: a SequentialModule of conv, InnerBatchNorm and
# ReLU, checkpointed under a switch.
EQUIVARIANT_BLOCK = """\
    import {library}.nn as enn
    import torch
    from torch.utils.checkpoint import checkpoint


    class E2Block(torch.nn.Module):
        def __init__(self, in_type, out_type, use_checkpoint=False):
            super().__init__()
            self.body = enn.SequentialModule(
                enn.R2Conv(in_type, out_type, 3, padding=1),
                enn.InnerBatchNorm(out_type{options}),
                enn.ReLU(out_type),
            )
            self.use_checkpoint = use_checkpoint

        def forward(self, x):
            if self.use_checkpoint:
                return checkpoint(self.body, x, use_reentrant=False)
            return self.body(x)
"""


def test_inner_batchnorm_in_a_sequential_module_is_reported() -> None:
    for library in ("e2cnn", "escnn"):
        (finding,) = findings(EQUIVARIANT_BLOCK.format(library=library, options=""), "CKP203")
        assert finding.start == (18, 20)
        assert finding.message.startswith("enn.InnerBatchNorm (created at <string>.py:11) runs in the region")
        assert finding.message.endswith("this code runs only when `self.use_checkpoint` is true (it defaults to `False`)")


def test_inner_batchnorm_without_running_statistics_is_not_reported() -> None:
    source = EQUIVARIANT_BLOCK.format(library="e2cnn", options=", track_running_stats=False")
    assert located(source, "CKP203") == []
    positional = EQUIVARIANT_BLOCK.format(library="e2cnn", options=", 1e-5, 0.1, True, False")
    assert located(positional, "CKP203") == []

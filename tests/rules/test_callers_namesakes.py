"""The switch one call up when several classes of the module define a method of the same
name (nanotron's ``_checkpointed_forward`` in its MoE and decoder layers,
src/nanotron/models/qwen.py): a ``self.<name>(...)`` inside each class calls its own."""

from __future__ import annotations

from ckptlint.testing import findings

TWO_LAYERS = """\
    import torch
    from torch import nn
    from torch.utils.checkpoint import checkpoint


    class MoELayer(nn.Module):
        def __init__(self, recompute_layer=False):
            super().__init__()
            self.recompute_layer = recompute_layer

        def _checkpointed_forward(self, hidden_states):
            return checkpoint(self._core_forward, hidden_states)

        def _core_forward(self, hidden_states):
            return hidden_states * 2

        def forward(self, hidden_states):
            if self.recompute_layer and self.training:
                return self._checkpointed_forward(hidden_states)
            return self._core_forward(hidden_states)


    class DecoderLayer(BASE):
        def __init__(self, recompute_layer=False):
            super().__init__()
            self.recompute_layer = recompute_layer

        def _checkpointed_forward(self, hidden_states):
            return checkpoint(self._core_forward, hidden_states)

        def _core_forward(self, hidden_states):
            return hidden_states + 1

        def forward(self, hidden_states):
            if self.recompute_layer:
                return self._checkpointed_forward(hidden_states)
            return self._core_forward(hidden_states)
    """


def test_each_class_calls_its_own_method() -> None:
    found = findings(TWO_LAYERS.replace("BASE", "nn.Module"), "CKP001")
    assert [d.start[0] for d in found] == [12, 29]
    assert found[0].message.endswith(
        "this code runs only when `self.recompute_layer` is true (it defaults to `False`) and `self.training`"
    )
    assert found[1].message.endswith("this code runs only when `self.recompute_layer` is true (it defaults to `False`)")


def test_a_subclass_of_the_other_keeps_the_callers_unknown() -> None:
    # DecoderLayer(MoELayer): `self._checkpointed_forward` in MoELayer.forward may be either
    found = findings(TWO_LAYERS.replace("BASE", "MoELayer"), "CKP001")
    assert [d.start[0] for d in found] == [12, 29]
    assert all("this code runs only when" not in d.message for d in found)

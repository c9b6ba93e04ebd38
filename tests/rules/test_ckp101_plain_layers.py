"""CKP101 where the region is torch's own leaf layers: a layer of the plain table
(``ckptlint.facts.torch_facts``: no random numbers, no state written) is known code, so
``preserve_rng_state=False`` over it is harmless and not reported; a layer outside the
table stays unknown."""

from __future__ import annotations

from ckptlint.testing import findings

# The shape of lingua's multi-token-prediction heads (apps/mtp/transformer.py): a ModuleList
# filled with bias-free Linear layers in a loop, each head checkpointed without RNG replay.
HEADS = """\
    import torch
    from torch import nn


    class Heads(nn.Module):
        def __init__(self, dim, vocab, n_future_head):
            super().__init__()
            self.heads = nn.ModuleList()
            for _ in range(n_future_head):
                self.heads.append(nn.LAYER)

        def forward(self, h):
            out = []
            for i, head in enumerate(self.heads):
                out.append(torch.utils.checkpoint.checkpoint(head, h, use_reentrant=False, preserve_rng_state=False))
            return out
    """


# A projection held directly (probe heads: `checkpoint_wrapper(m.head, preserve_rng_state=False)`
# over `m.head = nn.Linear(d, 16)`).
HEAD = """\
    import torch
    from torch import nn


    class LinearProbe(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.lin = nn.LAYER

        def forward(self, h):
            return torch.utils.checkpoint.checkpoint(self.lin, h, use_reentrant=False, preserve_rng_state=False)
    """


def test_a_plain_layer_held_directly_is_not_reported() -> None:
    assert findings(HEAD.replace("LAYER", "Linear(dim, 16)"), "CKP101") == []
    assert findings(HEAD.replace("LAYER", "LayerNorm(dim)"), "CKP101") == []


def test_a_layer_held_directly_outside_the_table_stays_unknown() -> None:
    found = findings(HEAD.replace("LAYER", "Embedding(16, dim, max_norm=1.0)"), "CKP101")
    assert "cannot see what it recomputes" in found[0].message


def test_plain_linear_heads_are_not_reported() -> None:
    assert findings(HEADS.replace("LAYER", "Linear(dim, vocab, bias=False)"), "CKP101") == []


def test_a_convolution_and_an_activation_are_plain() -> None:
    layer = "Sequential(nn.Conv2d(dim, dim, 3), nn.GroupNorm(1, dim), nn.GELU())"
    assert findings(HEADS.replace("LAYER", layer), "CKP101") == []


def test_a_dropout_among_them_is_reported() -> None:
    found = findings(HEADS.replace("LAYER", "Sequential(nn.Linear(dim, vocab), nn.Dropout(0.1))"), "CKP101")
    assert [d.start[0] for d in found] == [15]
    assert "draws random numbers (nn.Dropout" in found[0].message


def test_rrelu_is_random() -> None:
    found = findings(HEADS.replace("LAYER", "RReLU()"), "CKP101")
    assert [d.start[0] for d in found] == [15]
    assert "draws random numbers (nn.RReLU" in found[0].message


def test_a_layer_outside_the_table_stays_unknown() -> None:
    # Embedding with max_norm renormalizes its weight in place: left out of the plain table
    found = findings(HEADS.replace("LAYER", "Embedding(vocab, dim, max_norm=1.0)"), "CKP101")
    assert [d.start[0] for d in found] == [15]
    assert "cannot see what it recomputes" in found[0].message

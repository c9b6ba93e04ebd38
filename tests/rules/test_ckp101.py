"""CKP101 rng-state-not-preserved: random ops in a region recomputed with ``preserve_rng_state=False``,
which layers draw (a dropout whose rate is 0 draws nothing) and the conditions stated.
"""

from __future__ import annotations

import textwrap

from ckptlint.api import lint_source
from ckptlint.testing import findings, located

UNIPERCEIVER = """\
    import torch
    import torch.nn.functional as F
    import torch.utils.checkpoint as cp
    from torch import nn


    class WindowedAttention(nn.Module):  # ViT-Adapter wsdm2023/.../base/uniperceiver.py:109-173
        def __init__(self, dim, num_heads=8, qkv_bias=False, attn_drop=0., proj_drop=0., window_size=14):
            super().__init__()
            self.attn_drop = nn.Dropout(attn_drop)
            self.proj_drop = nn.Dropout(proj_drop)
            self.out_proj = nn.Linear(dim, dim)
            self.head_drop = attn_drop

        def forward(self, x, q, q_mask):
            mask = torch.cat([torch.ones(q_mask.shape, dtype=q_mask.dtype).cuda(), q_mask], dim=1)
            attn = x.masked_fill(mask == 0, float('-inf')).softmax(dim=-1)
            attn = self.attn_drop(attn)
            attn = F.dropout(attn, self.head_drop, self.training)
            x = self.out_proj(attn)
            q = self.proj_drop(x)
            return x, q


    class MultiModelBertLayer(nn.Module):  # uniperceiver.py:176-220
        def __init__(self, hidden_size=768, heads=12, with_cp=False):
            super().__init__()
            self.with_cp = with_cp
            self.self_attn = WindowedAttention(hidden_size, heads, qkv_bias=True, {rates})

        def forward(self, x, q, q_mask):
            def _inner_forward(x, q, q_mask):
                return self.self_attn(x, q, q_mask)

            if self.with_cp and x.requires_grad:
                x, q = cp.checkpoint(_inner_forward, x, q, q_mask, use_reentrant=False{rng})
            else:
                x, q = _inner_forward(x, q, q_mask)
            return x, q
"""


def test_dropout_with_rate_zero_passed_or_left_by_the_constructing_call_draws_nothing():
    # the only construction passes attn_drop=0., proj_drop=0. (or leaves the defaults 0.): no
    # dropout of the region draws, so the `.cuda()` mask moves nothing that a random op uses
    for rates in ("attn_drop=0., proj_drop=0.", "window_size=7", "attn_drop=0, proj_drop=0.0 if with_cp else 0"):
        source = UNIPERCEIVER.replace("{rates}", rates)
        assert located(source.replace("{rng}", ""), "CKP102") == [], rates
        assert located(source.replace("{rng}", ", preserve_rng_state=False"), "CKP101") == [], rates


def test_dropout_with_a_rate_above_zero_or_not_known_stays_reported():
    found = located(UNIPERCEIVER.replace("{rates}", "attn_drop=0., proj_drop=0.1").replace("{rng}", ""), "CKP102")
    assert found == [(21, "CKP102")]
    found = located(UNIPERCEIVER.replace("{rates}", "attn_drop=0.1").replace("{rng}", ""), "CKP102")
    assert found == [(18, "CKP102"), (19, "CKP102")]
    # a rate from the layer's own arguments, which the constructing call does not fix
    unknown = UNIPERCEIVER.replace("heads=12, with_cp=False", "heads=12, drop=0.0, with_cp=False")
    unknown = unknown.replace("{rates}", "attn_drop=drop, proj_drop=drop")
    assert located(unknown.replace("{rng}", ""), "CKP102") == [(18, "CKP102"), (19, "CKP102"), (21, "CKP102")]
    assert len(located(unknown.replace("{rng}", ", preserve_rng_state=False"), "CKP101")) == 1


def test_default_rate_of_the_class_a_site_is_in_is_not_trusted():
    # `Block(drop=0.1)` may be built anywhere (a config, another module): its own default says
    # nothing about the rate used, so the dropout may draw
    source = """\
        import torch.utils.checkpoint as cp
        from torch import nn


        class Block(nn.Module):
            def __init__(self, dim, drop=0.0):
                super().__init__()
                self.fc = nn.Linear(dim, dim)
                self.drop = nn.Dropout(drop)

            def _inner(self, x):
                return self.drop(self.fc(x))

            def forward(self, x):
                return cp.checkpoint(self._inner, x, use_reentrant=False, preserve_rng_state=False)
    """
    assert located(source, "CKP101") == [(15, "CKP101")]
    assert located(source.replace("nn.Dropout(drop)", "nn.Dropout(0.)"), "CKP101") == []


def test_preserve_rng_state_false_over_unseen_layers_states_the_condition():
    # unsloth models/llama.py:1155-1192: Hugging Face decoder layers, dropout 0.0 by default
    source = """\
        import torch


        def forward(self, hidden_states, mask, position_ids):
            for idx, decoder_layer in enumerate(self.layers):
                def create_custom_forward(module):
                    def custom_forward(*inputs):
                        return module(*inputs)
                    return custom_forward

                hidden_states = torch.utils.checkpoint.checkpoint(
                    create_custom_forward(decoder_layer), hidden_states, mask, position_ids,
                    use_reentrant=True, preserve_rng_state=False,
                )[0]
            return hidden_states
    """
    found = located(source, "CKP101", messages=True)
    assert [(row, code) for row, code, _ in found] == [(13, "CKP101")]
    assert "cannot see" in found[0][2] and "if that code draws random numbers in training (a dropout with p > 0" in found[0][2]
    # the same loop over layers the tree defines, with no random op: not reported
    layer = "from torch import nn\n\n\nclass Layer(nn.Module):\n    def forward(self, x, m, p):\n        return (x,)\n\n\n"
    seen = layer + textwrap.dedent(source).replace(
        "import torch\n", "import torch\nLAYERS = [Layer(), Layer()]\n"
    ).replace("enumerate(self.layers)", "enumerate(LAYERS)")
    assert located(seen, "CKP101") == []


def test_rate_bound_by_a_partial_is_not_taken_for_the_default():
    # `block_fn = partial(Block, drop=0.1)` then `block_fn(dim)`: the call passes more than it shows
    source = """\
        from functools import partial

        import torch.utils.checkpoint as cp
        from torch import nn


        class Block(nn.Module):
            def __init__(self, dim, drop=0.0):
                super().__init__()
                self.drop = nn.Dropout(drop)

            def forward(self, x):
                return self.drop(x)


        class Stage(nn.Module):
            def __init__(self, dim):
                super().__init__()
                block_fn = {block_fn}
                self.block = block_fn(dim)

            def forward(self, x):
                return cp.checkpoint(self.block, x, use_reentrant=False, preserve_rng_state=False)
    """
    assert located(source.replace("{block_fn}", "partial(Block, drop=0.1)"), "CKP101") == [(23, "CKP101")]
    assert located(source.replace("{block_fn}", "Block"), "CKP101") == []


IMPORT = "from torch.utils.checkpoint import checkpoint\n"


def test_parameter_resolves_through_its_annotation() -> None:
    source = """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint


        class ExpertBlock(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.drop = nn.Dropout(0.1)

            def forward(self, x):
                return self.drop(x)


        def apply(layer: ExpertBlock, h):
            return checkpoint(layer, h, use_reentrant=False, preserve_rng_state=False)
        """
    ((row, code, message),) = located(source, "CKP101", messages=True)
    assert (row, code) == (15, "CKP101")
    assert "draws random numbers (nn.Dropout at line 11)" in message  # where it runs


def test_region_calling_unknown_code_is_partially_known() -> None:
    source = IMPORT + textwrap.dedent(
        """\
        from torch import nn


        def create_custom_forward(module):
            def custom_forward(*inputs):
                return module(*inputs)
            return custom_forward


        def run(layers, x):
            for layer in layers:
                x = checkpoint(create_custom_forward(layer), x, use_reentrant=False, preserve_rng_state=False)
            return x


        class Plain(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(4, 4)

            def forward(self, x):
                return checkpoint(lambda t: self.lin(t).relu(), x, use_reentrant=False, preserve_rng_state=False)
        """
    )
    found = located(source, "CKP101", messages=True)
    assert [(row, code) for row, code, _ in found] == [(13, "CKP101")]
    assert "ckptlint cannot see all of what it recomputes (the region calls `module(...)` at line 7" in found[0][2]


def test_torch_wrapper_of_an_unknown_module_is_not_resolved() -> None:
    # accelerate fsdp_utils: `layer` is rebound to checkpoint_wrapper(layer, ...) in the loop
    source = """\
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper


        def wrap(model, children):
            for name, layer in children(model):
                layer = checkpoint_wrapper(layer, preserve_rng_state=False)
                model.register_module(name, layer)
        """
    ((row, code, message),) = located(source, "CKP101", messages=True)
    assert (row, code) == (6, "CKP101")
    assert "ckptlint cannot see what it recomputes" in message


def test_factory_closure_over_module_list_loop() -> None:
    source = """\
        import torch
        from torch import nn

        class Layer(nn.Module):
            def __init__(self):
                super().__init__()
                self.drop = nn.Dropout(0.1)

            def forward(self, x):
                return self.drop(x)

        class Encoder(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.layers = nn.ModuleList([Layer() for _ in range(n)])

            def forward(self, x):
                for i, layer in enumerate(self.layers):
                    def create_custom_forward(module):
                        def custom_forward(*inputs):
                            return module(*inputs)
                        return custom_forward
                    x = torch.utils.checkpoint.checkpoint(
                        create_custom_forward(layer), x, use_reentrant=False, preserve_rng_state=False
                    )
                return x
    """
    found = lint_source(textwrap.dedent(source), select=["CKP101"])
    assert [(d.start[0], d.code) for d in found] == [(24, "CKP101")]
    assert "nn.Dropout at line 10" in found[0].message


def test_layer_switched_off_by_literal_is_quiet() -> None:
    source = """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Sequential(nn.Linear(4, 4), nn.Dropout(p=0.0), nn.InstanceNorm1d(4))

            def forward(self, x):
                return checkpoint(self.body, x, use_reentrant=False, preserve_rng_state=False)
    """
    assert located(source) == []


NESTED_FOUR_LEVELS = """\
from torch import nn
from torch.utils.checkpoint import checkpoint


class B0(nn.Module):
    def __init__(self):
        super().__init__()
        self.n = B1()

    def forward(self, x):
        return self.n(x)


class B1(nn.Module):
    def __init__(self):
        super().__init__()
        self.n = B2()

    def forward(self, x):
        return self.n(x)


class B2(nn.Module):
    def __init__(self):
        super().__init__()
        self.n = B3()

    def forward(self, x):
        return self.n(x)


class B3(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.1)
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        return self.bn(self.drop(x))


def run(x):
    return checkpoint(B0(), x, use_reentrant=False, preserve_rng_state=False)
"""


def test_a_random_op_below_the_levels_followed_gets_the_hedged_message() -> None:
    # Model -> Layer -> Attention -> Core -> Dropout: the fourth level is not looked at, so
    # `preserve_rng_state=False` is reported as covering code ckptlint cannot see
    found = located(NESTED_FOUR_LEVELS, "CKP101", messages=True)
    assert [(row, code) for row, code, _ in found] == [(43, "CKP101")]
    assert "below the 3 levels of calls ckptlint follows" in found[0][2]
    three_levels = NESTED_FOUR_LEVELS.replace("        self.n = B3()\n", "        self.n = nn.Dropout(0.1)\n")
    (row, code, message) = located(three_levels, "CKP101", messages=True)[0]
    assert "draws random numbers (nn.Dropout" in message


def test_an_op_whose_dropout_is_not_known_may_draw() -> None:
    # lerobot's pi05 memory: `dropout = attention.dropout if attention.training else 0.0` where
    # `attention` is a library module (SigLIP's attention, `attention_dropout` 0.0 by default)
    source = """\
        import torch.nn.functional as F
        from torch.utils.checkpoint import checkpoint


        def attend(attention, q, k, v):
            dropout = attention.dropout if attention.training else 0.0
            return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout)


        def forward(attention, q, k, v):
            return checkpoint(attend, attention, q, k, v, use_reentrant=False, preserve_rng_state=False)
        """
    (d,) = findings(source, "CKP101")
    assert "may draw random numbers (F.scaled_dot_product_attention at line 7, whose dropout probability" in d.message
    (sure,) = findings(source.replace("dropout_p=dropout", "dropout_p=0.1"), "CKP101")
    assert "draws random numbers (F.scaled_dot_product_attention at line 7)" in sure.message

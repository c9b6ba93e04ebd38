"""CKP201 recompute-reads-mutable-global: state a region reads that can change between the forward
run and the recompute (loop variables, globals, closures), and the state that cannot.
"""

from __future__ import annotations

import textwrap

from programs import ITEMS

from ckptlint.api import lint_source
from ckptlint.testing import located


def test_global_rebound_by_a_configuration_setter_is_not_reported():
    source = """\
        from torch.utils.checkpoint import checkpoint

        _USE_REENTRANT_CKPT = False  # timm/layers/config.py
        _IS_GRAPH_CAPTURING = False  # Megatron cuda_graphs.py


        def set_reentrant_ckpt(enable=True):
            global _USE_REENTRANT_CKPT
            _USE_REENTRANT_CKPT = enable


        def set_is_graph_capturing():
            global _IS_GRAPH_CAPTURING
            _IS_GRAPH_CAPTURING = True


        def body(x):
            if _IS_GRAPH_CAPTURING or _USE_REENTRANT_CKPT:
                return x
            return x * 2


        def run(x):
            return checkpoint(body, x, use_reentrant=False)
    """
    assert located(source, "CKP201") == []


def test_global_changed_after_the_call_or_in_the_loop_or_by_the_region_is_reported():
    source = """\
        from torch.utils.checkpoint import checkpoint

        SCALE = 1.0
        STEP = 0
        TABLE = {"k": 1.0}


        def body(x):
            global STEP
            STEP += 1
            return x * SCALE * STEP * TABLE["k"]


        def train(xs):
            global SCALE
            for x in xs:
                y = checkpoint(body, x, use_reentrant=False)
                TABLE["k"] = 0.5
            SCALE = 0.5
            return y
    """
    found = lint_source(textwrap.dedent(source), select=["CKP201"])
    names = sorted(d.message.split("`")[1] for d in found)
    assert names == ["SCALE", "STEP", "TABLE"]


def test_closure_object_read_for_another_attribute_than_the_one_written():
    # DeepSpeed pipe/module.py: exec_func reads self.forward_funcs and writes self.curr_layer
    source = """\
        from torch.utils.checkpoint import checkpoint


        class Pipe:
            def forward(self, x):
                def exec_range_func(start, end):
                    def exec_func(*inputs):
                        for idx, layer in enumerate(self.forward_funcs[start:end]):
                            self.curr_layer = idx
                            inputs = layer(inputs) * self.scale * self.curr_layer
                            self.scale += 1
                        return inputs
                    return exec_func
                return checkpoint(exec_range_func(0, 2), x, use_reentrant=False)
    """
    found = lint_source(textwrap.dedent(source), select=["CKP201"])
    assert [(d.start[0], d.message.split("`")[1]) for d in found] == [(10, "self")]


def test_closure_called_after_a_write_that_follows_its_definition_is_not_reported():
    # Megatron tests/unit_tests/tensor_parallel/test_random.py: `weight` is assigned after the
    # `def` that makes the checkpoint call, but before that function is called
    source = """\
        import torch
        from torch.utils.checkpoint import checkpoint


        def test(x):
            def fused(h):
                return h * weight

            def checkpoint_forward(h):
                return checkpoint(fused, h, use_reentrant=False)

            weight = torch.randn(4)
            out = checkpoint_forward(x)
            weight.grad = None
            return out


        def test_later_write(x):
            def fused(h):
                return h * weight

            def checkpoint_forward(h):
                return checkpoint(fused, h, use_reentrant=False)

            weight = torch.randn(4)
            out = checkpoint_forward(x)
            weight = torch.zeros(4)
            return out
    """
    # `weight.grad = None` after the call does not change what the forward computes
    assert located(source, "CKP201") == [(20, "CKP201")]


def test_read_of_a_memo_table_filled_in_the_region_is_not_a_changing_read():
    # `STATS` is read before the region writes it again; `_CACHE` is only filled under `not in`
    assert located(ITEMS, "CKP201") == [(28, "CKP201")]


def test_memo_filled_through_a_chained_assignment_under_a_get_is_not_a_changing_read():
    # axolotl's scattermoe grouped GEMM: `eng = _ENGINES.get(key)`, then `_ENGINES[key] = eng = ...`
    source = """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint

        _ENGINES: dict = {}


        class Engine:
            def __init__(self, m, n):
                self.shape = (m, n)

            def forward(self, x):
                return x


        def _engine(m, n):
            key = (m, n)
            eng = _ENGINES.get(key)
            if eng is None:
                _ENGINES[key] = eng = Engine(m, n)
            return eng


        def _body(x):
            return _engine(x.shape[0], x.shape[1]).forward(x)


        class Layer(nn.Module):
            def forward(self, x):
                return checkpoint(_body, x, use_reentrant=False)
        """
    assert located(source, "CKP201") == []
    assert located(source.replace("if eng is None:", "if eng is None or True:"), "CKP201") == [(17, "CKP201")]


IMPORT = "from torch.utils.checkpoint import checkpoint\n"


def test_loop_variable_and_later_rebinding_are_reported() -> None:
    source = """\
        from torch.utils.checkpoint import checkpoint


        def forward(blocks, h, scale):
            for blk in blocks:
                def step(x):
                    return blk(x) * scale
                h = checkpoint(step, h, use_reentrant=False)
            scale = 0.0
            return h
        """
    found = located(source, "CKP201", messages=True)
    assert [(row, code) for row, code, _ in found] == [(7, "CKP201"), (7, "CKP201")]
    blk, scale = (m for _, _, m in found)
    assert blk.startswith("`blk` (the variable of the loop that runs the checkpoint at line 5)")
    assert "it sees the last iteration's value" in blk
    assert "(`blk=blk` as a default argument)" in blk
    # the message names the write that can run after the call, not the parameter
    assert scale.startswith("`scale` (reassigned at line 9, after the checkpoint call)")


def test_flags_normalised_once_before_the_loop_are_not_reported() -> None:
    # shared case_28 and the Hugging Face idiom: settled before the layer loop
    source = """\
        import torch.utils.checkpoint


        def run_layers(self, layers, hidden, use_cache=None, output_attentions=None):
            output_attentions = output_attentions if output_attentions is not None else self.output_attentions
            if self.gradient_checkpointing and self.training:
                use_cache = False
            for layer in layers:
                def create_custom_forward(module):
                    def custom_forward(*inputs):
                        return module(*inputs, output_attentions, use_cache)
                    return custom_forward
                hidden = torch.utils.checkpoint.checkpoint(create_custom_forward(layer), hidden, use_reentrant=False)
            return hidden
        """
    assert located(source) == []


def test_loop_variable_bound_as_default_argument_is_the_fix() -> None:
    source = IMPORT + textwrap.dedent(
        """\
        def forward(blocks, h):
            for blk in blocks:
                def step(x, blk=blk):
                    return blk(x)
                h = checkpoint(step, h, use_reentrant=False)
            return h
        """
    )
    assert located(source) == []


def test_dict_mutated_each_iteration_is_reported() -> None:
    source = IMPORT + textwrap.dedent(
        """\
        def forward(blocks, h, masks):
            opts = {}
            for i, blk in enumerate(blocks):
                opts["mask"] = masks[i]
                h = checkpoint(lambda x, blk=blk: blk(x, **opts), h, use_reentrant=False)
            return h
        """
    )
    ((row, code, message),) = located(source, "CKP201", messages=True)
    assert (row, code) == (6, "CKP201")
    assert message.startswith("`opts` (mutated at line 5, in the loop that runs the checkpoint)")
    assert message.endswith("pass the value in as an argument")


def test_variable_assigned_in_the_loop_is_reported() -> None:
    source = IMPORT + textwrap.dedent(
        """\
        def forward(blocks, h, past):
            for i, blk in enumerate(blocks):
                layer_past = past[i] if past is not None else None
                def step(x, blk=blk):
                    return blk(x, layer_past)
                h = checkpoint(step, h, use_reentrant=False)
            return h
        """
    )
    ((_, _, message),) = located(source, "CKP201", messages=True)
    # it differs between iterations only when `past` is given (unsloth's fast forward)
    assert message.startswith(
        "`layer_past` (reassigned at line 4, when `past is not None`, in the loop that also runs the checkpoint)"
    )
    assert "after the loop, so it sees the last iteration's value and gradients are silently wrong whenever it " \
        "differs between iterations; bind it" in message
    assert "(`layer_past=layer_past` as a default argument)" in message


def test_writes_in_a_factory_ran_before_the_closure_escaped() -> None:
    source = IMPORT + textwrap.dedent(
        """\
        def make_step(block, scale):
            scale = float(scale)
            def step(x):
                return block(x) * scale
            return step

        def forward(block, h):
            return checkpoint(make_step(block, 2), h, use_reentrant=False)
        """
    )
    assert located(source) == []


def test_nonlocal_rebinding_is_reported() -> None:
    source = IMPORT + textwrap.dedent(
        """\
        def forward(block, h):
            scale = 1.0
            def step(x):
                return block(x) * scale
            def warm_up(value):
                nonlocal scale
                scale = value
            h = checkpoint(step, h, use_reentrant=False)
            warm_up(0.5)
            return h
        """
    )
    ((_, _, message),) = located(source, "CKP201", messages=True)
    assert message.startswith("`scale` (rebound through `nonlocal` at line 8)")


def test_module_state_changed_at_run_time_is_still_reported() -> None:
    source = IMPORT + textwrap.dedent(
        """\
        SCALE = 1.0

        def set_scale(value):
            global SCALE
            SCALE = value

        def step(x):
            return x * SCALE

        def forward(h):
            h = checkpoint(step, h, use_reentrant=False)
            set_scale(0.5)
            return h
        """
    )
    assert located(source, "CKP201") == [(9, "CKP201")]
    # the setter alone runs at start-up (timm's set_reentrant_ckpt): not between forward and backward
    setter_only = source.replace("    set_scale(0.5)\n", "")
    assert setter_only != source
    assert located(setter_only, "CKP201") == []


def test_constant_settled_in_every_iteration_is_not_reported() -> None:
    # transformers GPT-2 (4.2x): `use_cache = False` under the checkpointing guard, in the loop
    source = IMPORT + textwrap.dedent(
        """\
        def forward(blocks, h, use_cache=True, training=True):
            for block in blocks:
                if training:
                    if use_cache:
                        use_cache = False
                    def create_custom_forward(module):
                        def custom_forward(*inputs):
                            return module(*inputs, use_cache)
                        return custom_forward
                    h = checkpoint(create_custom_forward(block), h, use_reentrant=False)
            return h
        """
    )
    assert located(source) == []
    # a constant rebound after the call still counts
    assert located(source.replace("    return h\n", "    use_cache = True\n    return h\n"), "CKP201") == [(9, "CKP201")]


def test_read_of_global_changed_elsewhere() -> None:
    source = """\
        from torch.utils.checkpoint import checkpoint
        import config

        WARMUP = {"factor": 1.0}

        def f(x):
            return x * WARMUP["factor"] * config.SCALE

        def train(x):
            y = checkpoint(f, x, use_reentrant=False)
            WARMUP["factor"] = 0.5
            config.SCALE = 2.0
            return y
    """
    found = lint_source(textwrap.dedent(source), select=["CKP201"])
    assert [(d.start, d.code) for d in found] == [((7, 16), "CKP201"), ((7, 35), "CKP201")]
    assert "mutated at line 11, after the checkpoint call" in found[0].message
    assert "assigned at line 12" in found[1].message
    # written before the call: the forward and the recomputation read the same values
    before = source.replace(
        "y = checkpoint(f, x, use_reentrant=False)\n            WARMUP[\"factor\"] = 0.5\n            config.SCALE = 2.0\n",
        "WARMUP[\"factor\"] = 0.5\n            config.SCALE = 2.0\n            y = checkpoint(f, x, use_reentrant=False)\n",
    )
    assert before != source
    assert located(before, "CKP201") == []


def test_import_time_configuration_is_not_mutable_state() -> None:
    # open_clip audio/whisper.py: a flag set once at import time
    source = """\
        from torch.utils.checkpoint import checkpoint
        try:
            from torch.nn.functional import scaled_dot_product_attention
            SDPA_AVAILABLE = True
        except ImportError:
            SDPA_AVAILABLE = False

        def f(x):
            return x * 2 if SDPA_AVAILABLE else x

        def run(x):
            return checkpoint(f, x, use_reentrant=False)
    """
    assert located(source, "CKP201") == []


def test_a_mutation_under_a_test_states_when_it_changes():
    # unsloth's LlamaModel_fast_forward: `if IS_GEMMA2: kwargs["use_sliding_window"] = idx % 2 == 0`
    source = """\
        from torch.utils.checkpoint import checkpoint

        IS_GEMMA2 = False


        def forward(layers, hidden, **kwargs):
            for idx, layer in enumerate(layers):
                if IS_GEMMA2:
                    kwargs["use_sliding_window"] = idx % 2 == 0

                def custom_forward(*inputs):
                    return layer(*inputs, **kwargs)

                hidden = checkpoint(custom_forward, hidden, use_reentrant=False)
            return hidden
        """
    (d,) = [d for d in lint_source(textwrap.dedent(source)) if d.code == "CKP201" and "`kwargs`" in d.message]
    assert "`kwargs` (mutated at line 9 when `IS_GEMMA2`, in the loop that runs the checkpoint)" in d.message, d.message
    plain = source.replace("if IS_GEMMA2:\n                    ", "")
    (d,) = [d for d in lint_source(textwrap.dedent(plain)) if d.code == "CKP201" and "`kwargs`" in d.message]
    assert "`kwargs` (mutated at line 8, in the loop that runs the checkpoint)" in d.message, d.message



def test_writes_in_both_branches_state_no_condition():
    mutated = """\
        from torch.utils.checkpoint import checkpoint

        IS_GEMMA2 = False


        def forward(layers, hidden, **kwargs):
            for idx, layer in enumerate(layers):
                if IS_GEMMA2:
                    kwargs["window"] = idx % 2 == 0
                else:
                    kwargs["window"] = idx

                def custom_forward(*inputs):
                    return layer(*inputs, **kwargs)

                hidden = checkpoint(custom_forward, hidden, use_reentrant=False)
            return hidden
        """
    (d,) = [d for d in lint_source(textwrap.dedent(mutated)) if d.code == "CKP201" and "`kwargs`" in d.message]
    assert "`kwargs` (mutated at line 9, in the loop that runs the checkpoint)" in d.message, d.message
    rebound = """\
        from torch.utils.checkpoint import checkpoint


        def forward(layers, hidden, flag=False):
            for idx, layer in enumerate(layers):
                v = idx if flag else 0
                if not flag:
                    v = idx

                def custom_forward(*inputs):
                    return layer(*inputs, v)

                hidden = checkpoint(custom_forward, hidden, use_reentrant=False)
            return hidden
        """
    (d,) = [d for d in lint_source(textwrap.dedent(rebound)) if d.code == "CKP201" and "`v`" in d.message]
    assert "`v` (reassigned at line 6 in the loop that also runs the checkpoint)" in d.message, d.message

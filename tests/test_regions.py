"""The region model: what a checkpoint recomputes, across files, to a bounded depth."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from ckptlint.api import lint_source
from ckptlint.checkpoint.evaluator.region import MAX_DEPTH
from ckptlint.testing import located


def _json(run_cli, *args: str) -> list[dict]:
    result = run_cli("--output-format", "json", "--isolated", "--exit-zero", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def _project(tmp_path: Path, files: dict[str, str]) -> None:
    for name, content in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(content), encoding="utf-8")


LAYERS = """\
    from torch import nn

    STEPS = 0


    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.ff = nn.Linear(d, d)
            self.drop = nn.Dropout(0.1)
            self.norm = nn.BatchNorm1d(d)

        def forward(self, x):
            global STEPS
            STEPS += 1
            return self.norm(x + self.drop(self.ff(x)))
"""


def test_block_defined_in_another_module_is_analysed(tmp_path: Path, run_cli) -> None:
    _project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/layers.py": LAYERS,
            "pkg/model.py": """\
                from torch import nn
                from torch.utils.checkpoint import checkpoint

                from .layers import Block


                class Model(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.block = Block(8)

                    def forward(self, x):
                        return checkpoint(self.block, x, use_reentrant=False, preserve_rng_state=False)
            """,
        },
    )
    records = _json(run_cli, "pkg/model.py")
    found = {(Path(r["filename"]).name, r["location"]["row"], r["code"]) for r in records}
    assert found == {
        ("model.py", 13, "CKP101"),  # the keyword, in model.py
        ("model.py", 13, "CKP203"),  # BatchNorm1d reached in layers.py
        ("layers.py", 15, "CKP202"),  # STEPS += 1, reported where it is
    }
    messages = {r["code"]: r["message"] for r in records}
    assert "nn.Dropout at layers.py:16" in messages["CKP101"]
    assert "nn.BatchNorm1d (created at layers.py:11)" in messages["CKP203"]
    assert "recomputed by the checkpoint at model.py:13" in messages["CKP202"]
    assert "rebinds the global `STEPS`" in messages["CKP202"]


def test_absolute_import_and_src_layout(tmp_path: Path, run_cli) -> None:
    _project(
        tmp_path,
        {
            "src/pkg/__init__.py": "",
            "src/pkg/layers.py": LAYERS,
            "src/pkg/model.py": """\
                import torch.utils.checkpoint as cp

                from pkg.layers import Block

                block = Block(8)


                def run(x):
                    return cp.checkpoint(block, x, use_reentrant=False)
            """,
        },
    )
    records = _json(run_cli, "src")
    assert {(Path(r["filename"]).name, r["code"]) for r in records} == {("model.py", "CKP203"), ("layers.py", "CKP202")}


def test_noqa_in_the_other_file_applies(tmp_path: Path, run_cli) -> None:
    _project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/layers.py": LAYERS.replace("STEPS += 1", "STEPS += 1  # noqa: CKP202"),
            "pkg/model.py": """\
                from torch.utils.checkpoint import checkpoint
                from pkg.layers import Block

                def run(x):
                    return checkpoint(Block(8), x, use_reentrant=False)
            """,
        },
    )
    assert {r["code"] for r in _json(run_cli, "pkg")} == {"CKP203"}


def test_unresolvable_callable_is_unknown_not_reported() -> None:
    source = """\
        from torch.utils.checkpoint import checkpoint

        def run(fn, x):
            return checkpoint(fn, x, use_reentrant=False)
    """
    assert located(source) == []


def _chain(levels: int) -> str:
    lines = ["import random", "from torch.utils.checkpoint import checkpoint", ""]
    for level in range(levels):
        lines += [f"def f{level}(x):", f"    return f{level + 1}(x)", ""]
    lines += [f"def f{levels}(x):", "    return x * random.random()", ""]
    lines += ["def run(x):", "    return checkpoint(f0, x, use_reentrant=False)", ""]
    return "\n".join(lines)


def test_calls_are_followed_to_the_depth_bound() -> None:
    assert MAX_DEPTH >= 3
    at_bound = located(_chain(MAX_DEPTH), "CKP103")
    assert [code for _, code in at_bound] == ["CKP103"]
    beyond = located(_chain(MAX_DEPTH + 1), "CKP103")
    assert beyond == []


def test_recursion_terminates() -> None:
    source = """\
        import random
        from torch.utils.checkpoint import checkpoint

        def f(x, n):
            if n:
                return f(x, n - 1)
            return x * random.random()

        def run(x):
            return checkpoint(f, x, 3, use_reentrant=False)
    """
    assert located(source, "CKP103") == [(7, "CKP103")]


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


def test_list_built_with_append_then_sequential() -> None:
    source = """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                layers = []
                for _ in range(3):
                    layers.append(nn.Linear(4, 4))
                layers.append(nn.BatchNorm1d(4))
                self.body = nn.Sequential(*layers)

            def forward(self, x):
                return checkpoint(self.body, x, use_reentrant=False)
    """
    assert located(source, "CKP203") == [(14, "CKP203")]


def test_zip_loop_and_module_list_append_in_init() -> None:
    source = """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.ModuleList()
                self.blocks.append(nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)))

            def forward(self, x, masks):
                for block, mask in zip(self.blocks, masks):
                    x = checkpoint(block, x * mask, use_reentrant=False)
                return x
    """
    assert located(source, "CKP203") == [(12, "CKP203")]


def test_checkpoint_sequential_skips_the_last_segment() -> None:
    template = """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint_sequential

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.stages = nn.Sequential({layers})

            def forward(self, x):
                return checkpoint_sequential(self.stages, 2, x, use_reentrant=False)
    """
    last_only = template.format(layers="nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4), nn.BatchNorm1d(4)")
    assert located(last_only, "CKP203") == []
    first = template.format(layers="nn.BatchNorm1d(4), nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4)")
    assert located(first, "CKP203") == [(10, "CKP203")]


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


def test_parameter_copied_locally_is_not_the_callers_object() -> None:
    source = """\
        from torch.utils.checkpoint import checkpoint

        def f(x, opts):
            opts = dict(opts)
            opts.pop("scale", None)
            return x * 2

        def run(x, opts):
            return checkpoint(f, x, opts, use_reentrant=False)
    """
    assert located(source, "CKP202") == []


def test_side_effects_on_self_and_buffers() -> None:
    source = """\
        import torch
        from torch import nn
        from torch.utils.checkpoint import checkpoint

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("ema", torch.zeros(4))
                self.calls = 0

            def _body(self, x):
                self.calls += 1
                self.ema.mul_(0.9)
                local = []
                local.append(x)
                return x * 2

            def forward(self, x):
                return checkpoint(self._body, x, use_reentrant=False)
    """
    assert located(source, "CKP202") == [(12, "CKP202"), (13, "CKP202")]


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


def test_layer_created_inside_the_region_keeps_no_state() -> None:
    # open_clip audio/htsat.py: a fresh BatchNorm1d on every call
    source = """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint

        class Block(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.norm = lambda x: nn.BatchNorm1d(dim)(x)

            def forward(self, x):
                return self.norm(x)

        def run(block, x):
            return checkpoint(Block(4), x, use_reentrant=False)
    """
    assert located(source, "CKP203") == []


def test_nested_call_mutating_its_own_argument_is_local() -> None:
    # sd-scripts library/attention.py: a helper clears the list the region built
    source = """\
        from torch.utils.checkpoint import checkpoint

        def attention(qkv):
            q, k, v = qkv
            qkv.clear()
            return q + k + v

        def block(x):
            return attention([x, x, x])

        def run(x):
            return checkpoint(block, x, use_reentrant=False)
    """
    assert located(source, "CKP202") == []


def test_star_import_inside_the_tree_is_followed(tmp_path: Path, run_cli) -> None:
    _project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/layers.py": LAYERS,
            "pkg/model.py": """\
                import torch.utils.checkpoint as cp

                from .layers import *

                block = Block(8)


                def run(x):
                    return cp.checkpoint(block, x, use_reentrant=False)
            """,
        },
    )
    records = _json(run_cli, "pkg/model.py")
    assert {(Path(r["filename"]).name, r["code"]) for r in records} == {("model.py", "CKP203"), ("layers.py", "CKP202")}


def test_project_method_of_a_class_in_another_file_is_not_hugging_face(tmp_path: Path, run_cli) -> None:
    _project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/model.py": """\
                from torch import nn


                class Model(nn.Module):
                    def gradient_checkpointing_enable(self):
                        self.checkpointing = True
            """,
            "pkg/train.py": """\
                from .model import Model

                model = Model()
                model.gradient_checkpointing_enable()
            """,
        },
    )
    assert _json(run_cli, "pkg/train.py") == []


def test_old_format_hugging_face_model_of_another_file_is_not_reported(tmp_path: Path, run_cli) -> None:
    # InternVideo ViCLIP: builder.py imports BeitModel inside the function, st_beit.py keeps
    # the pre-4.35 `_set_gradient_checkpointing(self, module, value=False)`
    _project(
        tmp_path,
        {
            "beit/__init__.py": "",
            "beit/st_beit.py": """\
                from transformers.modeling_utils import PreTrainedModel


                class BeitPreTrainedModel(PreTrainedModel):
                    def _set_gradient_checkpointing(self, module, value=False):
                        module.gradient_checkpointing = value


                class BeitModel(BeitPreTrainedModel):
                    pass
            """,
            "beit/builder.py": """\
                def build_beit(config, checkpoint):
                    from .st_beit import BeitModel as model_cls

                    aux_kwargs = {"add_pooling_layer": True}
                    model = model_cls(config=config, **aux_kwargs)
                    if checkpoint:
                        model.gradient_checkpointing_enable()
                    return model
            """,
        },
    )
    assert _json(run_cli, "beit/builder.py") == []
    (tmp_path / "beit" / "st_beit.py").write_text(
        (tmp_path / "beit" / "st_beit.py").read_text().replace("self, module, value=False", "self, enable=True, gradient_checkpointing_func=None"),
        encoding="utf-8",
    )
    assert [(r["code"], r["location"]["row"]) for r in _json(run_cli, "--no-cache", "beit/builder.py")] == [("CKP001", 7)]

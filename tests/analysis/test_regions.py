"""The region model: what a checkpoint recomputes, across files, to a bounded depth; a call that
always raises recomputes nothing."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from ckptlint.checkpoint.evaluator.ast_regions import MAX_DEPTH
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


BERT_LAYER_LOOP = """\
    import torch
    import torch.utils.checkpoint
    from torch import nn


    class Encoder(nn.Module):  # BLIP models/med.py:431-443; mmaction2 vindlu modeling_bert.py:760-776
        def __init__(self, layers):
            super().__init__()
            self.layer = nn.ModuleList(layers)
            self.gradient_checkpointing = True

        def forward(self, hidden_states, attention_mask=None, past_key_values=None, mode="multimodal"):
            for i in range(len(self.layer)):
                layer_module = self.layer[i]
                past_key_value = past_key_values[i] if past_key_values is not None else None
                if self.gradient_checkpointing and self.training:

                    def create_custom_forward(module):
                        def custom_forward(*inputs):
                            return module(*inputs, past_key_value)

                        return custom_forward

                    layer_outputs = torch.utils.checkpoint.checkpoint(
                        create_custom_forward(layer_module),
                        hidden_states,
                        attention_mask,
                        {options},
                    )
                else:
                    layer_outputs = layer_module(hidden_states, attention_mask, past_key_value)
                hidden_states = layer_outputs[0]
            return hidden_states
"""


def test_region_of_a_call_that_always_raises_is_not_judged():
    # BLIP: `mode=mode` with use_reentrant omitted: the reentrant variant raises ValueError
    # (and custom_forward(*inputs) would refuse `mode` too): CKP002 alone, no CKP201
    blip = BERT_LAYER_LOOP.format(options="mode=mode")
    assert located(blip, ["CKP002", "CKP201"]) == [(24, "CKP002")]
    # vindlu: the same loop with use_reentrant=False runs and recomputes after the loop
    vindlu = BERT_LAYER_LOOP.format(options="use_reentrant=False")
    assert located(vindlu, ["CKP002", "CKP201"]) == [(20, "CKP201")]
    # the raising keyword with use_reentrant=True explicit: raises as well
    assert located(BERT_LAYER_LOOP.format(options="mode=mode, use_reentrant=True"), ["CKP201"]) == []
    # a variant chosen at run time may not raise: judged
    dynamic = BERT_LAYER_LOOP.format(options="mode=mode, use_reentrant=self.reentrant")
    assert located(dynamic, ["CKP201"]) == [(20, "CKP201")]


RAISING_DROPOUT = """\
    from torch import nn
    from torch.utils.checkpoint import checkpoint


    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(0.1)
            self.norm = nn.BatchNorm1d(8)
            self.calls = 0

        def body(self, x, mask=None):
            self.calls += 1
            return self.norm(self.drop(x)) * mask

        def forward(self, x, mask):
            return checkpoint(self.body, x, preserve_rng_state=False, {options})
"""


def test_site_and_region_rules_agree_on_a_raising_call():
    region_rules = ["CKP101", "CKP202", "CKP203"]
    raising = (
        "mask=mask",  # keywords under the omitted (reentrant) variant
        "mask=mask, use_reentrant=True",
        "use_reentrant=True, debug=True",  # debug other than False under reentrant
        "use_reentrant=True, context_fn=lambda: (a, b)",
    )
    for options in raising:
        source = RAISING_DROPOUT.format(options=options)
        assert located(source, region_rules) == [], options
        assert [code for _, code in located(source, "CKP002")] == ["CKP002"], options
    runs = (
        "mask=mask, use_reentrant=False",
        "use_reentrant=True",
        "use_reentrant=True, debug=self.debug",  # may be False at run time
        "use_reentrant=True, context_fn=self.context_fn",  # may be noop_context_fn
        "use_reentrant=True, use_reentrent=False",  # misspelled: CKP003 renames it
    )
    for options in runs:
        source = RAISING_DROPOUT.format(options=options)
        assert sorted(code for _, code in located(source, region_rules)) == ["CKP101", "CKP202", "CKP203"], options

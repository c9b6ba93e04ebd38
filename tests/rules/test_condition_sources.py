"""Where a finding's condition comes from besides the ``if`` around the site: the switch one
call up (the caller of the method that checkpoints tests it), a switch inside the region, and
the defaults of command-line flags and config fields, each in the shape of real code."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from ckptlint.testing import findings

# torchvision models/densenet.py (_DenseLayer, also copied by timm's densenet.py with
# `grad_checkpointing`): the checkpoint is in a method that forward calls only under the switch.
DENSE_LAYER = """\
    from typing import List

    import torch
    import torch.nn as nn
    import torch.utils.checkpoint as cp
    from torch import Tensor


    class _DenseLayer(nn.Module):
        def __init__(self, num_input_features, growth_rate, bn_size, drop_rate, memory_efficient=False):
            super().__init__()
            self.norm1 = nn.BatchNorm2d(num_input_features)
            self.relu1 = nn.ReLU(inplace=True)
            self.conv1 = nn.Conv2d(num_input_features, bn_size * growth_rate, kernel_size=1, stride=1, bias=False)
            self.drop_rate = float(drop_rate)
            self.memory_efficient = memory_efficient

        def bn_function(self, inputs: List[Tensor]) -> Tensor:
            concated_features = torch.cat(inputs, 1)
            return self.conv1(self.relu1(self.norm1(concated_features)))

        def any_requires_grad(self, input: List[Tensor]) -> bool:
            for tensor in input:
                if tensor.requires_grad:
                    return True
            return False

        @torch.jit.unused
        def call_checkpoint_bottleneck(self, input: List[Tensor]) -> Tensor:
            def closure(*inputs):
                return self.bn_function(inputs)

            return cp.checkpoint(closure, *input)

        def forward(self, input):
            if isinstance(input, Tensor):
                prev_features = [input]
            else:
                prev_features = input

            if self.memory_efficient and self.any_requires_grad(prev_features):
                if torch.jit.is_scripting():
                    raise Exception("Memory Efficient not supported in JIT")
                bottleneck_output = self.call_checkpoint_bottleneck(prev_features)
            else:
                bottleneck_output = self.bn_function(prev_features)
            return bottleneck_output
    """
DENSE_CONDITION = (
    "; this code runs only when `self.memory_efficient` is true (it defaults to `False`) and `self.any_requires_grad(prev_features)`"
)


def test_the_switch_one_call_up_is_stated_at_the_site() -> None:
    for code in ("CKP001", "CKP203"):
        (d,) = findings(DENSE_LAYER, code)
        assert d.message.endswith(DENSE_CONDITION), d.message


def test_an_unconditional_call_of_the_method_states_nothing() -> None:
    source = DENSE_LAYER.replace(
        "            return bottleneck_output\n",
        "            return bottleneck_output\n\n        def features(self, x):\n            return self.call_checkpoint_bottleneck([x])\n",
    )
    (d,) = findings(source, "CKP001")
    assert "this code runs only when" not in d.message


def test_calls_under_different_tests_state_what_they_share() -> None:
    source = DENSE_LAYER.replace(
        "            return bottleneck_output\n",
        "            return bottleneck_output\n\n        def features(self, x, flat=False):\n"
        "            if self.memory_efficient and flat:\n"
        "                return self.call_checkpoint_bottleneck([x])\n"
        "            return x\n",
    )
    (d,) = findings(source, "CKP001")
    assert d.message.endswith("; this code runs only when `self.memory_efficient` is true (it defaults to `False`)")


def test_a_method_also_used_as_a_callback_states_nothing() -> None:
    source = DENSE_LAYER.replace(
        "            return bottleneck_output\n",
        "            return bottleneck_output\n\n        def hooks(self):\n            return [self.call_checkpoint_bottleneck]\n",
    )
    (d,) = findings(source, "CKP001")
    assert "this code runs only when" not in d.message


def test_a_call_on_another_object_makes_the_callers_unknown() -> None:
    source = DENSE_LAYER + "\n\n    def run(layer, xs):\n        return layer.call_checkpoint_bottleneck(xs)\n"
    (d,) = findings(source, "CKP001")
    assert "this code runs only when" not in d.message


# Module-level helpers: a private one called only under the caller's parameter switch; a public
# one may be called by any module that imports it, so its callers are never all known.
HELPER = """\
    from torch.utils.checkpoint import checkpoint


    def {name}(block, x):
        return checkpoint(block, x)


    def run_blocks(blocks, x, use_checkpoint=False):
        for block in blocks:
            if use_checkpoint:
                x = {name}(block, x)
            else:
                x = block(x)
        return x
    """


def test_a_private_helper_states_its_callers_switch() -> None:
    (d,) = findings(HELPER.replace("{name}", "_checkpointed"), "CKP001")
    assert d.message.endswith("; this code runs only when `use_checkpoint` is true (it defaults to `False`)"), d.message


def test_a_public_helper_states_nothing() -> None:
    (d,) = findings(HELPER.replace("{name}", "checkpointed"), "CKP001")
    assert "this code runs only when" not in d.message


def test_a_nested_function_states_its_callers_switch() -> None:
    source = """\
        from torch.utils.checkpoint import checkpoint

        def encode(layers, x, grad_ckpt=False):
            def run(layer, x):
                return checkpoint(layer, x)
            for layer in layers:
                x = run(layer, x) if grad_ckpt else layer(x)
            return x
        """
    (d,) = findings(source, "CKP001")
    assert d.message.endswith("; this code runs only when `grad_ckpt` is true (it defaults to `False`)"), d.message


# fairseq modules/transformer_layer_aug.py (AugTransformerDecoderLayerBase.get_dropnet_ratio):
# the NumPy draw inside the recomputed layer runs only under tests of the layer's own switches.
AUG_LAYER = """\
    import torch.nn as nn
    from numpy.random import uniform
    from torch.utils.checkpoint import checkpoint


    class AugLayer(nn.Module):
        def __init__(self, encoder_attn_merge_type="sequential", dropnet_ratio=0.0):
            super().__init__()
            self.encoder_attn_merge_type = encoder_attn_merge_type
            self.dropnet_ratio = dropnet_ratio

        def forward(self, x):
            ratios = self.get_dropnet_ratio()
            return x * ratios[0]

        def get_dropnet_ratio(self):
            if self.encoder_attn_merge_type == "sequential":
                if self.dropnet_ratio > 0:
                    frand = float(uniform(0, 1))
                    if frand < self.dropnet_ratio and self.training:
                        return [2, 0]
                return [1, 1]
            return [0.5, 0.5]


    class Decoder(nn.Module):
        def __init__(self, checkpoint_activations=False):
            super().__init__()
            self.layer = AugLayer()
            self.checkpoint_activations = checkpoint_activations

        def forward(self, x):
            if self.checkpoint_activations:
                return checkpoint(self.layer, x, use_reentrant=False)
            return self.layer(x)
    """


def test_a_switch_inside_the_region_is_stated_with_its_default() -> None:
    (d,) = findings(AUG_LAYER, "CKP103")
    assert d.message.endswith(
        "; this code runs only when `self.checkpoint_activations` is true (it defaults to `False`) and "
        '`self.encoder_attn_merge_type == "sequential"` (`self.encoder_attn_merge_type` defaults to `"sequential"`) '
        "and `self.dropnet_ratio > 0` (`self.dropnet_ratio` defaults to `0.0`)"
    ), d.message


# diffusers examples/dreambooth/train_dreambooth.py: parse_args() builds the parser, main(args)
# tests the flags; ColossalAI examples/images/vit/vit_benchmark.py: `-g`/`--grad_checkpoint`,
# parsed in the same function.
DREAMBOOTH = """\
    import argparse


    def parse_args(input_args=None):
        parser = argparse.ArgumentParser(description="Simple example of a training script.")
        parser.add_argument("--train_text_encoder", action="store_true", help="Whether to train the text encoder.")
        parser.add_argument("--gradient_checkpointing", action="store_true", help="Whether or not to use it.")
        parser.add_argument("--mixed_precision", type=str, default=None, choices=["no", "fp16", "bf16"])
        args = parser.parse_args(input_args)
        return args


    def main(args):
        text_encoder = load_text_encoder(args)
        if args.gradient_checkpointing:
            if args.train_text_encoder:
                text_encoder.gradient_checkpointing_enable()


    if __name__ == "__main__":
        args = parse_args()
        main(args)
    """


def test_argparse_flags_are_named_with_their_defaults() -> None:
    (d,) = findings(DREAMBOOTH, "CKP001")
    assert d.message.endswith(
        "; this code runs only when `args.gradient_checkpointing` is true (it defaults to `False`) and "
        "`args.train_text_encoder` is true (it defaults to `False`)"
    ), d.message


def test_a_flag_parsed_in_the_same_function_with_a_short_option() -> None:
    source = """\
        import argparse

        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("-g", "--grad-checkpoint", action="store_true", help="gradient checkpointing")
            parser.add_argument("--no-offload", dest="offload", action="store_false")
            args, _ = parser.parse_known_args()
            model = build_model()
            if args.grad_checkpoint and args.offload:
                model.gradient_checkpointing_enable()
        """
    (d,) = findings(source, "CKP001")
    assert d.message.endswith(
        "; this code runs only when `args.grad_checkpoint` is true (it defaults to `False`) and "
        "`args.offload` is true (it defaults to `True`)"
    ), d.message


def test_a_flag_the_module_does_not_define_is_not_named() -> None:
    # DeepSpeed-Chat dschat/rlhf/rlhf_engine.py: self.args comes from another module's parser;
    # and a config object that is not the parser's namespace keeps its test as written
    source = """\
        import argparse

        parser = argparse.ArgumentParser()
        parser.add_argument("--gradient_checkpointing", action="store_true")

        class Engine:
            def __init__(self, args, config):
                self.args = args
                self.config = config

            def init_actor(self, model):
                if self.args.critic_gradient_checkpointing:
                    model.gradient_checkpointing_enable()

            def init_critic(self, model):
                if self.config.gradient_checkpointing:
                    model.gradient_checkpointing_enable()
        """
    first, second = findings(source, "CKP001")
    assert first.message.endswith("; this code runs only when `self.args.critic_gradient_checkpointing`"), first.message
    assert second.message.endswith("; this code runs only when `self.config.gradient_checkpointing`"), second.message


def test_a_flag_given_another_default_by_set_defaults_is_not_named() -> None:
    source = DREAMBOOTH.replace(
        "        args = parser.parse_args(input_args)\n",
        "        parser.set_defaults(gradient_checkpointing=True)\n        args = parser.parse_args(input_args)\n",
    )
    (d,) = findings(source, "CKP001")
    assert d.message.endswith(
        "; this code runs only when `args.train_text_encoder` is true (it defaults to `False`) and `args.gradient_checkpointing`"
    ), d.message


# torchtitan / llama-style model args: a dataclass in a config module of the package, the model
# keeping it as `self.args`; open_clip-style `cfg: CLIPVisionCfg` parameters.
CONFIG_MODULE = """\
    from dataclasses import dataclass, field


    @dataclass
    class BaseArgs:
        use_checkpoint: bool = False


    @dataclass
    class ModelArgs(BaseArgs):
        dim: int = 4096
        gradient_checkpointing: bool = field(default=False, metadata={"help": "recompute blocks"})
        checkpoint_every: int = 0
    """
MODEL_MODULE = """\
    import torch.nn as nn
    from torch.utils.checkpoint import checkpoint

    from .config import ModelArgs


    class Transformer(nn.Module):
        def __init__(self, args: ModelArgs):
            super().__init__()
            self.args = args
            self.block = nn.Linear(args.dim, args.dim)

        def forward(self, x):
            if self.args.gradient_checkpointing:
                x = checkpoint(self.block, x)
            return x


    def encode(block, x, cfg: ModelArgs):
        if cfg.use_checkpoint and cfg.checkpoint_every > 0:
            x = checkpoint(block, x)
        return x
    """


def test_dataclass_fields_of_an_imported_config_are_named(tmp_path: Path, run_cli) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "config.py").write_text(textwrap.dedent(CONFIG_MODULE), encoding="utf-8")
    (package / "model.py").write_text(textwrap.dedent(MODEL_MODULE), encoding="utf-8")
    result = run_cli("--output-format", "json", "--isolated", "--no-cache", "--exit-zero", "--select", "CKP001", ".", cwd=tmp_path)
    messages = [r["message"] for r in json.loads(result.stdout)]
    assert len(messages) == 2, messages
    assert messages[0].endswith("; this code runs only when `self.args.gradient_checkpointing` is true (it defaults to `False`)"), messages[
        0
    ]
    assert messages[1].endswith(
        "; this code runs only when `cfg.use_checkpoint` is true (it defaults to `False`) and "
        "`cfg.checkpoint_every > 0` (`cfg.checkpoint_every` defaults to `0`)"
    ), messages[1]


# mmpose's ResNeSt/SE bottlenecks: the switch is stored by the base class's constructor, and the
# subclass passes its other arguments on through **kwargs.
INHERITED = """\
    import torch.nn as nn
    import torch.utils.checkpoint as cp


    class Bottleneck(nn.Module):
        def __init__(self, in_channels, out_channels, stride=1, with_cp=False):
            super().__init__()
            self.conv = nn.Conv2d(in_channels, out_channels, 3, stride)
            self.with_cp = with_cp


    class SEBottleneck(Bottleneck):
        def __init__(self, in_channels, out_channels, se_ratio=16, **kwargs):
            super().__init__(in_channels, out_channels, **kwargs)
            self.se_ratio = se_ratio

        def forward(self, x):
            if self.with_cp and x.requires_grad:
                return cp.checkpoint(self.conv, x)
            return self.conv(x)
    """


def test_a_switch_the_base_class_stores_names_its_default() -> None:
    (d,) = findings(INHERITED, "CKP001")
    assert d.message.endswith(
        "; this code runs only when `self.with_cp` is true (it defaults to `False`) and `x.requires_grad`"
    ), d.message


def test_a_subclass_that_passes_the_switch_on_itself_names_no_inherited_default() -> None:
    passed_on = "super().__init__(in_channels, out_channels, **kwargs)"
    for changed in (
        INHERITED.replace(passed_on, "super().__init__(in_channels, out_channels, with_cp=True)"),
        INHERITED.replace(passed_on, "super().__init__(in_channels, out_channels, 1, True)"),
        INHERITED.replace("se_ratio=16, **kwargs", "se_ratio=16, with_cp=True, **kwargs"),
    ):
        (d,) = findings(changed, "CKP001")
        assert d.message.endswith("; this code runs only when `self.with_cp` and `x.requires_grad`"), d.message
    for edit in (
        "kwargs.setdefault('with_cp', True)",
        "kwargs['with_cp'] = True",
        "kwargs.update(with_cp=True)",
        "kwargs.update(extra)",
    ):
        changed = INHERITED.replace(f"            {passed_on}", f"            {edit}\n            {passed_on}")
        (d,) = findings(changed, "CKP001")
        assert d.message.endswith("; this code runs only when `self.with_cp` and `x.requires_grad`"), (edit, d.message)
    merged = INHERITED.replace(passed_on, "super().__init__(in_channels, out_channels, **{'with_cp': True, **kwargs})")
    (d,) = findings(merged, "CKP001")
    assert d.message.endswith("; this code runs only when `self.with_cp` and `x.requires_grad`"), d.message
    set_under_a_test = "self.se_ratio = se_ratio\n            if se_ratio > 8:\n                self.with_cp = True"
    sometimes = INHERITED.replace("self.se_ratio = se_ratio", set_under_a_test)
    (d,) = findings(sometimes, "CKP001")  # set only under a test: no default is known
    assert d.message.endswith("; this code runs only when `self.with_cp` and `x.requires_grad`"), d.message
    own = INHERITED.replace("self.se_ratio = se_ratio", "self.se_ratio = se_ratio\n            self.with_cp = True")
    (d,) = findings(own, "CKP001")  # the subclass's own setting is its default
    assert "`self.with_cp` is true (it defaults to `True`)" in d.message, d.message

"""CKP203 through timm's ``checkpoint_seq`` over stages that hold BatchNorm, and a layer chosen
by a configuration string that none of the module's own configurations selects."""

from __future__ import annotations

from ckptlint.testing import findings

# The shape of timm's RegNet (timm/models/regnet.py): a stage registers its blocks with
# `add_module` and checkpoints `self.children()` behind a switch `__init__` sets to False;
# the blocks build BatchNorm through a `norm_layer=nn.BatchNorm2d` default.
REG_STAGE = """\
    import torch
    import torch.nn as nn
    from timm.models import checkpoint_seq


    class ConvNormAct(nn.Module):
        def __init__(self, in_chs, out_chs, kernel_size=1, norm_layer=nn.BatchNorm2d):
            super().__init__()
            self.conv = nn.Conv2d(in_chs, out_chs, kernel_size, bias=False)
            self.bn = norm_layer(out_chs)

        def forward(self, x):
            return self.bn(self.conv(x))


    class Bottleneck(nn.Module):
        def __init__(self, in_chs, out_chs, stride=1, norm_layer=NORM):
            super().__init__()
            self.conv1 = ConvNormAct(in_chs, out_chs, 1, norm_layer=norm_layer)
            self.conv2 = ConvNormAct(out_chs, out_chs, 3, norm_layer=norm_layer)

        def forward(self, x):
            return self.conv2(self.conv1(x)) + x


    class RegStage(nn.Module):
        def __init__(self, depth, in_chs, out_chs, stride, block_fn=Bottleneck, **block_kwargs):
            super().__init__()
            self.grad_checkpointing = False
            for i in range(depth):
                name = "b{}".format(i + 1)
                self.add_module(name, block_fn(in_chs if i == 0 else out_chs, out_chs, **block_kwargs))

        def forward(self, x):
            if self.grad_checkpointing and not torch.jit.is_scripting():
                x = checkpoint_seq(self.children(), x)
            else:
                for block in self.children():
                    x = block(x)
            return x
"""


def test_checkpoint_seq_over_children_reaches_the_blocks_batchnorm() -> None:
    found = findings(REG_STAGE.replace("NORM", "nn.BatchNorm2d"), "CKP203")
    assert [d.start for d in found] == [(36, 17)]
    assert found[0].message.startswith("nn.BatchNorm2d (created at <string>.py:10) runs in the region recomputed")
    assert found[0].message.endswith(
        "; this code runs only when `self.grad_checkpointing` is true (it defaults to `False`) and "
        "`not torch.jit.is_scripting()`"
    )


def test_checkpoint_seq_over_children_without_batchnorm_is_clean() -> None:
    assert findings(REG_STAGE.replace("NORM", "nn.GroupNorm"), "CKP203") == []


# The shape of timm's ResNet-like models: the model builds its stages as an nn.Sequential of
# nn.Sequential of blocks, keeps `self.grad_checkpointing = False` and turns it on through
# `set_grad_checkpointing`; `checkpoint_seq(self.stages, x)` recomputes every block.
NET = """\
    import torch
    import torch.nn as nn
    from timm.models import checkpoint_seq


    class BasicBlock(nn.Module):
        def __init__(self, chs, norm_layer=nn.BatchNorm2d):
            super().__init__()
            self.conv = nn.Conv2d(chs, chs, 3, padding=1, bias=False)
            self.bn = norm_layer(chs)

        def forward(self, x):
            return torch.relu(self.bn(self.conv(x)) + x)


    class Net(nn.Module):
        def __init__(self, depths=(2, 2), chs=64, norm_layer=nn.BatchNorm2d):
            super().__init__()
            self.grad_checkpointing = False
            stages = []
            for d in depths:
                stages.append(nn.Sequential(*[BasicBlock(chs, norm_layer=norm_layer) for _ in range(d)]))
            self.stages = nn.Sequential(*stages)

        @torch.jit.ignore
        def set_grad_checkpointing(self, enable=True):
            self.grad_checkpointing = enable

        def forward(self, x):
            if self.grad_checkpointing and not torch.jit.is_scripting():
                x = checkpoint_seq(self.stages, x)
            else:
                x = self.stages(x)
            return x
"""


def test_checkpoint_seq_over_stages_names_the_switch_and_its_setter() -> None:
    found = findings(NET, "CKP203")
    assert [d.start for d in found] == [(31, 17)]
    assert found[0].message.startswith("nn.BatchNorm2d (created at <string>.py:10) runs in the region recomputed")
    assert found[0].message.endswith(
        "; this code runs only when `self.grad_checkpointing` is true (it defaults to `False`; set by "
        "`set_grad_checkpointing()`) and `not torch.jit.is_scripting()`"
    )


# The shape of timm's NFNet (timm/models/nfnet.py with timm/layers/create_attn.py): the
# attention layer is chosen by a string of a dataclass config through an if/elif chain; the
# module's own table of configurations (helpers passing `attn_layer=` on) gives only "se",
# "eca" or the default None; the "lambda" choice would build BatchNorm. The model lays the
# caller's keywords over the config (`cfg = replace(cfg, **kwargs)`).
NF_NET = """\
    from dataclasses import dataclass, replace
    from functools import partial
    from typing import Optional

    import torch
    import torch.nn as nn
    from timm.models import checkpoint_seq


    class SEModule(nn.Module):
        def __init__(self, chs):
            super().__init__()
            self.fc = nn.Conv2d(chs, chs, 1)

        def forward(self, x):
            return x * self.fc(x.mean((2, 3), keepdim=True)).sigmoid()


    class LambdaLayer(nn.Module):
        def __init__(self, chs):
            super().__init__()
            self.norm_q = nn.BatchNorm2d(chs)

        def forward(self, x):
            return self.norm_q(x)


    def get_attn(attn_type):
        module_cls = None
        if attn_type:
            if isinstance(attn_type, str):
                attn_type = attn_type.lower()
                if attn_type == "se":
                    module_cls = SEModule
                elif attn_type == "lambda":
                    return LambdaLayer
                else:
                    assert False, attn_type
            else:
                module_cls = attn_type
        return module_cls


    @dataclass
    class NfCfg:
        depths: tuple
        channels: tuple = (256, 512)
        attn_layer: Optional[str] = None


    class NormFreeBlock(nn.Module):
        def __init__(self, chs, attn_layer=None):
            super().__init__()
            self.conv = nn.Conv2d(chs, chs, 3, padding=1)
            self.attn = attn_layer(chs) if attn_layer is not None else None

        def forward(self, x):
            out = self.conv(x)
            if self.attn is not None:
                out = self.attn(out)
            return out + x


    class NormFreeNet(nn.Module):
        def __init__(self, cfg: NfCfg, **kwargs):
            super().__init__()
            self.grad_checkpointing = False
            cfg = replace(cfg, **kwargs)
            attn_layer = partial(get_attn(cfg.attn_layer)) if cfg.attn_layer else None
            stages = []
            for depth, chs in zip(cfg.depths, cfg.channels):
                stages += [nn.Sequential(*[NormFreeBlock(chs, attn_layer=attn_layer) for _ in range(depth)])]
            self.stages = nn.Sequential(*stages)

        def forward(self, x):
            if self.grad_checkpointing and not torch.jit.is_scripting():
                return checkpoint_seq(self.stages, x)
            return self.stages(x)


    def _nfres_cfg(depths, attn_layer=None):
        return NfCfg(depths=depths, attn_layer=attn_layer)


    model_cfgs = dict(
        nf_resnet26=_nfres_cfg(depths=(2, 2)),
        nf_seresnet26=_nfres_cfg(depths=(2, 2), attn_layer=SHIPPED),
        nf_test=NfCfg(depths=(1, 1), attn_layer="se"),
    )
"""


def test_a_choice_no_shipped_configuration_selects_is_not_reported() -> None:
    assert findings(NF_NET.replace("SHIPPED", '"se"'), "CKP203") == []


def test_a_choice_a_shipped_configuration_selects_is_reported() -> None:
    found = findings(NF_NET.replace("SHIPPED", '"lambda"'), "CKP203")
    assert [d.start for d in found] == [(77, 20)]
    assert found[0].message.startswith("nn.BatchNorm2d (created at <string>.py:22) runs in the region recomputed")


def test_a_choice_set_from_outside_the_module_stays_reported() -> None:
    # a configuration not annotated with the module's class: its value is the caller's
    outside = NF_NET.replace("cfg: NfCfg, **kwargs", "cfg, **kwargs").replace("SHIPPED", '"se"')
    found = findings(outside, "CKP203")
    assert [d.start for d in found] == [(77, 20)]


def test_a_field_the_module_writes_after_construction_is_unknown() -> None:
    written = NF_NET.replace("SHIPPED", '"se"') + '    model_cfgs["nf_test"].attn_layer = name_from_cli()\n'
    assert [d.start for d in findings(written, "CKP203")] == [(77, 20)]

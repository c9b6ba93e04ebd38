"""CKP203 through the configuration a backbone hands its blocks (mmcv/mmengine ``norm_cfg``):
the block's own default builds no norm, the class of the same module that builds it passes a
BatchNorm config down."""

from __future__ import annotations

import textwrap

from ckptlint.testing import findings, located

# The shape of mmaction2's resnet_audio.py: the block keeps `self.norm_cfg` (default None) and
# builds ConvModules from it; the backbone picks the block from a class-level `arch_settings`
# table, keeps its own `self.norm_cfg` (default BN2d) and builds the stages through a
# staticmethod `make_res_layer` called on `self`, registering them with `add_module`.
AUDIO_BACKBONE = """\
    import torch.nn as nn
    import torch.utils.checkpoint as cp
    from mmcv.cnn import ConvModule


    class AudioBlock(nn.Module):
        expansion = 4

        def __init__(self, inplanes, planes, stride=2, downsample=None, norm_cfg=None, with_cp=False):
            super().__init__()
            self.norm_cfg = norm_cfg
            self.with_cp = with_cp
            self.conv1 = ConvModule(inplanes, planes, 1, norm_cfg=self.norm_cfg, bias=False)
            self.conv2 = ConvModule(planes, planes * 4, 1, norm_cfg=self.norm_cfg, act_cfg=None)
            self.downsample = downsample

        def forward(self, x):
            def _inner_forward(x):
                out = self.conv2(self.conv1(x))
                if self.downsample is not None:
                    x = self.downsample(x)
                return out + x

            if self.with_cp and x.requires_grad:
                out = cp.checkpoint(_inner_forward, x, use_reentrant=False)
            else:
                out = _inner_forward(x)
            return out


    class AudioBackbone(nn.Module):
        arch_settings = {50: (AudioBlock, (3, 4)), 101: (AudioBlock, (3, 23))}

        def __init__(self, depth=50, norm_cfg=NORM_CFG, norm_eval=False, with_cp=False):
            super().__init__()
            self.norm_cfg = norm_cfg
            self.norm_eval = norm_eval
            self.block, stage_blocks = self.arch_settings[depth]
            self.inplanes = 32
            self.res_layers = []
            for i, num_blocks in enumerate(stage_blocks):
                res_layer = self.make_res_layer(self.block, self.inplanes, 32 * 2**i, num_blocks,
                                                norm_cfg=self.norm_cfg, with_cp=with_cp)
                layer_name = f"layer{i + 1}"
                self.add_module(layer_name, res_layer)
                self.res_layers.append(layer_name)

        @staticmethod
        def make_res_layer(block, inplanes, planes, blocks, norm_cfg=None, with_cp=False):
            layers = []
            layers.append(block(inplanes, planes, norm_cfg=norm_cfg, with_cp=with_cp))
            for _ in range(1, blocks):
                layers.append(block(planes * block.expansion, planes, norm_cfg=norm_cfg, with_cp=with_cp))
            return nn.Sequential(*layers)

        def train(self, mode=True):
            super().train(mode)
            if mode and self.norm_eval:
                for m in self.modules():
                    if isinstance(m, nn.BatchNorm2d):
                        m.eval()
"""


def _audio(norm_cfg: str = 'dict(type="BN2d", requires_grad=True)', norm_eval: str = "False") -> str:
    return AUDIO_BACKBONE.replace("NORM_CFG", norm_cfg).replace("norm_eval=False", f"norm_eval={norm_eval}")


def test_batchnorm_config_handed_down_by_the_backbone_is_reported_with_the_condition() -> None:
    (finding,) = findings(_audio(), "CKP203")
    assert finding.start == (25, 19)
    assert finding.message.startswith("nn.BatchNorm2d (created at <string>.py:14) and 1 more runs in the region")
    assert "when `AudioBlock` is built by `AudioBackbone` with its defaults (norm_cfg type `BN2d`)" in finding.message
    assert finding.message.endswith(
        "this code runs only when `self.with_cp` is true (it defaults to `False`) and `x.requires_grad`"
    )


def test_handed_down_config_without_batchnorm_or_frozen_by_the_backbone_is_not_reported() -> None:
    assert located(_audio(norm_cfg='dict(type="GN", num_groups=8)'), "CKP203") == []
    assert located(_audio(norm_cfg='dict(type="BN2d", track_running_stats=False)'), "CKP203") == []
    # the backbone keeps its BatchNorm in eval mode by default: nothing updates twice
    assert located(_audio(norm_eval="True"), "CKP203") == []
    # SyncBN is a BatchNorm too
    (finding,) = findings(_audio(norm_cfg='dict(type="SyncBN")'), "CKP203")
    assert finding.message.startswith("nn.SyncBatchNorm")
    assert "(norm_cfg type `SyncBN`)" in finding.message


# case_35's shape: a module-level `make_res_layer` function, the block passed to it by name.
MODULE_FUNCTION = """\
    import torch.utils.checkpoint as cp
    from mmcv.cnn import ConvModule
    from torch import nn


    class Bottleneck(nn.Module):
        def __init__(self, inplanes, planes, norm_cfg=None, with_cp=False):
            super().__init__()
            self.conv1 = ConvModule(inplanes, planes, 1, norm_cfg=norm_cfg)
            self.with_cp = with_cp

        def forward(self, x):
            if self.with_cp:
                return cp.checkpoint(self.conv1, x, use_reentrant=False)
            return self.conv1(x)


    def make_res_layer(block, inplanes, planes, blocks, norm_cfg=None, with_cp=False):
        return nn.Sequential(*[block(inplanes, planes, norm_cfg=norm_cfg, with_cp=with_cp) for _ in range(blocks)])


    class ResNetAudio(nn.Module):
        def __init__(self, norm_cfg=dict(type="BN2d"), with_cp=False):
            super().__init__()
            self.norm_cfg = norm_cfg
            self.layer1 = make_res_layer(Bottleneck, 64, 16, 2, norm_cfg=self.norm_cfg, with_cp=with_cp)
{more}"""


def test_block_built_through_a_module_level_function() -> None:
    (finding,) = findings(MODULE_FUNCTION.format(more=""), "CKP203")
    assert finding.start == (14, 20)
    assert "when `Bottleneck` is built by `ResNetAudio` with its defaults (norm_cfg type `BN2d`)" in finding.message
    # two backbones of the module build it with BatchNorm: both are named
    other = """\

    class ResNetOther(nn.Module):
        def __init__(self, norm_cfg=dict(type="BN"), with_cp=False):
            super().__init__()
            self.layer1 = make_res_layer(Bottleneck, 64, 16, 2, norm_cfg=norm_cfg, with_cp=with_cp)
"""
    (finding,) = findings(MODULE_FUNCTION.format(more=other), "CKP203")
    assert "built by `ResNetAudio` or `ResNetOther` with their defaults (norm_cfg type `BN2d`, norm_cfg type `BN`)" in (
        finding.message
    )
    # a backbone that passes no config builds the block as its defaults say: no norm
    none = MODULE_FUNCTION.format(more="").replace("norm_cfg=self.norm_cfg, ", "")
    assert located(none, "CKP203") == []


# mmaction2's resnet3d.py shape: the block's own default is BatchNorm, and block and backbone
# each keep a `self.norm_cfg`; the backbone's does not change what the block's holds.
BOTH_KEEP_A_CONFIG = """\
    import torch.utils.checkpoint as cp
    from mmcv.cnn import ConvModule
    from torch import nn


    class BasicBlock3d(nn.Module):
        def __init__(self, inplanes, planes, norm_cfg=dict(type="BN3d"), with_cp=False):
            super().__init__()
            self.norm_cfg = norm_cfg
            self.with_cp = with_cp
            self.conv1 = ConvModule(inplanes, planes, 3, norm_cfg=self.norm_cfg)

        def forward(self, x):
            if self.with_cp and x.requires_grad:
                return cp.checkpoint(self.conv1, x, use_reentrant=False)
            return self.conv1(x)


    class ResNet3d(nn.Module):
        def __init__(self, norm_cfg=dict(type="BN3d", requires_grad=True), with_cp=False):
            super().__init__()
            self.norm_cfg = norm_cfg
            self.layer1 = BasicBlock3d(64, 64, norm_cfg=self.norm_cfg, with_cp=with_cp)
"""


def test_config_kept_by_block_and_backbone_is_read_from_the_blocks_own_attribute() -> None:
    (finding,) = findings(BOTH_KEEP_A_CONFIG, "CKP203")
    assert finding.start == (15, 20)
    assert finding.message.startswith("nn.BatchNorm3d (created at <string>.py:11) runs in the region")
    assert "is built by" not in finding.message  # the block's own default: no parent needed
    # a write of `norm_cfg` on another object (not a class's own `self`) still makes it unknown
    outside = textwrap.dedent(BOTH_KEEP_A_CONFIG) + "\n\ndef configure(block):\n    block.norm_cfg = None\n"
    assert located(outside, "CKP203") == []

"""How the classes of a module build the class a site is in (CKP203).

OpenMMLab blocks take their normalisation from the backbone that builds them: the block's own
``norm_cfg`` defaults to ``None`` (no norm: mmcv's ``ConvModule`` builds one only for a config)
and the backbone hands its BatchNorm config down::

    class Bottleneck2dAudio(nn.Module):
        def __init__(self, inplanes, planes, ..., norm_cfg=None, with_cp=False):
            self.conv1 = ConvModule(inplanes, planes, 1, norm_cfg=norm_cfg)

    class ResNetAudio(nn.Module):
        arch_settings = {50: (Bottleneck2dAudio, (3, 4, 6, 3))}

        def __init__(self, ..., norm_cfg=dict(type='BN2d', requires_grad=True), with_cp=False):
            self.norm_cfg = norm_cfg
            res_layer = self.make_res_layer(self.block, ..., norm_cfg=self.norm_cfg, with_cp=with_cp)

Read with the block's defaults, its region holds no norm; built by the backbone, it holds
BatchNorm. :func:`~ckptlint.checkpoint.analyses.ast_parent_builds.parent_builds` gives, for a site in a class that builds norm layers from a
config (a call of :data:`~ckptlint.facts.torch_facts.NORM_FACTORIES`), the instances of that
class which the classes of the same module that build it (:func:`~ckptlint.checkpoint.analyses.ast_class_users.class_users`) hold, each with
the constructor call's arguments bound, so a rule can ask the region each of them recomputes
(:meth:`~ckptlint.checkpoint.evaluator.ast_regions.AstRegionBuilder.region` with ``built``).
The backbone is built with its own defaults. Only the module's own classes are read
(locality); a backbone in another module is not seen.

This module holds the record, :class:`ParentBuild`, and the limit :data:`MAX_BUILDS`; the
analysis is :mod:`ckptlint.checkpoint.analyses.ast_parent_builds`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from ckptlint.checkpoint.evaluator.denotations import InstanceValue

#: The building class's summary (an ``AstClassInfo`` where the analysis makes records).
C = TypeVar("C")


__all__ = ["ParentBuild"]


#: Instances of the site's class read per building class (a backbone's stages build the same
#: block with the same configuration; the first few say what it hands down).
MAX_BUILDS = 8


@dataclass(frozen=True)
class ParentBuild(Generic[C]):
    """An instance of a site's class that another class of its module builds (generic over
    the class summary).

    Attributes:
        parent: the class that builds it (``ResNetAudio``), built with its defaults.
        instance: the instance, ``__init__``'s parameters bound to the constructor call's
            arguments (``InstanceValue.env``).
    """

    parent: C
    instance: InstanceValue



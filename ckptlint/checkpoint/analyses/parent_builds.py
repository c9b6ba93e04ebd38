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
BatchNorm. :func:`parent_builds` gives, for a site in a class that builds norm layers from a
config (a call of :data:`~ckptlint.facts.torch_facts.NORM_FACTORIES`), the instances of that
class which the classes of the same module that build it (:func:`class_users`) hold, each with
the constructor call's arguments bound, so a rule can ask the region each of them recomputes
(:meth:`RegionBuilder.region` with ``built``). The backbone is built with its own defaults.
Only the module's own classes are read (locality); a backbone in another module is not seen.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Generic

import libcst as cst

from ckptlint.checkpoint.analyses.class_users import class_users
from ckptlint.checkpoint.evaluator.denotations import ClassInfo, InstanceValue
from ckptlint.facts.torch_facts import norm_factory
from ckptlint.semantic.walk import iter_tree

if TYPE_CHECKING:
    from typing_extensions import TypeVar

    from ckptlint.checkpoint.evaluator.regions import RegionBuilder
    from ckptlint.checkpoint.sites.site import CheckpointSite
    from ckptlint.semantic.analysis import ModuleAnalysis

    #: The building class's summary: libcst's unless parametrised (``ast``'s twin).
    C = TypeVar("C", default=ClassInfo)
else:
    from typing import TypeVar

    C = TypeVar("C")

__all__ = ["ParentBuild", "parent_builds"]

#: Instances of the site's class read per building class (a backbone's stages build the same
#: block with the same configuration; the first few say what it hands down).
MAX_BUILDS = 8


@dataclass(frozen=True)
class ParentBuild(Generic[C]):
    """An instance of a site's class that another class of its module builds (generic over
    the class summary: unparametrised, libcst's).

    Attributes:
        parent: the class that builds it (``ResNetAudio``), built with its defaults.
        instance: the instance, ``__init__``'s parameters bound to the constructor call's
            arguments (:attr:`InstanceValue.env`).
    """

    parent: C
    instance: InstanceValue


def parent_builds(builder: RegionBuilder, site: CheckpointSite, analysis: ModuleAnalysis) -> list[ParentBuild]:
    """The instances of the class ``site``'s method belongs to that the classes of its module
    build (see the module's description); ``[]`` when the class builds no norm from a config,
    or nothing in the module builds it with arguments."""
    cls = builder.enclosing_class(analysis, site.call)
    if cls is None or not _builds_configured_norm(builder, cls):
        return []
    if analysis.covered is not None:
        # who builds the class is a question about the whole module (see frozen_norms)
        path = analysis.source.path
        if builder.project is not None and os.path.isabs(path):
            builder.project.analysis_for_file(Path(path))
        return []
    known: dict[cst.ClassDef, list[ParentBuild]] = analysis.derived.setdefault("parent_builds", {})  # type: ignore[assignment]
    if cls.node not in known:
        known[cls.node] = _builds(builder, analysis, cls)
    return known[cls.node]


def _builds(builder: RegionBuilder, analysis: ModuleAnalysis, cls: ClassInfo) -> list[ParentBuild]:
    users, _ = class_users(builder, analysis, cls)
    found: list[ParentBuild] = []
    for user in users:
        count = 0
        for value in builder.held(InstanceValue(user)):
            if count >= MAX_BUILDS:
                break
            if not isinstance(value, InstanceValue) or not value.env:
                continue  # built without arguments: what the class's defaults give
            if any(info.node is cls.node for info in builder.mro(value.info)):
                found.append(ParentBuild(user, value))
                count += 1
    return found


def _builds_configured_norm(builder: RegionBuilder, cls: ClassInfo) -> bool:
    """Whether ``cls`` or a base class of the tree calls a norm factory (``ConvModule``,
    ``build_norm_layer``) in one of its methods."""
    for info in builder.mro(cls):
        model = info.analysis.model
        for node in iter_tree(info.node):
            if isinstance(node, cst.Call) and node.func in model.scopes:
                if any(norm_factory(name) is not None for name in model.qualified_names(node.func)):
                    return True
    return False

"""BatchNorm layers that a backbone keeps in eval mode while it trains (CKP203).

OpenMMLab backbones (mmdet / mmseg / mmpose / mmaction ``ResNet`` and its family, mmcv's
``cnn.ResNet``, ``HRNet``) override ``train`` so that a switch freezes normalisation::

    def train(self, mode=True):
        super().train(mode)
        if mode and self.norm_eval:          # mmcv.cnn.ResNet: `if self.bn_eval:`
            for m in self.modules():
                if isinstance(m, _BatchNorm):
                    m.eval()

With the switch on, every BatchNorm below the backbone runs in eval mode: it normalises with
its running statistics and never updates them, so a recomputation cannot update them twice.
The blocks that checkpoint themselves (``Bottleneck.forward``: ``cp.checkpoint(_inner_forward,
x)`` under ``with_cp``) are built by such a backbone, usually from ``arch_settings`` in the
same module.

:func:`~ckptlint.checkpoint.analyses.ast_frozen_norms.frozen_batchnorms` answers, for a site, which running-statistics layers (by
``LayerFact.name``) are frozen that way *by default*: the class the site's method belongs to
is the backbone itself, or every class of its module that names it (or names a subclass of it
in the same module, or subclasses such a class there) freezes BatchNorm in ``train`` (its own or
inherited from a class of the tree) under ``self.<flag>`` tests whose value, followed to the
``__init__`` parameter default of the nearest class that sets it, is ``True``. A reference from
anywhere else in the module (a module-level table, a function) is a user that is not known
to freeze, and nothing is exempt. Users in other modules are not seen.

This module holds the record of a freeze, :class:`Freeze`; the analysis is
:mod:`ckptlint.checkpoint.analyses.ast_frozen_norms`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Freeze"]


@dataclass(frozen=True)
class Freeze:
    """BatchNorm frozen in training by a backbone's ``train`` override.

    Attributes:
        layers: the layers frozen (``LayerFact.name``: ``"nn.BatchNorm2d"``).
        owners: the classes whose ``train`` freezes them (``"ResNet"``).
        flags: the switches, ``self.<flag>`` (``"norm_eval"``), each ``True`` by default.
    """

    layers: frozenset[str]
    owners: tuple[str, ...]
    flags: tuple[str, ...]



"""CKP203 batchnorm-in-checkpoint."""

from __future__ import annotations

from pathlib import Path

from ckptlint.checkpoint.analyses.frozen_norms import Freeze, frozen_batchnorms
from ckptlint.checkpoint.evaluator.region import site_label
from ckptlint.facts.torch_facts import LayerKind
from ckptlint.rules.base import Invalid, Rule, RuleContext


class BatchNormInCheckpoint(Rule):
    """A layer with running statistics (BatchNorm, SyncBatchNorm,
    InstanceNorm with ``track_running_stats=True``) runs in a checkpointed region.

    Recomputation runs its forward again in training mode, so ``running_mean``,
    ``running_var`` and ``num_batches_tracked`` update twice per step (both variants;
    pytorch/pytorch#96136).
    """

    code = "CKP203"

    VALID = (
        """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Sequential(nn.Conv2d(3, 8, 3), nn.GroupNorm(2, 8))
            def forward(self, x):
                return checkpoint(self.body, x, use_reentrant=False)
        """,
        """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.BatchNorm2d(8, track_running_stats=False)
            def forward(self, x):
                return checkpoint(self.body, x, use_reentrant=False)
        """,
    )
    INVALID = (
        Invalid(
            """\
            from torch import nn
            from torch.utils.checkpoint import checkpoint
            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.body = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))
                def forward(self, x):
                    return checkpoint(self.body, x, use_reentrant=False)
            """,
            at=(8, 16),
            message="nn.BatchNorm2d (created at <string>.py:6) runs in the region recomputed by the checkpoint",
        ),
    )

    def check(self, ctx: RuleContext) -> None:
        analysis = ctx.analysis
        for site, region in ctx.site_regions():
            if site.api.patches_batchnorm:
                continue  # fairscale's checkpoint_wrapper stops the second update (apis.py)
            layers = []
            seen: set[object] = set()
            frozen: Freeze | None = None
            looked = False  # for the frozen layers (once a site, when a layer needs it)
            for layer in region.layers:
                if (
                    layer.fact.kind is not LayerKind.RUNNING_STATS
                    or layer.switched_on() is False
                    or region.constructs(layer)
                ):
                    continue
                if not looked:
                    frozen, looked = frozen_batchnorms(ctx.regions, site, analysis), True
                if frozen is not None and layer.fact.name in frozen.layers:
                    continue  # the backbone's train() keeps it in eval mode by default (norm_eval)
                # distinct layers, not references: one constructor line reached twelve times
                # (a factory called per block) is counted once
                key = id(layer.call) if layer.call is not None else layer.qualified
                if key not in seen:
                    seen.add(key)
                    layers.append(layer)
            if not layers:
                continue
            first = layers[0]
            made = ""
            if first.call is not None:
                row = first.analysis.range(first.call)[0][0]
                made = f" (created at {Path(first.analysis.source.path).name}:{row})"
            more = f" and {len(layers) - 1} more" if len(layers) > 1 else ""
            ctx.report(
                site.call,
                f"{first.fact.name}{made}{more} runs in the region recomputed by the checkpoint at "
                f"{site_label(site, analysis, analysis)}: its running statistics update twice per step in "
                "training; keep BatchNorm outside the checkpoint, use GroupNorm/LayerNorm, or compensate "
                "the momentum",
                site=site,
            )

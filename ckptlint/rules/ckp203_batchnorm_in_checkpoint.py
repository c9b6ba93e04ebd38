"""CKP203 batchnorm-in-checkpoint, on CPython's ``ast``, over the
regions of the ``ast`` region builder, the frozen backbones of
:mod:`ckptlint.checkpoint.analyses.ast_frozen_norms` and the parents' builds of
:mod:`ckptlint.checkpoint.analyses.ast_parent_builds`.

A layer's constructor holds an ``ast`` call: whether it keeps running statistics is read by
:func:`~ckptlint.checkpoint.analyses.ast_layer_switches.switched_on`."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ckptlint.checkpoint.analyses.ast_frozen_norms import Freeze, frozen_batchnorms, parent_freeze
from ckptlint.checkpoint.analyses.ast_layer_switches import switched_on
from ckptlint.checkpoint.analyses.ast_parent_builds import parent_builds
from ckptlint.checkpoint.evaluator.ast_region import site_label
from ckptlint.facts.torch_facts import LayerKind, norm_factory
from ckptlint.rules.base import Invalid, Rule, RuleContext

if TYPE_CHECKING:
    from ckptlint.checkpoint.evaluator.ast_region import AstRegion
    from ckptlint.checkpoint.evaluator.denotations import LayerUse
    from ckptlint.checkpoint.sites.ast_site_builders import AstSite
    from ckptlint.semantic.ast_analysis import AstAnalysis


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
    reads_regions = True

    def check(self, ctx: RuleContext) -> None:
        analysis = ctx.analysis
        for site, region in ctx.site_regions():
            if site.api.patches_batchnorm:
                continue  # fairscale's checkpoint_wrapper stops the second update (apis.py)
            # the backbone's freeze is looked up once a site, when a layer needs it
            layers = _running_layers(region, partial(_frozen, [], ctx, site))
            built_by = ""
            if not layers:
                layers, built_by = _built_by_parents(ctx, site)
            if not layers:
                continue
            first = layers[0]
            made = ""
            if first.call is not None:
                where: AstAnalysis = first.analysis  # an ``ast`` layer's module
                row = where.range(first.call)[0][0]
                made = f" (created at {Path(where.source.path).name}:{row})"
            more = f" and {len(layers) - 1} more" if len(layers) > 1 else ""
            ctx.report(
                site.call,
                f"{first.fact.name}{made}{more} runs in the region recomputed by the checkpoint at "
                f"{site_label(site, analysis, analysis)}{built_by}: its running statistics update twice per step in "
                "training; keep BatchNorm outside the checkpoint, use GroupNorm/LayerNorm, or compensate "
                "the momentum",
                site=site,
            )


def _frozen(found: list[Freeze | None], ctx: RuleContext, site: AstSite) -> Freeze | None:
    if not found:
        found.append(frozen_batchnorms(ctx.regions, site, ctx.analysis))
    return found[0]


def _running_layers(region: AstRegion, frozen: Callable[[], Freeze | None]) -> list[LayerUse]:
    """The distinct layers with running statistics that ``region`` runs (switched on, made
    before it, not kept in eval mode by ``frozen()``'s backbone)."""
    layers: list[LayerUse] = []
    seen: set[object] = set()
    for layer in region.layers:
        if layer.fact.kind is not LayerKind.RUNNING_STATS or switched_on(layer) is False or region.constructs(layer):
            continue
        freeze = frozen()
        if freeze is not None and layer.fact.name in freeze.layers:
            continue  # the backbone's train() keeps it in eval mode by default (norm_eval)
        key = id(layer.call) if layer.call is not None else layer.qualified
        if key not in seen:
            seen.add(key)
            layers.append(layer)
    return layers


def _built_by_parents(ctx: RuleContext, site: AstSite) -> tuple[list[LayerUse], str]:
    """The layers with running statistics that ``site`` recomputes in the blocks the classes
    of its module build (:mod:`ckptlint.checkpoint.analyses.ast_parent_builds`), and the
    condition that says so;
    ``([], "")`` when none does."""
    builder = ctx.regions
    layers: list[LayerUse] = []
    parents: list[str] = []
    configs: list[str] = []
    seen: set[object] = set()
    for build in parent_builds(builder, site, ctx.analysis):
        region = builder.region(site, ctx.analysis, build.instance)
        found = _running_layers(region, partial(_given, parent_freeze(builder, build.parent)))
        if not found:
            continue
        parents.append(build.parent.name)
        configs += [c for c in (_config_label(layer) for layer in found) if c]
        for layer in found:
            key = id(layer.call) if layer.call is not None else layer.qualified
            if key not in seen:
                seen.add(key)
                layers.append(layer)
    if not layers:
        return [], ""
    block = builder.enclosing_class(ctx.analysis, site.call)
    parents = list(dict.fromkeys(parents))
    names = " or ".join(f"`{p}`" for p in parents)
    shown = f" ({', '.join(dict.fromkeys(configs))})" if configs else ""
    what = f"`{block.name}`" if block is not None else "the block"
    return layers, f" when {what} is built by {names} with {'their' if len(parents) > 1 else 'its'} defaults{shown}"


def _config_label(layer: LayerUse) -> str:
    """``norm_cfg type `BN2d```: the config a factory built ``layer`` from, by the factory's
    keyword and the config's ``type``; ``""`` for a layer built otherwise."""
    if not isinstance(layer.config, dict) or layer.call is None:
        return ""
    kind = layer.config.get("type")
    model = layer.analysis.model
    func = layer.call.func
    names = model.qualified_names(func) if func in model.parents else frozenset()
    keyword = next((factory.config[0] for n in sorted(names) if (factory := norm_factory(n)) is not None), "cfg")
    return f"{keyword} type `{kind}`" if isinstance(kind, str) else f"{keyword} type {layer.fact.name}"


def _given(freeze: Freeze | None) -> Freeze | None:
    return freeze

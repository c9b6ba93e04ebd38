"""CKP004 deprecated-checkpointing-alias, on CPython's ``ast`` (the twin of
:mod:`ckptlint.rules.ckp004_deprecated_checkpointing_alias`: same findings, messages and fixes).

``ast`` has no node for an attribute's or a keyword's name: a deprecated method name is its
``ast.Attribute`` (renamed with :func:`~ckptlint.rules.ast_edits.replace_attribute_name`), a
deprecated keyword its ``ast.keyword`` (:func:`~ckptlint.rules.ast_edits.replace_node` renames
its name). Whether the receiver is a class of the tree with its own method is the region
builder's answer (``ctx.regions``)."""

from __future__ import annotations

import ast

from ckptlint.checkpoint.sites.ast_site_builders import AstSite
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.facts.apis import HF_GRADIENT_CHECKPOINTING_ENABLE, HF_TRAINING_ARGUMENTS, ApiKind
from ckptlint.facts.hf_formats import HF_NEW_NAMES
from ckptlint.facts.version_facts import HF_ACTIVATION_CHECKPOINTING_API
from ckptlint.facts.versions import Placement
from ckptlint.rules.ast_base import AstRule, AstRuleContext
from ckptlint.rules.ast_edits import replace_attribute_name, replace_node
from ckptlint.rules.ckp004_deprecated_checkpointing_alias import RECEIVER_STEPS, alias_message
from ckptlint.text.diagnostics import Applicability, Edit, Fix

#: A deprecated name as written: the method's attribute, or a keyword argument.
Rename = ast.Attribute | ast.keyword


class AstDeprecatedCheckpointingAlias(AstRule):
    """Flags transformers' deprecated checkpointing names in a project whose declared
    transformers versions have the new ones (see
    :class:`ckptlint.rules.ckp004_deprecated_checkpointing_alias.DeprecatedCheckpointingAlias`)."""

    code = "CKP004"
    reads_regions = True

    def check(self, ctx: AstRuleContext) -> None:
        decision = ctx.decide(HF_ACTIVATION_CHECKPOINTING_API)
        if decision.placement is not Placement.INSIDE:
            return  # some declared version may lack the new names: the old ones are the portable spelling
        for site in ast_site_index(ctx.analysis).sites:
            if site.api is HF_GRADIENT_CHECKPOINTING_ENABLE:
                if _own_method(ctx, site):
                    continue  # the project's own method of that name, not transformers' alias
                renames = _renames(site.call, method=True)
            elif site.api.kind is ApiKind.HF_TRAINING_ARGS:
                renames = _renames(site.call, method=False)
            else:
                continue
            if not renames:
                continue
            ctx.report(site.call, alias_message([_name(n) for n in renames], decision), fix=_fix(ctx, site, renames), site=site)


def _name(node: Rename) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.arg or ""


def _renames(call: ast.Call, *, method: bool) -> list[Rename]:
    """The nodes of ``call`` that spell a deprecated name: the method, and keywords (in source
    order)."""
    found: list[Rename] = []
    if method and isinstance(call.func, ast.Attribute) and call.func.attr in HF_NEW_NAMES:
        found.append(call.func)
    found += [k for k in call.keywords if k.arg is not None and k.arg in HF_NEW_NAMES]
    return found


def _own_method(ctx: AstRuleContext, site: AstSite) -> bool:
    """Whether the receiver may be an instance of a class of the tree that defines
    ``gradient_checkpointing_enable`` itself."""
    func = site.call.func
    if not isinstance(func, ast.Attribute):
        return False
    values = ctx.regions.receivers(func.value, func.attr, ctx.analysis, budget=RECEIVER_STEPS)
    return any(ctx.regions.method_signature(value, HF_GRADIENT_CHECKPOINTING_ENABLE.name) is not None for value in values)


def _fix(ctx: AstRuleContext, site: AstSite, renames: list[Rename]) -> Fix | None:
    """The rename, where it is exact (see the libcst rule's ``_fix``)."""
    if site.api.kind is ApiKind.HF_TRAINING_ARGS:
        names = ctx.analysis.model.qualified_names(site.call.func)
        if not names & set(HF_TRAINING_ARGUMENTS.qualified_names):
            return None  # a subclass (trl's configs) may define the old field itself
    passed = {k.arg for k in site.call.keywords if k.arg is not None}
    if any(HF_NEW_NAMES[_name(node)] in passed for node in renames):
        return None  # both spellings passed: renaming would repeat a keyword

    def edits() -> tuple[Edit, ...]:
        return tuple(
            replace_attribute_name(ctx.analysis, node, HF_NEW_NAMES[node.attr])
            if isinstance(node, ast.Attribute)
            else replace_node(ctx.analysis, node, HF_NEW_NAMES[_name(node)])
            for node in renames
        )

    return ctx.fix_from(Applicability.SAFE, "Use the `activation_checkpointing` names", edits)

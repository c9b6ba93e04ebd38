"""CKP004 deprecated-checkpointing-alias, on CPython's ``ast``.

``ast`` has no node for an attribute's or a keyword's name: a deprecated method name is its
``ast.Attribute`` (renamed with :func:`~ckptlint.rules.edits.replace_attribute_name`), a
deprecated keyword its ``ast.keyword`` (:func:`~ckptlint.rules.edits.replace_node` renames
its name). Whether the receiver is a class of the tree with its own method is the region
builder's answer (``ctx.regions``)."""

from __future__ import annotations

import ast

from ckptlint.checkpoint.sites.ast_site_builders import AstSite
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.facts.apis import HF_GRADIENT_CHECKPOINTING_ENABLE, HF_TRAINING_ARGUMENTS, ApiKind
from ckptlint.facts.hf_formats import HF_NEW_NAMES
from ckptlint.facts.version_facts import HF_ACTIVATION_CHECKPOINTING_API
from ckptlint.facts.versions import Decision, Placement
from ckptlint.rules.base import Invalid, Rule, RuleContext
from ckptlint.rules.edits import replace_attribute_name, replace_node
from ckptlint.text.diagnostics import Applicability, Edit, Fix

#: The evaluation steps spent on the receiver of ``gradient_checkpointing_enable``.
RECEIVER_STEPS = 100


#: A deprecated name as written: the method's attribute, or a keyword argument.
Rename = ast.Attribute | ast.keyword


class DeprecatedCheckpointingAlias(Rule):
    """Flags transformers' deprecated checkpointing names in a project whose declared
    transformers versions have the new ones.

    transformers 5.24.0 (``modeling_utils.py`` 3200-3216, ``training_args.py`` 1533-1545):
    ``gradient_checkpointing_enable(gradient_checkpointing_kwargs=None, **kwargs)`` warns
    (FutureWarning, "removed in v6") and calls ``activation_checkpointing_enable(
    activation_checkpointing_kwargs=..., **kwargs)``; ``TrainingArguments``'
    ``gradient_checkpointing`` / ``gradient_checkpointing_kwargs`` are aliases of
    ``activation_checkpointing`` / ``activation_checkpointing_kwargs``
    (:data:`~ckptlint.facts.version_facts.HF_ACTIVATION_CHECKPOINTING_API`). Reported only when
    the project declares transformers and every declared version is at least 5.24 (a project
    that also allows earlier versions needs the old names, which work everywhere).
    """

    code = "CKP004"

    #: The examples are judged for a project that declares transformers 5.24 or later.
    EXAMPLE_VERSIONS = {"transformers": ">=5.24"}

    VALID = (
        """\
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
        """,
        """\
        from transformers import TrainingArguments
        args = TrainingArguments("out", activation_checkpointing=True)
        """,
        """\
        class Wrapper:
            def gradient_checkpointing_enable(self):
                self.llm.activation_checkpointing_enable()

        Wrapper().gradient_checkpointing_enable()
        """,
    )
    INVALID = (
        Invalid(
            """\
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            """,
            at=(1, 1),
            message="`gradient_checkpointing_enable()` is a deprecated alias of `activation_checkpointing_enable()`",
            fixed="""\
            model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
            """,
        ),
        Invalid(
            """\
            from transformers import TrainingArguments
            args = TrainingArguments("out", gradient_checkpointing=True, gradient_checkpointing_kwargs={"use_reentrant": False})
            """,
            at=(2, 8),
            message="`gradient_checkpointing=` is a deprecated alias of `activation_checkpointing=`",
            fixed="""\
            from transformers import TrainingArguments
            args = TrainingArguments("out", activation_checkpointing=True, activation_checkpointing_kwargs={"use_reentrant": False})
            """,
        ),
        # trl's configs redefine the field: the rename is left to the reader
        Invalid(
            """\
            from trl import SFTConfig
            config = SFTConfig("out", gradient_checkpointing=True)
            """,
            at=(2, 10),
            message="deprecated alias",
        ),
    )
    reads_regions = True

    def check(self, ctx: RuleContext) -> None:
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


def _own_method(ctx: RuleContext, site: AstSite) -> bool:
    """Whether the receiver may be an instance of a class of the tree that defines
    ``gradient_checkpointing_enable`` itself."""
    func = site.call.func
    if not isinstance(func, ast.Attribute):
        return False
    values = ctx.regions.receivers(func.value, func.attr, ctx.analysis, budget=RECEIVER_STEPS)
    return any(ctx.regions.method_signature(value, HF_GRADIENT_CHECKPOINTING_ENABLE.name) is not None for value in values)


def _fix(ctx: RuleContext, site: AstSite, renames: list[Rename]) -> Fix | None:
    """The rename, where it is exact: the call is transformers' own (``TrainingArguments`` itself, or a model
    method the receiver does not define), and no new name is passed already."""
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


def _spelled(name: str) -> str:
    return f"`{name}()`" if name.endswith("_enable") else f"`{name}=`"


def alias_message(renames: list[str], decision: Decision) -> str:
    """The message for the deprecated names ``renames`` (the method first, then keywords, as
    written) under ``decision``."""
    first = renames[0]
    new = _spelled(HF_NEW_NAMES[first])
    pairs = ", ".join(f"{_spelled(n)} of {_spelled(HF_NEW_NAMES[n])}" for n in renames[1:])
    also = f" (and {pairs})" if pairs else ""
    return (
        f"{_spelled(first)} is a deprecated alias of {new}{also} with {decision.which('transformers')}: "
        f"transformers warns (FutureWarning) and removes it in v6; use {new}"
    )

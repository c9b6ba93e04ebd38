"""CKP003 misspelled-checkpoint-option, on CPython's ``ast``.

A misspelled keyword's node is its ``ast.keyword`` (:func:`~ckptlint.rules.edits.replace_node`
renames its name), a misspelled key of a ``gradient_checkpointing_kwargs`` dict its
``ast.Constant``, rewritten with the key's own prefix and quotes (read from the source
token). What the checkpointed callable accepts is the region
builder's answer (``ctx.regions.signature``)."""

from __future__ import annotations

import ast
import io
import tokenize

from ckptlint.checkpoint.sites.ast_misspelling import AstMisspelling
from ckptlint.checkpoint.sites.ast_options import argument_value
from ckptlint.checkpoint.sites.ast_site_builders import AstSite
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.checkpoint.sites.site import Reentrancy
from ckptlint.facts.apis import ApiKind
from ckptlint.rules.base import Invalid, Rule, RuleContext
from ckptlint.rules.edits import replace_node
from ckptlint.semantic.ast_analysis import AstAnalysis
from ckptlint.text.diagnostics import Applicability, Fix


class MisspelledCheckpointOption(Rule):
    """Flags keywords of checkpoint calls that are probably misspelled options.

    ``torch.utils.checkpoint.checkpoint`` does not reject an unknown keyword: it forwards
    it to the checkpointed function (2.9, 2.13). A misspelled ``use_reentrant`` leaves the
    option unset (warning, reentrant variant, then ``ValueError: Unexpected keyword
    arguments``); under the non-reentrant variant a misspelled ``preserve_rng_state`` or
    ``determinism_check`` reaches the function, where ``**kwargs`` swallows it and the
    option silently keeps its default. ``checkpoint_sequential`` and the composable
    ``checkpoint`` raise ``ValueError``. How closeness is judged:
    :mod:`ckptlint.checkpoint.sites.misspelling`.
    """

    code = "CKP003"

    VALID = (
        """\
        from torch.utils.checkpoint import checkpoint
        checkpoint(f, x, use_reentrant=False, context=ctx)
        """,
        """\
        from torch.utils.checkpoint import checkpoint
        checkpoint(f, x, use_reentrant=False, deterministic=True)
        """,
        """\
        from torch.utils.checkpoint import checkpoint
        checkpoint(f, x, use_reentrant=False, eos_early_stop=True)
        """,
        """\
        from torch.utils.checkpoint import checkpoint
        def f(x, preserve_rng=False):
            return x
        checkpoint(f, x, use_reentrant=False, preserve_rng=True)
        """,
        """\
        def checkpoint(*a, **k):
            pass
        checkpoint(f, x, use_reentrent=False)
        """,
    )
    INVALID = (
        Invalid(
            """\
            from torch.utils.checkpoint import checkpoint
            checkpoint(f, x, use_reentrent=False)
            """,
            at=(2, 18),
            message="`use_reentrent` looks like a misspelling of the checkpoint option `use_reentrant`",
            fixed="""\
            from torch.utils.checkpoint import checkpoint
            checkpoint(f, x, use_reentrant=False)
            """,
        ),
        Invalid(
            """\
            from torch.utils.checkpoint import checkpoint
            checkpoint(f, x, use_reentrant=False, preserve_rng=False)
            """,
            at=(2, 39),
            message="`preserve_rng` looks like a misspelling of the checkpoint option `preserve_rng_state`",
            fixed="""\
            from torch.utils.checkpoint import checkpoint
            checkpoint(f, x, use_reentrant=False, preserve_rng_state=False)
            """,
        ),
        Invalid(
            """\
            from torch.utils.checkpoint import checkpoint
            checkpoint(f, x, use_reentrant=False, determinism='none', early_stopping=False)
            """,
            at=(2, 39),
            message="and the function gets an extra keyword (TypeError, or silently swallowed by `**kwargs`)",
            fixed="""\
            from torch.utils.checkpoint import checkpoint
            checkpoint(f, x, use_reentrant=False, determinism_check='none', early_stop=False)
            """,
            count=2,
        ),
        Invalid(
            """\
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={'use_reentrent': False})
            """,
            at=(1, 68),
            message="`use_reentrent` looks like a misspelling of the checkpoint option `use_reentrant`",
            fixed="""\
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={'use_reentrant': False})
            """,
        ),
        Invalid(
            """\
            from torch.utils.checkpoint import checkpoint
            checkpoint(f, x, use_reentrant=True, use_reentrent=False)
            """,
            at=(2, 38),
            message="`use_reentrent` looks like a misspelling of the checkpoint option `use_reentrant`",
        ),
    )
    reads_regions = True

    def check(self, ctx: RuleContext) -> None:
        for site in ast_site_index(ctx.analysis).sites:
            if site.save_misuse is not None:
                continue
            for misspelling in _misspellings(ctx, site):
                ctx.report(misspelling.node, _message(ctx.analysis, site, misspelling), fix=_fix(ctx, site, misspelling), site=site)


def _misspellings(ctx: RuleContext, site: AstSite) -> tuple[AstMisspelling, ...]:
    """The site's misspellings less the keywords the checkpointed callable really takes, as
    the region evaluator resolves it."""
    found: tuple[AstMisspelling, ...] = site.misspellings
    if not any(m.arg is not None for m in found):
        return found
    signature = ctx.regions.signature(site.function, ctx.analysis)
    if signature is None:
        return found
    return tuple(m for m in found if m.arg is None or m.written not in signature.keywords)


def _message(analysis: AstAnalysis, site: AstSite, misspelling: AstMisspelling) -> str:
    what = "key" if misspelling.arg is None else "keyword"
    noun = "parameter" if misspelling.option in site.api.positional else "option"
    text = (
        f"`{misspelling.written}` looks like a misspelling of the checkpoint {noun} "
        f"`{misspelling.option}`: {consequence(site, misspelling)}"
    )
    if _already_passed(analysis, site, misspelling):
        return text + f"; `{misspelling.option}` is passed as well, remove one of them"
    return text + f"; rename the {what} to `{misspelling.option}`"


def _already_passed(analysis: AstAnalysis, site: AstSite, misspelling: AstMisspelling) -> bool:
    if misspelling.arg is None:
        dict_node = _parent_dict(site)
        if dict_node is None:
            return False
        return any(
            key is not None and _string_token(analysis, key) is not None and key.value == misspelling.option  # type: ignore[attr-defined]
            for key in dict_node.keys
        )
    return any(k.arg == misspelling.option for k in site.call.keywords)


def _parent_dict(site: AstSite) -> ast.Dict | None:
    kwargs = site.option("gradient_checkpointing_kwargs")
    if kwargs.arg is not None:
        value = argument_value(kwargs.arg)
        if isinstance(value, ast.Dict):
            return value
    return None


def _string_token(analysis: AstAnalysis, node: ast.expr) -> tuple[str, str] | None:
    """The prefix and quote of ``node`` when it is one plain string literal (one
    token: not written in parts, no f-string, no bytes); else ``None``."""
    if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
        return None
    text = analysis.text_of(node)
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.STRING]
    except (tokenize.TokenError, SyntaxError):
        return None
    if len(tokens) != 1 or tokens[0].string != text:
        return None
    body = text.lstrip("rRuUbBfF")
    quote = body[:3] if body[:3] in ('"""', "'''") else body[:1]
    return text[: len(text) - len(body)], quote


def _fix(ctx: RuleContext, site: AstSite, misspelling: AstMisspelling) -> Fix | None:
    """Rename to the exact option (unsafe); none when the option is passed already, another
    keyword claims it, or a ``**kwargs`` of unknown content may carry ``use_reentrant``."""
    if _already_passed(ctx.analysis, site, misspelling):
        return None
    if sum(1 for m in site.misspellings if m.option == misspelling.option) > 1:
        return None
    if site.reentrancy is Reentrancy.UNKNOWN and misspelling.option == "use_reentrant" and site.hidden_arguments:
        return None  # a `**kwargs` of unknown content may already carry it
    node = misspelling.node
    replacement = misspelling.option
    if isinstance(node, ast.expr):
        quoted = _string_token(ctx.analysis, node)
        if quoted is not None:
            replacement = quoted[0] + quoted[1] + misspelling.option + quoted[1]
    return ctx.fix_from(
        Applicability.UNSAFE,
        f"Rename `{misspelling.written}` to `{misspelling.option}`",
        lambda: replace_node(ctx.analysis, node, replacement),
    )


def consequence(site: AstSite, misspelling: AstMisspelling) -> str:
    """What the misspelling does at ``site`` ."""
    kind = site.api.kind
    if kind in (ApiKind.SEQUENTIAL, ApiKind.COMPOSABLE):
        return "it raises ValueError (Unexpected keyword arguments)"
    if kind in (ApiKind.HF_ENABLE, ApiKind.HF_TRAINING_ARGS):
        prefix = "transformers passes the key to torch.utils.checkpoint.checkpoint, which does not know it: "
    else:
        prefix = "torch.utils.checkpoint does not know it and forwards it to the checkpointed function: "
    if misspelling.option == "use_reentrant":
        return prefix + (
            "`use_reentrant` stays unset, so PyTorch warns, runs the legacy reentrant variant and "
            "raises ValueError (Unexpected keyword arguments)"
        )
    if site.runs_reentrant is True:
        return prefix + "the reentrant variant raises ValueError (Unexpected keyword arguments)"
    default = {
        "preserve_rng_state": "`preserve_rng_state` stays True",
        "determinism_check": '`determinism_check` stays "default"',
        "early_stop": "`early_stop` stays True",
        "debug": "`debug` stays False",
        "context_fn": "no `context_fn` is applied",
    }.get(misspelling.option, f"`{misspelling.option}` keeps its default")
    where = "the layer" if kind in (ApiKind.HF_ENABLE, ApiKind.HF_TRAINING_ARGS) else "the function"
    return prefix + f"{default}, and {where} gets an extra keyword (TypeError, or silently swallowed by `**kwargs`)"

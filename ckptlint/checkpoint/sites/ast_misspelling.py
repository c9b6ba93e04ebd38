"""Keywords of a checkpoint site on CPython's ``ast`` that look like misspelled checkpoint
options (the options, the two closeness tiers, the type test of the value and the
exceptions are described in :mod:`ckptlint.checkpoint.sites.misspelling`), for the sites of
:mod:`ckptlint.checkpoint.sites.ast_sites`, into :class:`~ckptlint.checkpoint.sites.site.Misspelling`
records parametrised for ``ast`` (:data:`AstMisspelling`).

``ast`` has no node for a keyword's name: a misspelled keyword's ``node`` is its
``ast.keyword`` (the name starts it and is ``written`` long); a misspelled key of a
``gradient_checkpointing_kwargs`` dict literal is the key's ``ast.Constant``.
``True``/``False``/``None`` are no function for ``context_fn``; a key written in parts
(``"use_" "reentrent"``) is one string constant and is read.
"""

from __future__ import annotations

import ast
import difflib

from ckptlint.checkpoint.sites.ast_options import AstArg, argument_value, literal_value
from ckptlint.checkpoint.sites.ast_site_builders import AstSite
from ckptlint.checkpoint.sites.misspelling import _BOOL_OPTIONS, STRONG_RATIO, WEAK_RATIO, _extends, option_names
from ckptlint.checkpoint.sites.options import NOT_LITERAL
from ckptlint.checkpoint.sites.site import Misspelling
from ckptlint.facts.apis import ApiKind
from ckptlint.semantic.ast_callables import signature_of
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.bindings import BindingKind

__all__ = ["AstMisspelling", "closest_option", "find_misspellings"]

#: A misspelling found on ``ast``: the renamed node, the call argument, the value.
AstMisspelling = Misspelling[ast.AST, AstArg, ast.expr]

_HF_KINDS = (ApiKind.HF_ENABLE, ApiKind.HF_TRAINING_ARGS)


def closest_option(written: str, options: tuple[str, ...], value: ast.expr | None, model: AstModel) -> tuple[str, float] | None:
    """The option ``written`` probably misspells and difflib's ratio of the two, or ``None``
    (the tiers are in :mod:`ckptlint.checkpoint.sites.misspelling`)."""
    if written in options:
        return None
    matches = difflib.get_close_matches(written, options, n=1, cutoff=WEAK_RATIO)
    if not matches:
        return None
    option = matches[0]
    if _extends(written, option):
        return None
    ratio = difflib.SequenceMatcher(None, written, option).ratio()
    if ratio >= STRONG_RATIO or (value is not None and _fits(option, value, model)):
        return option, ratio
    return None


def find_misspellings(site: AstSite, model: AstModel) -> tuple[AstMisspelling, ...]:
    """The misspelled options of ``site``, in source order: among its own keywords (for a
    call through a partial, the call's, not the binding's), skipping a keyword the
    checkpointed function declares; for transformers' switches, among the string keys of a
    ``gradient_checkpointing_kwargs`` dict literal."""
    options = option_names(site)  # reads the API only
    found: list[AstMisspelling] = []
    if site.api.kind in _HF_KINDS:
        kwargs = site.option("gradient_checkpointing_kwargs")
        given = argument_value(kwargs.arg) if kwargs.arg is not None else None
        if isinstance(given, ast.Dict):
            for key, value in zip(given.keys, given.values, strict=True):
                if not isinstance(key, ast.Constant) or not isinstance(key.value, str):
                    continue
                match = closest_option(key.value, options, value, model)
                if match is not None:
                    found.append(Misspelling(key.value, match[0], match[1], key, None, value))
        return tuple(found)
    own = {id(keyword) for keyword in site.call.keywords}
    signature = signature_of(site.function, model)
    accepted = signature.keywords if signature is not None else None
    for arg in site.function_keywords:
        if id(arg) not in own or not isinstance(arg, ast.keyword) or arg.arg is None:
            continue
        written = arg.arg
        if accepted is not None and written in accepted:
            continue
        match = closest_option(written, options, arg.value, model)
        if match is not None:
            found.append(Misspelling(written, match[0], match[1], arg, arg, arg.value))
    return tuple(found)


def _fits(option: str, value: ast.expr, model: AstModel) -> bool:
    """Whether ``value`` has the type ``option`` takes (see ``misspelling._fits``)."""
    if option in _BOOL_OPTIONS:
        return isinstance(literal_value(value, model), bool)
    if option == "determinism_check":
        return literal_value(value, model) in ("default", "none")
    if option == "context_fn":
        if isinstance(value, ast.Lambda):
            return True
        if isinstance(value, ast.Call):
            return any(name.endswith("partial") for name in model.qualified_names(value.func))
        if isinstance(value, ast.Name):
            bindings = model.bindings_of(value)
            if bindings and all(b.kind is BindingKind.FUNCTION for b in bindings):
                return True
            return any("selective_checkpoint" in name for name in model.qualified_names(value))
        return False
    if option == "checkpoint_impl":
        return any(name.endswith(("CheckpointImpl.REENTRANT", "CheckpointImpl.NO_REENTRANT")) for name in model.qualified_names(value))
    return literal_value(value, model) is not NOT_LITERAL

"""Checkpoint sites of direct API calls, found on CPython's ``ast``: the same sites (API, form,
options, variant) :func:`ckptlint.checkpoint.sites.sites.collect_sites` finds on libcst for
the calls it recognises without leaving the module:

- a call whose callee's qualified names name an API of :mod:`ckptlint.facts.apis` (torch's
  ``checkpoint``, ``checkpoint_sequential``, ``checkpoint_wrapper``, the composable
  ``checkpoint``, other libraries' functions, sequences and wrappers, ``TrainingArguments``
  and its kin, the policies of ``apply_activation_checkpointing`` and friends);
- ``x.gradient_checkpointing_enable(...)`` / ``x.activation_checkpointing_enable(...)``
  (:data:`~ckptlint.facts.apis.HF_ENABLE_METHODS`) and the method names that are an API
  whatever the receiver (:data:`~ckptlint.facts.apis.METHOD_APIS`:
  ``self._gradient_checkpointing_func(...)``);
- methods of instances of an API class (:data:`~ckptlint.facts.apis.INSTANCE_METHOD_APIS`:
  ``ckpt.checkpoint(f, x)`` after ``ckpt = CheckpointWithoutOutput()``, or ``self.ckpt`` set
  so in the class) and ``self.attr(...)`` where the class stores a checkpoint function in
  ``self.attr`` (:mod:`~ckptlint.checkpoint.sites.ast_receivers`).

Not yet here (still libcst only): ``functools.partial`` bindings and calls through them, calls
of helpers, home-made implementations, names followed into other modules, ``TrainingArguments`` subclasses; and the
region expression a policy site checkpoints (its ``function`` is ``None`` here), misspelled
options and save misuses. Nothing on the linter's path imports this module yet.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from ckptlint.checkpoint.sites.ast_options import (
    AST_ABSENT,
    AST_UNKNOWN,
    AstArg,
    AstCallArguments,
    AstOption,
    argument_value,
    in_branch_torch_never_takes,
    mapping_alternatives,
    option_from_mappings,
    ordered_arguments,
)
from ckptlint.checkpoint.sites.ast_receivers import instance_method_api, self_attribute_api
from ckptlint.checkpoint.sites.options import OptionOrigin, OptionState, OptionValue
from ckptlint.checkpoint.sites.site import CheckpointSite, Reentrancy, SiteForm
from ckptlint.checkpoint.sites.site_builders import library_reentrancy, reentrancy_from
from ckptlint.facts.apis import (
    CHECKPOINT_OPTIONS,
    HF_ENABLE_METHODS,
    METHOD_APIS,
    PARTIAL_QUALIFIED_NAMES,
    UTILS_CHECKPOINT_MODULE,
    ApiKind,
    CheckpointApi,
    api_for,
)
from ckptlint.facts.hf_formats import HF_KWARGS_OPTIONS
from ckptlint.facts.saving import DCP_FUNCTIONS
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.ast_reaching import reaching
from ckptlint.semantic.bindings import BindingKind

__all__ = ["AstSite", "direct_sites"]

AstSite = CheckpointSite[ast.Call, ast.expr, ast.expr | ast.keyword, AstCallArguments]
_TORCH_CHECKPOINT = "torch.utils.checkpoint.checkpoint"


def direct_sites(model: AstModel) -> list[AstSite]:
    """The sites of the module's direct API calls (see the module docstring), in the order of
    ``model.calls``; a call in a branch no judged torch release takes is none."""
    from ckptlint.checkpoint.sites.ast_options import torch_version_test

    decide: Callable[[ast.expr], bool | None] = lambda test: torch_version_test(test, model)  # noqa: E731
    found: list[AstSite] = []
    for call in model.calls:
        api = _api_of(call, model, decide)
        if api is None:
            continue
        site = BUILDERS[api.kind](api, call, AstCallArguments.of(call), model)
        if site is not None and not in_branch_torch_never_takes(model, call):
            found.append(site)
    return found


def _api_of(call: ast.Call, model: AstModel, decide: Callable[[ast.expr], bool | None]) -> CheckpointApi | None:
    names = model.qualified_names(call.func)
    api = api_for(names)
    if api is not None:
        if isinstance(call.func, ast.Name) and _rebound_to_partials(model, call.func, decide):
            return None  # `checkpoint = partial(checkpoint, ...)` at module level: a bound call
        return api
    if UTILS_CHECKPOINT_MODULE in names or names & PARTIAL_QUALIFIED_NAMES or any(n in DCP_FUNCTIONS for n in names):
        return None
    if isinstance(call.func, ast.Attribute):
        found = HF_ENABLE_METHODS.get(call.func.attr) or METHOD_APIS.get(call.func.attr)
        if found is None:
            found = instance_method_api(call.func, model) or self_attribute_api(call.func, model)
        return found
    return None


def _rebound_to_partials(model: AstModel, name: ast.Name, decide: Callable[[ast.expr], bool | None]) -> bool:
    """See :func:`ckptlint.checkpoint.sites.sites._rebound_to_partials`."""
    final = reaching(model, name, decide)
    return len(final) < len(model.bindings_of(name)) and all(
        b.kind is BindingKind.ASSIGNMENT
        and isinstance(b.value, ast.Call)
        and bool(model.qualified_names(b.value.func) & PARTIAL_QUALIFIED_NAMES)
        for b in final
    )


# ------------------------------------------------------------------------- builders
def _site(
    api: CheckpointApi,
    call: ast.Call,
    arguments: AstCallArguments,
    model: AstModel,
    *,
    function: ast.expr | None,
    inputs: tuple[AstArg, ...],
    keywords: tuple[AstArg, ...],
    options: dict[str, AstOption],
    reentrancy: Reentrancy | None = None,
) -> AstSite:
    if reentrancy is None:
        reentrancy = reentrancy_from(options.get("use_reentrant", AST_ABSENT), api.reentrant_when_omitted)  # type: ignore[arg-type]
    return CheckpointSite(
        api=api,
        form=SiteForm.CALL,
        call=call,
        arguments=arguments,
        function=function,
        inputs=inputs,
        function_keywords=keywords,
        options=options,
        reentrancy=reentrancy,
        hidden_arguments=arguments.splat_keys(model)[1],
        scope=model.scope_of(call),
    )


def _forwarded_keywords(arguments: AstCallArguments, api: CheckpointApi) -> tuple[AstArg, ...]:
    return tuple(k for name, k in arguments.keywords.items() if name not in api.options and name not in api.positional)


def _ordered_non_keyword(call: ast.Call) -> list[ast.expr]:
    return list(call.args)


def _positional_or_keyword(arguments: AstCallArguments, api: CheckpointApi, name: str) -> ast.expr | None:
    index = api.positional.index(name)
    if not arguments.starred and len(arguments.positional) > index:
        return arguments.positional[index]
    keyword = arguments.keywords.get(name)
    return keyword.value if keyword is not None else None


def _build_function(api: CheckpointApi, call: ast.Call, arguments: AstCallArguments, model: AstModel) -> AstSite:
    ordered = _ordered_non_keyword(call)
    function: ast.expr | None = None
    inputs = ordered
    if ordered and not isinstance(ordered[0], ast.Starred):
        function, inputs = ordered[0], ordered[1:]
    elif "function" in arguments.keywords:
        function = arguments.keywords["function"].value
    options = {name: arguments.option(name, model) for name in api.options}
    keywords = _forwarded_keywords(arguments, api)
    return _site(api, call, arguments, model, function=function, inputs=tuple(inputs), keywords=keywords, options=options)


def _build_sequential(api: CheckpointApi, call: ast.Call, arguments: AstCallArguments, model: AstModel) -> AstSite:
    functions = _positional_or_keyword(arguments, api, "functions")
    given = _positional_or_keyword(arguments, api, "input")
    options = {
        "use_reentrant": arguments.option("use_reentrant", model, position=3),
        "preserve_rng_state": arguments.option("preserve_rng_state", model),
    }
    keywords = _forwarded_keywords(arguments, api)
    inputs = (given,) if given is not None else ()
    return _site(api, call, arguments, model, function=functions, inputs=inputs, keywords=keywords, options=options)


def _build_wrapper(api: CheckpointApi, call: ast.Call, arguments: AstCallArguments, model: AstModel) -> AstSite:
    module = _positional_or_keyword(arguments, api, "module")
    impl = arguments.option("checkpoint_impl", model, position=1)
    checkpoint_fn = arguments.option("checkpoint_fn", model, position=2)
    options = {name: arguments.option(name, model) for name in CHECKPOINT_OPTIONS}
    options["checkpoint_impl"] = impl
    options["checkpoint_fn"] = checkpoint_fn
    if checkpoint_fn.is_absent or (checkpoint_fn.state is OptionState.LITERAL and checkpoint_fn.value is None):
        if impl.is_absent:
            reentrancy = Reentrancy.DEFAULT_NON_REENTRANT
        else:
            impl_names = model.qualified_names(impl.node) if impl.node is not None else frozenset()
            if any(n.endswith("CheckpointImpl.NO_REENTRANT") for n in impl_names):
                reentrancy = Reentrancy.NON_REENTRANT
            elif any(n.endswith("CheckpointImpl.REENTRANT") for n in impl_names):
                reentrancy = Reentrancy.REENTRANT
            else:
                reentrancy = Reentrancy.UNKNOWN if impl.is_unknown else Reentrancy.DYNAMIC
    elif checkpoint_fn.node is not None and _TORCH_CHECKPOINT in model.qualified_names(checkpoint_fn.node):
        reentrancy = reentrancy_from(options["use_reentrant"], True)  # type: ignore[arg-type]
    else:
        reentrancy = Reentrancy.UNKNOWN
    keywords = _forwarded_keywords(arguments, api)
    return _site(api, call, arguments, model, function=module, inputs=(), keywords=keywords, options=options, reentrancy=reentrancy)


def _build_composable(api: CheckpointApi, call: ast.Call, arguments: AstCallArguments, model: AstModel) -> AstSite:
    module = _positional_or_keyword(arguments, api, "module")
    options = {name: arguments.option(name, model) for name in api.options}
    keywords = _forwarded_keywords(arguments, api)
    return _site(api, call, arguments, model, function=module, inputs=(), keywords=keywords, options=options)


def _hf_use_reentrant(kwargs: AstOption, model: AstModel) -> AstOption:
    if kwargs.is_absent or (kwargs.state is OptionState.LITERAL and kwargs.value is None):
        return OptionValue(OptionState.ABSENT, origin=OptionOrigin.DEFAULT)
    if kwargs.is_unknown or kwargs.node is None:
        return AST_UNKNOWN
    return option_from_mappings("use_reentrant", mapping_alternatives(kwargs.node, model), model)


def _hf_reentrancy(use_reentrant: AstOption, default_reentrant: bool) -> Reentrancy:
    return reentrancy_from(use_reentrant, default_reentrant or use_reentrant.origin is not OptionOrigin.DEFAULT)  # type: ignore[arg-type]


def _build_hf_enable(api: CheckpointApi, call: ast.Call, arguments: AstCallArguments, model: AstModel) -> AstSite:
    options = {name: arguments.option(name, model, position=index) for index, name in enumerate(api.positional)}
    options["use_reentrant"] = use_reentrant = _hf_use_reentrant(options[api.positional[0]], model)
    reentrancy = _hf_reentrancy(use_reentrant, api.reentrant_when_omitted)
    site = _site(api, call, arguments, model, function=None, inputs=(), keywords=(), options=options, reentrancy=reentrancy)
    site.extra["kwargs_option"] = api.positional[0]
    return site


def _build_hf_training_args(api: CheckpointApi, call: ast.Call, arguments: AstCallArguments, model: AstModel) -> AstSite | None:
    options = {name: arguments.option(name, model) for name in api.options}
    switch = "activation_checkpointing" if options["activation_checkpointing"].is_passed else "gradient_checkpointing"
    enabled = options[switch]
    if not enabled.is_true and not (api.enabled_by_default and enabled.is_absent):
        return None
    own = HF_KWARGS_OPTIONS[switch]
    kwargs_name = next((n for n in (own, *HF_KWARGS_OPTIONS.values()) if options[n].is_passed), own)
    options["use_reentrant"] = use_reentrant = _hf_use_reentrant(options[kwargs_name], model)
    new_name = switch == "activation_checkpointing"
    reentrancy = _hf_reentrancy(use_reentrant, api.reentrant_when_omitted and not new_name)
    site = _site(api, call, arguments, model, function=None, inputs=(), keywords=(), options=options, reentrancy=reentrancy)
    site.extra["kwargs_option"] = kwargs_name
    return site


def _positioned_options(api: CheckpointApi, arguments: AstCallArguments, model: AstModel) -> dict[str, AstOption]:
    return {
        name: arguments.option(name, model, position=api.positional.index(name) if name in api.positional else None) for name in api.options
    }


def _build_library_function(api: CheckpointApi, call: ast.Call, arguments: AstCallArguments, model: AstModel) -> AstSite:
    ordered = _ordered_non_keyword(call)
    function: ast.expr | None = None
    leading = len(api.positional) - 1
    inputs = ordered
    if ordered and not isinstance(ordered[0], ast.Starred):
        function = ordered[0]
        rest = ordered[1:]
        while leading and rest and not isinstance(rest[0], ast.Starred):
            rest, leading = rest[1:], leading - 1
        inputs = rest
    else:
        for name in ("function", "run_function"):
            if name in arguments.keywords:
                function = arguments.keywords[name].value
    if isinstance(function, ast.Attribute) and function.attr == "__call__":
        function = function.value  # ``block.__call__`` denotes ``block``
    options = _positioned_options(api, arguments, model)
    keywords = _forwarded_keywords(arguments, api) if api.accepts_function_kwargs else ()
    reentrancy = library_reentrancy(api, options.get("use_reentrant", AST_ABSENT))  # type: ignore[arg-type]
    return _site(
        api, call, arguments, model, function=function, inputs=tuple(inputs), keywords=keywords, options=options, reentrancy=reentrancy
    )


def _build_library_sequence(api: CheckpointApi, call: ast.Call, arguments: AstCallArguments, model: AstModel) -> AstSite:
    functions = _positional_or_keyword(arguments, api, "functions")
    given = _positional_or_keyword(arguments, api, "x")
    options = {name: arguments.option(name, model, position=api.positional.index(name)) for name in api.options}
    reentrancy = library_reentrancy(api, options.get("use_reentrant", AST_ABSENT))  # type: ignore[arg-type]
    inputs = (given,) if given is not None else ()
    return _site(api, call, arguments, model, function=functions, inputs=inputs, keywords=(), options=options, reentrancy=reentrancy)


def _build_library_wrapper(api: CheckpointApi, call: ast.Call, arguments: AstCallArguments, model: AstModel) -> AstSite:
    module = _positional_or_keyword(arguments, api, api.positional[0])
    options = {name: arguments.option(name, model, position=api.positional.index(name)) for name in api.options}
    reentrancy = library_reentrancy(api, AST_ABSENT)  # type: ignore[arg-type]
    return _site(api, call, arguments, model, function=module, inputs=(), keywords=(), options=options, reentrancy=reentrancy)


def _build_policy(api: CheckpointApi, call: ast.Call, arguments: AstCallArguments, model: AstModel) -> AstSite | None:
    """A policy's options and variant; its region expression stays with libcst for now."""
    options = _positioned_options(api, arguments, model)
    if api.positional == () and not any(options[k].is_passed for k in api.policy_keywords):
        return None  # a strategy without activation checkpointing
    if api.positional == () and all(
        options[k].is_absent or (options[k].state is OptionState.LITERAL and options[k].value is None) for k in api.policy_keywords
    ):
        return None
    reentrancy = _wrapper_fn_reentrancy(options.get("checkpoint_wrapper_fn", AST_ABSENT), model)
    return _site(api, call, arguments, model, function=None, inputs=(), keywords=(), options=options, reentrancy=reentrancy)


def _wrapper_fn_reentrancy(wrapper_fn: AstOption, model: AstModel) -> Reentrancy:
    """See :func:`ckptlint.checkpoint.sites.reach.wrapper_fn_reentrancy`."""
    if wrapper_fn.is_absent:
        return Reentrancy.DEFAULT_NON_REENTRANT
    node = wrapper_fn.node
    if isinstance(node, ast.Name):
        values = [b.value for b in model.bindings_of(node) if b.kind is BindingKind.ASSIGNMENT and b.value is not None]
        if len(values) == 1:
            node = values[0]
    if isinstance(node, ast.Call) and model.qualified_names(node.func) & PARTIAL_QUALIFIED_NAMES and (node.args or node.keywords):
        ordered = ordered_arguments(node)
        inner = api_for(model.qualified_names(argument_value(ordered[0])))
        if inner is not None and inner.kind is ApiKind.WRAPPER:
            for arg in ordered[1:]:
                if isinstance(arg, ast.keyword) and arg.arg == "checkpoint_impl":
                    impl = model.qualified_names(arg.value)
                    if any(n.endswith("CheckpointImpl.NO_REENTRANT") for n in impl):
                        return Reentrancy.NON_REENTRANT
                    if any(n.endswith("CheckpointImpl.REENTRANT") for n in impl):
                        return Reentrancy.REENTRANT
                    return Reentrancy.UNKNOWN
            return Reentrancy.DEFAULT_NON_REENTRANT
    if isinstance(node, (ast.Name, ast.Attribute)):
        inner = api_for(model.qualified_names(node))
        if inner is not None and inner.kind is ApiKind.WRAPPER:
            return Reentrancy.DEFAULT_NON_REENTRANT
    return Reentrancy.UNKNOWN


_Builder = Callable[[CheckpointApi, ast.Call, AstCallArguments, AstModel], AstSite | None]

#: One builder per kind of API a direct call can name (home-made implementations are found
#: by the libcst finder only).
BUILDERS: dict[ApiKind, _Builder] = {
    ApiKind.FUNCTION: _build_function,
    ApiKind.LIBRARY_FUNCTION: _build_library_function,
    ApiKind.LIBRARY_SEQUENCE: _build_library_sequence,
    ApiKind.LIBRARY_WRAPPER: _build_library_wrapper,
    ApiKind.POLICY: _build_policy,
    ApiKind.SEQUENTIAL: _build_sequential,
    ApiKind.WRAPPER: _build_wrapper,
    ApiKind.COMPOSABLE: _build_composable,
    ApiKind.HF_ENABLE: _build_hf_enable,
    ApiKind.HF_TRAINING_ARGS: _build_hf_training_args,
}

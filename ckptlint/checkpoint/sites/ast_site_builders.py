"""Building the sites of :mod:`ckptlint.checkpoint.sites.ast_sites` on CPython's ``ast``, one
builder per kind of API (torch's function, sequential, wrapper and composable forms, Hugging
Face's switches, other libraries' functions and wrappers, policies, home-made
implementations: options and variant of each); and the sites of calls through a
``functools.partial`` binding. The reentrancy helpers the rules share (``reentrancy_from``,
``library_reentrancy``) live in :mod:`ckptlint.checkpoint.sites.site_builders`.
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
    mapping_alternatives,
    option_from_mappings,
    ordered_arguments,
)
from ckptlint.checkpoint.sites.ast_reach import policy_region_expression
from ckptlint.checkpoint.sites.options import OptionOrigin, OptionState, OptionValue
from ckptlint.checkpoint.sites.site import CheckpointSite, Reentrancy, SiteForm
from ckptlint.checkpoint.sites.site_builders import LIBRARY_SWITCH, library_reentrancy, reentrancy_from
from ckptlint.facts.apis import CHECKPOINT_OPTIONS, PARTIAL_QUALIFIED_NAMES, ApiKind, CheckpointApi, api_for
from ckptlint.facts.hf_formats import HF_KWARGS_OPTIONS
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.bindings import BindingKind

__all__ = ["BUILDERS", "AstSite", "build_bound_call", "build_site"]

AstSite = CheckpointSite[ast.Call, ast.expr, ast.expr | ast.keyword, AstCallArguments]
_TORCH_CHECKPOINT = "torch.utils.checkpoint.checkpoint"


def build_site(api: CheckpointApi, form: SiteForm, call: ast.Call, arguments: AstCallArguments, model: AstModel) -> AstSite | None:
    return BUILDERS[api.kind](api, form, call, arguments, model)


def build_bound_call(bound: AstSite, call: ast.Call, model: AstModel) -> AstSite | None:
    """A call through ``name = partial(API, ...)``: the binding's options, overridden by the
    call's own keywords; ``None`` when the call builds no site."""
    own = build_site(bound.api, SiteForm.BOUND_CALL, call, AstCallArguments.of(call), model)
    if own is None:
        return None
    options = dict(bound.options)
    for name, value in own.options.items():
        if value.is_passed or (value.is_unknown and not options.get(name, AST_ABSENT).is_passed):
            options[name] = value
    function = bound.function if bound.function is not None else own.function
    inputs = own.inputs
    if bound.function is not None and own.function is not None:
        inputs = tuple(call.args)  # partial(checkpoint, fn)(x): the call's first positional is an input
    reentrancy = reentrancy_from(options.get("use_reentrant", AST_ABSENT), bound.api.reentrant_when_omitted)
    if bound.api.kind is ApiKind.WRAPPER:
        reentrancy = bound.reentrancy
    own.options = options
    own.function = function
    own.inputs = inputs
    own.function_keywords = bound.function_keywords + own.function_keywords
    own.reentrancy = reentrancy
    own.hidden_arguments = own.hidden_arguments or bound.hidden_arguments
    own.binding = bound
    return own


def _site(
    api: CheckpointApi,
    form: SiteForm,
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
        reentrancy = reentrancy_from(options.get("use_reentrant", AST_ABSENT), api.reentrant_when_omitted)
    return CheckpointSite(
        api=api,
        form=form,
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


def _ordered_non_keyword(arguments: AstCallArguments) -> list[ast.expr]:
    return list(arguments.ordered)


def _positional_or_keyword(arguments: AstCallArguments, api: CheckpointApi, name: str) -> ast.expr | None:
    """The value passed for parameter ``name`` of ``api``, by position or keyword."""
    given = _argument(arguments, api, name)
    return given.value if isinstance(given, ast.keyword) else given


def _argument(arguments: AstCallArguments, api: CheckpointApi, name: str) -> AstArg | None:
    """The argument passed for parameter ``name`` of ``api``: a positional expression or the
    ``keyword`` (an input keeps its keyword with it)."""
    index = api.positional.index(name)
    if not arguments.starred and len(arguments.positional) > index:
        return arguments.positional[index]
    return arguments.keywords.get(name)


def _build_function(api: CheckpointApi, form: SiteForm, call: ast.Call, arguments: AstCallArguments, model: AstModel) -> AstSite:
    ordered = _ordered_non_keyword(arguments)
    function: ast.expr | None = None
    inputs = ordered
    if ordered and not isinstance(ordered[0], ast.Starred):
        function, inputs = ordered[0], ordered[1:]
    elif "function" in arguments.keywords:
        function = arguments.keywords["function"].value
    options = {name: arguments.option(name, model) for name in api.options}
    keywords = _forwarded_keywords(arguments, api)
    return _site(api, form, call, arguments, model, function=function, inputs=tuple(inputs), keywords=keywords, options=options)


def _build_sequential(api: CheckpointApi, form: SiteForm, call: ast.Call, arguments: AstCallArguments, model: AstModel) -> AstSite:
    functions = _positional_or_keyword(arguments, api, "functions")
    given = _argument(arguments, api, "input")
    options = {
        "use_reentrant": arguments.option("use_reentrant", model, position=3),
        "preserve_rng_state": arguments.option("preserve_rng_state", model),
    }
    keywords = _forwarded_keywords(arguments, api)
    inputs = (given,) if given is not None else ()
    return _site(api, form, call, arguments, model, function=functions, inputs=inputs, keywords=keywords, options=options)


def _build_wrapper(api: CheckpointApi, form: SiteForm, call: ast.Call, arguments: AstCallArguments, model: AstModel) -> AstSite:
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
        reentrancy = reentrancy_from(options["use_reentrant"], True)
    else:
        reentrancy = Reentrancy.UNKNOWN
    keywords = _forwarded_keywords(arguments, api)
    return _site(api, form, call, arguments, model, function=module, inputs=(), keywords=keywords, options=options, reentrancy=reentrancy)


def _build_composable(api: CheckpointApi, form: SiteForm, call: ast.Call, arguments: AstCallArguments, model: AstModel) -> AstSite:
    module = _positional_or_keyword(arguments, api, "module")
    options = {name: arguments.option(name, model) for name in api.options}
    keywords = _forwarded_keywords(arguments, api)
    return _site(api, form, call, arguments, model, function=module, inputs=(), keywords=keywords, options=options)


def _hf_use_reentrant(kwargs: AstOption, model: AstModel) -> AstOption:
    if kwargs.is_absent or (kwargs.state is OptionState.LITERAL and kwargs.value is None):
        return OptionValue(OptionState.ABSENT, origin=OptionOrigin.DEFAULT)
    if kwargs.is_unknown or kwargs.node is None:
        return AST_UNKNOWN
    return option_from_mappings("use_reentrant", mapping_alternatives(kwargs.node, model), model)


def _hf_reentrancy(use_reentrant: AstOption, default_reentrant: bool) -> Reentrancy:
    return reentrancy_from(use_reentrant, default_reentrant or use_reentrant.origin is not OptionOrigin.DEFAULT)


def _build_hf_enable(api: CheckpointApi, form: SiteForm, call: ast.Call, arguments: AstCallArguments, model: AstModel) -> AstSite | None:
    """``gradient_checkpointing_enable(gradient_checkpointing_kwargs)``, transformers 5.24's
    ``activation_checkpointing_enable(activation_checkpointing_kwargs, every_n_layers, offload)``,
    or a library function that calls the first with the model it is given (peft's
    ``prepare_model_for_kbit_training``): no site where its switch is literally off."""
    options = {
        name: arguments.option(name, model, position=index) for index, name in enumerate(api.positional) if name in api.options
    }
    switch = options.get(LIBRARY_SWITCH)
    if switch is not None and switch.is_false:
        return None
    kwargs_name = next(name for name in api.options if name.endswith("_kwargs"))
    options["use_reentrant"] = use_reentrant = _hf_use_reentrant(options[kwargs_name], model)
    reentrancy = _hf_reentrancy(use_reentrant, api.reentrant_when_omitted)
    site = _site(api, form, call, arguments, model, function=None, inputs=(), keywords=(), options=options, reentrancy=reentrancy)
    site.extra["kwargs_option"] = kwargs_name
    return site


def _build_hf_training_args(
    api: CheckpointApi, form: SiteForm, call: ast.Call, arguments: AstCallArguments, model: AstModel
) -> AstSite | None:
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
    site = _site(api, form, call, arguments, model, function=None, inputs=(), keywords=(), options=options, reentrancy=reentrancy)
    site.extra["kwargs_option"] = kwargs_name
    return site


def _positioned_options(api: CheckpointApi, arguments: AstCallArguments, model: AstModel) -> dict[str, AstOption]:
    return {
        name: arguments.option(name, model, position=api.positional.index(name) if name in api.positional else None) for name in api.options
    }


def _build_library_function(api: CheckpointApi, form: SiteForm, call: ast.Call, arguments: AstCallArguments, model: AstModel) -> AstSite:
    ordered = _ordered_non_keyword(arguments)
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
    reentrancy = library_reentrancy(api, options.get("use_reentrant", AST_ABSENT))
    return _site(
        api,
        form,
        call,
        arguments,
        model,
        function=function,
        inputs=tuple(inputs),
        keywords=keywords,
        options=options,
        reentrancy=reentrancy,
    )


def _build_library_sequence(api: CheckpointApi, form: SiteForm, call: ast.Call, arguments: AstCallArguments, model: AstModel) -> AstSite:
    functions = _positional_or_keyword(arguments, api, "functions")
    given = _argument(arguments, api, "x")
    options = {name: arguments.option(name, model, position=api.positional.index(name)) for name in api.options}
    reentrancy = library_reentrancy(api, options.get("use_reentrant", AST_ABSENT))
    inputs = (given,) if given is not None else ()
    return _site(api, form, call, arguments, model, function=functions, inputs=inputs, keywords=(), options=options, reentrancy=reentrancy)


def _build_library_wrapper(api: CheckpointApi, form: SiteForm, call: ast.Call, arguments: AstCallArguments, model: AstModel) -> AstSite:
    module = _positional_or_keyword(arguments, api, api.positional[0])
    options = {name: arguments.option(name, model, position=api.positional.index(name)) for name in api.options}
    reentrancy = library_reentrancy(api, AST_ABSENT)
    return _site(api, form, call, arguments, model, function=module, inputs=(), keywords=(), options=options, reentrancy=reentrancy)


def _build_policy(api: CheckpointApi, form: SiteForm, call: ast.Call, arguments: AstCallArguments, model: AstModel) -> AstSite | None:
    """A policy's options, variant and region expression (the classes it selects)."""
    options = _positioned_options(api, arguments, model)
    if api.positional == () and not any(options[k].is_passed for k in api.policy_keywords):
        return None  # a strategy without activation checkpointing
    if api.positional == () and all(
        options[k].is_absent or (options[k].state is OptionState.LITERAL and options[k].value is None) for k in api.policy_keywords
    ):
        return None
    function = policy_region_expression(api, options, model)
    reentrancy = _wrapper_fn_reentrancy(options.get("checkpoint_wrapper_fn", AST_ABSENT), model)
    return _site(api, form, call, arguments, model, function=function, inputs=(), keywords=(), options=options, reentrancy=reentrancy)


def _wrapper_fn_reentrancy(wrapper_fn: AstOption, model: AstModel) -> Reentrancy:
    """The variant ``apply_activation_checkpointing``'s ``checkpoint_wrapper_fn`` runs:
    torch's ``checkpoint_wrapper`` defaults to ``CheckpointImpl.NO_REENTRANT``; a
    ``partial(checkpoint_wrapper, checkpoint_impl=...)`` says which."""
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


def _build_home_made(api: CheckpointApi, form: SiteForm, call: ast.Call, arguments: AstCallArguments, model: AstModel) -> AstSite:
    """A call of a home-made implementation's ``apply`` or of a helper around it
    (``site_builders._build_home_made``): the argument at the API's ``function`` position is
    the callable (when no ``*`` argument comes before it; else the keyword of that name), the
    other positional ones are inputs; no options, reentrant."""
    index = int(api.positional.index("function")) if "function" in api.positional else 0
    ordered = _ordered_non_keyword(arguments)
    function: ast.expr | None = None
    inputs = ordered
    if len(ordered) > index and not any(isinstance(a, ast.Starred) for a in ordered[: index + 1]):
        function = ordered[index]
        inputs = ordered[:index] + ordered[index + 1 :]
    else:
        name = api.positional[index] if index < len(api.positional) else None
        if name is not None and name in arguments.keywords:
            function = arguments.keywords[name].value
    return _site(
        api, form, call, arguments, model, function=function, inputs=tuple(inputs), keywords=(), options={},
        reentrancy=Reentrancy.REENTRANT,
    )


_Builder = Callable[[CheckpointApi, SiteForm, ast.Call, AstCallArguments, AstModel], AstSite | None]

#: One builder per kind of API a call can name.
BUILDERS: dict[ApiKind, _Builder] = {
    ApiKind.FUNCTION: _build_function,
    ApiKind.LIBRARY_FUNCTION: _build_library_function,
    ApiKind.LIBRARY_SEQUENCE: _build_library_sequence,
    ApiKind.LIBRARY_WRAPPER: _build_library_wrapper,
    ApiKind.POLICY: _build_policy,
    ApiKind.HOME_MADE: _build_home_made,
    ApiKind.SEQUENTIAL: _build_sequential,
    ApiKind.WRAPPER: _build_wrapper,
    ApiKind.COMPOSABLE: _build_composable,
    ApiKind.HF_ENABLE: _build_hf_enable,
    ApiKind.HF_TRAINING_ARGS: _build_hf_training_args,
}

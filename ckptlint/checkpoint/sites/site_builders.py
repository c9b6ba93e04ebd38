"""Building a :class:`~ckptlint.checkpoint.sites.site.CheckpointSite` from a call of a recognised API, one
builder per kind of API (torch's function, sequential, wrapper and composable forms, Hugging
Face's switches, other libraries' functions and wrappers, policies, home-made implementations)."""

from __future__ import annotations

import libcst as cst

from ckptlint.checkpoint.sites.options import (
    ABSENT,
    UNKNOWN,
    CallArguments,
    OptionOrigin,
    OptionState,
    OptionValue,
    mapping_alternatives,
    option_from_mappings,
)
from ckptlint.checkpoint.sites.site import CheckpointSite, Reentrancy, SiteForm
from ckptlint.facts.apis import (
    CHECKPOINT_OPTIONS,
    ApiKind,
    CheckpointApi,
)
from ckptlint.facts.hf_formats import HF_KWARGS_OPTIONS
from ckptlint.semantic.model import SemanticModel

_TORCH_CHECKPOINT = "torch.utils.checkpoint.checkpoint"

def build_site(
    api: CheckpointApi, form: SiteForm, call: cst.Call, arguments: CallArguments, model: SemanticModel
) -> CheckpointSite | None:
    builder = BUILDERS[api.kind]
    return builder(api, form, call, arguments, model)

def _ordered_non_keyword(arguments: CallArguments, call: cst.Call) -> list[cst.Arg]:
    wanted = set(map(id, arguments.positional)) | set(map(id, arguments.starred))
    return [arg for arg in call.args if id(arg) in wanted]

def _reentrancy_from(use_reentrant: OptionValue, reentrant_when_omitted: bool) -> Reentrancy:
    if use_reentrant.state is OptionState.ABSENT:
        return Reentrancy.OMITTED_REENTRANT if reentrant_when_omitted else Reentrancy.DEFAULT_NON_REENTRANT
    if use_reentrant.state is OptionState.UNKNOWN:
        return Reentrancy.UNKNOWN
    if use_reentrant.state is OptionState.LITERAL:
        if use_reentrant.value is True:
            return Reentrancy.REENTRANT
        if use_reentrant.value is False:
            return Reentrancy.NON_REENTRANT
        if use_reentrant.value is None:
            return Reentrancy.OMITTED_REENTRANT if reentrant_when_omitted else Reentrancy.DEFAULT_NON_REENTRANT
        return Reentrancy.REENTRANT if use_reentrant.value else Reentrancy.NON_REENTRANT
    return Reentrancy.DYNAMIC

def _unknown_splat(arguments: CallArguments, model: SemanticModel) -> bool:
    return arguments.splat_keys(model)[1]

def _site(
    api: CheckpointApi,
    form: SiteForm,
    call: cst.Call,
    arguments: CallArguments,
    model: SemanticModel,
    *,
    function: cst.BaseExpression | None,
    inputs: tuple[cst.Arg, ...],
    keywords: tuple[cst.Arg, ...],
    options: dict[str, OptionValue],
    reentrancy: Reentrancy | None = None,
) -> CheckpointSite:
    """A site with the fields every builder fills the same way (reentrancy from
    ``use_reentrant`` unless given, unknown ``**`` content, scope)."""
    if reentrancy is None:
        reentrancy = _reentrancy_from(options.get("use_reentrant", ABSENT), api.reentrant_when_omitted)
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
        hidden_arguments=_unknown_splat(arguments, model),
        scope=model.scope_of(call),
    )

def _forwarded_keywords(arguments: CallArguments, api: CheckpointApi) -> tuple[cst.Arg, ...]:
    """Keywords that are neither options of ``api`` nor its named positional parameters: they
    go to the checkpointed function (or, for APIs that take none, are errors)."""
    return tuple(
        arg for name, arg in arguments.keywords.items() if name not in api.options and name not in api.positional
    )

def _build_function(
    api: CheckpointApi, form: SiteForm, call: cst.Call, arguments: CallArguments, model: SemanticModel
) -> CheckpointSite:
    ordered = _ordered_non_keyword(arguments, call)
    function: cst.BaseExpression | None = None
    inputs = ordered
    if ordered and ordered[0].star == "":
        function, inputs = ordered[0].value, ordered[1:]
    elif "function" in arguments.keywords:
        function = arguments.keywords["function"].value
    options = {name: arguments.option(name, model) for name in api.options}
    keywords = _forwarded_keywords(arguments, api)
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
    )

def _positional_or_keyword(arguments: CallArguments, api: CheckpointApi, name: str) -> cst.Arg | None:
    index = api.positional.index(name)
    if not arguments.starred and len(arguments.positional) > index:
        return arguments.positional[index]
    return arguments.keywords.get(name)

def _build_sequential(
    api: CheckpointApi, form: SiteForm, call: cst.Call, arguments: CallArguments, model: SemanticModel
) -> CheckpointSite:
    functions = _positional_or_keyword(arguments, api, "functions")
    input_arg = _positional_or_keyword(arguments, api, "input")
    options = {
        "use_reentrant": arguments.option("use_reentrant", model, position=3),
        "preserve_rng_state": arguments.option("preserve_rng_state", model),
    }
    keywords = _forwarded_keywords(arguments, api)
    return _site(
        api,
        form,
        call,
        arguments,
        model,
        function=functions.value if functions is not None else None,
        inputs=(input_arg,) if input_arg is not None else (),
        keywords=keywords,
        options=options,
    )

def _build_wrapper(
    api: CheckpointApi, form: SiteForm, call: cst.Call, arguments: CallArguments, model: SemanticModel
) -> CheckpointSite:
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
        reentrancy = _reentrancy_from(options["use_reentrant"], True)
    else:
        reentrancy = Reentrancy.UNKNOWN
    keywords = _forwarded_keywords(arguments, api)
    return _site(
        api,
        form,
        call,
        arguments,
        model,
        function=module.value if module is not None else None,
        inputs=(),
        keywords=keywords,
        options=options,
        reentrancy=reentrancy,
    )

def _build_composable(
    api: CheckpointApi, form: SiteForm, call: cst.Call, arguments: CallArguments, model: SemanticModel
) -> CheckpointSite:
    module = _positional_or_keyword(arguments, api, "module")
    options = {name: arguments.option(name, model) for name in api.options}
    keywords = _forwarded_keywords(arguments, api)
    return _site(
        api,
        form,
        call,
        arguments,
        model,
        function=module.value if module is not None else None,
        inputs=(),
        keywords=keywords,
        options=options,
    )

def _hf_use_reentrant(kwargs: OptionValue, model: SemanticModel) -> OptionValue:
    if kwargs.is_absent or (kwargs.state is OptionState.LITERAL and kwargs.value is None):
        return OptionValue(OptionState.ABSENT, origin=OptionOrigin.DEFAULT)
    if kwargs.is_unknown or kwargs.node is None:
        return UNKNOWN
    return option_from_mappings("use_reentrant", mapping_alternatives(kwargs.node, model), model)

def _hf_reentrancy(use_reentrant: OptionValue, default_reentrant: bool) -> Reentrancy:
    """A kwargs dict passed without ``use_reentrant`` (or with ``None``) leaves the choice to
    torch, which runs reentrant (2.9-2.13); only absent kwargs take transformers' default."""
    return _reentrancy_from(use_reentrant, default_reentrant or use_reentrant.origin is not OptionOrigin.DEFAULT)

#: The switch parameter of a library function that enables transformers' checkpointing (peft).
LIBRARY_SWITCH = "use_gradient_checkpointing"

def _build_hf_enable(
    api: CheckpointApi, form: SiteForm, call: cst.Call, arguments: CallArguments, model: SemanticModel
) -> CheckpointSite | None:
    """``gradient_checkpointing_enable(gradient_checkpointing_kwargs)``, transformers 5.24's
    ``activation_checkpointing_enable(activation_checkpointing_kwargs, every_n_layers, offload)``,
    or a library function that calls the first with the model it is given (peft's
    ``prepare_model_for_kbit_training(model, use_gradient_checkpointing, gradient_checkpointing_kwargs)``:
    no site where its switch is literally off)."""
    options = {
        name: arguments.option(name, model, position=index) for index, name in enumerate(api.positional) if name in api.options
    }
    switch = options.get(LIBRARY_SWITCH)
    if switch is not None and switch.is_false:
        return None
    kwargs_name = next(name for name in api.options if name.endswith("_kwargs"))
    options["use_reentrant"] = use_reentrant = _hf_use_reentrant(options[kwargs_name], model)
    reentrancy = _hf_reentrancy(use_reentrant, api.reentrant_when_omitted)
    site = _site(
        api, form, call, arguments, model, function=None, inputs=(), keywords=(), options=options, reentrancy=reentrancy
    )
    site.extra["kwargs_option"] = kwargs_name
    return site

def _build_hf_training_args(
    api: CheckpointApi, form: SiteForm, call: cst.Call, arguments: CallArguments, model: SemanticModel
) -> CheckpointSite | None:
    """``TrainingArguments(gradient_checkpointing=True, ...)`` or 5.24's
    ``activation_checkpointing=True`` (the new name wins when both are passed, as in
    ``__post_init__``); with the new name unset kwargs run non-reentrant (only 5.24 has it)."""
    options = {name: arguments.option(name, model) for name in api.options}
    switch = "activation_checkpointing" if options["activation_checkpointing"].is_passed else "gradient_checkpointing"
    enabled = options[switch]
    if not enabled.is_true and not (api.enabled_by_default and enabled.is_absent):
        return None
    own = HF_KWARGS_OPTIONS[switch]  # its kwargs; the other name is an alias of it in 5.24
    kwargs_name = next((n for n in (own, *HF_KWARGS_OPTIONS.values()) if options[n].is_passed), own)
    options["use_reentrant"] = use_reentrant = _hf_use_reentrant(options[kwargs_name], model)
    new_name = switch == "activation_checkpointing"
    reentrancy = _hf_reentrancy(use_reentrant, api.reentrant_when_omitted and not new_name)
    site = _site(
        api, form, call, arguments, model, function=None, inputs=(), keywords=(), options=options, reentrancy=reentrancy
    )
    site.extra["kwargs_option"] = kwargs_name
    return site

def build_bound_call(bound: CheckpointSite, call: cst.Call, model: SemanticModel) -> CheckpointSite | None:
    """A call through ``name = partial(API, ...)``: the binding's options, overridden by the
    call's own keywords (as ``functools.partial`` does)."""
    own = build_site(bound.api, SiteForm.BOUND_CALL, call, CallArguments.of(call), model)
    if own is None:
        return None
    options = dict(bound.options)
    for name, value in own.options.items():
        if value.is_passed or (value.is_unknown and not options.get(name, ABSENT).is_passed):
            options[name] = value
    bound_function = bound.function
    function = bound_function if bound_function is not None else own.function
    inputs = own.inputs
    if bound_function is not None and own.function is not None:
        # partial(checkpoint, fn)(x): the call's first positional is an input.
        first = CallArguments.of(call)
        inputs = tuple(_ordered_non_keyword(first, call))
    reentrancy = _reentrancy_from(options.get("use_reentrant", ABSENT), bound.api.reentrant_when_omitted)
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

def _library_reentrancy(api: CheckpointApi, use_reentrant: OptionValue) -> Reentrancy:
    """The variant a library's own entry point runs (see ``CheckpointApi.fixed_reentrancy``).
    A library's default is explicit (no torch warning), so leaving ``use_reentrant`` out is
    never ``OMITTED_REENTRANT`` (CKP001 judges torch's own functions only)."""
    fixed = api.fixed_reentrancy
    if fixed == "reentrant":
        return Reentrancy.REENTRANT
    if fixed == "non-reentrant":
        return Reentrancy.NON_REENTRANT
    if fixed == "unknown":
        return Reentrancy.UNKNOWN
    if use_reentrant.is_absent and fixed == "config":
        return Reentrancy.DYNAMIC
    reentrancy = _reentrancy_from(use_reentrant, api.reentrant_when_omitted)
    if reentrancy is Reentrancy.OMITTED_REENTRANT:
        return Reentrancy.REENTRANT
    return reentrancy

def _unwrap_call_method(expr: cst.BaseExpression | None) -> cst.BaseExpression | None:
    """``block.__call__`` (older transformers pass it) denotes ``block``."""
    if isinstance(expr, cst.Attribute) and expr.attr.value == "__call__":
        return expr.value
    return expr

def _build_library_function(
    api: CheckpointApi, form: SiteForm, call: cst.Call, arguments: CallArguments, model: SemanticModel
) -> CheckpointSite:
    ordered = _ordered_non_keyword(arguments, call)
    function: cst.BaseExpression | None = None
    leading = len(api.positional) - 1
    inputs = ordered
    if ordered and ordered[0].star == "":
        function = ordered[0].value
        rest = ordered[1:]
        while leading and rest and rest[0].star == "":
            rest, leading = rest[1:], leading - 1
        inputs = rest
    else:
        for name in ("function", "run_function"):
            if name in arguments.keywords:
                function = arguments.keywords[name].value
    options = {
        name: arguments.option(name, model, position=api.positional.index(name) if name in api.positional else None)
        for name in api.options
    }
    keywords = _forwarded_keywords(arguments, api) if api.accepts_function_kwargs else ()
    return _site(
        api,
        form,
        call,
        arguments,
        model,
        function=_unwrap_call_method(function),
        inputs=tuple(inputs),
        keywords=keywords,
        options=options,
        reentrancy=_library_reentrancy(api, options.get("use_reentrant", ABSENT)),
    )

def _build_library_sequence(
    api: CheckpointApi, form: SiteForm, call: cst.Call, arguments: CallArguments, model: SemanticModel
) -> CheckpointSite:
    functions = _positional_or_keyword(arguments, api, "functions")
    input_arg = _positional_or_keyword(arguments, api, "x")
    options = {name: arguments.option(name, model, position=api.positional.index(name)) for name in api.options}
    return _site(
        api,
        form,
        call,
        arguments,
        model,
        function=functions.value if functions is not None else None,
        inputs=(input_arg,) if input_arg is not None else (),
        keywords=(),
        options=options,
        reentrancy=_library_reentrancy(api, options.get("use_reentrant", ABSENT)),
    )

def _build_library_wrapper(
    api: CheckpointApi, form: SiteForm, call: cst.Call, arguments: CallArguments, model: SemanticModel
) -> CheckpointSite:
    module = _positional_or_keyword(arguments, api, api.positional[0])
    options = {name: arguments.option(name, model, position=api.positional.index(name)) for name in api.options}
    return _site(
        api,
        form,
        call,
        arguments,
        model,
        function=module.value if module is not None else None,
        inputs=(),
        keywords=(),
        options=options,
        reentrancy=_library_reentrancy(api, ABSENT),
    )

def _build_policy(
    api: CheckpointApi, form: SiteForm, call: cst.Call, arguments: CallArguments, model: SemanticModel
) -> CheckpointSite | None:
    from ckptlint.checkpoint.sites.reach import (
        policy_region_expression,
        wrapper_fn_reentrancy,
    )

    options = {
        name: arguments.option(name, model, position=api.positional.index(name) if name in api.positional else None)
        for name in api.options
    }
    if api.positional == () and not any(options[k].is_passed for k in api.policy_keywords):
        return None  # a strategy without activation checkpointing
    if api.positional == () and all(
        options[k].is_absent or (options[k].state is OptionState.LITERAL and options[k].value is None)
        for k in api.policy_keywords
    ):
        return None
    function = policy_region_expression(api, options, model)
    reentrancy = wrapper_fn_reentrancy(options.get("checkpoint_wrapper_fn", ABSENT), model)
    return _site(
        api,
        form,
        call,
        arguments,
        model,
        function=function,
        inputs=(),
        keywords=(),
        options=options,
        reentrancy=reentrancy,
    )

def _build_home_made(
    api: CheckpointApi, form: SiteForm, call: cst.Call, arguments: CallArguments, model: SemanticModel
) -> CheckpointSite:
    """A call of a home-made implementation's ``apply`` or of a helper around it; the
    site's ``extra["function_index"]`` says which argument is the callable."""
    index = int(api.positional.index("function")) if "function" in api.positional else 0
    ordered = _ordered_non_keyword(arguments, call)
    function = None
    inputs = ordered
    if len(ordered) > index and not any(a.star for a in ordered[: index + 1]):
        function = ordered[index].value
        inputs = ordered[:index] + ordered[index + 1 :]
    else:
        name = api.positional[index] if index < len(api.positional) else None
        if name is not None and name in arguments.keywords:
            function = arguments.keywords[name].value
    return _site(
        api,
        form,
        call,
        arguments,
        model,
        function=function,
        inputs=tuple(inputs),
        keywords=(),
        options={},
        reentrancy=Reentrancy.REENTRANT,
    )

#: Public names of the variant rules, for sites built elsewhere (calls of helpers).
reentrancy_from = _reentrancy_from
library_reentrancy = _library_reentrancy

BUILDERS = {
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

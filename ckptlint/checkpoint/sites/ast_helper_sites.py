"""Calls of helpers that take the checkpointed callable as an argument, on CPython's ``ast``,
for the helpers of the same module: the summaries (:class:`~ckptlint.checkpoint.sites.site.HelperSummary`) and the
``SiteForm.HELPER_CALL`` sites of one module alone (see
:mod:`ckptlint.checkpoint.sites.helper_sites` for what a helper is and what its calls carry):

- a helper is a module-level function, or a method of a module-level class, whose parameter
  is (or builds) the callable of a direct checkpoint call of the module
  (:func:`ckptlint.checkpoint.sites.ast_sites.direct_sites`) of torch's function form or
  another library's function; a helper calling a helper is one too, up to
  :data:`~ckptlint.checkpoint.sites.helper_sites.MAX_LEVELS` levels;
- a call is a call of a helper when it calls a module-level function of the module by its
  plain name (``run(block, x)``), or ``self.method(...)`` / ``cls.method(...)`` of the class
  around it or of one of its base classes defined in the module.

Helpers imported from other modules of the linted tree (``from .utils import run``,
``utils.run(...)``, a base class in another module) are followed by
:mod:`ckptlint.checkpoint.sites.ast_helper_calls`, which runs this module's level loop with
its resolver; :func:`~ckptlint.checkpoint.sites.ast_site_index.ast_site_index` runs the whole
stage, APIs followed into other modules included.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from functools import partial

from ckptlint.checkpoint.sites.ast_helper_summaries import (
    AstHelperCall,
    AstHelperSummary,
    summarise_helpers,
)
from ckptlint.checkpoint.sites.ast_homemade import AstHomeMade, home_made, implementation_of_apply
from ckptlint.checkpoint.sites.ast_options import (
    AST_ABSENT,
    AST_UNKNOWN,
    AstArg,
    AstCallArguments,
    AstOption,
    argument_value,
    in_branch_torch_never_takes,
    literal_value,
    ordered_arguments,
    torch_version_test,
    value_of,
)
from ckptlint.checkpoint.sites.ast_receivers import instance_method_api, self_attribute_api, self_partial
from ckptlint.checkpoint.sites.ast_site_builders import AstSite
from ckptlint.checkpoint.sites.ast_sites import direct_sites, rebound_to_partials
from ckptlint.checkpoint.sites.helper_sites import MAX_LEVELS
from ckptlint.checkpoint.sites.options import NOT_LITERAL, OptionState, OptionValue
from ckptlint.checkpoint.sites.site import CheckpointSite, Reentrancy, SiteForm
from ckptlint.checkpoint.sites.site_builders import library_reentrancy, reentrancy_from
from ckptlint.facts.apis import (
    HF_ENABLE_METHODS,
    METHOD_APIS,
    PARTIAL_QUALIFIED_NAMES,
    UTILS_CHECKPOINT_MODULE,
    ApiKind,
    api_for,
)
from ckptlint.facts.saving import DCP_FUNCTIONS
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.ast_walk import FUNCTIONS
from ckptlint.semantic.bindings import BindingKind, ScopeKind

__all__ = [
    "AstHelperCall",
    "AstHelperSummary",
    "HelperSites",
    "build_helper_site",
    "helper_of",
    "helper_sites",
    "inputs_bound",
    "literal_flags",
    "summarise_helpers",
]

#: Base classes followed up from the class around a ``self.method(...)`` call (``helper_calls``).
_MAX_BASES = 4


class HelperSites:
    """What :func:`helper_sites` finds in one module: its helpers, by qualified name in the
    module (``run``, ``Net.ckpt``; the first summary of a name found wins, level by level),
    and the ``HELPER_CALL`` sites of their calls (level by level, each level in the order of
    the candidate calls: calls of plain names, then of attributes)."""

    def __init__(self, helpers: dict[str, AstHelperSummary], sites: list[AstSite]) -> None:
        self.helpers = helpers
        self.sites = sites


def helper_sites(model: AstModel, sites: list[AstSite] | None = None) -> HelperSites:
    """The helpers of ``model``'s module and the sites of their calls (see the module
    docstring), the module read alone (no loader); ``sites``: the module's direct sites (:func:`direct_sites` when not given). Kept in
    the model's memo when ``sites`` is not given."""
    if sites is None:
        kept = model.memo.get("helper_sites")
        if isinstance(kept, HelperSites):
            return kept
        found = _helper_sites(model, direct_sites(model))
        model.memo["helper_sites"] = found
        return found
    return _helper_sites(model, sites)


#: Which helper a call calls, given the helpers of the module found so far (``own``).
Resolve = Callable[[ast.Call, dict[str, AstHelperSummary]], "AstHelperSummary | None"]


def _own_helper(call: ast.Call, own: dict[str, AstHelperSummary], model: AstModel) -> AstHelperSummary | None:
    return helper_of(call, model, own)


def _helper_sites(
    model: AstModel,
    sites: list[AstSite],
    helpers: dict[str, AstHelperSummary] | None = None,
    resolve: Resolve | None = None,
    home: AstHomeMade | None = None,
) -> HelperSites:
    """The level-by-level search for helper calls: ``helpers`` (the
    dict ``resolve`` reads as the module's own helpers) is filled in level by level;
    ``resolve``: which helper a call calls (:func:`helper_of`, the module alone, when not
    given); ``home``: the module's home-made implementations, whose calls are no candidates
    (``home_made(model)`` when not given)."""
    if helpers is None:
        helpers = {}
    if resolve is None:
        resolve = partial(_own_helper, model=model)
    seen = {id(site.call) for site in sites}
    candidates = [call for call in _candidates(model, home) if id(call) not in seen]
    found: list[AstSite] = []
    level_sites = sites
    for level in range(1, MAX_LEVELS + 1):
        for name, helper in summarise_helpers(level_sites, model, level).items():
            helpers.setdefault(name, helper)
        new: list[AstSite] = []
        remaining: list[ast.Call] = []
        for call in candidates:
            summary = resolve(call, helpers)
            if summary is None:
                remaining.append(call)
                continue
            site = build_helper_site(summary, call, model)
            if site is not None and not in_branch_torch_never_takes(model, call):
                new.append(site)
        if not new:
            break
        found += new
        level_sites, candidates = new, remaining
    return HelperSites(helpers, found)


def _candidates(model: AstModel, home: AstHomeMade | None = None) -> list[ast.Call]:
    """The calls that may call a helper, those the site pass leaves (calls of plain names,
    then attribute calls nothing recognised):
    not calls of an API (but a plain name rebound to ``functools.partial`` bindings), of
    ``torch.utils.checkpoint`` itself or of ``torch.distributed.checkpoint``, nor
    ``partial(X, ...)``, switches, method APIs, methods of API instances, home-made
    ``apply`` calls and calls of home-made helpers, ``self.attr`` holding a checkpoint
    function or a partial binding."""
    deferred: list[ast.Call] = []
    others: list[ast.Call] = []
    if home is None:
        home = home_made(model)

    def decide(test: ast.expr) -> bool | None:
        return torch_version_test(test, model)

    for call in model.calls:
        func = call.func
        names = model.qualified_names(func)
        if api_for(names) is not None:
            if isinstance(func, ast.Name) and rebound_to_partials(model, func, decide):
                deferred.append(call)
            continue
        if UTILS_CHECKPOINT_MODULE in names or any(name in DCP_FUNCTIONS for name in names):
            continue
        if names & PARTIAL_QUALIFIED_NAMES and call.args:
            if not isinstance(ordered_arguments(call)[0], (ast.keyword, ast.Starred)):
                continue
        if isinstance(func, ast.Attribute) and func.attr in HF_ENABLE_METHODS:
            continue
        if _recognised(call, names, model, home):
            continue
        if isinstance(func, ast.Name):
            deferred.append(call)
        elif isinstance(func, ast.Attribute) and self_partial(func, model) is None:
            others.append(call)
    return deferred + others


def _recognised(call: ast.Call, names: frozenset[str], model: AstModel, found: AstHomeMade) -> bool:
    """Whether ``call`` is recognised as an API without a loader: a method
    API, a method of an API instance, a home-made ``apply`` or helper, ``self.attr`` holding
    a checkpoint function (a ``TrainingArguments`` subclass is a class, never a helper)."""
    func = call.func
    if isinstance(func, ast.Attribute):
        if func.attr in METHOD_APIS or instance_method_api(func, model) is not None:
            return True
        if implementation_of_apply(call, model, found) is not None or self_attribute_api(func, model) is not None:
            return True
    for name in names:
        if name in found.helpers:
            return True
        if name.endswith(".apply") and name[: -len(".apply")] in found.implementations:
            return True
    return False


# ---------------------------------------------------------------------------- which helper
def helper_of(call: ast.Call, model: AstModel, own: dict[str, AstHelperSummary]) -> AstHelperSummary | None:
    """The helper of this module (among ``own``) that ``call`` calls, or ``None`` (the module
    read alone: no loader)."""
    if not call.args and not call.keywords:
        return None  # a helper takes the callable as an argument
    func = call.func
    if isinstance(func, ast.Name):
        for binding in model.bindings_of(func):
            if binding.kind is BindingKind.FUNCTION and binding.scope is model.module_scope:
                found = own.get(binding.name)
                return found if found is not None and not found.method else None
            if binding.kind is BindingKind.IMPORT and binding.target:
                return None  # another module's helper: followed with a loader
        return None
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
        owner = _enclosing_class(model, func)
        if owner is None:
            return None
        scope = model.scope_of_definition.get(owner)
        if scope is None:
            return None
        return _method_in(model, scope.qualname, owner, func.attr, own, 0)
    return None


def _method_in(
    model: AstModel, class_qualname: str, node: ast.ClassDef, method: str, helpers: dict[str, AstHelperSummary], depth: int
) -> AstHelperSummary | None:
    found = helpers.get(f"{class_qualname}.{method}")
    if found is not None:
        return found if found.method else None
    if any(isinstance(s, FUNCTIONS) and s.name == method for s in node.body) or depth >= _MAX_BASES:
        return None  # defined here without checkpointing its parameter: not a helper
    for base in node.bases:
        value = base.value if isinstance(base, ast.Starred) else base
        for qualified in sorted(model.qualified_names(value)):
            module, _, name = qualified.rpartition(".")
            if module == model.module_name or not module:
                local = _class_named(model, name)
                if local is not None:
                    result = _method_in(model, name, local, method, helpers, depth + 1)
                    if result is not None:
                        return result
    return None


def _class_named(model: AstModel, name: str) -> ast.ClassDef | None:
    for binding in model.module_scope.bindings.get(name, ()):
        if binding.kind is BindingKind.CLASS and isinstance(binding.node, ast.ClassDef):
            return binding.node
    return None


def _enclosing_class(model: AstModel, node: ast.AST) -> ast.ClassDef | None:
    """The module-level class whose method (or a function nested in it) holds ``node``."""
    function = model.enclosing(node, *FUNCTIONS)
    while function is not None:
        scope = model.scope_of(function)
        if scope.kind is ScopeKind.CLASS and isinstance(scope.node, ast.ClassDef):
            return scope.node
        function = model.enclosing(function, *FUNCTIONS)
    return None


# ---------------------------------------------------------------------------- callers
class _Bound:
    """The arguments of one call of a helper, bound to its parameters (see ``helper_sites._Bound``)."""

    def __init__(self, summary: AstHelperSummary, call: ast.Call) -> None:
        self.by_name: dict[str, AstArg] = {}
        self.rest: list[AstArg] = []  # positional arguments that go to *args
        self.extra_keywords: list[ast.keyword] = []  # keywords that go to **kwargs
        self.open = False  # a * or ** argument: what it binds is not known
        params = list(summary.params)
        index = 0
        for arg in ordered_arguments(call):
            if isinstance(arg, ast.Starred):
                self.open = True  # nothing after it binds by position
                continue
            if isinstance(arg, ast.keyword):
                if arg.arg is None:
                    self.open = True
                elif arg.arg in params or arg.arg in summary.keyword_only:
                    self.by_name[arg.arg] = arg
                else:
                    self.extra_keywords.append(arg)
                continue
            if self.open:
                continue
            if index < len(params):
                self.by_name[params[index]] = arg
            else:
                self.rest.append(arg)
            index += 1

    def literal(self, name: str, summary: AstHelperSummary, model: AstModel) -> object:
        arg = self.by_name.get(name)
        if arg is not None:
            return literal_value(argument_value(arg), model)
        if self.open:
            return NOT_LITERAL
        default = summary.defaults.get(name)
        return literal_value(default, summary.analysis) if default is not None else NOT_LITERAL


def build_helper_site(summary: AstHelperSummary, call: ast.Call, model: AstModel) -> AstSite | None:
    """The site of ``call`` (a call of the helper ``summary`` in ``model``'s module), or
    ``None`` when the literal flags it passes rule out every checkpoint call of the helper"""
    bound = _Bound(summary, call)
    alive = tuple(c for c in summary.calls if not _ruled_out(c, bound, summary, model))
    if not alive:
        return None
    function_arg = bound.by_name.get(summary.parameter)
    arguments = AstCallArguments.of(call)
    options: dict[str, AstOption] = {}
    decided: set[str] = set()
    names = {name for c in alive for name in c.plans}
    for name in sorted(names):
        values = []
        for alternative in alive:
            value, by_caller = _option(alternative, name, bound, arguments, summary, model)
            values.append(value)
            if by_caller:
                decided.add(name)
        first = values[0]
        same = all(v.state is first.state and v.value == first.value and type(v.value) is type(first.value) for v in values)
        options[name] = first if same else AST_UNKNOWN
    api = alive[0].site.api
    use_reentrant = options.get("use_reentrant", AST_ABSENT)
    if "use_reentrant" in decided:
        if api.kind is ApiKind.FUNCTION:
            reentrancy = reentrancy_from(use_reentrant, api.reentrant_when_omitted)
        else:
            reentrancy = library_reentrancy(api, use_reentrant)
    else:
        variants = {c.site.reentrancy for c in alive}
        reentrancy = variants.pop() if len(variants) == 1 else Reentrancy.UNKNOWN
    forwards = any(plan == ("keywords",) for c in alive for plan in c.plans.values())
    keywords = tuple(arg for arg in bound.extra_keywords if forwards and arg.arg is not None and arg.arg not in api.options)
    hidden = bound.open and (forwards or any(c.site.hidden_arguments for c in alive))
    return CheckpointSite(
        api=api,
        form=SiteForm.HELPER_CALL,
        call=call,
        arguments=arguments,
        function=argument_value(function_arg) if function_arg is not None else None,
        inputs=_inputs(alive, bound),
        function_keywords=keywords,
        options=options,
        reentrancy=reentrancy,
        hidden_arguments=hidden or any(c.site.hidden_arguments and not forwards for c in alive),
        scope=model.scope_of(call),
        helper=summary,
        alternatives=alive,
        caller_options=frozenset(decided),
    )


def _ruled_out(alternative: AstHelperCall, bound: _Bound, summary: AstHelperSummary, model: AstModel) -> bool:
    for name, truth in alternative.guards:
        value = bound.literal(name, summary, model)
        if value is not NOT_LITERAL and bool(value) != truth:
            return True
    return False


def _option(
    alternative: AstHelperCall,
    name: str,
    bound: _Bound,
    arguments: AstCallArguments,
    summary: AstHelperSummary,
    model: AstModel,
) -> tuple[AstOption, bool]:
    """The value of option ``name`` at this call through ``alternative``, and whether the
    caller decides it (see ``helper_sites._option``)."""
    plan = alternative.plans.get(name, ("fixed",))
    inner = alternative.site.options.get(name, AST_ABSENT)
    if plan[0] == "parameter":
        arg = bound.by_name.get(plan[1])
        if arg is not None:
            return value_of(argument_value(arg), model, arg, inner.origin), True
        if bound.open:
            return AST_UNKNOWN, True
        default = summary.defaults.get(plan[1])
        if default is None:
            return AST_UNKNOWN, True
        value = literal_value(default, summary.analysis)
        if value is NOT_LITERAL:
            return OptionValue(OptionState.EXPRESSION), True
        return OptionValue(OptionState.LITERAL, value), True
    if plan[0] == "keywords":
        for keyword in bound.extra_keywords:
            if keyword.arg == name:
                return value_of(keyword.value, model, keyword, inner.origin), True
        if arguments.double_starred:
            return arguments.option(name, model), True
        return AST_ABSENT, True
    # fixed by the helper: the value without the helper's nodes (they are another call's)
    return OptionValue(inner.state, inner.value, origin=inner.origin), False


def _inputs(alive: tuple[AstHelperCall, ...], bound: _Bound) -> tuple[AstArg, ...]:
    """The caller's arguments that reach the checkpointed function, when every call the
    helper may make passes its own parameters / ``*args`` on and the call binds them."""
    plans = {c.inputs for c in alive}
    if len(plans) != 1 or bound.open:
        return ()
    plan = plans.pop()
    if plan is None:
        return ()
    out: list[AstArg] = []
    for step in plan:
        if step[0] == "rest":
            out += bound.rest
        else:
            arg = bound.by_name.get(step[1])
            if arg is None:
                return ()
            out.append(arg)
    return tuple(out)


def literal_flags(site: AstSite, model: AstModel) -> frozenset[str]:
    """The flag parameters of the helper that ``site`` (a ``HELPER_CALL`` in ``model``'s
    module) calls which the call passes a literal for, or leaves at a literal default (empty
    for other sites)."""
    summary = site.helper
    if summary is None:
        return frozenset()
    bound = _Bound(summary, site.call)
    names = {name for alternative in site.alternatives for name, _ in alternative.guards}
    return frozenset(name for name in names if bound.literal(name, summary, model) is not NOT_LITERAL)


def inputs_bound(site: AstSite) -> bool:
    """Whether ``site.inputs`` of a helper call are all the inputs the checkpointed function
    gets (so the region binds them to its parameters)."""
    if site.helper is None:
        return True
    plans = {c.inputs for c in site.alternatives}
    if len(plans) != 1:
        return False
    plan = plans.pop()
    if plan is None:
        return False
    call = site.call
    starred = any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)
    return not starred and (bool(site.inputs) or not plan)

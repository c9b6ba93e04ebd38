"""Reading the arguments of a call on CPython's ``ast`` (literals, keyword options, ``**``
dictionaries, diffusers' torch-version tests), for
:class:`~ckptlint.semantic.ast_model.AstModel`.

A call argument is the ``ast`` node a fix would edit: the expression of a positional argument
(an ``ast.Starred`` for ``*args``), the ``ast.keyword`` of a keyword or ``**`` argument. The
records are those of :mod:`~ckptlint.checkpoint.sites.options`, parametrised
(:data:`AstOption`).

Literals: the constants ``True``, ``False`` and ``None`` are literals (a variable bound to one
is not); ``...`` is no literal; a string written in parts (``"a" "b"``) is one ``str``
literal.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from functools import partial as partial_of

from ckptlint.checkpoint.sites.options import NOT_LITERAL, OptionOrigin, OptionState, OptionValue
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.ast_reaching import reaching
from ckptlint.semantic.ast_subscripts import one_index
from ckptlint.semantic.bindings import Binding, BindingKind, MutationKind

__all__ = [
    "AST_ABSENT",
    "AST_UNKNOWN",
    "AstCallArguments",
    "AstOption",
    "argument_value",
    "ordered_arguments",
    "surely_present_keys",
    "in_branch_torch_never_takes",
    "literal_value",
    "mapping_alternatives",
    "option_from_mappings",
    "torch_version_test",
]

_MAX_DEPTH = 6

#: A call argument: a positional expression (``ast.Starred`` for ``*args``) or an ``ast.keyword``.
AstArg = ast.expr | ast.keyword
AstOption = OptionValue[ast.expr, AstArg]
AST_ABSENT: AstOption = OptionValue(OptionState.ABSENT)
AST_UNKNOWN: AstOption = OptionValue(OptionState.UNKNOWN)


def argument_value(arg: AstArg) -> ast.expr:
    """The expression an argument passes (without its ``*``/``**``)."""
    if isinstance(arg, (ast.keyword, ast.Starred)):
        return arg.value
    return arg


def ordered_arguments(call: ast.Call) -> list[AstArg]:
    """The call's arguments in source order (``ast`` keeps positional and keyword apart)."""
    if not call.keywords or not call.args:
        return [*call.args, *call.keywords]
    return sorted([*call.args, *call.keywords], key=lambda a: (a.lineno, a.col_offset))


def _is_constant(expr: ast.expr | None, value: object) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is value


def literal_value(expr: ast.AST | None, model: AstModel, _depth: int = 0) -> object:
    """The Python value of a literal expression, or :data:`NOT_LITERAL` (see
    the module docstring for what is a literal)."""
    if expr is None or _depth > _MAX_DEPTH:
        return NOT_LITERAL
    if isinstance(expr, ast.Constant):
        value = expr.value
        if value is Ellipsis:
            return NOT_LITERAL
        return value
    if isinstance(expr, ast.Name):
        bindings = model.lookup(expr.id, model.scope_of(expr))
        if not bindings or any(b.kind is not BindingKind.ASSIGNMENT or b.value is None for b in bindings):
            return NOT_LITERAL
        values = [literal_value(b.value, model, _depth + 1) for b in bindings]
        first = values[0]
        if first is NOT_LITERAL or any(v is NOT_LITERAL or v != first or type(v) is not type(first) for v in values):
            return NOT_LITERAL
        return first
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.UAdd)):
        inner = literal_value(expr.operand, model, _depth + 1)
        if isinstance(inner, (int, float, complex)) and not isinstance(inner, bool):
            return -inner if isinstance(expr.op, ast.USub) else inner
        return NOT_LITERAL
    if isinstance(expr, ast.Tuple):
        items = [literal_value(e.value if isinstance(e, ast.Starred) else e, model, _depth + 1) for e in expr.elts]
        return NOT_LITERAL if any(i is NOT_LITERAL for i in items) else tuple(items)
    return NOT_LITERAL


def value_of(expr: ast.expr, model: AstModel, arg: AstArg | None, origin: OptionOrigin) -> AstOption:
    """An option passed explicitly: a literal, or a value known only at run time."""
    value = literal_value(expr, model)
    if value is NOT_LITERAL:
        return OptionValue(OptionState.EXPRESSION, None, expr, arg, origin)
    if isinstance(expr, ast.Name):
        origin = OptionOrigin.VARIABLE
    return OptionValue(OptionState.LITERAL, value, expr, arg, origin)


@dataclass(frozen=True)
class _Mapping:
    """One possible content of a ``**`` dictionary (``keys``: ``None`` when
    unknown)."""

    keys: dict[str, ast.expr | None] | None
    node: ast.expr | None = None
    json_values: dict[str, object] = field(default_factory=dict)
    present: dict[str, ast.expr | None] | None = None


_UNKNOWN_MAPPING = _Mapping(None)


def mapping_alternatives(expr: ast.expr, model: AstModel, _depth: int = 0) -> list[_Mapping]:
    """The possible contents of a mapping expression used as ``**expr`` (one
    per path that may build it)."""
    if _depth > _MAX_DEPTH:
        return [_UNKNOWN_MAPPING]
    if isinstance(expr, ast.Dict):
        return [_read_dict_literal(expr, model, _depth)]
    if isinstance(expr, ast.Call) and "builtins.dict" in model.qualified_names(expr.func):
        return [_read_dict_call(expr, model, _depth)]
    if isinstance(expr, ast.Constant) and isinstance(expr.value, (str, bytes)):
        return [_read_json_string(expr)]
    if isinstance(expr, ast.IfExp):
        chosen = torch_version_test(expr.test, model)
        if chosen is None:
            return [_UNKNOWN_MAPPING]
        return mapping_alternatives(expr.body if chosen else expr.orelse, model, _depth + 1)
    if isinstance(expr, ast.Name):
        bindings = reaching(model, expr, partial_of(torch_version_test, model=model))
        if not bindings:
            return [_UNKNOWN_MAPPING]
        alternatives: list[_Mapping] = []
        for binding in bindings:
            if binding.kind is BindingKind.ASSIGNMENT and binding.value is not None:
                alternatives += mapping_alternatives(binding.value, model, _depth + 1)
            elif binding.kind is BindingKind.PARAMETER and isinstance(binding.node, ast.arg):
                alternatives.append(_UNKNOWN_MAPPING)
                default = _default_of(binding.node, model)
                if default is not None and not _is_constant(default, None):
                    alternatives += mapping_alternatives(default, model, _depth + 1)
            else:
                alternatives.append(_UNKNOWN_MAPPING)
        return _apply_mutations(expr, model, alternatives)
    return [_UNKNOWN_MAPPING]


def _default_of(param: ast.arg, model: AstModel) -> ast.expr | None:
    """The default value of a parameter, or ``None``."""
    arguments = model.parent(param)
    if not isinstance(arguments, ast.arguments):
        return None
    positional = [*arguments.posonlyargs, *arguments.args]
    for index, arg in enumerate(positional):
        if arg is param:
            offset = index - (len(positional) - len(arguments.defaults))
            return arguments.defaults[offset] if offset >= 0 else None
    for index, arg in enumerate(arguments.kwonlyargs):
        if arg is param:
            return arguments.kw_defaults[index]
    return None


def torch_version_test(test: ast.expr, model: AstModel) -> bool | None:
    """The value of diffusers' ``is_torch_version(">=", "1.11.0")`` or of ``"use_reentrant"
    in inspect.signature(checkpoint).parameters`` on the torch releases ckptlint judges; else
    ``None``."""
    from ckptlint.facts.torch_facts import TORCH_VERSION_CHECKS, torch_version_check

    if isinstance(test, ast.Compare):
        return _signature_test(test, model)
    if not isinstance(test, ast.Call) or len(test.args) != 2 or test.keywords:
        return None
    if any(isinstance(a, ast.Starred) for a in test.args):
        return None
    if not model.qualified_names(test.func) & TORCH_VERSION_CHECKS:
        return None
    return torch_version_check(literal_value(test.args[0], model), literal_value(test.args[1], model))


def _signature_test(test: ast.Compare, model: AstModel) -> bool | None:
    from ckptlint.facts.torch_facts import CHECKPOINT_PARAMETERS

    if len(test.ops) != 1 or not isinstance(test.ops[0], (ast.In, ast.NotIn)):
        return None
    name = literal_value(test.left, model)
    parameters = test.comparators[0]
    if not isinstance(name, str) or not (isinstance(parameters, ast.Attribute) and parameters.attr == "parameters"):
        return None
    call = parameters.value
    if not isinstance(call, ast.Call) or len(call.args) + len(call.keywords) != 1:
        return None
    if "inspect.signature" not in model.qualified_names(call.func):
        return None
    given = argument_value(ordered_arguments(call)[0])
    known = [CHECKPOINT_PARAMETERS[n] for n in model.qualified_names(given) if n in CHECKPOINT_PARAMETERS]
    if not known:
        return None
    found = name in known[0]
    return found if isinstance(test.ops[0], ast.In) else not found


def in_branch_torch_never_takes(model: AstModel, node: ast.AST) -> bool:
    """Whether ``node`` sits in a branch of an ``if`` that no judged torch release takes
    (:func:`torch_version_test`)."""
    below = node
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, (ast.If, ast.IfExp)) and below is not ancestor.test:
            if isinstance(ancestor, ast.If):
                in_body = any(s is below for s in ancestor.body)
            else:
                in_body = below is ancestor.body
            decided = _decided_conjuncts(ancestor.test, model)
            if (in_body and False in decided) or (not in_body and decided == [True]):
                return True
        below = ancestor
    return False


def _decided_conjuncts(test: ast.expr, model: AstModel) -> list[bool | None]:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [decided for value in test.values for decided in _decided_conjuncts(value, model)]
    return [torch_version_test(test, model)]


def _read_dict_literal(node: ast.Dict, model: AstModel, depth: int) -> _Mapping:
    parts: list[tuple[str | None, ast.expr]] = []
    for key, value in zip(node.keys, node.values, strict=True):
        if key is None:  # {**other, ...}
            parts.append((None, value))
            continue
        name = literal_value(key, model)
        if not isinstance(name, str):
            return _UNKNOWN_MAPPING
        parts.append((name, value))
    return _mapping_of(parts, node, model, depth)


def _read_dict_call(node: ast.Call, model: AstModel, depth: int) -> _Mapping:
    parts: list[tuple[str | None, ast.expr]] = []
    for arg in ordered_arguments(node):
        if not isinstance(arg, ast.keyword):
            return _UNKNOWN_MAPPING
        parts.append((arg.arg, arg.value))
    return _mapping_of(parts, node, model, depth)


def _mapping_of(parts: list[tuple[str | None, ast.expr]], node: ast.expr, model: AstModel, depth: int) -> _Mapping:
    keys: dict[str, ast.expr | None] = {}
    open_ended = False  # an unpacked mapping of unknown content
    for key, value in parts:
        if key is not None:
            keys[key] = value
            continue
        alternatives = mapping_alternatives(value, model, depth + 1)
        merged = _merge_known(alternatives)
        if merged is None:
            open_ended = True
            keys.update(_surely_present(alternatives))
        else:
            keys.update(merged)
    return _Mapping(None, node, present=keys) if open_ended else _Mapping(keys, node)


def surely_present_keys(expr: ast.expr, model: AstModel, _depth: int = 0) -> list[frozenset[str]]:
    """The keys a mapping expression used as ``**expr`` surely holds, one set per path that may
    build it; an empty set
    for a path of unknown content."""
    if _depth > _MAX_DEPTH:
        return [frozenset()]
    if isinstance(expr, ast.IfExp):
        chosen = torch_version_test(expr.test, model)
        branches = [expr.body, expr.orelse] if chosen is None else [expr.body if chosen else expr.orelse]
        return [keys for branch in branches for keys in surely_present_keys(branch, model, _depth + 1)]
    if isinstance(expr, ast.Name) and not model.mutations_of(expr.id, model.scope_of(expr)):
        bindings = reaching(model, expr, partial_of(torch_version_test, model=model))
        paths: list[frozenset[str]] = []
        candidates: list[Binding[ast.AST, ast.expr] | None] = list(bindings) if bindings else [None]
        for binding in candidates:
            if binding is not None and binding.kind is BindingKind.ASSIGNMENT and binding.value is not None:
                paths += surely_present_keys(binding.value, model, _depth + 1)
            else:
                paths.append(frozenset())
        return paths
    paths = []
    for alt in mapping_alternatives(expr, model, _depth + 1):
        held = alt.keys if alt.keys is not None else alt.present
        paths.append(frozenset(held or ()))
    return paths


def _surely_present(alternatives: list[_Mapping]) -> dict[str, ast.expr | None]:
    """The keys every alternative holds (known or surely present), with the first one's value."""
    found: dict[str, ast.expr | None] | None = None
    for alt in alternatives:
        held = alt.keys if alt.keys is not None else alt.present
        if held is None:
            return {}
        found = dict(held) if found is None else {k: v for k, v in found.items() if k in held}
    return found or {}


def _read_json_string(node: ast.Constant) -> _Mapping:
    """transformers accepts ``gradient_checkpointing_kwargs`` as a JSON string."""
    text = node.value
    if not isinstance(text, str):
        return _UNKNOWN_MAPPING
    try:
        data = json.loads(text)
    except (ValueError, TypeError):
        try:
            data = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            data = None
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        return _UNKNOWN_MAPPING
    return _Mapping({k: None for k in data}, node, json_values=dict(data))


def _merge_known(alternatives: list[_Mapping]) -> dict[str, ast.expr | None] | None:
    if len(alternatives) != 1 or alternatives[0].keys is None:
        return None
    return dict(alternatives[0].keys)


def _apply_mutations(name: ast.Name, model: AstModel, alternatives: list[_Mapping]) -> list[_Mapping]:
    added: dict[str, ast.expr | None] = {}
    for mutation in model.mutations_of(name.id, model.scope_of(name)):
        node = mutation.node
        if mutation.kind is MutationKind.SUBSCRIPT and isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                key = _subscript_key(target, name.id, model)
                if key is None:
                    return [_UNKNOWN_MAPPING]
                added[key] = node.value
        elif mutation.kind is MutationKind.METHOD and isinstance(node, ast.Call):
            args = ordered_arguments(node)
            if mutation.method == "setdefault" and args:
                given = literal_value(argument_value(args[0]), model)
                if not isinstance(given, str):
                    return [_UNKNOWN_MAPPING]
                added[given] = argument_value(args[1]) if len(args) > 1 else None
            elif mutation.method == "update":
                for arg in args:
                    if isinstance(arg, ast.keyword) and arg.arg is not None:
                        added[arg.arg] = arg.value
                    else:
                        merged = _merge_known(mapping_alternatives(argument_value(arg), model, _MAX_DEPTH - 1))
                        if merged is None:
                            return [_UNKNOWN_MAPPING]
                        added.update(merged)
            elif mutation.method in ("get", "copy"):
                continue
            else:
                return [_UNKNOWN_MAPPING]
        elif mutation.kind is MutationKind.ATTRIBUTE:
            continue
        else:
            return [_UNKNOWN_MAPPING]
    if not added:
        return alternatives
    return [_Mapping({**alt.keys, **added}, alt.node, alt.json_values) if alt.keys is not None else alt for alt in alternatives]


def _subscript_key(target: ast.expr, name: str, model: AstModel) -> str | None:
    if (
        isinstance(target, ast.Subscript)
        and isinstance(target.value, ast.Name)
        and target.value.id == name
        and (index := one_index(model, target)) is not None
    ):
        key = literal_value(index, model)
        return key if isinstance(key, str) else None
    return None


def option_from_mappings(key: str, alternatives: list[_Mapping], model: AstModel) -> AstOption:
    """Combine the alternatives of ``**`` dictionaries into one option for
    ``key``."""
    known = [(alt, alt.keys) for alt in alternatives if alt.keys is not None]
    lacking = [alt for alt, keys in known if key not in keys]
    if lacking:
        return OptionValue(OptionState.ABSENT, node=lacking[0].node, origin=OptionOrigin.DICT)
    if not known or len(known) != len(alternatives):
        return AST_UNKNOWN
    values: list[object] = []
    nodes: list[ast.expr | None] = []
    for alt, keys in known:
        expr = keys[key]
        values.append(alt.json_values.get(key, NOT_LITERAL) if expr is None else literal_value(expr, model))
        nodes.append(expr)
    first = values[0]
    if first is not NOT_LITERAL and all(v is not NOT_LITERAL and v == first and type(v) is type(first) for v in values):
        return OptionValue(OptionState.LITERAL, first, nodes[0], None, OptionOrigin.DICT)
    return OptionValue(OptionState.EXPRESSION, None, nodes[0], None, OptionOrigin.DICT)


@dataclass
class AstCallArguments:
    """The arguments of a call sorted by form (positional,
    ``*args``, keywords, ``**kwargs``)."""

    positional: list[ast.expr]
    starred: list[ast.Starred]
    keywords: dict[str, ast.keyword]
    double_starred: list[ast.keyword]
    #: the positional and ``*`` arguments in source order
    ordered: list[ast.expr]

    @classmethod
    def of(cls, call: ast.Call, skip_first: bool = False) -> AstCallArguments:
        """The arguments of ``call``; without its first positional one with ``skip_first``
        (``functools.partial(API, ...)``: the API)."""
        ordered = call.args[1:] if skip_first else list(call.args)
        positional = [a for a in ordered if not isinstance(a, ast.Starred)]
        starred = [a for a in ordered if isinstance(a, ast.Starred)]
        keywords = {k.arg: k for k in call.keywords if k.arg is not None}
        double = [k for k in call.keywords if k.arg is None]
        return cls(positional, starred, keywords, double, ordered)

    def option(self, name: str, model: AstModel, position: int | None = None) -> AstOption:
        """Option ``name`` from a keyword, positional index ``position`` or ``**`` dictionaries."""
        keyword = self.keywords.get(name)
        if keyword is not None:
            return value_of(keyword.value, model, keyword, OptionOrigin.KEYWORD)
        if position is not None:
            if self.starred:
                return AST_UNKNOWN
            if len(self.positional) > position:
                arg = self.positional[position]
                return value_of(arg, model, arg, OptionOrigin.POSITIONAL)
        if self.double_starred:
            results = [option_from_mappings(name, mapping_alternatives(splat.value, model), model) for splat in self.double_starred]
            for result in results:
                if result.is_passed:
                    return result
            if any(r.is_unknown for r in results):
                return AST_UNKNOWN
            return results[0]
        return AST_ABSENT

    def passed_on_every_path(self, model: AstModel) -> list[list[frozenset[str]]]:
        """For each ``**`` dictionary of the call, the keys it surely holds on each path that
        may build it (:func:`surely_present_keys`)."""
        return [surely_present_keys(splat.value, model) for splat in self.double_starred]

    def splat_keys(self, model: AstModel) -> tuple[set[str], bool]:
        """Keys known to be passed through ``**`` dictionaries, and whether any content is unknown."""
        keys: set[str] = set()
        unknown = False
        for splat in self.double_starred:
            for alt in mapping_alternatives(splat.value, model):
                if alt.keys is None:
                    unknown = True
                else:
                    keys.update(alt.keys)
        return keys, unknown

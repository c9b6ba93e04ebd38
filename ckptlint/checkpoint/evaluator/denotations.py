"""What an expression denotes, as the region evaluator computes it: the value domain (modules,
functions, classes, instances, layers, containers, opaque values) and the evaluation context.

The context, function values, class summaries and attribute values are generic over the
analysis and node types; the evaluator (``ast_*`` modules of this package) parametrises them
with :class:`~ckptlint.semantic.ast_analysis.AstAnalysis` and CPython ``ast`` nodes."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ckptlint.checkpoint.sites.options import NOT_LITERAL
from ckptlint.facts.torch_facts import LayerFact
from ckptlint.facts.wrappers import ForwardingWrapper
from ckptlint.semantic.bindings import Binding

if TYPE_CHECKING:
    from typing_extensions import NamedTuple

    from ckptlint.semantic.ast_analysis import AstAnalysis
else:
    from typing import NamedTuple

# The analysis of a module, an expression, a node, a ``def``, a class and a function value's
# node (``def`` or lambda).
M = TypeVar("M")
E = TypeVar("E")
N = TypeVar("N")
F = TypeVar("F")
K = TypeVar("K")
L = TypeVar("L")


__all__ = ["AttributeValue", "ClassInfo", "ConstructorEnv", "Context", "LayerUse"]


MAX_EVAL_DEPTH = 12


@dataclass(eq=False, repr=False)
class Context(Generic[M, E, N]):
    """Where an expression is evaluated: its module, the class ``self`` is an instance of,
    and the arguments bound to parameters of enclosing functions (factory closures)."""

    analysis: M
    self_class: ClassInfo[M, Any, Any, E] | None = None
    env: dict[Binding[N, E], tuple[E, Context[M, E, N]]] = field(default_factory=dict)
    keyword_params: frozenset[str] = frozenset()
    self_env: dict[Binding[N, E], tuple[E, Context[M, E, N]]] = field(default_factory=dict)
    #: The call that bound ``env`` had ``*``/``**`` arguments, or its arguments are not
    #: known: a parameter it does not bind is not known to hold its default.
    open_call: bool = False
    #: The function whose call bound ``env`` (its unbound parameters hold their defaults);
    #: parameters of other enclosing functions were bound by calls not seen.
    bound: N | None = None


class ConstructorEnv(dict):
    """``__init__``'s parameters bound by a constructor call seen whole (no ``*``/``**``
    arguments): a parameter of ``init`` it does not bind holds its default. An instance whose
    constructor call was not seen (``self`` of the class a site is in) has a plain dict."""

    def __init__(self, bound: dict, init: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        super().__init__(bound)
        self.init = init


class Value:
    """Something an expression may evaluate to."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {describe_value(self)}>"


class OpaqueValue(Value):
    """A value that exists but is not understood (``nn.Linear(4, 4)``): it keeps the
    positions of container elements (``checkpoint_sequential`` segments) exact."""


class TorchValue(OpaqueValue):
    """Something of torch (``nn.Linear``, ``nn.Linear(4, 4)``, ``torch.matmul``) that is
    none of the layers the torchfacts tables describe: known, with no random draws or
    running statistics of its own. Attributes and calls of it are torch values too."""


@dataclass(eq=False, repr=False)
class ForwardingValue(OpaqueValue):
    """A library's wrapper of a model that forwards some attribute lookups to it (DeepSpeed's
    engine, :data:`~ckptlint.facts.wrappers.FORWARDING_WRAPPERS`): ``wrapped`` are the values
    the model may be; the wrapper's other attributes are not known."""

    wrapped: list[Value]
    wrapper: ForwardingWrapper


@dataclass(eq=False, repr=False)
class ModuleValue(Value):
    """A module of the linted tree (``from . import blocks``, ``import pkg.blocks as pb``),
    by dotted name: its attributes are parsed when asked for (through the :class:`~ckptlint.semantic.project.AstProject` loader)."""

    module: str


@dataclass(eq=False, repr=False)
class FunctionValue(Value, Generic[L, M, E, N]):
    node: L
    ctx: Context[M, E, N]
    bound_method: bool = False  # reached as ``obj.method``: the first parameter is bound


@dataclass(eq=False, repr=False)
class ClassValue(Value):
    info: ClassInfo
    #: made by ``functools.partial(cls, ...)``: its constructor calls are not seen whole
    partial: bool = False


@dataclass(eq=False, repr=False)
class InstanceValue(Value):
    """An instance of a class of the tree; ``env`` binds ``__init__``'s parameters to the
    constructor call's arguments, so ``self.norm = norm_layer(c)`` follows what was passed."""

    info: ClassInfo
    env: dict[Binding, tuple[ast.expr, Context]] = field(default_factory=dict)


@dataclass(eq=False, repr=False)
class LayerClassValue(Value):
    qualified: str
    fact: LayerFact


@dataclass(eq=False, repr=False)
class LayerUse(Value):
    """A torch layer instance: its table entry and the constructor call that made it.

    ``config``: for a layer that a factory built from a config (mmcv's ``build_norm_layer``,
    ``ConvModule(norm_cfg=...)``, see :data:`~ckptlint.facts.torch_facts.NORM_FACTORIES`), the
    config as a literal (a dict whose other keys are the layer's keywords; ``NOT_LITERAL`` when
    it is not known as a whole, then the keywords keep their defaults); ``None`` for a
    constructor call, whose own arguments are read."""

    qualified: str
    fact: LayerFact
    call: ast.Call | None
    ctx: Context
    config: object = None

    @property
    def analysis(self) -> AstAnalysis:
        return self.ctx.analysis


@dataclass(eq=False, repr=False)
class ContainerValue(Value):
    """``nn.Sequential``/``nn.ModuleList``/a list: ``elements`` in order when ``exact``."""

    elements: list[Value]
    exact: bool = True
    sequential: bool = True
    #: For a dict literal: ``(key, value)`` pairs (the key as a literal, or NOT_LITERAL), so
    #: ``REGISTRY["bn"]`` and ``REGISTRY.get(cfg["type"])`` select by key.
    keyed: list[tuple[object, Value]] | None = None

    def select(self, key: object) -> list[Value] | None:
        """The values under ``key`` (a literal): for a keyed dict, those of equal keys
        (``[]`` when absent); for an exact sequence and an ``int``, that element; ``None``
        when the selection is not known (then every element may be meant)."""
        if key is NOT_LITERAL:
            return None
        if self.keyed is not None:
            if any(k is NOT_LITERAL for k, _ in self.keyed):
                return None
            return [v for k, v in self.keyed if k == key]
        if self.exact and self.sequential and isinstance(key, int) and not isinstance(key, bool):
            if -len(self.elements) <= key < len(self.elements):
                return [self.elements[key]]
        return None


def partially_applied(value: Value) -> Value:
    """``value`` as ``functools.partial(value, ...)`` returns it, when the partial binds arguments:
    a later call of it passes more than it shows, so its parameters' defaults are not known to
    hold (``partial(Block, drop=0.1)`` then ``block_fn(dim)``)."""
    if isinstance(value, FunctionValue):
        return FunctionValue(value.node, replace_ctx(value.ctx, open_call=True), value.bound_method)
    if isinstance(value, ClassValue):
        return ClassValue(value.info, partial=True)
    return value


def wrapper_returned(wrapper: ForwardingWrapper, wrapped: list[Value]) -> Value:
    """What a call of :data:`~ckptlint.facts.wrappers.FORWARDING_WRAPPERS` returns, given the
    values of the model it wraps: the wrapper, or the tuple that holds it."""
    value = ForwardingValue(wrapped, wrapper)
    if wrapper.element is None:
        return value
    position, length = wrapper.element
    elements: list[Value] = [OpaqueValue() for _ in range(length)]
    elements[position] = value
    return ContainerValue(elements)


def attribute_owners(value: Value, name: str) -> list[Value]:
    """The objects that answer ``value.name``: for a library's wrapper that forwards ``name`` to
    the model it wraps (DeepSpeed's engine), the model's values (through wrappers of wrappers;
    ``[]`` when the model is not known), else ``value`` itself."""
    if isinstance(value, ForwardingValue) and name in value.wrapper.forwarded:
        return [owner for wrapped in value.wrapped for owner in attribute_owners(wrapped, name)]
    return [value]


if TYPE_CHECKING:  # generic for the type checker only: a generic named tuple needs 3.11

    class AttributeValue(NamedTuple, Generic[E, F]):
        value: E
        method: F | None
        path: tuple[int | str, ...] = ()

else:

    class AttributeValue(NamedTuple):
        """One value a class gives an attribute: ``value`` assigned in ``method`` (``None`` for
        the class body); ``path`` as :attr:`ckptlint.semantic.bindings.Assigned.path` when the
        attribute gets a position of ``value`` that the text does not show (``self.name,
        self.norm = build_norm_layer(cfg, c)``)."""

        value: ast.expr
        method: ast.FunctionDef | ast.AsyncFunctionDef | None
        path: tuple[int | str, ...] = ()


@dataclass(eq=False, repr=False)
class ClassInfo(Generic[M, K, F, E]):
    """The per-class summary regions need: methods, attribute assignments, buffers."""

    analysis: M
    node: K
    qualname: str
    methods: dict[str, F] = field(default_factory=dict)
    attributes: dict[str, list[AttributeValue[E, F]]] = field(default_factory=dict)
    appended: dict[str, list[tuple[E, F]]] = field(default_factory=dict)
    buffers: set[str] = field(default_factory=set)
    bases: list[Value] = field(default_factory=list)

    @property
    def name(self) -> str:
        name = self.node.name  # type: ignore[attr-defined]
        return name if isinstance(name, str) else name.value  # an ``ast`` class's name is a ``str``


def replace_ctx(ctx: Context[M, E, N], **changes: object) -> Context[M, E, N]:
    """A copy of ``ctx`` with the fields named in ``changes`` replaced."""
    fields: dict[str, Any] = {
        "analysis": ctx.analysis,
        "self_class": ctx.self_class,
        "env": ctx.env,
        "keyword_params": ctx.keyword_params,
        "self_env": ctx.self_env,
        "open_call": ctx.open_call,
        "bound": ctx.bound,
    }
    fields.update(changes)
    return Context(**fields)


def describe_value(value: Value) -> str:
    """How a region names a value in its ``via``: a function's name, ``Class.forward``, a
    layer's name, ``nn.Sequential``, else ``?``."""
    if isinstance(value, FunctionValue):
        return value.node.name if isinstance(value.node, (ast.FunctionDef, ast.AsyncFunctionDef)) else "<lambda>"
    if isinstance(value, InstanceValue):
        return f"{value.info.name}.forward"
    if isinstance(value, LayerUse):
        return value.fact.name
    if isinstance(value, ContainerValue):
        return "nn.Sequential"
    return "?"



"""Reversible-network recompute: ``torch.autograd.Function`` subclasses whose ``backward``
rebuilds the inputs of each block from its outputs and runs the block again under
``torch.enable_grad()``, the shape of RevNet/RevTorch, Reformer, RevViT and RevCol.

Read from public implementations (the shapes recognised here):

- lucidrains/reformer-pytorch ``reformer_pytorch/reversible.py`` (commit 365d5c8):
  ``_ReversibleFunction.forward(ctx, x, blocks, kwargs)`` runs ``block(x, **kwargs)`` for each
  block and stores ``ctx.blocks = blocks``; ``backward`` calls ``block.backward_pass(y, dy,
  **kwargs)`` for ``block in ctx.blocks[::-1]``; ``ReversibleBlock.backward_pass`` re-runs
  ``self.g(y1, set_rng=True, **g_args)`` and ``self.f(x2, set_rng=True, **f_args)`` under
  ``torch.enable_grad()`` on tensors rebuilt from the outputs (``x2 = y2 - gy1``), and
  ``Deterministic.forward`` restores the RNG state recorded in forward when ``set_rng`` is
  true (``torch.random.fork_rng`` + ``torch.set_rng_state``). Nothing captures autocast.
- open-mmlab/mmpretrain ``mmpretrain/models/backbones/revvit.py`` (RevViT):
  ``RevBackProp.forward(ctx, x, layers, buffer_layers)`` runs ``layer(x1, x2)`` for each
  layer, stores ``ctx.layers = layers``; ``backward`` calls ``layer.backward_pass(y1=...,
  ...)`` for ``_, layer in enumerate(layers[::-1])`` (``layers = ctx.layers``);
  ``RevTransformerEncoderLayer.backward_pass`` re-runs ``self.ffn``/``self.attn`` under
  ``torch.enable_grad()`` after ``torch.manual_seed(self.seeds[...])`` (the seeds drawn in
  forward). It is called as ``executing_fn = RevBackProp.apply; executing_fn(x, self.layers, [])``.
- megvii-research/RevCol ``models/revcol_function.py`` (commit 2c36531):
  ``ReverseFunction.forward(ctx, run_functions, alpha, *args)`` unpacks ``l0, l1, l2, l3 =
  run_functions`` and runs them; ``backward`` unpacks ``ctx.run_functions`` the same way and
  re-runs ``l3(c2, None)`` ... ``l0(x, c1_left)`` under ``torch.enable_grad()``,
  ``torch.random.fork_rng`` + ``set_device_states`` and the autocast state read in forward
  (``torch.is_autocast_enabled()``, re-entered with ``torch.cuda.amp.autocast(**...)``).

What is recognised: ``forward(ctx, ..., P, ...)`` stores its parameter ``P`` on ``ctx`` and
runs ``P`` or its elements (a ``for`` loop over ``P``, ``enumerate``/``reversed``/slices of
it, or a tuple unpacking of it); ``backward`` takes the stored value from ``ctx`` (directly
or through a local name) and, for its elements, calls either a method ``M`` that some class
of the module defines and that runs a part of its block under ``torch.enable_grad()`` (the
block's own ``backward_pass``), or the element itself inside ``with torch.enable_grad()``.

- karttikeya/minREV ``fast_rev.py`` (PaReprop, commit b0d95f2): ``FastRevBackProp(RevBackProp)``
  overrides only ``backward`` and inherits ``forward`` from ``rev.py``; it takes
  ``layer = layers[-1]`` and, per step, ``for i, (this_layer, next_layer) in
  enumerate(zip(layers[1:][::-1], layers[:-1][::-1]))``, re-running blocks through
  ``FineReversibleBlock.backward_pass_recover`` (``self.G(Y_1)`` and ``self.F(X_2)`` under
  ``torch.enable_grad()``) while ``backward_pass_grads`` only calls ``.backward`` on tensors
  it is handed. ``revswin.py`` has the same subclass next to its base. The caller
  (:mod:`ckptlint.checkpoint.sites.homemade`) hands such a class's bases to
  :func:`reversible_shape`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeGuard

import libcst as cst

from ckptlint.facts.home_made import names_rng
from ckptlint.semantic.syntax import class_methods, last_name, own_nodes, positional_parameters
from ckptlint.semantic.walk import children

if TYPE_CHECKING:
    from typing_extensions import TypeVar

    # The re-run calls: libcst's unless parametrised (``ReversibleShape[ast.Call]`` from
    # :mod:`ckptlint.checkpoint.sites.ast_reversible`).
    C = TypeVar("C", default=cst.Call)
else:
    from typing import TypeVar

    C = TypeVar("C")

__all__ = ["ReversibleShape", "reversible_shape"]

_ITERATION_WRAPPERS = frozenset({"enumerate", "reversed", "list", "tuple", "iter"})


@dataclass(frozen=True)
class ReversibleShape(Generic[C]):
    """What :func:`reversible_shape` read from one class.

    Attributes:
        function_index: index, among ``apply``'s arguments, of the stored blocks.
        reruns: the calls in ``backward`` that run the blocks again (``block.backward_pass(...)``
            or ``l3(...)``).
        method: the method of each block that re-runs it (``backward_pass``), or ``None``
            when the block itself is called.
        restores_rng: an RNG state is set around the re-run (in ``backward`` or in the
            method: ``torch.manual_seed(self.seeds[k])``, ``set_rng_state``, or a keyword
            such as ``set_rng=True`` asking the block to restore the state it recorded).
        restores_autocast: ``custom_bwd``, or the autocast state read in forward and
            re-entered in backward.
    """

    function_index: int
    reruns: tuple[C, ...]
    method: str | None
    restores_rng: bool
    restores_autocast: bool


def reversible_shape(
    node: cst.ClassDef, module: cst.Module, bases: Sequence[tuple[cst.ClassDef, cst.Module]] = ()
) -> ReversibleShape | None:
    """The reversible recompute of the ``autograd.Function`` subclass ``node`` (a class of
    ``module``), or ``None`` when it is not one. ``bases``: the classes ``node`` inherits
    from (nearest first) with their modules, when it is not itself a direct subclass of
    ``Function``: a method ``node`` does not define is theirs (minREV's ``FastRevBackProp``
    overrides only ``backward`` and inherits ``forward`` from ``RevBackProp`` of another
    module), and their modules' blocks may define the method that re-runs a block."""
    methods: dict[str, cst.FunctionDef] = {}
    for base, _ in reversed(bases):
        methods |= class_methods(base)
    methods |= class_methods(node)
    forward, backward = methods.get("forward"), methods.get("backward")
    if forward is None or backward is None:
        return None
    params = positional_parameters(forward)
    backward_params = positional_parameters(backward)
    if len(params) < 2 or not backward_params:
        return None
    ctx, rest = params[0], params[1:]
    stored = _stored(forward, ctx, rest)
    if not stored:
        return None
    forward_calls = [n for n in own_nodes(forward) if isinstance(n, cst.Call)]
    run = {attr for attr, parameter in stored.items() if _runs(forward, parameter, forward_calls)}
    if not run:
        return None
    bctx = backward_params[0]
    holders = {attr: _holders(backward, bctx, attr) for attr in run}
    recomputing = _recomputing_methods(module)
    for _, base_module in bases:
        for name, found in _recomputing_methods(base_module).items():
            recomputing.setdefault(name, []).extend(m for m in found if m not in recomputing[name])
    for attr, names in holders.items():
        elements = _elements(backward, bctx, attr, names)
        reruns, method = _reruns(backward, elements, recomputing)
        if not reruns:
            continue
        bodies = [backward, *(recomputing.get(method, ()) if method else ())]
        backward_calls = [n for body in bodies for n in own_nodes(body) if isinstance(n, cst.Call)]
        restores_rng = any(names_rng(last_name(c)) or _asks_for_rng(c) for c in backward_calls)
        custom_bwd = any("custom_bwd" in last_name(d.decorator) for d in backward.decorators)
        reads_autocast = any("autocast" in last_name(c).lower() for c in forward_calls)
        enters_autocast = any("autocast" in last_name(c).lower() for c in backward_calls)
        return ReversibleShape(
            function_index=rest.index(stored[attr]),
            reruns=tuple(reruns),
            method=method,
            restores_rng=restores_rng,
            restores_autocast=custom_bwd or (reads_autocast and enters_autocast),
        )
    return None


# ---------------------------------------------------------------------------- reading
def _is_attr(expr: cst.BaseExpression, owner: str, attr: str | None = None) -> TypeGuard[cst.Attribute]:
    return (
        isinstance(expr, cst.Attribute)
        and isinstance(expr.value, cst.Name)
        and expr.value.value == owner
        and (attr is None or expr.attr.value == attr)
    )


def _stored(forward: cst.FunctionDef, ctx: str, rest: list[str]) -> dict[str, str]:
    """``ctx.ATTR = P`` with ``P`` a parameter (``layers = list(layers)`` before it keeps
    the name): ATTR -> P."""
    stored: dict[str, str] = {}
    for node in own_nodes(forward):
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and node.value.value in rest:
            for target in node.targets:
                if _is_attr(target.target, ctx):
                    stored[target.target.attr.value] = node.value.value
    return stored


def _unwrapped(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``enumerate(reversed(xs[::-1]))`` -> ``xs``."""
    while True:
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        elif (
            isinstance(expr, cst.Call)
            and isinstance(expr.func, cst.Name)
            and expr.func.value in _ITERATION_WRAPPERS
            and expr.args
        ):
            expr = expr.args[0].value
        else:
            return expr


def _loop_elements(
    target: cst.BaseExpression, iterated: cst.BaseExpression, is_source: Callable[[cst.BaseExpression], bool]
) -> set[str]:
    """The names ``for TARGET in ITERATED`` binds to elements of the collection ``is_source``
    recognises: ``for block in blocks[::-1]``, ``for i, block in enumerate(...)``, and
    ``for i, (this, next) in enumerate(zip(layers[1:][::-1], layers[:-1][::-1]))`` (minREV's
    PaReprop, two neighbouring blocks per step)."""
    while True:
        if isinstance(iterated, cst.Subscript) and all(isinstance(e.slice, cst.Slice) for e in iterated.slice):
            iterated = iterated.value  # blocks[::-1]
        elif _called(iterated, "reversed", "list", "tuple", "iter"):
            iterated = iterated.args[0].value
        else:
            break
    elements = target.elements if isinstance(target, (cst.Tuple, cst.List)) else None
    if _called(iterated, "enumerate"):
        if elements is None or len(elements) != 2:
            return set()
        return _loop_elements(elements[1].value, iterated.args[0].value, is_source)
    if _called(iterated, "zip"):
        if elements is None or len(elements) != len(iterated.args):
            return set()
        return {n for e, a in zip(elements, iterated.args, strict=True) for n in _loop_elements(e.value, a.value, is_source)}
    if isinstance(target, cst.Name) and is_source(_unwrapped(iterated)):
        return {target.value}
    return set()


def _called(expr: cst.BaseExpression, *names: str) -> TypeGuard[cst.Call]:
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Name)
        and expr.func.value in names
        and bool(expr.args)
        and all(a.star == "" and a.keyword is None for a in expr.args)
    )


def _indexed(expr: cst.BaseExpression, is_source: Callable[[cst.BaseExpression], bool]) -> bool:
    """``layers[-1]``, ``layers[::-1][0]``: one element of the collection."""
    return (
        isinstance(expr, cst.Subscript)
        and len(expr.slice) == 1
        and isinstance(expr.slice[0].slice, cst.Index)
        and is_source(_unwrapped(expr.value))
    )


def _element_names(function: cst.FunctionDef, is_source: Callable[[cst.BaseExpression], bool]) -> set[str]:
    """Names bound to elements of the collection ``is_source`` recognises: ``for`` targets,
    tuple unpackings and one element taken by index (``layer = layers[-1]``)."""
    names: set[str] = set()
    for node in own_nodes(function):
        if isinstance(node, cst.For):
            names |= _loop_elements(node.target, node.iter, is_source)
        elif isinstance(node, cst.Assign) and is_source(node.value):
            for target in node.targets:
                if isinstance(target.target, (cst.Tuple, cst.List)):
                    names |= {e.value.value for e in target.target.elements if isinstance(e.value, cst.Name)}
        elif isinstance(node, cst.Assign) and _indexed(node.value, is_source):
            names |= {t.target.value for t in node.targets if isinstance(t.target, cst.Name)}
    return names


def _runs(forward: cst.FunctionDef, parameter: str, calls: list[cst.Call]) -> bool:
    """Whether forward calls ``parameter`` or one of its elements."""

    def is_source(expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Name) and expr.value == parameter

    callable_names = _element_names(forward, is_source) | {parameter}
    return any(isinstance(c.func, cst.Name) and c.func.value in callable_names for c in calls)


def _holders(backward: cst.FunctionDef, bctx: str, attr: str) -> set[str]:
    """Local names bound to ``ctx.ATTR`` in backward (``layers = ctx.layers``)."""
    names: set[str] = set()
    for node in own_nodes(backward):
        if isinstance(node, cst.Assign) and _is_attr(node.value, bctx, attr):
            names |= {t.target.value for t in node.targets if isinstance(t.target, cst.Name)}
    return names


def _elements(backward: cst.FunctionDef, bctx: str, attr: str, holders: set[str]) -> set[str]:
    def is_source(expr: cst.BaseExpression) -> bool:
        return _is_attr(expr, bctx, attr) or (isinstance(expr, cst.Name) and expr.value in holders)

    return _element_names(backward, is_source)


def _enables_grad(node: cst.CSTNode) -> bool:
    if not isinstance(node, cst.Call):
        return False
    name = last_name(node)
    if name == "enable_grad":
        return True
    return name == "set_grad_enabled" and bool(node.args) and _is_true(node.args[0].value)


def _is_true(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "True"


def _recomputing_methods(module: cst.Module) -> dict[str, list[cst.FunctionDef]]:
    """Methods of the module's classes that run a part of their block (``self.G(Y_1)``,
    ``self(x)``) inside ``with torch.enable_grad()``, by name. A method that only calls
    ``.backward`` on tensors it is handed there (PaReprop's ``backward_pass_grads``) re-runs
    nothing."""
    found: dict[str, list[cst.FunctionDef]] = {}
    for statement in module.body:
        if not isinstance(statement, cst.ClassDef):
            continue
        for name, method in class_methods(statement).items():
            if name != "forward" and _runs_self_with_grad(method):
                found.setdefault(name, []).append(method)
    return found


def _runs_self_with_grad(method: cst.FunctionDef) -> bool:
    params = positional_parameters(method)
    if not params:
        return False
    owner = params[0]

    def runs_self(node: cst.CSTNode) -> bool:  # self(x), self.G(y), self.f.forward(y)
        if not isinstance(node, cst.Call):
            return False
        func = node.func
        while isinstance(func, cst.Attribute):
            func = func.value
        return isinstance(func, cst.Name) and func.value == owner

    stack: list[tuple[cst.CSTNode, bool]] = [(method.body, False)]
    statement_switch = False  # torch.set_grad_enabled(True) as a statement: the rest of the method
    while stack:
        node, grad = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.With) and any(_enables_grad(item.item) for item in node.items):
            grad = True
        elif isinstance(node, cst.Expr) and _enables_grad(node.value):
            statement_switch = True
        if runs_self(node) and (grad or statement_switch):
            return True
        stack.extend(reversed([(child, grad) for child in children(node)]))  # source order
    return False


def _reruns(
    backward: cst.FunctionDef, elements: set[str], recomputing: dict[str, list[cst.FunctionDef]]
) -> tuple[list[cst.Call], str | None]:
    reruns: list[cst.Call] = []
    method: str | None = None
    stack: list[tuple[cst.CSTNode, bool]] = [(backward.body, False)]
    while stack:
        node, grad = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.With) and any(_enables_grad(item.item) for item in node.items):
            grad = True
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Name) and func.value in elements and grad:
                reruns.append(node)
            elif (
                isinstance(func, cst.Attribute)
                and isinstance(func.value, cst.Name)
                and func.value.value in elements
                and func.attr.value in recomputing
                and method in (None, func.attr.value)
            ):
                reruns.append(node)
                method = func.attr.value
        stack.extend(reversed([(child, grad) for child in children(node)]))  # source order
    if method is not None:
        reruns = [c for c in reruns if isinstance(c.func, cst.Attribute)]
    return reruns, method


def _asks_for_rng(call: cst.Call) -> bool:
    """``self.g(y1, set_rng=True)``: the block is asked to restore the RNG state it
    recorded in forward (Reformer's ``Deterministic``)."""
    return any(
        arg.keyword is not None and "rng" in arg.keyword.value.lower() and _is_true(arg.value) for arg in call.args
    )

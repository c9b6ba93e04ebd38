"""Random operations in a region, and where their tensors' devices come from
(:mod:`ckptlint.checkpoint.analyses.randomness` tells the facts), for an
:class:`~ckptlint.checkpoint.evaluator.ast_region.AstRegion`, into the records
:data:`AstRandomOp` and :data:`AstUnpreservedSource`.

A call's arguments are read in source order (``ast`` keeps keywords apart), and the first
argument that decides ends the reading; a ``generator=`` argument is an ``ast.keyword``, ``None`` is a constant, and an
attribute's or a keyword's name is a string (:func:`_names_in` yields a keyword's name among
the names an expression reads).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import TYPE_CHECKING, TypeGuard

from ckptlint.checkpoint.analyses.ast_layer_switches import SwitchReader, argument_value, layer_switched_on, switch_is_on
from ckptlint.checkpoint.analyses.randomness import RandomOp, UnpreservedSource
from ckptlint.checkpoint.evaluator.ast_literals import binding_default
from ckptlint.checkpoint.evaluator.ast_region import AstFrame, AstRegion
from ckptlint.checkpoint.sites.ast_options import literal_value, ordered_arguments
from ckptlint.checkpoint.sites.options import NOT_LITERAL
from ckptlint.facts.torch_facts import (
    DEVICE_MOVE_METHODS,
    GENERATOR_CLASSES,
    PYTHON_RANDOM_PREFIXES,
    PYTHON_RANDOM_STATE_SETTERS,
    RANDOM_METHODS,
    LayerKind,
    random_function,
)
from ckptlint.semantic.bindings import BindingKind

if TYPE_CHECKING:
    from ckptlint.checkpoint.evaluator.ast_class_summary import AstClassInfo
    from ckptlint.semantic.ast_analysis import AstAnalysis

__all__ = [
    "AstRandomOp",
    "AstUnpreservedSource",
    "RandomOp",
    "UnpreservedSource",
    "device_moved_ops",
    "random_ops",
    "unpreserved_sources",
]

#: A random op of a region on ``ast``: its call, module, frame and tensor expression.
AstRandomOp = RandomOp[ast.AST, "AstAnalysis", AstFrame, ast.expr]
#: A use of randomness checkpoint never restores, on ``ast`` (a call, or a ``generator=`` keyword).
AstUnpreservedSource = UnpreservedSource[ast.AST, "AstAnalysis"]

_DEVICE_WORDS = ("cuda", "xpu", "npu", "mps", "hpu", "xla", "gpu", "device", "dev")
_DEVICES = ("cuda", "xpu", "npu", "mps", "hpu", "xla", "meta", "privateuseone")


def _argument(call: ast.Call, keyword: str, position: int) -> ast.expr | None:
    """The expression passed for ``keyword`` (by keyword), else the positional argument at
    ``position``; ``None`` when absent or hidden by a ``*``/``**`` argument."""
    for one in call.keywords:
        if one.arg == keyword:
            return one.value
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    return call.args[position] if len(call.args) > position else None


def _switch_active(call: ast.Call, switch: tuple[str, int, object] | None, frame: AstFrame, off: object) -> bool | None:
    """Whether the argument ``switch`` names leaves the op on: its literal value, or the value
    the bindings of the frame give it."""
    if switch is None:
        return True
    keyword, position, default = switch
    arg = _argument(call, keyword, position)
    value = default if arg is None else literal_value(arg, frame.analysis.model)
    if value is NOT_LITERAL and arg is not None:
        value = argument_value(arg, frame.ctx, _builder(frame))
    return switch_is_on(value, off)


def _module_training(call: ast.Call, switch: tuple[str, int, object]) -> bool:
    """Whether the training argument ``switch`` names is a module's ``.training`` flag."""
    arg = _argument(call, switch[0], switch[1])
    return isinstance(arg, ast.Attribute) and arg.attr == "training"


def _builder(frame: AstFrame | None) -> SwitchReader | None:
    builder = frame.builder if frame is not None else None
    return builder if isinstance(builder, SwitchReader) else None


def _first_positional(call: ast.Call) -> ast.expr | None:
    for arg in call.args:
        if not isinstance(arg, ast.Starred):
            return arg
    return None


def random_ops(region: AstRegion) -> list[AstRandomOp]:
    """Every random operation the region runs, in frame order."""
    ops: list[AstRandomOp] = []
    for frame in region.frames:
        model = frame.analysis.model
        for node in frame.nodes():
            if not isinstance(node, ast.Call):
                continue
            fact = random_function(model.qualified_names(node.func))
            if fact is not None:
                active: bool | None = True
                if fact.switch is not None:
                    active = _switch_active(node, fact.switch, frame, 0)
                if active is not False and fact.training is not None:
                    training = _switch_active(node, fact.training, frame, False)
                    if training is None and _module_training(node, fact.training):
                        training = True  # `training=self.training`: on whenever the module trains
                    active = False if training is False else active if training else None
                ops.append(RandomOp(node, frame.analysis, fact.name, frame, active, _first_positional(node)))
            elif isinstance(node.func, ast.Attribute) and node.func.attr in RANDOM_METHODS:
                if model.qualified_names(node.func):  # a module function (np.random.normal...), not a tensor method
                    continue
                ops.append(RandomOp(node, frame.analysis, f".{node.func.attr}()", frame, True, node.func.value))
    for call in region.layer_calls:
        layer = call.layer
        if layer.fact.kind is not LayerKind.RANDOM:
            continue
        on = layer_switched_on(layer, _builder(call.frame) or _builder(region.frames[0] if region.frames else None))
        if call.invocation is not None and call.frame is not None:
            ops.append(
                RandomOp(call.invocation, call.frame.analysis, layer.fact.name, call.frame, on,
                         _first_positional(call.invocation), layer)
            )
        elif layer.call is not None:
            made: ast.Call = layer.call  # an ``ast`` layer's call and module
            analysis: AstAnalysis = layer.analysis
            ops.append(RandomOp(made, analysis, layer.fact.name, None, on, None, layer))
    return ops


# ------------------------------------------------------------------ devices (CKP102)
def _is_device_move(node: ast.AST, analysis: AstAnalysis) -> bool:
    """``x.cuda()``, ``x.to("cuda")``, ``x.to(device)``, ``x.to(device=...)``."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return False
    method = node.func.attr
    if method not in DEVICE_MOVE_METHODS:
        return False
    if method != "to":
        return not analysis.model.qualified_names(node.func)  # torch.cuda(...) is not a tensor method
    for arg in ordered_arguments(node):
        if isinstance(arg, ast.keyword):
            if arg.arg is None:
                return False  # `**kwargs`
            if arg.arg == "device":
                return not _same_device_expression(arg.value)
            continue
        if isinstance(arg, ast.Starred):
            return False
        return _names_a_device(arg, analysis)
    return False


def _same_device_expression(expr: ast.expr) -> bool:
    """``x.device`` (another tensor's device): not a move chosen inside the region."""
    return isinstance(expr, ast.Attribute) and expr.attr == "device"


def _names_a_device(expr: ast.expr, analysis: AstAnalysis) -> bool:
    value = literal_value(expr, analysis.model)
    if isinstance(value, str):
        return value.split(":")[0] in _DEVICES
    if isinstance(expr, ast.Call) and "torch.device" in analysis.model.qualified_names(expr.func):
        return True
    if _same_device_expression(expr):
        return False
    text = expr.id if isinstance(expr, ast.Name) else expr.attr if isinstance(expr, ast.Attribute) else ""
    return any(word in text.lower() for word in _DEVICE_WORDS) and "dtype" not in text.lower()


def _names_in(expr: ast.AST) -> Iterator[str]:
    """The names read in ``expr`` outside lambdas and not below an attribute's dot, with the
    names of keyword arguments."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name):
            yield node.id
        elif isinstance(node, ast.Attribute):
            stack.append(node.value)
        elif isinstance(node, ast.Lambda):
            continue
        else:
            if isinstance(node, ast.keyword) and node.arg is not None:
                yield node.arg
            stack.extend(ast.iter_child_nodes(node))


def _contains_move(expr: ast.AST, analysis: AstAnalysis) -> bool:
    return any(_is_device_move(node, analysis) for node in ast.walk(expr))


def _tainted_names(frame: AstFrame, keyword_only_inputs: bool) -> set[str]:
    """Local names whose value lives on a device chosen inside the frame (or, when the site
    passes its tensors only by keyword, the keyword parameters)."""
    tainted: set[str] = set()
    if keyword_only_inputs:
        tainted |= set(frame.ctx.keyword_params)
    for node in frame.nodes():
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            moved = _contains_move(node.value, frame.analysis) or any(n in tainted for n in _names_in(node.value))
            if moved:
                for target in targets:
                    tainted |= {n for n in _names_in(target) if isinstance(target, (ast.Name, ast.Tuple, ast.List))}
    return tainted


def device_moved_ops(region: AstRegion) -> list[tuple[AstRandomOp, str]]:
    """Random ops that draw on a device checkpoint did not stash: ``(op, reason)``."""
    site = region.site
    keyword_only = not site.inputs and bool(site.function_keywords)
    tainted_by_frame: dict[int, set[str]] = {}
    found: list[tuple[AstRandomOp, str]] = []
    for op in random_ops(region):
        if op.active is False or op.frame is None or not isinstance(op.node, ast.Call):
            continue
        frame = op.frame
        tainted = tainted_by_frame.get(id(frame))
        if tainted is None:
            tainted = tainted_by_frame[id(frame)] = _tainted_names(frame, keyword_only and frame.depth == 0)
        reason = None
        for keyword in op.node.keywords:
            value = keyword.value
            if keyword.arg == "device" and not _same_device_expression(value):
                if _names_a_device(value, op.analysis) and not (
                    isinstance(value, ast.Name) and value.id not in tainted and _is_parameter(frame, value)
                ):
                    reason = "it creates its tensor on a device chosen inside the region"
        if reason is None and op.tensor is not None:
            if _contains_move(op.tensor, op.analysis):
                reason = "its tensor is moved to another device inside the region"
            elif any(name in tainted for name in _names_in(op.tensor)):
                if keyword_only and frame.depth == 0 and any(n in frame.ctx.keyword_params for n in _names_in(op.tensor)):
                    reason = "its tensor reaches the checkpoint only as a keyword argument"
                else:
                    reason = "its tensor is moved to another device inside the region"
        if reason is not None:
            found.append((op, reason))
    return found


def _is_parameter(frame: AstFrame, name: ast.Name) -> bool:
    return any(frame.is_parameter(b) for b in frame.analysis.model.bindings_of(name))


# ------------------------------------------------------------------ sources (CKP103)
def unpreserved_sources(region: AstRegion) -> list[AstUnpreservedSource]:
    """Python ``random``, ``numpy.random``, explicit ``torch.Generator`` objects and
    ``generator=`` arguments used in the region."""
    found: list[AstUnpreservedSource] = []
    for frame in region.frames:
        model = frame.analysis.model
        for node in frame.nodes():
            if not isinstance(node, ast.Call):
                continue
            names = model.qualified_names(node.func)
            if names and names <= PYTHON_RANDOM_STATE_SETTERS:
                continue  # seeding is not a draw: the recomputation reseeds with the same value
            if any(n.startswith(PYTHON_RANDOM_PREFIXES) for n in names):
                name = sorted(n for n in names if n.startswith(PYTHON_RANDOM_PREFIXES))[0]
                what = "NumPy's RNG" if name.startswith("numpy.") else "Python's `random`"
                found.append(UnpreservedSource(node, frame.analysis, f"{what} (`{name}`)"))
                continue
            if names & GENERATOR_CLASSES:
                found.append(UnpreservedSource(node, frame.analysis, "an explicit `torch.Generator`"))
                continue
            for keyword in node.keywords:
                if keyword.arg == "generator" and not _none_by_default(keyword.value, frame):
                    found.append(UnpreservedSource(keyword, frame.analysis, "an explicit `generator=` argument"))
            func = node.func
            if isinstance(func, ast.Attribute) and _is_generator_attribute(func.value, frame):
                found.append(UnpreservedSource(node, frame.analysis, "a random generator object stored outside the region"))
            elif isinstance(func, ast.Attribute) and _is_generator_name(func.value, frame):
                found.append(UnpreservedSource(node, frame.analysis, f"the random generator `{func.value.id}`"))
    return found


def _none_by_default(expr: ast.expr, frame: AstFrame) -> bool:
    """Whether ``expr`` is ``None``, or a parameter (followed through the arguments that
    bound it, up to the checkpoint site) whose default is ``None`` and that no call on the
    way passes."""
    ctx = frame.ctx
    for _ in range(8):
        if isinstance(expr, ast.Constant) and expr.value is None:
            return True
        if not isinstance(expr, ast.Name):
            return False
        model = ctx.analysis.model
        if expr not in model.parents:
            return False
        bindings = model.lookup(expr.id, model.scope_of(expr))
        if len(bindings) != 1:
            return False
        binding = bindings[0]
        if binding in ctx.env:
            expr, ctx = ctx.env[binding]
            continue
        if ctx.open_call and binding.scope.node is ctx.bound:
            return False  # the call may pass it through `*args`/`**kwargs`
        if binding.kind is not BindingKind.PARAMETER or not isinstance(binding.node, ast.arg):
            return False
        default = binding_default(binding)
        return isinstance(default, ast.Constant) and default.value is None
    return False


def _made_by_generator_factory(value: ast.AST | None, analysis: AstAnalysis) -> bool:
    if not isinstance(value, ast.Call):
        return False
    names = analysis.model.qualified_names(value.func)
    return bool(names & GENERATOR_CLASSES) or any(n.startswith(PYTHON_RANDOM_PREFIXES) for n in names)


def _is_generator_attribute(expr: ast.expr, frame: AstFrame) -> bool:
    """``self.rng.normal()`` where ``self.rng`` was made by ``numpy.random.default_rng``,
    ``random.Random`` or ``torch.Generator``."""
    info: AstClassInfo | None = frame.ctx.self_class
    self_name = frame.self_parameter()
    if info is None or self_name is None:
        return False
    if not (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == self_name):
        return False
    return any(
        not path and _made_by_generator_factory(value, info.analysis) for value, _, path in info.attributes.get(expr.attr, ())
    )


def _is_generator_name(expr: ast.expr, frame: AstFrame) -> TypeGuard[ast.Name]:
    """``rng.normal()`` where ``rng = np.random.default_rng(0)`` (or ``random.Random()``,
    ``torch.Generator()``), in the frame or an enclosing scope."""
    if not isinstance(expr, ast.Name):
        return False
    bindings = frame.analysis.model.bindings_of(expr)
    return bool(bindings) and all(
        b.kind is BindingKind.ASSIGNMENT and _made_by_generator_factory(b.value, frame.analysis) for b in bindings
    )

"""Random operations in a region, and where their tensors' devices come from.

Shared by the randomness rules (CKP101-CKP103). An op is a call of a random torch function
(``torch.rand*``, ``F.dropout``, ...), a random tensor method (``x.bernoulli_()``), or a
random torch layer run in the region (``nn.Dropout``). Facts from torch.utils.checkpoint,
2.9 (unchanged in 2.13): with ``preserve_rng_state=True`` checkpoint stashes and restores the
CPU RNG state and that of **one** device type, inferred from the *positional* tensor
arguments; tensors moved to a device inside the region, tensors passed only by keyword,
explicit ``torch.Generator`` objects, Python ``random`` and NumPy are never restored.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeGuard

import libcst as cst

from ckptlint.checkpoint.analyses.layer_switches import argument_value, layer_switched_on, switch_is_on
from ckptlint.checkpoint.evaluator.denotations import LayerUse
from ckptlint.checkpoint.evaluator.region import Frame, Region
from ckptlint.checkpoint.evaluator.regions import RegionBuilder
from ckptlint.checkpoint.sites.options import NOT_LITERAL, literal_value
from ckptlint.facts.torch_facts import (
    DEVICE_MOVE_METHODS,
    GENERATOR_CLASSES,
    PYTHON_RANDOM_PREFIXES,
    PYTHON_RANDOM_STATE_SETTERS,
    RANDOM_METHODS,
    LayerKind,
    random_function,
)
from ckptlint.semantic.analysis import ModuleAnalysis

if TYPE_CHECKING:
    from typing_extensions import TypeVar

    # The node, module analysis, frame and expression a record holds: libcst's unless
    # parametrised (:mod:`ckptlint.checkpoint.analyses.ast_randomness` holds ``ast``'s).
    N = TypeVar("N", default=cst.CSTNode)
    M = TypeVar("M", default=ModuleAnalysis)
    R = TypeVar("R", default=Frame)
    E = TypeVar("E", default=cst.BaseExpression)
else:
    from typing import TypeVar

    N = TypeVar("N")
    M = TypeVar("M")
    R = TypeVar("R")
    E = TypeVar("E")

__all__ = ["RandomOp", "UnpreservedSource", "device_moved_ops", "random_ops", "unpreserved_sources"]

_DEVICE_WORDS = ("cuda", "xpu", "npu", "mps", "hpu", "xla", "gpu", "device", "dev")


@dataclass(eq=False)
class RandomOp(Generic[N, M, R, E]):
    """One random operation of a region.

    Attributes:
        node: the call that draws (in ``analysis``).
        name: what it is, for messages (``F.dropout``, ``nn.Dropout``, ``.bernoulli_()``).
        frame: the function body it runs in (``None`` for a layer that is the checkpointed
            callable itself).
        active: ``False`` when provably off (``p=0``, ``training=False``), ``None`` unknown.
        tensor: the expression whose device the op draws on (receiver or first argument),
            ``None`` for factories that take a ``device=``.
    """

    node: N
    analysis: M
    name: str
    frame: R | None
    active: bool | None
    tensor: E | None
    layer: LayerUse | None = None


def _argument(call: cst.Call, keyword: str, position: int) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if any(a.star for a in call.args if a.keyword is None):
        return None
    return positional[position] if len(positional) > position else None


def _switch_active(call: cst.Call, switch: tuple[str, int, object] | None, frame: Frame, off: object) -> bool | None:
    """Whether the argument ``switch`` names leaves the op on: its literal value, or the value
    the bindings of the frame give it (``F.dropout(x, self.attn_drop)`` with ``attn_drop=0.``
    passed by the constructor call the region followed: :mod:`~ckptlint.checkpoint.analyses.layer_switches`)."""
    if switch is None:
        return True
    keyword, position, default = switch
    arg = _argument(call, keyword, position)
    value = default if arg is None else literal_value(arg.value, frame.analysis.model)
    if value is NOT_LITERAL and arg is not None:
        value = argument_value(arg.value, frame.ctx, _builder(frame))
    return switch_is_on(value, off)


def _module_training(call: cst.Call, switch: tuple[str, int, object]) -> bool:
    """Whether the training argument ``switch`` names is a module's ``.training`` flag
    (``F.dropout(x, 0.1, self.training)``): on in training, where recomputation runs."""
    arg = _argument(call, switch[0], switch[1])
    return arg is not None and isinstance(arg.value, cst.Attribute) and arg.value.attr.value == "training"


def _builder(frame: Frame | None) -> RegionBuilder | None:
    builder = frame.builder if frame is not None else None
    return builder if isinstance(builder, RegionBuilder) else None


def _first_positional(call: cst.Call) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is None and not arg.star:
            return arg.value
    return None


def random_ops(region: Region) -> list[RandomOp]:
    """Every random operation the region runs, in frame order."""
    ops: list[RandomOp] = []
    for frame in region.frames:
        model = frame.analysis.model
        for node in frame.nodes():
            if not isinstance(node, cst.Call):
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
            elif isinstance(node.func, cst.Attribute) and node.func.attr.value in RANDOM_METHODS:
                if model.qualified_names(node.func):  # a module function (np.random.normal...), not a tensor method
                    continue
                ops.append(
                    RandomOp(node, frame.analysis, f".{node.func.attr.value}()", frame, True, node.func.value)
                )
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
            ops.append(RandomOp(layer.call, layer.analysis, layer.fact.name, None, on, None, layer))
    return ops


# ------------------------------------------------------------------ devices (CKP102)
def _is_device_move(node: cst.CSTNode, analysis: ModuleAnalysis) -> bool:
    """``x.cuda()``, ``x.to("cuda")``, ``x.to(device)``, ``x.to(device=...)``."""
    if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
        return False
    method = node.func.attr.value
    if method not in DEVICE_MOVE_METHODS:
        return False
    if method != "to":
        return not analysis.model.qualified_names(node.func)  # torch.cuda(...) is not a tensor method
    for arg in node.args:
        if arg.keyword is not None:
            if arg.keyword.value == "device":
                return not _same_device_expression(arg.value)
            continue
        if arg.star:
            return False
        return _names_a_device(arg.value, analysis)
    return False


def _same_device_expression(expr: cst.BaseExpression) -> bool:
    """``x.device`` (another tensor's device): not a move chosen inside the region."""
    return isinstance(expr, cst.Attribute) and expr.attr.value == "device"


def _names_a_device(expr: cst.BaseExpression, analysis: ModuleAnalysis) -> bool:
    value = literal_value(expr, analysis.model)
    if isinstance(value, str):
        return value.split(":")[0] in ("cuda", "xpu", "npu", "mps", "hpu", "xla", "meta", "privateuseone")
    if isinstance(expr, cst.Call) and "torch.device" in analysis.model.qualified_names(expr.func):
        return True
    if _same_device_expression(expr):
        return False
    text = expr.value if isinstance(expr, cst.Name) else expr.attr.value if isinstance(expr, cst.Attribute) else ""
    return any(word in text.lower() for word in _DEVICE_WORDS) and "dtype" not in text.lower()


def _names_in(expr: cst.CSTNode) -> Iterator[str]:
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            yield node.value
        elif isinstance(node, cst.Attribute):
            stack.append(node.value)
        elif isinstance(node, (cst.Lambda, cst.FunctionDef)):
            continue
        else:
            from ckptlint.semantic.walk import children

            stack.extend(children(node))


def _contains_move(expr: cst.CSTNode, analysis: ModuleAnalysis) -> bool:
    from ckptlint.semantic.walk import iter_tree

    return any(_is_device_move(node, analysis) for node in iter_tree(expr))


def _tainted_names(frame: Frame, keyword_only_inputs: bool) -> set[str]:
    """Local names whose value lives on a device chosen inside the frame (or, when the site
    passes its tensors only by keyword, the keyword parameters)."""
    tainted: set[str] = set()
    if keyword_only_inputs:
        tainted |= set(frame.ctx.keyword_params)
    for node in frame.nodes():
        if isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)) and node.value is not None:
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            moved = _contains_move(node.value, frame.analysis) or any(n in tainted for n in _names_in(node.value))
            if moved:
                for target in targets:
                    tainted |= {n for n in _names_in(target) if isinstance(target, (cst.Name, cst.Tuple, cst.List))}
    return tainted


def device_moved_ops(region: Region) -> list[tuple[RandomOp, str]]:
    """Random ops that draw on a device checkpoint did not stash: ``(op, reason)``."""
    site = region.site
    keyword_only = not site.inputs and bool(site.function_keywords)
    tainted_by_frame: dict[int, set[str]] = {}
    found: list[tuple[RandomOp, str]] = []
    for op in random_ops(region):
        if op.active is False or op.frame is None or not isinstance(op.node, cst.Call):
            continue
        frame = op.frame
        tainted = tainted_by_frame.get(id(frame))
        if tainted is None:
            tainted = tainted_by_frame[id(frame)] = _tainted_names(frame, keyword_only and frame.depth == 0)
        reason = None
        for arg in op.node.args:
            if arg.keyword is not None and arg.keyword.value == "device" and not _same_device_expression(arg.value):
                if _names_a_device(arg.value, op.analysis) and not (
                    isinstance(arg.value, cst.Name) and arg.value.value not in tainted and _is_parameter(frame, arg.value)
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


def _is_parameter(frame: Frame, name: cst.Name) -> bool:
    return any(frame.is_parameter(b) for b in frame.analysis.model.bindings_of(name))


# ------------------------------------------------------------------ sources (CKP103)
@dataclass(eq=False)
class UnpreservedSource(Generic[N, M]):
    """A use of randomness checkpoint never restores."""

    node: N
    analysis: M
    what: str


def unpreserved_sources(region: Region) -> list[UnpreservedSource]:
    """Python ``random``, ``numpy.random``, explicit ``torch.Generator`` objects and
    ``generator=`` arguments used in the region."""
    found: list[UnpreservedSource] = []
    for frame in region.frames:
        model = frame.analysis.model
        for node in frame.nodes():
            if not isinstance(node, cst.Call):
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
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value == "generator":
                    if not _none_by_default(arg.value, frame):
                        found.append(UnpreservedSource(arg, frame.analysis, "an explicit `generator=` argument"))
            if isinstance(node.func, cst.Attribute) and _is_generator_attribute(node.func.value, frame):
                found.append(UnpreservedSource(node, frame.analysis, "a random generator object stored outside the region"))
            elif isinstance(node.func, cst.Attribute) and _is_generator_name(node.func.value, frame):
                found.append(UnpreservedSource(node, frame.analysis, f"the random generator `{node.func.value.value}`"))
    return found


def _none_by_default(expr: cst.BaseExpression, frame: Frame) -> bool:
    """Whether ``expr`` is ``None``, or a parameter (followed through the arguments that
    bound it, up to the checkpoint site) whose default is ``None`` and that no call on the
    way passes: diffusers' LTX blocks hand ``generator=None`` down to ``torch.randn``, which
    then draws from the default generator that checkpoint restores. A caller outside the
    region may pass a generator; that is not seen (CKP103's known limits)."""
    ctx = frame.ctx
    for _ in range(8):
        if not isinstance(expr, cst.Name):
            return False
        if expr.value == "None":
            return True
        model = ctx.analysis.model
        if expr not in model.scopes:
            return False
        bindings = model.lookup(expr.value, model.scope_of(expr))
        if len(bindings) != 1:
            return False
        binding = bindings[0]
        if binding in ctx.env:
            expr, ctx = ctx.env[binding]
            continue
        param = binding.node
        if ctx.open_call and binding.scope.node is ctx.bound:
            return False  # the call may pass it through `*args`/`**kwargs`
        return (
            binding.kind.value == "parameter"
            and isinstance(param, cst.Param)
            and param.default is not None
            and isinstance(param.default, cst.Name)
            and param.default.value == "None"
        )
    return False


def _is_generator_attribute(expr: cst.BaseExpression, frame: Frame) -> bool:
    """``self.rng.normal()`` where ``self.rng`` was made by ``numpy.random.default_rng``,
    ``random.Random`` or ``torch.Generator``."""
    info = frame.ctx.self_class
    self_name = frame.self_parameter()
    if info is None or self_name is None:
        return False
    if not (isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == self_name):
        return False
    for value, _, path in info.attributes.get(expr.attr.value, ()):
        if isinstance(value, cst.Call) and not path:
            names = info.analysis.model.qualified_names(value.func)
            if names & GENERATOR_CLASSES or any(n.startswith(PYTHON_RANDOM_PREFIXES) for n in names):
                return True
    return False


def _made_by_generator_factory(value: cst.BaseExpression | None, analysis: ModuleAnalysis) -> bool:
    if not isinstance(value, cst.Call):
        return False
    names = analysis.model.qualified_names(value.func)
    return bool(names & GENERATOR_CLASSES) or any(n.startswith(PYTHON_RANDOM_PREFIXES) for n in names)


def _is_generator_name(expr: cst.BaseExpression, frame: Frame) -> TypeGuard[cst.Name]:
    """``rng.normal()`` where ``rng = np.random.default_rng(0)`` (or ``random.Random()``,
    ``torch.Generator()``), in the frame or an enclosing scope."""
    if not isinstance(expr, cst.Name):
        return False
    bindings = frame.analysis.model.bindings_of(expr)
    return bool(bindings) and all(
        b.kind.value == "assignment" and _made_by_generator_factory(b.value, frame.analysis) for b in bindings
    )


"""Recompute run from a gradient hook: GradCache-style cached losses.

The shape (GradCache, and the cached contrastive losses built on it)::

    def _backward_hook(grad_output, features, loss_obj):
        with torch.enable_grad():                       # backward runs with grad off
            for reps, grad in zip(loss_obj.embed(features, random_states=...), loss_obj.cache):
                surrogate = torch.dot(reps.flatten(), grad.flatten()) * grad_output
                surrogate.backward()                    # the model's gradients, chunk by chunk

    class CachedLoss(nn.Module):
        def forward(self, features, labels):
            with torch.no_grad():                       # first pass: no graph, RNG states kept
                reps = ...
            loss = self.loss_on(reps)                   # gradients cached for the detached reps
            loss.register_hook(partial(_backward_hook, features=features, loss_obj=self))
            return loss

The hook re-runs the model in ``backward``. Such code restores the RNG states of the first
pass (``RandContext``) but, unless it says so, not its autocast state: the hook runs under the
autocast state of the ``backward`` call (torch 2.13), which the training step makes outside its
``torch.autocast`` block, so the re-run computes in float32 and the cached gradients are applied
to activations other than those they were computed for (CKP105).

A :class:`HookRecompute` is one hook registered with ``tensor.register_hook(HOOK)`` in the
module (``HOOK``: a function or method of the module, possibly through ``functools.partial``)
whose own code enters ``torch.enable_grad()`` and calls ``backward``; its re-runs are the calls
under ``enable_grad`` of something the hook did not compute itself (a parameter, ``self``, a
name of the module: ``loss_obj.embed(...)``, ``self.model(...)``), not torch's functions,
builtins or ``backward``. Its autocast state is restored when the hook, or a function of the
module that a re-run calls (by name, three calls deep), enters an ``*autocast*`` context.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass

import libcst as cst

from ckptlint.facts.apis import PARTIAL_QUALIFIED_NAMES
from ckptlint.facts.grad_mode import GRAD_MODE_CONTEXTS, GradModeEffect
from ckptlint.semantic.bindings import BindingKind
from ckptlint.semantic.model import SemanticModel
from ckptlint.semantic.syntax import class_methods, last_name, own_nodes, positional_parameters
from ckptlint.semantic.walk import iter_tree

__all__ = ["HookRecompute", "hook_recomputes"]

_BUILTINS = frozenset(dir(builtins))
_LOCAL_KINDS = frozenset(
    {BindingKind.ASSIGNMENT, BindingKind.AUGMENTED, BindingKind.LOOP, BindingKind.WITH, BindingKind.WALRUS}
)
_ENABLES = frozenset(name for name, effect in GRAD_MODE_CONTEXTS.items() if effect is GradModeEffect.ENABLES)
_CALL_DEPTH = 3


@dataclass(frozen=True, eq=False)
class HookRecompute:
    """A gradient hook of the module that re-runs the model.

    Attributes:
        hook: the hook's ``def``; registration: the ``register_hook`` call.
        reruns: the calls under ``enable_grad`` that run the model again.
        restores_autocast: an autocast context is entered by the hook or by what it calls.
    """

    hook: cst.FunctionDef
    registration: cst.Call
    reruns: tuple[cst.Call, ...]
    restores_autocast: bool


def hook_recomputes(model: SemanticModel) -> list[HookRecompute]:
    """The hooks of ``model``'s module that re-run the model (found once, kept in its memo)."""
    found = model.memo.get("hook_recomputes")
    if found is None:
        found = model.memo["hook_recomputes"] = _find(model)
    return found  # type: ignore[return-value]


def _find(model: SemanticModel) -> list[HookRecompute]:
    found: list[HookRecompute] = []
    seen: set[int] = set()
    for node in iter_tree(model.module):
        if not (isinstance(node, cst.Call) and last_name(node.func) == "register_hook" and node.args):
            continue
        hook = _hook_function(node.args[0].value, node, model)
        if hook is None or id(hook) in seen:
            continue
        reruns = _reruns(hook, model)
        if reruns:
            seen.add(id(hook))
            found.append(HookRecompute(hook, node, tuple(reruns), _restores_autocast(hook, reruns, model)))
    return found


def _hook_function(value: cst.BaseExpression, call: cst.Call, model: SemanticModel) -> cst.FunctionDef | None:
    """The ``def`` that ``value`` (``register_hook``'s argument) denotes: a function of the
    module, ``self.method`` of the class around ``call``, or either through ``partial``."""
    if isinstance(value, cst.Call) and model.qualified_names(value.func) & PARTIAL_QUALIFIED_NAMES and value.args:
        value = value.args[0].value
    if isinstance(value, cst.Name):
        for binding in model.bindings_of(value):
            if binding.kind is BindingKind.FUNCTION and isinstance(binding.node, cst.FunctionDef):
                return binding.node
        return None
    if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == "self":
        owner = model.enclosing(call, cst.ClassDef)
        if isinstance(owner, cst.ClassDef):
            return class_methods(owner).get(value.attr.value)
    return None


def _reruns(hook: cst.FunctionDef, model: SemanticModel) -> list[cst.Call]:
    """The calls under ``enable_grad`` in ``hook`` that re-run the model (none when the hook
    does not call ``backward``: then it only reads or scales gradients)."""
    calls = [n for n in own_nodes(hook) if isinstance(n, cst.Call)]
    if not any(last_name(c.func) == "backward" for c in calls):
        return []
    parameters = positional_parameters(hook)
    if parameters[:1] == ["self"]:
        parameters = parameters[1:]
    gradient = parameters[0] if parameters else None  # what the hook is called with
    found: list[cst.Call] = []
    for node in own_nodes(hook):
        if not isinstance(node, cst.With) or not any(_enables_grad(item.item, model) for item in node.items):
            continue
        for inner in iter_tree(node.body):
            if isinstance(inner, cst.Call) and _reruns_model(inner, hook, gradient, model):
                found.append(inner)
    return found


def _enables_grad(expr: cst.BaseExpression, model: SemanticModel) -> bool:
    if isinstance(expr, cst.Call):
        return bool(model.qualified_names(expr.func) & _ENABLES)
    return False


def _reruns_model(call: cst.Call, hook: cst.FunctionDef, gradient: str | None, model: SemanticModel) -> bool:
    """A call of something the hook got from outside (a parameter, ``self``, a module name),
    not of torch, a builtin, ``backward``, the gradient the hook receives (its first
    parameter, ``gradient``) or a value the hook computed."""
    name = last_name(call.func)
    if name in ("backward", "register_hook"):
        return False
    if any(q == "torch" or q.startswith("torch.") for q in model.qualified_names(call.func)):
        return False
    root = call.func
    while isinstance(root, (cst.Attribute, cst.Subscript)):
        root = root.value
    if not isinstance(root, cst.Name) or root.value == gradient:
        return False
    bindings = model.bindings_of(root)
    if not bindings:
        return root.value not in _BUILTINS
    return not any(b.kind in _LOCAL_KINDS and b.scope.node is hook for b in bindings)


def _restores_autocast(hook: cst.FunctionDef, reruns: list[cst.Call], model: SemanticModel) -> bool:
    """Whether the hook, or a function of the module a re-run calls by name (three calls
    deep), enters an autocast context (``torch.autocast``, ``torch.cuda.amp.autocast``...)."""
    functions: dict[str, list[cst.FunctionDef]] = {}
    for node in iter_tree(model.module):
        if isinstance(node, cst.FunctionDef):
            functions.setdefault(node.name.value, []).append(node)
    pending = [hook]
    names = {last_name(call.func) for call in reruns}
    visited: set[int] = set()
    for _ in range(_CALL_DEPTH + 1):
        for function in pending:
            visited.add(id(function))
            if any(isinstance(n, cst.Call) and "autocast" in last_name(n.func).lower() for n in own_nodes(function)):
                return True
        pending = [f for name in names for f in functions.get(name, ()) if id(f) not in visited]
        names = {last_name(n.func) for f in pending for n in own_nodes(f) if isinstance(n, cst.Call)}
    return False

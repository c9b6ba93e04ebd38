"""Recompute run from a gradient hook (GradCache-style cached losses), on CPython's ``ast``:
the hooks of a module, in source order, with the calls each re-runs and whether it restores
autocast around them (what CKP105 reports).

A hook is a function or method of the module registered with ``tensor.register_hook(HOOK)``
(possibly through ``functools.partial``) whose own code calls ``backward`` and, under
``torch.enable_grad()``, calls something it did not compute itself (a re-run of the model).
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator
from dataclasses import dataclass

from ckptlint.checkpoint.sites.ast_options import argument_value, ordered_arguments
from ckptlint.facts.apis import PARTIAL_QUALIFIED_NAMES
from ckptlint.facts.grad_mode import GRAD_MODE_CONTEXTS, GradModeEffect
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.ast_walk import FUNCTIONS, class_methods, fields_order_children, last_name, own_nodes, positional_parameters
from ckptlint.semantic.bindings import BindingKind
from ckptlint.text.identifiers import may_name

__all__ = ["AstHookRecompute", "hook_recomputes"]

_BUILTINS = frozenset(dir(builtins))
_LOCAL_KINDS = frozenset(
    {BindingKind.ASSIGNMENT, BindingKind.AUGMENTED, BindingKind.LOOP, BindingKind.WITH, BindingKind.WALRUS}
)
_ENABLES = frozenset(name for name, effect in GRAD_MODE_CONTEXTS.items() if effect is GradModeEffect.ENABLES)
_CALL_DEPTH = 3
_WITH = (ast.With, ast.AsyncWith)

AstFunction = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True, eq=False)
class AstHookRecompute:
    """A gradient hook of the module that re-runs the model (``hook_recompute.HookRecompute``).

    Attributes:
        hook: the hook's ``def``; registration: the ``register_hook`` call.
        reruns: the calls under ``enable_grad`` that run the model again (in the order :func:`_tree`
            walks them).
        restores_autocast: an autocast context is entered by the hook or by what it calls.
    """

    hook: AstFunction
    registration: ast.Call
    reruns: tuple[ast.Call, ...]
    restores_autocast: bool


def hook_recomputes(model: AstModel) -> list[AstHookRecompute]:
    """The hooks of ``model``'s module that re-run the model, in the order of their first
    registration in the source (found once, kept in its memo)."""
    found = model.memo.get("hook_recomputes")
    if found is None:
        found = model.memo["hook_recomputes"] = _find(model)
    return found  # type: ignore[return-value]


def _tree(root: ast.AST | list[ast.stmt]) -> Iterator[ast.AST]:
    """``root`` (or each statement of a body) and every node below, parents before children,
    children in field order (``fields_order_children``), an ``IfExp``'s in source order
    (body, test, else)."""
    stack: list[ast.AST] = list(reversed(root)) if isinstance(root, list) else [root]
    while stack:
        node = stack.pop()
        yield node
        if type(node) is ast.IfExp:  # ``body if test else orelse``: walked in source order
            stack.extend((node.orelse, node.test, node.body))
            continue
        stack.extend(reversed(fields_order_children(node)))


def _find(model: AstModel) -> list[AstHookRecompute]:
    found: list[AstHookRecompute] = []
    if not may_name(model.text, ("register_hook",)):  # no call of it: nothing to walk for
        return found
    seen: set[int] = set()
    for node in _tree(model.module):
        if not (isinstance(node, ast.Call) and last_name(node.func) == "register_hook" and (node.args or node.keywords)):
            continue
        hook = _hook_function(argument_value(ordered_arguments(node)[0]), node, model)
        if hook is None or id(hook) in seen:
            continue
        reruns = _reruns(hook, model)
        if reruns:
            seen.add(id(hook))
            found.append(AstHookRecompute(hook, node, tuple(reruns), _restores_autocast(hook, reruns, model)))
    return found


def _hook_function(value: ast.expr, call: ast.Call, model: AstModel) -> AstFunction | None:
    """The ``def`` that ``value`` (``register_hook``'s argument) denotes: a function of the
    module, ``self.method`` of the class around ``call``, or either through ``partial``."""
    if isinstance(value, ast.Call) and model.qualified_names(value.func) & PARTIAL_QUALIFIED_NAMES and (value.args or value.keywords):
        value = argument_value(ordered_arguments(value)[0])
    if isinstance(value, ast.Name):
        for binding in model.bindings_of(value):
            if binding.kind is BindingKind.FUNCTION and isinstance(binding.node, FUNCTIONS):
                return binding.node
        return None
    if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "self":
        owner = model.enclosing(call, ast.ClassDef)
        if isinstance(owner, ast.ClassDef):
            return class_methods(owner).get(value.attr)
    return None


def _reruns(hook: AstFunction, model: AstModel) -> list[ast.Call]:
    """The calls under ``enable_grad`` in ``hook`` that re-run the model (none when the hook
    does not call ``backward``: then it only reads or scales gradients)."""
    calls = [n for n in own_nodes(hook) if isinstance(n, ast.Call)]
    if not any(last_name(c.func) == "backward" for c in calls):
        return []
    parameters = positional_parameters(hook)
    if parameters[:1] == ["self"]:
        parameters = parameters[1:]
    gradient = parameters[0] if parameters else None  # what the hook is called with
    found: list[ast.Call] = []
    for node in own_nodes(hook):
        if not isinstance(node, _WITH) or not any(_enables_grad(item.context_expr, model) for item in node.items):
            continue
        for inner in _tree(node.body):
            if isinstance(inner, ast.Call) and _reruns_model(inner, hook, gradient, model):
                found.append(inner)
    return found


def _enables_grad(expr: ast.expr, model: AstModel) -> bool:
    return isinstance(expr, ast.Call) and bool(model.qualified_names(expr.func) & _ENABLES)


def _reruns_model(call: ast.Call, hook: AstFunction, gradient: str | None, model: AstModel) -> bool:
    """A call of something the hook got from outside (a parameter, ``self``, a module name),
    not of torch, a builtin, ``backward``, the gradient the hook receives or a value the hook
    computed."""
    name = last_name(call.func)
    if name in ("backward", "register_hook"):
        return False
    if any(q == "torch" or q.startswith("torch.") for q in model.qualified_names(call.func)):
        return False
    root = call.func
    while isinstance(root, (ast.Attribute, ast.Subscript)):
        root = root.value
    if not isinstance(root, ast.Name) or root.id == gradient:
        return False
    bindings = model.bindings_of(root)
    if not bindings:
        return root.id not in _BUILTINS
    return not any(b.kind in _LOCAL_KINDS and b.scope.node is hook for b in bindings)


def _restores_autocast(hook: AstFunction, reruns: list[ast.Call], model: AstModel) -> bool:
    """Whether the hook, or a function of the module a re-run calls by name (three calls
    deep), enters an autocast context (``torch.autocast``, ``torch.cuda.amp.autocast``...)."""
    functions: dict[str, list[AstFunction]] = {}
    for node in _tree(model.module):
        if isinstance(node, FUNCTIONS):
            functions.setdefault(node.name, []).append(node)
    pending: list[AstFunction] = [hook]
    names = {last_name(call.func) for call in reruns}
    visited: set[int] = set()
    for _ in range(_CALL_DEPTH + 1):
        for function in pending:
            visited.add(id(function))
            if any(isinstance(n, ast.Call) and "autocast" in last_name(n.func).lower() for n in own_nodes(function)):
                return True
        pending = [f for name in names for f in functions.get(name, ()) if id(f) not in visited]
        names = {last_name(n.func) for f in pending for n in own_nodes(f) if isinstance(n, ast.Call)}
    return False

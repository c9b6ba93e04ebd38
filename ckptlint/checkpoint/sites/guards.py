"""The conditions that guard a checkpoint site, read from the function and class around it.

mm-style backbones checkpoint only ``if self.with_cp``, ``self.with_cp`` being a constructor
parameter that defaults to ``False``; Hugging Face models only ``if self.gradient_checkpointing
and self.training``; others under a config key (``if self.use_checkpoint and i <
self.checkpoint_num[0]``). The code is wrong whenever the guard holds (users turn such switches
on from configs and command lines exactly when memory runs short), so region rules report it and
say the condition in the message (:func:`site_condition`). Only the linted module is read:
whether any file turns the switch on is not asked (a file's findings depend on its own text and
the modules it imports, never on other text of the project).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.semantic.assignments import BINDING_NODES, assignments, attribute_name
from ckptlint.semantic.walk import iter_tree

if TYPE_CHECKING:
    from ckptlint.checkpoint.sites.site import CheckpointSite
    from ckptlint.semantic.analysis import ModuleAnalysis

__all__ = ["ConstructorSwitch", "guard_conjuncts", "node_condition", "site_condition"]


@dataclass(frozen=True)
class ConstructorSwitch:
    """A switch a site needs on: ``self.<attribute>`` set once in ``__init__`` from
    ``<parameter>`` (``""``: set to the literal ``default``), whose default is ``default`` (its
    source text: ``False``, ``None``, ``0``, ``True``), and the other methods of the class that
    set it (``setters``: timm's ``set_grad_checkpointing(self, enable=True)``)."""

    attribute: str
    parameter: str
    default: str
    setters: tuple[str, ...] = ()

    def text(self) -> str:
        """"`self.with_cp` is true (it defaults to `False`)", naming the setters when there are."""
        set_by = " or ".join(f"`{name}()`" for name in self.setters)
        return f"`self.{self.attribute}` is true (it defaults to `{self.default}`{f'; set by {set_by}' if set_by else ''})"


#: Longest condition text shown (longer ones end with an ellipsis).
MAX_CONDITION = 80


def site_condition(analysis: ModuleAnalysis, site: CheckpointSite) -> str:
    """The message suffix that states when ``site`` runs (:func:`node_condition` at its call)."""
    return node_condition(analysis, site.call)


def node_condition(analysis: ModuleAnalysis, node: cst.CSTNode) -> str:
    """The message suffix that states when ``node`` (of ``analysis``) runs, ``"; this code runs
    only when ... and ..."`` (``""`` when no ``if`` guards it), from the conjuncts
    of the tests (statements and expressions, ``elif`` included) around it in its function
    (:func:`guard_conjuncts`): first the switches among them -- ``self.X`` where the class's
    ``__init__`` assigns ``self.X`` once, from a parameter whose default is ``False``,
    ``None``, ``0`` or ``True``, and no other method assigns it, and a parameter of the
    function itself with such a default that the function never rebinds -- as "`self.with_cp`
    is true (it defaults to `False`)" (a reader sees whether the code runs by default), then
    the others as written (a test the ``else`` branch needs false reads ``not (...)``); a
    torch-version check that every release ckptlint judges passes is left out."""
    function, cls = _function_and_class(analysis, node)
    self_name = function.params.params[0].name.value if function is not None and function.params.params else None
    switches: list[str] = []
    others: list[str] = []
    for conjunct, text in guard_conjuncts(analysis, node):
        part = None
        on_self = isinstance(conjunct, cst.Attribute) and isinstance(conjunct.value, cst.Name) and conjunct.value.value == self_name
        if cls is not None and on_self and isinstance(conjunct, cst.Attribute):
            switch = _constructor_parameter(cls, conjunct.attr.value)
            if switch is not None:
                part = switch.text()
        elif function is not None and isinstance(conjunct, cst.Name) and conjunct.value != self_name:
            default = _parameter_default(function, conjunct.value)
            if default is not None:
                part = f"`{conjunct.value}` is true (it defaults to `{default}`)"
        if part is not None:
            if part not in switches:
                switches.append(part)
            continue
        text = " ".join(text.split())
        if len(text) > MAX_CONDITION:
            text = text[: MAX_CONDITION - 1] + "\u2026"
        if f"`{text}`" not in others:
            others.append(f"`{text}`")
    parts = switches + others
    return "; this code runs only when " + " and ".join(parts) if parts else ""


def _function_and_class(analysis: ModuleAnalysis, node: cst.CSTNode) -> tuple[cst.FunctionDef | None, cst.ClassDef | None]:
    """The ``def`` around ``node`` (``None`` when a lambda is nearer) and the class above it."""
    function: cst.FunctionDef | cst.Lambda | None = None
    for ancestor in analysis.model.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)) and function is None:
            function = ancestor
        elif isinstance(ancestor, cst.ClassDef):
            return (function if isinstance(function, cst.FunctionDef) else None), ancestor
    return (function if isinstance(function, cst.FunctionDef) else None), None


def guard_conjuncts(analysis: ModuleAnalysis, node: cst.CSTNode) -> list[tuple[cst.BaseExpression | None, str]]:
    """The conditions that must hold for ``node`` to run, outermost first, each as (its
    expression, its text): each conjunct of the test of an ``if`` whose body holds the node, and
    ``not (test)`` (no expression) for one whose ``else`` holds it (``not X`` gives ``X``), up to
    the function around the node. An ``if`` without ``else`` before the node in the same block
    whose body is one ``return``, ``continue`` or ``break`` (``if not self.with_cp: return
    self.block(x)``, :func:`_exits`) guards it the same way: the node runs only when its test is
    false. A ``while`` test bounds a loop (``l < num_layers``, ``True``) and is no switch a user
    turns on: it is left out."""
    from ckptlint.checkpoint.sites.options import torch_version_test

    model = analysis.model
    below: cst.CSTNode = node
    found: list[tuple[cst.BaseExpression | None, str]] = []
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            break
        if isinstance(ancestor, (cst.IndentedBlock, cst.Module)) and below in ancestor.body:
            earlier = ancestor.body[: ancestor.body.index(below)]
            exits = [
                statement.test
                for statement in earlier
                if isinstance(statement, cst.If)
                and statement.orelse is None
                and _exits(statement.body)
                and torch_version_test(statement.test, model) is None
            ]
            found[:0] = [conjunct for test in exits for conjunct in _negated(analysis, test)]
        if (
            isinstance(ancestor, (cst.If, cst.IfExp))
            and below is not ancestor.test
            and torch_version_test(ancestor.test, model) is None
        ):
            test = ancestor.test
            if below is ancestor.body:
                found[:0] = [(c, analysis.text_of(c)) for c in _conjuncts(test)]
            elif isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                found[:0] = [(c, analysis.text_of(c)) for c in _conjuncts(test.expression)]
            else:
                found[:0] = [(None, f"not ({analysis.text_of(test)})")]
        below = ancestor
    return found


def _negated(analysis: ModuleAnalysis, test: cst.BaseExpression) -> list[tuple[cst.BaseExpression | None, str]]:
    """What must hold when ``test`` is false: ``not X`` gives the conjuncts of ``X``."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return [(c, analysis.text_of(c)) for c in _conjuncts(test.expression)]
    return [(None, f"not ({analysis.text_of(test)})")]


def _exits(body: cst.BaseSuite) -> bool:
    """Whether a suite is one statement that leaves the block: ``return``, ``continue`` or
    ``break`` (the switch idiom ``if not self.with_cp: return self.f(x)``). A longer body (a
    debug or empty-dataset branch that logs, then returns) and ``raise`` (an error check, which
    every line after it implies) are not read as conditions: they would only lengthen messages."""
    statements = list(body.body)
    if len(statements) != 1:
        return False
    only = statements[0]
    if isinstance(only, cst.SimpleStatementLine):
        if len(only.body) != 1:
            return False
        only = only.body[0]
    return isinstance(only, (cst.Return, cst.Continue, cst.Break))


def _conjuncts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _conjuncts(test.left) + _conjuncts(test.right)
    return [test]


def _constructor_parameter(cls: cst.ClassDef, attr: str) -> ConstructorSwitch | None:
    """``self.<attr>`` as a switch of ``cls``: set once in ``__init__``, from a parameter with a
    default of :func:`_switch_default`'s kind or to such a literal (timm's ``self.grad_checkpointing
    = False``), and set by other methods of the class only when ``__init__`` sets it to a literal
    (those are its setters, named); ``None`` otherwise."""
    assigned: list[tuple[cst.FunctionDef, cst.BaseExpression]] = []
    init = None
    for statement in cls.body.body:
        if not isinstance(statement, cst.FunctionDef):
            continue
        if statement.name.value == "__init__":
            init = statement
        for node in _self_assignments(statement, attr):
            assigned.append((statement, node))
    in_init = [value for method, value in assigned if method is init]
    if init is None or len(in_init) != 1:
        return None
    setters = tuple(dict.fromkeys(method.name.value for method, _ in assigned if method is not init))
    literal = _switch_default(in_init[0])
    if literal is not None:
        return ConstructorSwitch(attr, "", literal, setters[:2])
    if setters or not isinstance(in_init[0], cst.Name):
        return None
    parameter = in_init[0].value
    for param in (*init.params.params, *init.params.kwonly_params):
        if param.name.value == parameter:
            default = _switch_default(param.default) if param.default is not None else None
            return ConstructorSwitch(attr, parameter, default) if default is not None else None
    return None


def _switch_default(expr: cst.BaseExpression) -> str | None:
    """The source text of ``False``, ``None``, ``True`` or ``0``, else ``None``."""
    if isinstance(expr, cst.Name) and expr.value in ("False", "None", "True"):
        return expr.value
    if isinstance(expr, cst.Integer) and expr.value == "0":
        return "0"
    return None


def _parameter_default(function: cst.FunctionDef, name: str) -> str | None:
    """The default (``False``, ``None``, ``0`` or ``True``) of ``function``'s parameter ``name`` when the
    function never rebinds it, else ``None``."""
    for param in (*function.params.params, *function.params.kwonly_params):
        if param.name.value != name:
            continue
        default = param.default
        if isinstance(default, cst.Name) and default.value in ("False", "None", "True"):
            text = default.value
        elif isinstance(default, cst.Integer) and default.value == "0":
            text = "0"
        else:
            return None
        rebound = any(
            type(node) in BINDING_NODES and any(_target_name(a) == name for a in assignments(node))
            for node in iter_tree(function.body)
        )
        return None if rebound else text
    return None


def _target_name(assigned: object) -> str | None:
    target = getattr(assigned, "target", None)
    return target.value if isinstance(target, cst.Name) else None


def _self_assignments(function: cst.FunctionDef, attr: str) -> list[cst.BaseExpression]:
    """The values assigned to ``<first parameter>.attr`` in ``function``, in every binding form
    (:func:`~ckptlint.semantic.assignments.assignments`); a target that does not get a whole
    value (augmented, unpacked from a call) counts as ``...``: it is not a plain copy."""
    if not function.params.params:
        return []
    self_name = function.params.params[0].name.value
    return [
        assigned.whole or cst.Ellipsis()
        for node in iter_tree(function.body)
        if type(node) in BINDING_NODES
        for assigned in assignments(node)
        if attribute_name(assigned, self_name) == attr
    ]

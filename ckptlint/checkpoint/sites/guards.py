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

if TYPE_CHECKING:
    from ckptlint.checkpoint.sites.site import CheckpointSite
    from ckptlint.semantic.analysis import ModuleAnalysis

__all__ = ["ConstructorSwitch", "condition_text", "constructor_switches", "guard_conjuncts", "site_condition"]


@dataclass(frozen=True)
class ConstructorSwitch:
    """A switch a site needs on: ``self.<attribute>`` set once in ``__init__`` from
    ``<parameter>``, whose default is ``default`` (its source text: ``False``, ``None``, ``0``)."""

    attribute: str
    parameter: str
    default: str


def constructor_switches(analysis: ModuleAnalysis, site: CheckpointSite) -> list[ConstructorSwitch]:
    """The switches that must be on for ``site`` to run: ``self.X`` read in a conjunct of the
    test of an ``if`` (statement or expression) whose branch holds the site (``not self.X`` for
    the ``else`` branch), where the class's ``__init__`` assigns ``self.X`` once, from a
    parameter whose default is ``False``, ``None`` or ``0``, and no other method of the class
    assigns it. ``[]`` when the site is not guarded so."""
    model = analysis.model
    function = cls = None
    below: cst.CSTNode = site.call
    tests: list[tuple[cst.BaseExpression, bool]] = []
    for ancestor in model.ancestors(site.call):
        if isinstance(ancestor, (cst.If, cst.IfExp)) and below is not ancestor.test and function is None:
            tests.append((ancestor.test, below is ancestor.body))
        elif isinstance(ancestor, (cst.FunctionDef, cst.Lambda)) and function is None:
            function = ancestor
        elif isinstance(ancestor, cst.ClassDef):
            cls = ancestor
            break
        below = ancestor
    if not tests or not isinstance(function, cst.FunctionDef) or cls is None or not function.params.params:
        return []
    self_name = function.params.params[0].name.value
    switches = []
    for test, in_body in tests:
        for attr in _guard_attributes(test, self_name, in_body):
            switch = _constructor_parameter(cls, attr)
            if switch is not None and switch not in switches:
                switches.append(switch)
    return switches


def condition_text(switches: list[ConstructorSwitch], others: list[str] = ()) -> str:  # type: ignore[assignment]
    """The condition under which a finding at a site holds, as a message suffix: each switch
    as ``"`self.with_cp` is true (it defaults to `False`)"``, then the other conditions
    (``others``, source text); ``"; this code runs only when ... and ..."``, or ``""`` when
    there is none."""
    parts = [f"`self.{s.attribute}` is true (it defaults to `{s.default}`)" for s in switches]
    parts += [f"`{text}`" for text in others]
    if not parts:
        return ""
    return "; this code runs only when " + " and ".join(parts)


#: Longest condition text shown (longer ones end with an ellipsis).
MAX_CONDITION = 80


def site_condition(analysis: ModuleAnalysis, site: CheckpointSite) -> str:
    """The message suffix that states when ``site`` runs (:func:`condition_text`): its
    constructor switches, then every other conjunct of the ``if`` tests (statements and
    expressions, ``elif`` included) around it in its function, as written (a test the
    ``else`` branch needs false reads ``not (...)``); a torch-version check that every release
    ckptlint judges passes is left out."""
    switches = constructor_switches(analysis, site)
    names = {s.attribute for s in switches}
    others: list[str] = []
    for node, text in guard_conjuncts(analysis, site):
        if node is not None and _switch_attribute(node) in names:
            continue
        text = " ".join(text.split())
        if len(text) > MAX_CONDITION:
            text = text[: MAX_CONDITION - 1] + "\u2026"
        if text not in others:
            others.append(text)
    return condition_text(switches, others)


def guard_conjuncts(analysis: ModuleAnalysis, site: CheckpointSite) -> list[tuple[cst.BaseExpression | None, str]]:
    """The conditions that must hold for ``site`` to run, outermost first, each as (its
    expression, its text): each conjunct of the test of an ``if`` whose body holds the site, and
    ``not (test)`` (no expression) for one whose ``else`` holds it (``not X`` gives ``X``), up to
    the function around the site."""
    from ckptlint.checkpoint.sites.options import torch_version_test

    model = analysis.model
    below: cst.CSTNode = site.call
    found: list[tuple[cst.BaseExpression | None, str]] = []
    for ancestor in model.ancestors(site.call):
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            break
        if isinstance(ancestor, (cst.If, cst.IfExp)) and below is not ancestor.test and torch_version_test(ancestor.test, model) is None:
            test = ancestor.test
            if below is ancestor.body:
                found[:0] = [(c, analysis.text_of(c)) for c in _conjuncts(test)]
            elif isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                found[:0] = [(c, analysis.text_of(c)) for c in _conjuncts(test.expression)]
            else:
                found[:0] = [(None, f"not ({analysis.text_of(test)})")]
        below = ancestor
    return found


def _conjuncts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _conjuncts(test.left) + _conjuncts(test.right)
    return [test]


def _switch_attribute(conjunct: cst.BaseExpression) -> str | None:
    """``X`` of a conjunct ``self.X`` (the first parameter's name is not checked here: a
    switch is named only when the class sets it from a constructor parameter)."""
    if isinstance(conjunct, cst.Attribute) and isinstance(conjunct.value, cst.Name):
        return conjunct.attr.value
    return None


def _guard_attributes(test: cst.BaseExpression, self_name: str, in_body: bool) -> list[str]:
    if in_body and isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _guard_attributes(test.left, self_name, True) + _guard_attributes(test.right, self_name, True)
    if not in_body:
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return _guard_attributes(test.expression, self_name, True)
        return []
    if isinstance(test, cst.Attribute) and isinstance(test.value, cst.Name) and test.value.value == self_name:
        return [test.attr.value]
    return []


def _constructor_parameter(cls: cst.ClassDef, attr: str) -> ConstructorSwitch | None:
    assigned: list[tuple[cst.FunctionDef, cst.BaseExpression]] = []
    init = None
    for statement in cls.body.body:
        if not isinstance(statement, cst.FunctionDef):
            continue
        if statement.name.value == "__init__":
            init = statement
        for node in _self_assignments(statement, attr):
            assigned.append((statement, node))
    if init is None or len(assigned) != 1 or assigned[0][0] is not init or not isinstance(assigned[0][1], cst.Name):
        return None
    parameter = assigned[0][1].value
    for param in (*init.params.params, *init.params.kwonly_params):
        if param.name.value == parameter:
            default = param.default
            if isinstance(default, cst.Name) and default.value in ("False", "None"):
                return ConstructorSwitch(attr, parameter, default.value)
            if isinstance(default, cst.Integer) and default.value == "0":
                return ConstructorSwitch(attr, parameter, "0")
            return None
    return None


def _self_assignments(function: cst.FunctionDef, attr: str) -> list[cst.BaseExpression]:
    """The values assigned to ``<first parameter>.attr`` in ``function``, in every binding form
    (:func:`~ckptlint.semantic.assignments.assignments`); a target that does not get a whole
    value (augmented, unpacked from a call) counts as ``...``: it is not a plain copy."""
    if not function.params.params:
        return []
    self_name = function.params.params[0].name.value
    found: list[cst.BaseExpression] = []

    class _Visitor(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if type(node) in BINDING_NODES:
                for assigned in assignments(node):
                    if attribute_name(assigned, self_name) == attr:
                        found.append(assigned.whole or cst.Ellipsis())
            return True

    function.body.visit(_Visitor())
    return found

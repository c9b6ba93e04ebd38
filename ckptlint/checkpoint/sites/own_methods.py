"""Calls of a method that the receiver's own class defines under a library API's name.

A Hugging Face switch is recognised by its method name alone
(``model.gradient_checkpointing_enable()``, ``activation_checkpointing_enable()``): the
receiver is usually a model that transformers built. A class of the project may define a
method of that name itself (xtuner's model wrappers define ``gradient_checkpointing_enable``
and ``activation_checkpointing_enable`` and forward to their ``self.llm``); a call on an
instance of it calls that method, not transformers' API, so it is no site. The calls inside
the method that reach a model transformers built stay sites.

Only where the receiver's class is known, in the module or the modules of the tree it
imports: ``self`` (the first parameter of a method of the class), a name every binding of
which that reaches the call constructs a class (``model = Wrapper(llm)``), ``self.attr`` that
the class only assigns constructed instances to, ``Wrapper(llm).method()``. The class, or a
base class of the tree before any base from another library in left-to-right depth-first
order, must define the method; a base class of torch (``nn.Module``) defines none of these.
A method that may pass the caller's options on to the library's method stays a site (its
options are judged at the call, as before): one that calls ``super().<method>(...)``, takes
``*args`` or ``**kwargs``, or takes a parameter named like one of the API's options
(``gradient_checkpointing_kwargs``). Anything not known keeps the call a site.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.checkpoint.sites.reach import self_assignments
from ckptlint.semantic.bindings import BindingKind, ScopeKind
from ckptlint.semantic.reaching import reaching

if TYPE_CHECKING:
    from ckptlint.semantic.analysis import ModuleLoader
    from ckptlint.semantic.model import SemanticModel

__all__ = ["own_method_call"]

#: Base classes followed (and re-export hops) before the answer is unknown.
_MAX_DEPTH = 4
#: Libraries whose classes are not read: torch's define none of the switches, the others'
#: (transformers' ``PreTrainedModel``) may define them.
_NOT_READ = ("torch.", "transformers.", "builtins.")

_Class = tuple[cst.ClassDef, "SemanticModel"]


def own_method_call(call: cst.Call, options: tuple[str, ...], model: SemanticModel, project: ModuleLoader | None) -> bool:
    """Whether ``call`` (``receiver.method(...)``, ``method`` an API whose options are
    ``options``) calls a method that every class the receiver may be an instance of defines
    itself and that passes none of the call's options on (see the module docstring);
    ``False`` when any of them is not known."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return False
    classes = _receiver_classes(func.value, model, project)
    return bool(classes) and all(_lookup(cls, func.attr.value, options, project, 0) is True for cls in classes)


def _receiver_classes(receiver: cst.BaseExpression, model: SemanticModel, project: ModuleLoader | None) -> list[_Class]:
    """The classes ``receiver`` may be an instance of; ``[]`` when any is not known."""
    if isinstance(receiver, cst.Call):
        return _constructed(receiver, model, project)
    if isinstance(receiver, cst.Name) and receiver in model.scopes:
        owner = _self_class(receiver, model)
        if owner is not None:
            return [(owner, model)]
        bindings = reaching(model, receiver)
        values = [b.value for b in bindings if b.kind is BindingKind.ASSIGNMENT and isinstance(b.value, cst.Call)]
        if not bindings or len(values) != len(bindings):
            return []
        return _all_constructed(values, model, project)
    if isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name) and receiver.value in model.scopes:
        owner = _self_class(receiver.value, model)
        if owner is None:
            return []
        assigned = self_assignments(model, owner, receiver.attr.value)
        calls = [value for value in assigned if isinstance(value, cst.Call)]
        if not assigned or len(calls) != len(assigned):
            return []
        return _all_constructed(calls, model, project)
    return []


def _all_constructed(calls: list[cst.Call], model: SemanticModel, project: ModuleLoader | None) -> list[_Class]:
    found: list[_Class] = []
    for call in calls:
        classes = _constructed(call, model, project)
        if not classes:
            return []
        found += classes
    return found


def _self_class(name: cst.Name, model: SemanticModel) -> cst.ClassDef | None:
    """The class whose instance ``name`` is when it is the first parameter of a method
    (not a static or class method) of that class, never rebound."""
    bindings = model.bindings_of(name)
    if len(bindings) != 1 or bindings[0].kind is not BindingKind.PARAMETER:
        return None
    function = bindings[0].scope.node
    if not isinstance(function, cst.FunctionDef) or bindings[0].scope.parent is None:
        return None
    if bindings[0].scope.parent.kind is not ScopeKind.CLASS or not function.params.params:
        return None
    if function.params.params[0].name.value != name.value:
        return None
    if any(isinstance(d.decorator, cst.Name) and d.decorator.value in ("staticmethod", "classmethod") for d in function.decorators):
        return None
    owner = bindings[0].scope.parent.node
    return owner if isinstance(owner, cst.ClassDef) else None


def _constructed(call: cst.Call, model: SemanticModel, project: ModuleLoader | None) -> list[_Class]:
    """The classes ``call`` constructs (one per name it may denote); ``[]`` when it may be
    anything else."""
    names = model.qualified_names(call.func)
    found: list[_Class] = []
    for name in sorted(names):
        cls = _class_named(name, model, project, 0)
        if cls is None:
            return []
        found.append(cls)
    return found


def _class_named(qualified: str, model: SemanticModel, project: ModuleLoader | None, hops: int) -> _Class | None:
    """The class ``qualified`` names, in ``model``'s module or, through ``project``, in a
    module of the tree (followed through re-exports)."""
    module, _, name = qualified.rpartition(".")
    if module == model.module_name or (not module and not model.module_name):
        for binding in model.module_scope.bindings.get(name, ()):
            if binding.kind is BindingKind.CLASS and isinstance(binding.node, cst.ClassDef):
                return binding.node, model
        return None
    if project is None or not module or hops >= _MAX_DEPTH or qualified.startswith(_NOT_READ):
        return None
    path = project.file_for_module(module)
    if path is None:
        return None
    project.record_read(Path(os.path.abspath(path)))
    analysis = project.analysis_for_names(module, [name])
    if analysis is None:
        return None
    for binding in analysis.model.module_scope.bindings.get(name, ()):
        if binding.kind is BindingKind.CLASS and isinstance(binding.node, cst.ClassDef):
            return binding.node, analysis.model
        if binding.kind is BindingKind.IMPORT and binding.target and binding.target != qualified:
            return _class_named(binding.target, analysis.model, project, hops + 1)
    return None


def _lookup(
    cls: _Class, method: str, options: tuple[str, ...], project: ModuleLoader | None, depth: int
) -> bool | None:
    """Whether ``method`` of an instance of ``cls`` is a method of the tree that passes no
    option on: ``True`` when ``cls`` or a base class of the tree defines it so, before any base
    class that may define it elsewhere; ``False`` when no class along this line defines it;
    ``None`` when unknown (a base class not read) or when the definition may pass options on."""
    node, model = cls
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    for statement in body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == method:
            return None if _passes_options_on(statement, method, options) else True
    if depth >= _MAX_DEPTH:
        return None
    for base in node.bases:
        if base.keyword is not None:
            continue  # metaclass=...
        names = model.qualified_names(base.value)
        if not names:
            return None
        for name in sorted(names):
            if name.startswith(("torch.", "builtins.")):
                continue  # nn.Module, object: none of the switches
            found = _class_named(name, model, project, 0)
            if found is None:
                return None
            answer = _lookup(found, method, options, project, depth + 1)
            if answer is not False:
                return answer
    return False


def _passes_options_on(function: cst.FunctionDef, method: str, options: tuple[str, ...]) -> bool:
    """Whether ``function`` (the tree's ``method``) may hand its caller's options to the
    library's: it takes ``*args``/``**kwargs`` or a parameter named like an option, or calls
    ``super().method`` (or ``super(Cls, self).method``)."""
    params = function.params
    if isinstance(params.star_arg, cst.Param) or params.star_kwarg is not None:
        return True
    if any(p.name.value in options for p in (*params.posonly_params, *params.params, *params.kwonly_params)):
        return True

    class _Visitor(cst.CSTVisitor):
        found = False

        def visit_Attribute(self, node: cst.Attribute) -> None:
            value = node.value
            if (
                node.attr.value == method
                and isinstance(value, cst.Call)
                and isinstance(value.func, cst.Name)
                and value.func.value == "super"
            ):
                self.found = True

    visitor = _Visitor()
    function.body.visit(visitor)
    return visitor.found

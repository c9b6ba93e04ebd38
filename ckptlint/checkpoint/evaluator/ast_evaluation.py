"""What an expression denotes on CPython's ``ast`` (names, bindings, attributes, calls,
imports): :class:`ExpressionEvaluator`, over the evaluator's contexts, function values and
class summaries of :mod:`ckptlint.checkpoint.evaluator.denotations`.

Composed of an :class:`~ckptlint.checkpoint.evaluator.budget.EvaluationBudget` (it keys its
memo by identity), a :class:`~ckptlint.checkpoint.evaluator.ast_literals.LiteralDecisions` and
an :class:`~ckptlint.checkpoint.evaluator.ast_imports.ImportResolver`. A call's arguments are
read in source order (``ast`` keeps keywords apart), ``**kwargs`` counted as a starred
argument, ``x[a, b]`` as two subscript elements (a parenthesised tuple as one), ``a or b or c``
as the nested ``(a or b) or c``, one step per level. A :class:`LayerUse` made here holds its
``ast`` call (:mod:`ckptlint.checkpoint.analyses.ast_layer_switches` reads its switches).
"""

from __future__ import annotations

import ast
from functools import partial
from typing import TYPE_CHECKING

from ckptlint.checkpoint.evaluator.ast_arguments import bind_arguments
from ckptlint.checkpoint.evaluator.ast_class_summary import (
    class_mro,
    dynamic_key,
    find_method,
    is_property,
    self_parameter,
    summarise_class,
)
from ckptlint.checkpoint.evaluator.ast_flow import attribute_set_before, returns_of
from ckptlint.checkpoint.evaluator.ast_iteration import iterated_container
from ckptlint.checkpoint.evaluator.ast_literals import binding_default
from ckptlint.checkpoint.evaluator.ast_norm_configs import call_argument, norm_factory_values
from ckptlint.checkpoint.evaluator.denotations import (
    MAX_EVAL_DEPTH,
    ClassValue,
    ConstructorEnv,
    ContainerValue,
    Context,
    ForwardingValue,
    FunctionValue,
    InstanceValue,
    LayerClassValue,
    LayerUse,
    ModuleValue,
    OpaqueValue,
    TorchValue,
    Value,
    attribute_owners,
    partially_applied,
    wrapper_returned,
)
from ckptlint.checkpoint.sites.ast_options import argument_value, ordered_arguments
from ckptlint.checkpoint.sites.options import NOT_LITERAL
from ckptlint.facts.apis import PARTIAL_QUALIFIED_NAMES
from ckptlint.facts.hf_formats import CLASS_CONSTRUCTORS
from ckptlint.facts.torch_facts import (
    CONTAINER_CLASSES,
    MODULE_METHODS_RETURNING_SELF,
    layer_fact,
    norm_factory,
)
from ckptlint.facts.wrappers import FORWARDING_WRAPPERS
from ckptlint.semantic.ast_assignments import candidate_values
from ckptlint.semantic.ast_reaching import reaching
from ckptlint.semantic.ast_subscripts import subscript_elements
from ckptlint.semantic.bindings import EACH, BindingKind, MutationKind, ScopeKind

if TYPE_CHECKING:
    from ckptlint.checkpoint.evaluator.ast_class_summary import AstClassInfo, AstMethod
    from ckptlint.checkpoint.evaluator.ast_imports import ImportResolver
    from ckptlint.checkpoint.evaluator.ast_literals import LiteralDecisions
    from ckptlint.checkpoint.evaluator.budget import EvaluationBudget
    from ckptlint.semantic.ast_analysis import AstAnalysis
    from ckptlint.semantic.ast_model import AstBinding

    AstContext = Context[AstAnalysis, ast.expr, ast.AST]
    AstEnv = dict[AstBinding, tuple[ast.expr, AstContext]]

__all__ = ["ExpressionEvaluator"]

_MAX_VALUES = 64
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class ExpressionEvaluator:
    """What an expression denotes: functions, classes, instances of classes of the tree, torch
    layers, containers, modules; ``[]`` when unknown.

    Keeps the class summaries it made (with their base classes evaluated) for the lifetime of
    one linted module."""

    def __init__(self, budget: EvaluationBudget, decisions: LiteralDecisions, imports: ImportResolver) -> None:
        self._budget = budget
        self._decisions = decisions
        self._imports = imports
        self._classes: dict[ast.ClassDef, AstClassInfo] = {}
        self._nested: dict[ast.BoolOp, ast.BoolOp] = {}

    def values(self, expr: ast.expr, ctx: AstContext, depth: int = 0) -> list[Value]:
        """The abstract values ``expr`` may denote when evaluated in ``ctx`` (``[]``: unknown,
        an opaque value in a complete query); each call takes a step of the budget and is
        memoised for the query."""
        if depth > self._budget.depth:
            return [OpaqueValue()] if self._budget.complete else []
        return self._budget.evaluate(expr, ctx, lambda: self._evaluate(expr, ctx, depth), _MAX_VALUES)

    def called(self, func: ast.expr, ctx: AstContext) -> list[Value]:
        """What calling ``func`` runs (functions, module instances, layers); constructing an
        object (a class, a layer class) is not running its forward."""
        return [v for v in self.values(func, ctx, 0) if not isinstance(v, (ClassValue, LayerClassValue))]

    def class_info(self, analysis: AstAnalysis, node: ast.ClassDef) -> AstClassInfo:
        """The summary of class ``node`` of ``analysis`` (made once), its base classes
        evaluated where the class is written."""
        info = self._classes.get(node)
        if info is None:
            info = summarise_class(analysis, node)
            self._classes[node] = info
            info.bases = [v for base in node.bases for v in self.values(base, Context(analysis), 0)]
        return info

    def held(self, instance: InstanceValue, opened: bool = True) -> list[Value]:
        """What an instance of a class of the tree holds: the values its class and its bases of
        the tree give its attributes, evaluated with the constructor's bindings, containers
        opened (to :data:`MAX_EVAL_DEPTH` levels) when ``opened``. Methods are not held."""
        info: AstClassInfo = instance.info
        names = dict.fromkeys(n for one in class_mro(info) for n in (*one.attributes, *one.appended))
        found: list[Value] = []
        level = [v for name in names for v in self._attribute(instance, name, 0) if not isinstance(v, FunctionValue)]
        for _ in range(MAX_EVAL_DEPTH if opened else 1):
            found += level
            level = [e for v in level if isinstance(v, ContainerValue) for e in v.elements]
            if not level:
                break
        return found[: _MAX_VALUES * 4]

    def enclosing_class(self, analysis: AstAnalysis, node: ast.AST) -> AstClassInfo | None:
        """The class whose method contains ``node`` (``self``'s class there)."""
        model = analysis.model
        function = model.enclosing(node, *_FUNCTIONS)
        while function is not None:
            scope = model.scope_of(function)
            if scope.kind is ScopeKind.CLASS and isinstance(scope.node, ast.ClassDef):
                return self.class_info(analysis, scope.node)
            function = model.enclosing(function, *_FUNCTIONS)
        return None

    def _evaluate(self, expr: ast.expr, ctx: AstContext, depth: int) -> list[Value]:
        model = ctx.analysis.model
        if isinstance(expr, (ast.Name, ast.Attribute)):
            layer = layer_fact(model.qualified_names(expr)) if expr in model.parents else None
            if layer is not None:
                return [LayerClassValue(*layer)]
        if isinstance(expr, ast.Name):
            return self._name(expr, ctx, depth)
        if isinstance(expr, ast.Attribute):
            return self._attribute_read(expr, ctx, depth)
        if isinstance(expr, ast.Subscript):
            return self._subscript(expr, ctx, depth)
        if isinstance(expr, ast.Call):
            return self._call(expr, ctx, depth)
        if isinstance(expr, ast.Lambda):
            return [FunctionValue(expr, ctx)]
        if isinstance(expr, (ast.List, ast.Tuple)):
            items = [(e.value, True) if isinstance(e, ast.Starred) else (e, False) for e in expr.elts]
            return [self._container(items, ctx, depth)]
        if isinstance(expr, (ast.ListComp, ast.GeneratorExp)):
            return [ContainerValue(self.values(expr.elt, ctx, depth + 1), exact=False)]
        if isinstance(expr, ast.Dict):
            elements: list[Value] = []
            keyed: list[tuple[object, Value]] | None = []
            for key_expr, value_expr in zip(expr.keys, expr.values, strict=True):
                if key_expr is None:
                    keyed = None  # `**other`: keys not known
                    continue
                found = self.values(value_expr, ctx, depth + 1)
                elements += found
                if keyed is not None:
                    key = self._decisions.literal(key_expr, ctx, depth + 1)
                    keyed += [(key, value) for value in found]
            return [ContainerValue(elements, exact=False, sequential=False, keyed=keyed)]
        if isinstance(expr, ast.IfExp):
            return self.values(expr.body, ctx, depth + 1) + self.values(expr.orelse, ctx, depth + 1)
        if isinstance(expr, ast.BoolOp):
            left = expr.values[0] if len(expr.values) == 2 else self._left_operation(expr)
            return self.values(left, ctx, depth + 1) + self.values(expr.values[-1], ctx, depth + 1)
        return []

    def _left_operation(self, expr: ast.BoolOp) -> ast.BoolOp:
        """The left operand of ``a or b or c`` read as ``(a or b) or c``: a node of its own (made
        once, kept while the evaluator lives), so that it takes a step and a memo entry."""
        left = self._nested.get(expr)
        if left is None:
            left = self._nested[expr] = ast.BoolOp(op=expr.op, values=expr.values[:-1])
        return left

    def _subscript(self, expr: ast.Subscript, ctx: AstContext, depth: int) -> list[Value]:
        """``base[key]``: the selected elements of containers; a slice of a sequence is a
        container again, exactly sliced when the bounds are literals."""
        elements = subscript_elements(ctx.analysis.model, expr)
        index = elements[0]
        out: list[Value] = []
        if len(elements) == 1 and isinstance(index, ast.Slice):
            parts = [self._decisions.literal(b, ctx, depth + 1) if b is not None else None for b in (index.lower, index.upper, index.step)]
            known = all(p is None or (isinstance(p, int) and not isinstance(p, bool)) for p in parts)
            for base in self.values(expr.value, ctx, depth + 1):
                if isinstance(base, ContainerValue) and base.sequential:
                    if known and base.exact:
                        lower, upper, step = (p if isinstance(p, int) else None for p in parts)
                        out.append(ContainerValue(base.elements[lower:upper:step], exact=True))
                    else:
                        out.append(ContainerValue(list(base.elements), exact=False))
            return out
        key: object = NOT_LITERAL
        if len(elements) == 1:  # `x[a, b]` is two elements, `x[(a, b)]` and `x[a,]` one
            key = self._decisions.literal(index, ctx, depth + 1)
        for base in self.values(expr.value, ctx, depth + 1):
            if isinstance(base, ContainerValue):
                selected = base.select(key)
                out += base.elements if selected is None else selected
        return out

    def _attribute_read(self, expr: ast.Attribute, ctx: AstContext, depth: int) -> list[Value]:
        assigned = attribute_set_before(ctx.analysis, expr) if self._budget.complete else None
        if assigned is not None:  # `self.llm = Llama(...)` just before: what the read sees
            return self.values(assigned, ctx, depth + 1)
        nested = self._nested_self_attribute(expr, ctx, depth)
        if nested:
            return nested
        out: list[Value] = []
        for base in self.values(expr.value, ctx, depth + 1):
            out += self._attribute(base, expr.attr, depth)
        return out

    def _nested_self_attribute(self, expr: ast.Attribute, ctx: AstContext, depth: int) -> list[Value]:
        """``self.mid.block_1`` where the class assigns ``self.mid.block_1 = ...`` itself;
        ``[]`` otherwise."""
        inner = expr.value
        if ctx.self_class is None or not isinstance(inner, ast.Attribute) or not isinstance(inner.value, ast.Name):
            return []
        model = ctx.analysis.model
        if inner.value not in model.parents:
            return []
        function = model.enclosing(expr, *_FUNCTIONS)
        if not isinstance(function, _FUNCTIONS) or self_parameter(function) != inner.value.id:
            return []
        key = f"{inner.attr}.{expr.attr}"
        out: list[Value] = []
        for info in class_mro(ctx.self_class):
            owner_ctx = Context(info.analysis, ctx.self_class, ctx.self_env, self_env=ctx.self_env)
            for entry in info.attributes.get(key, ()):
                out += self._at_path(entry.value, entry.path, owner_ctx, depth)
        return out

    def _container(self, items: list[tuple[ast.expr, bool]], ctx: AstContext, depth: int) -> ContainerValue:
        """A container of ``items`` (expression, starred?) in order."""
        out: list[Value] = []
        exact = True
        for expr, starred in items:
            found = self.values(expr, ctx, depth + 1)
            if starred:
                exact = False
                out += [e for v in found if isinstance(v, ContainerValue) for e in v.elements]
                continue
            if not found:
                found = [OpaqueValue()]
            elif len(found) != 1:
                exact = False
            out += found
        return ContainerValue(out, exact)

    def _name(self, expr: ast.Name, ctx: AstContext, depth: int) -> list[Value]:
        model = ctx.analysis.model
        out: list[Value] = []
        bindings = model.bindings_at(expr)
        if self._budget.complete and len(bindings) > 1:  # less those a plain assignment kills first
            live = {id(b) for b in reaching(model, expr)}
            bindings = [b for b in bindings if id(b) in live]
        for binding in bindings:  # not an assignment in a branch the bindings decide against
            if binding.kind is not BindingKind.ASSIGNMENT or self._decisions.runs(binding.node, ctx):
                out += self._binding(binding, ctx, depth)
        if not bindings and model.star_imports:
            out += self._star_imported(ctx.analysis, expr.id, depth)
        return out

    def _star_imported(self, analysis: AstAnalysis, name: str, depth: int) -> list[Value]:
        """``name`` bound by ``from .layers import *`` from a module of the linted tree (the
        last star import that binds it wins; ``__all__`` is not read)."""
        if depth > MAX_EVAL_DEPTH:
            return []
        for other in self._imports.star_sources(analysis, name):
            bindings = other.model.module_scope.bindings.get(name)
            if bindings:
                return [v for b in bindings for v in self._binding(b, Context(other), depth + 1)]
            if other.model.star_imports:
                found = self._star_imported(other, name, depth + 1)
                if found:
                    return found
        return []

    def _binding(self, binding: AstBinding, ctx: AstContext, depth: int) -> list[Value]:
        analysis = ctx.analysis
        if binding in ctx.env:
            arg, arg_ctx = ctx.env[binding]
            return self.values(arg, arg_ctx, depth + 1)
        kind = binding.kind
        if kind is BindingKind.FUNCTION and isinstance(binding.node, _FUNCTIONS):
            self_class = None if binding.scope.kind is ScopeKind.CLASS else ctx.self_class
            return [FunctionValue(binding.node, Context(analysis, self_class, ctx.env, self_env=ctx.self_env))]
        if kind is BindingKind.CLASS and isinstance(binding.node, ast.ClassDef):
            return [ClassValue(self.class_info(analysis, binding.node))]
        if kind is BindingKind.IMPORT and binding.target:
            return self._imported(binding.target, depth, analysis)
        if kind in (BindingKind.ASSIGNMENT, BindingKind.WALRUS) and binding.value is not None:
            return self._with_appends(self.values(binding.value, ctx, depth + 1), binding, ctx, depth)
        assigned = binding.assigned
        if assigned is not None and assigned.value is not None and kind is not BindingKind.AUGMENTED:
            texts = candidate_values(assigned, analysis.model.qualified_names)
            if texts is not None:
                return [v for text in texts for v in self.values(text, ctx, depth + 1)]
            if kind is BindingKind.LOOP:
                return self._loop_element(assigned.value, assigned.path[1:], ctx, depth)
            return self._at_path(assigned.value, assigned.path, ctx, depth)
        if kind is BindingKind.PARAMETER and isinstance(binding.scope.node, _FUNCTIONS):
            return self._parameter(binding, binding.scope.node, ctx, depth)
        return []

    def _parameter(self, binding: AstBinding, function: AstMethod, ctx: AstContext, depth: int) -> list[Value]:
        """A parameter not bound by a call followed: ``self`` (an instance of its class), else
        its default, else an instance of the class of the tree its annotation names."""
        analysis = ctx.analysis
        parent = binding.scope.parent
        if self_parameter(function) == binding.name and parent is not None and parent.kind is ScopeKind.CLASS:
            info = ctx.self_class
            if info is None and isinstance(parent.node, ast.ClassDef):
                info = self.class_info(analysis, parent.node)
            return [InstanceValue(info, ctx.self_env)] if info is not None else []
        param = binding.node if isinstance(binding.node, ast.arg) else None
        default = binding_default(binding) if param is not None else None
        if default is not None:  # not bound by a call we follow: the default is what runs
            return self.values(default, Context(analysis, ctx.self_class, self_env=ctx.self_env), depth + 1)
        if param is not None and param.annotation is not None:  # `layer: ExpertBlock`
            found = self.values(param.annotation, Context(analysis), depth + 1)
            return [InstanceValue(v.info) for v in found if isinstance(v, ClassValue)]
        return []

    def _with_appends(self, values: list[Value], binding: AstBinding, ctx: AstContext, depth: int) -> list[Value]:
        """A list assigned empty and filled with ``append``/``extend``/``+= [...]`` in the same scope."""
        if not any(isinstance(v, ContainerValue) for v in values):
            return values
        extra: list[Value] = []
        for mutation in ctx.analysis.model.mutations:
            if mutation.base != binding.name or mutation.kind is not MutationKind.METHOD or mutation.scope is not binding.scope:
                continue
            call = mutation.node
            if isinstance(call, ast.Call) and mutation.method in ("append", "insert", "extend"):
                if not self._decisions.runs(call, ctx):
                    continue
                for arg in ordered_arguments(call)[-1:]:
                    found = self.values(argument_value(arg), ctx, depth + 1)
                    if mutation.method == "extend":
                        found = [e for v in found if isinstance(v, ContainerValue) for e in v.elements]
                    extra += found
        for other in binding.scope.bindings.get(binding.name, ()):
            node = other.node
            # `stages += [Stage(...)]` in a loop (timm's LeViT): the same as `extend`
            if other.kind is BindingKind.AUGMENTED and isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
                if self._decisions.runs(node, ctx):
                    found = self.values(node.value, ctx, depth + 1)
                    extra += [e for v in found if isinstance(v, ContainerValue) for e in v.elements]
        if not extra:
            return values
        return [
            ContainerValue(v.elements + extra, exact=False, sequential=v.sequential) if isinstance(v, ContainerValue) else v for v in values
        ]

    def _at_path(self, expr: ast.expr, path: tuple[int | str, ...], ctx: AstContext, depth: int) -> list[Value]:
        """``expr``'s values along ``path``: a position of an exact tuple, every element for
        :data:`EACH`; nothing for what ``__enter__`` returns."""
        values = self.values(expr, ctx, depth + 1)
        for step in path:
            if step == EACH:
                values = [e for v in values if isinstance(v, ContainerValue) for e in v.elements]
            elif isinstance(step, int):
                values = [
                    v.elements[step]
                    for v in values
                    if isinstance(v, ContainerValue) and v.exact and -len(v.elements) <= step < len(v.elements)
                ]
            else:
                return []
        return values

    def _loop_element(self, iterable: ast.expr, steps: tuple[int | str, ...], ctx: AstContext, depth: int) -> list[Value]:
        """An element of ``iterable`` (a ``for`` target), at ``steps`` into it."""
        container = iterated_container(iterable, steps, ctx.analysis.model)
        if container is None:
            return []
        return [e for v in self.values(container, ctx, depth + 1) if isinstance(v, ContainerValue) for e in v.elements]

    def _attribute(self, base: Value, name: str, depth: int) -> list[Value]:
        if isinstance(base, TorchValue):
            return [base]
        if isinstance(base, ForwardingValue):
            if name == base.wrapper.holder:
                return list(base.wrapped)
            if name not in base.wrapper.forwarded:
                return []  # may be the wrapper's own attribute
            return [v for owner in attribute_owners(base, name) for v in self._attribute(owner, name, depth + 1)]
        if isinstance(base, ModuleValue):
            return self._module_attribute(base.module, name, depth)
        if isinstance(base, InstanceValue):
            return self._instance_attribute(base, name, depth)
        if isinstance(base, ClassValue):
            method = find_method(base.info, name)
            if method is not None:
                return [FunctionValue(method[0], Context(method[1].analysis))]
        return []

    def _module_attribute(self, module: str, name: str, depth: int) -> list[Value]:
        """``module.name`` for a module of the tree: what it binds, else its submodule."""
        analysis = self._imports.module(module, (name,))
        if analysis is None:
            return []
        values = [v for b in analysis.model.module_scope.bindings.get(name, ()) for v in self._binding(b, Context(analysis), depth + 1)]
        if not values and analysis.module_name:
            submodule = f"{analysis.module_name}.{name}"
            if self._imports.is_module(submodule):
                values = [ModuleValue(submodule)]
        return values

    def _instance_attribute(self, base: InstanceValue, name: str, depth: int) -> list[Value]:
        """``instance.name``: a method (a property's returned values), else the values the
        class and its bases give the attribute, appended values added to its containers."""
        info: AstClassInfo = base.info
        method = find_method(info, name)
        if method is not None:
            node, owner = method
            method_ctx: AstContext = Context(owner.analysis, info, self_env=base.env)
            if is_property(node):  # `self.norm1` is what the property returns
                decide = partial(self._decisions.decide, ctx=method_ctx)
                returned = [ret.value for ret in returns_of(node, decide) if ret.value is not None]
                return [v for value in returned for v in self.values(value, method_ctx, depth + 1)]
            # a staticmethod reached through an instance binds no `self`
            return [FunctionValue(node, method_ctx, bound_method=self_parameter(node) is not None)]
        out: list[Value] = []
        extra: list[Value] = []
        for one in class_mro(info):
            owner_ctx: AstContext = Context(one.analysis, info, base.env, self_env=base.env)
            for entry in one.attributes.get(name, ()):
                out += self._at_path(entry.value, entry.path, owner_ctx, depth)
            for expr, _ in one.appended.get(name, ()):
                extra += self.values(expr, owner_ctx, depth + 1)
        if extra:
            containers = [v for v in out if isinstance(v, ContainerValue)] or [ContainerValue([])]
            out = [v for v in out if not isinstance(v, ContainerValue)] + [
                ContainerValue(c.elements + extra, exact=False, sequential=c.sequential) for c in containers
            ]
        return out

    def _call(self, call: ast.Call, ctx: AstContext, depth: int) -> list[Value]:
        model = ctx.analysis.model
        names = model.qualified_names(call.func) if call.func in model.parents else frozenset()
        arguments = ordered_arguments(call)
        starred = any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)
        for name in names:
            factory = norm_factory(name)
            if factory is not None:
                return norm_factory_values(factory, call, ctx, depth, values=self.values, literal=self._decisions.literal)
            wrapper = FORWARDING_WRAPPERS.get(name)
            if wrapper is not None:  # `deepspeed.initialize(model=critic)`: an engine forwarding to `critic`
                arg = call_argument(call, *wrapper.model)
                return [wrapper_returned(wrapper, self.values(arg, ctx, depth + 1) if arg is not None else [])]
        if "builtins.getattr" in names and len(arguments) >= 2 and not starred:
            return self._getattr(argument_value(arguments[0]), argument_value(arguments[1]), ctx, depth)
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "get" and 1 <= len(arguments) <= 2:
            bases = [b for b in self.values(func.value, ctx, depth + 1) if isinstance(b, ContainerValue)]
            if bases and all(b.keyed is not None for b in bases):
                key = self._decisions.literal(argument_value(arguments[0]), ctx, depth + 1)
                got: list[Value] = []
                for base in bases:
                    selected = base.select(key)
                    got += base.elements if selected is None else selected
                    if not selected and len(arguments) == 2:
                        got += self.values(argument_value(arguments[1]), ctx, depth + 1)
                return got
        if names & PARTIAL_QUALIFIED_NAMES and arguments:
            bound = {k.arg for k in call.keywords if k.arg is not None}
            return [
                partially_applied(v) if len(arguments) > 1 else v
                for v in self.values(argument_value(arguments[0]), ctx, depth + 1)
                if isinstance(v, (FunctionValue, ClassValue))
                # not when the partial sets the switch (`track_running_stats=False`)
                or (isinstance(v, LayerClassValue) and not (v.fact.switch and v.fact.switch[0] in bound))
            ]
        if names & CONTAINER_CLASSES:
            # the arguments without a keyword: the positional ones and `**kwargs`
            unnamed = [a for a in arguments if not (isinstance(a, ast.keyword) and a.arg)]
            items = [(argument_value(a), isinstance(a, ast.Starred)) for a in unnamed]
            if any(n.endswith((".Sequential", ".SequentialModule")) for n in names):
                return [self._container(items, ctx, depth)]
            if len(unnamed) == 1 and not isinstance(unnamed[0], (ast.Starred, ast.keyword)):
                inner = self.values(items[0][0], ctx, depth + 1)
                containers: list[Value] = [v for v in inner if isinstance(v, ContainerValue)]
                return containers[:1] or [ContainerValue([], exact=False)]
            return [ContainerValue([], exact=not items)]
        if isinstance(func, ast.Attribute) and func.attr in MODULE_METHODS_RETURNING_SELF | CLASS_CONSTRUCTORS:
            method, receivers = func.attr, self.values(func.value, ctx, depth + 1)  # `Proj(c).to(dt)`: the Proj
            kinds = (ClassValue,) if method in CLASS_CONSTRUCTORS else (LayerUse, InstanceValue)  # `M.from_pretrained(p)`: an M
            same: list[Value] = [
                InstanceValue(v.info) if isinstance(v, ClassValue) else v
                for v in receivers
                if isinstance(v, kinds) and not (isinstance(v, (ClassValue, InstanceValue)) and find_method(v.info, method))
            ]
            if same:
                return same
        if isinstance(func, ast.Attribute) and func.attr == "children" and not arguments:
            held = [self.held(v, False) for v in self.values(func.value, ctx, depth + 1) if isinstance(v, InstanceValue)]
            return [ContainerValue([h for h in one if _module_like(h)], False) for one in held]
        return self._called_values(call, ctx, depth)

    def _called_values(self, call: ast.Call, ctx: AstContext, depth: int) -> list[Value]:
        """What calling ``call.func`` gives: instances of classes, layers, torch values (and
        the modules a torch wrapper runs), what functions of the tree return."""
        out: list[Value] = []
        for callee in self.values(call.func, ctx, depth + 1):
            if isinstance(callee, ClassValue):
                out.append(InstanceValue(callee.info, self._constructor_env(callee, call, ctx)))
            elif isinstance(callee, LayerClassValue):
                out.append(LayerUse(callee.qualified, callee.fact, call, ctx))
            elif isinstance(callee, TorchValue):
                out.append(callee)
                # torch wrappers of a module (checkpoint_wrapper, DDP, torch.compile) run it
                first = next((a for a in call.args if not isinstance(a, ast.Starred)), None)
                if first is not None:
                    out += [v for v in self.values(first, ctx, depth + 1) if isinstance(v, (InstanceValue, ContainerValue, LayerUse))]
            elif isinstance(callee, FunctionValue) and isinstance(callee.node, _FUNCTIONS):
                inner_ctx = bind_arguments(callee, call.args, call.keywords, ctx)
                for ret in returns_of(callee.node, partial(self._decisions.decide, ctx=inner_ctx)):
                    if ret.value is not None:
                        out += self.values(ret.value, inner_ctx, depth + 1)
        return out

    def _getattr(self, obj: ast.expr, name_expr: ast.expr, ctx: AstContext, depth: int) -> list[Value]:
        """``getattr(obj, name)``: the attribute when ``name`` is known, or, for a name only
        known at run time, what ``self.add_module(<same expression>, module)`` stored."""
        key = self._decisions.literal(name_expr, ctx, depth + 1)
        name = key if isinstance(key, str) else dynamic_key(ctx.analysis, name_expr)
        out: list[Value] = []
        for base in self.values(obj, ctx, depth + 1):
            out += self._attribute(base, name, depth + 1)
        return out

    def _imported(self, qualified: str, depth: int, importer: AstAnalysis | None = None) -> list[Value]:
        layer = layer_fact({qualified})
        if layer is not None:
            return [LayerClassValue(*layer)]
        if qualified == "torch" or qualified.startswith("torch."):
            return [TorchValue()]  # torch's own code: known and plain, never followed
        if depth > self._budget.depth or not self._imports.may_load(qualified):
            return []
        if self._imports.is_module(qualified):
            return [ModuleValue(qualified)]
        found = self._imports.defining_module(qualified, importer)
        if found is None:
            return []
        analysis, rest = found
        values: list[Value] = []
        for binding in analysis.model.module_scope.bindings.get(rest[0], ()):
            values += self._binding(binding, Context(analysis), depth + 1)
        for attr in rest[1:]:
            values = [v for base in values for v in self._attribute(base, attr, depth + 1)]
        return values

    def _constructor_env(self, callee: ClassValue, call: ast.Call, ctx: AstContext) -> AstEnv:
        """``__init__``'s parameters bound to the arguments of ``call`` (evaluated in ``ctx``)."""
        init = find_method(callee.info, "__init__")
        if init is None:
            return {}
        node, owner = init
        init_ctx: AstContext = Context(owner.analysis, callee.info, open_call=callee.partial)
        bound = bind_arguments(FunctionValue(node, init_ctx, bound_method=True), call.args, call.keywords, ctx)
        return bound.env if bound.open_call or bound.bound is not node else ConstructorEnv(bound.env, node)


def _module_like(value: Value) -> bool:
    """Whether a value an instance holds can be a submodule (an instance, a layer, a sequence)."""
    return isinstance(value, (InstanceValue, LayerUse)) or (isinstance(value, ContainerValue) and value.sequential)


"""What an expression denotes (names, bindings, attributes, calls, imports): the evaluator's
core, :class:`ExpressionEvaluator`, one of the objects the region builder is composed of."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.checkpoint.evaluator.arguments import bind_arguments
from ckptlint.checkpoint.evaluator.class_summary import (
    class_mro,
    dynamic_key,
    find_method,
    is_property,
    self_parameter,
    summarise_class,
)
from ckptlint.checkpoint.evaluator.denotations import (
    MAX_EVAL_DEPTH,
    ClassInfo,
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
    call_argument,
    partially_applied,
    wrapper_returned,
)
from ckptlint.checkpoint.evaluator.iteration import iterated_container
from ckptlint.checkpoint.evaluator.norm_configs import norm_factory_values
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
from ckptlint.semantic.assignments import candidate_values
from ckptlint.semantic.bindings import EACH, Binding, BindingKind, MutationKind, ScopeKind
from ckptlint.semantic.reaching import attribute_set_before, reaching
from ckptlint.semantic.walk import returns_of

if TYPE_CHECKING:
    from ckptlint.checkpoint.evaluator.budget import EvaluationBudget
    from ckptlint.checkpoint.evaluator.imports import ImportResolver
    from ckptlint.checkpoint.evaluator.literals import LiteralDecisions
    from ckptlint.semantic.analysis import ModuleAnalysis

__all__ = ["ExpressionEvaluator"]

_MAX_VALUES = 64


class ExpressionEvaluator:
    """What an expression denotes: functions, classes, instances of classes of the tree, torch
    layers, containers, modules (:mod:`~ckptlint.checkpoint.evaluator.denotations`).

    Composed of the query's :class:`EvaluationBudget` (one step per expression evaluated,
    results memoised for the query), :class:`LiteralDecisions` (which branches run, literal
    keys and configs) and an :class:`ImportResolver` (the modules of the tree imported names
    come from). Keeps the class summaries it made (with their base classes evaluated) for
    the lifetime of one linted module."""

    def __init__(self, budget: EvaluationBudget, decisions: LiteralDecisions, imports: ImportResolver) -> None:
        self._budget = budget
        self._decisions = decisions
        self._imports = imports
        self._classes: dict[cst.ClassDef, ClassInfo] = {}

    def values(self, expr: cst.BaseExpression, ctx: Context, depth: int = 0) -> list[Value]:
        """The abstract values ``expr`` may denote when evaluated in ``ctx`` (``[]``: unknown,
        an opaque value in a complete query: :meth:`EvaluationBudget.query`); ``depth`` counts
        the evaluations above (past :attr:`EvaluationBudget.depth` nothing is known). Each call takes
        a step of the budget and is memoised for the query (:meth:`EvaluationBudget.evaluate`)."""
        if depth > self._budget.depth:
            return [OpaqueValue()] if self._budget.complete else []
        return self._budget.evaluate(expr, ctx, lambda: self._evaluate(expr, ctx, depth), _MAX_VALUES)

    def called(self, func: cst.BaseExpression, ctx: Context) -> list[Value]:
        """What calling ``func`` runs (functions, module instances, layers); constructing an
        object (a class, a layer class) is not running its forward."""
        return [v for v in self.values(func, ctx, 0) if not isinstance(v, (ClassValue, LayerClassValue))]

    def class_info(self, analysis: ModuleAnalysis, node: cst.ClassDef) -> ClassInfo:
        """The summary of class ``node`` of ``analysis`` (made once), its base classes
        evaluated where the class is written."""
        info = self._classes.get(node)
        if info is None:
            info = summarise_class(analysis, node)
            self._classes[node] = info
            info.bases = [v for base in node.bases for v in self.values(base.value, Context(analysis), 0)]
        return info

    def held(self, instance: InstanceValue, opened: bool = True) -> list[Value]:
        """What an instance of a class of the tree holds: the values its class and its bases of
        the tree give its attributes (``self.layer1 = make_res_layer(...)``, ``add_module``,
        ``append``), evaluated with the constructor's bindings (``instance.env``), containers
        opened (to :data:`MAX_EVAL_DEPTH` levels) when ``opened``. Methods are not held."""
        names = dict.fromkeys(n for info in class_mro(instance.info) for n in (*info.attributes, *info.appended))
        found: list[Value] = []
        level = [v for name in names for v in self._attribute(instance, name, 0) if not isinstance(v, FunctionValue)]
        for _ in range(MAX_EVAL_DEPTH if opened else 1):
            found += level
            level = [e for v in level if isinstance(v, ContainerValue) for e in v.elements]
            if not level:
                break
        return found[: _MAX_VALUES * 4]

    def enclosing_class(self, analysis: ModuleAnalysis, node: cst.CSTNode) -> ClassInfo | None:
        """The class whose method contains ``node`` (``self``'s class there)."""
        function = analysis.model.enclosing(node, cst.FunctionDef)
        while function is not None:
            scope = analysis.model.scope_of(function)
            if scope.kind is ScopeKind.CLASS and isinstance(scope.node, cst.ClassDef):
                return self.class_info(analysis, scope.node)
            function = analysis.model.enclosing(function, cst.FunctionDef)
        return None

    def _evaluate(self, expr: cst.BaseExpression, ctx: Context, depth: int) -> list[Value]:
        model = ctx.analysis.model
        if isinstance(expr, (cst.Name, cst.Attribute)):
            layer = layer_fact(model.qualified_names(expr)) if expr in model.scopes else None
            if layer is not None:
                return [LayerClassValue(*layer)]
        if isinstance(expr, cst.Name):
            return self._name(expr, ctx, depth)
        if isinstance(expr, cst.Attribute):
            return self._attribute_read(expr, ctx, depth)
        if isinstance(expr, cst.Subscript):
            out: list[Value] = []
            key: object = NOT_LITERAL
            if len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Slice):
                # `self.resnets[1:]` (diffusers' `zip(self.attentions, self.resnets[1:])`): a
                # container again, exactly sliced when the bounds are literals
                bounds = expr.slice[0].slice
                parts = [
                    self._decisions.literal(b, ctx, depth + 1) if b is not None else None for b in (bounds.lower, bounds.upper, bounds.step)
                ]
                known = all(p is None or (isinstance(p, int) and not isinstance(p, bool)) for p in parts)
                for base in self.values(expr.value, ctx, depth + 1):
                    if isinstance(base, ContainerValue) and base.sequential:
                        if known and base.exact:
                            lower, upper, step = (p if isinstance(p, int) else None for p in parts)
                            out.append(ContainerValue(base.elements[lower:upper:step], exact=True))
                        else:
                            out.append(ContainerValue(list(base.elements), exact=False))
                return out
            if len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
                key = self._decisions.literal(expr.slice[0].slice.value, ctx, depth + 1)
            for base in self.values(expr.value, ctx, depth + 1):
                if isinstance(base, ContainerValue):
                    selected = base.select(key)
                    out += base.elements if selected is None else selected
            return out
        if isinstance(expr, cst.Call):
            return self._call(expr, ctx, depth)
        if isinstance(expr, cst.Lambda):
            return [FunctionValue(expr, ctx)]
        if isinstance(expr, (cst.List, cst.Tuple)):
            items = [(e.value, isinstance(e, cst.StarredElement)) for e in expr.elements]
            return [self._container(items, ctx, depth)]
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
            return [ContainerValue(self.values(expr.elt, ctx, depth + 1), exact=False)]
        if isinstance(expr, cst.Dict):
            elements: list[Value] = []
            keyed: list[tuple[object, Value]] | None = []
            for element in expr.elements:
                if isinstance(element, cst.DictElement):
                    found = self.values(element.value, ctx, depth + 1)
                    elements += found
                    if keyed is not None:
                        key = self._decisions.literal(element.key, ctx, depth + 1)
                        keyed += [(key, value) for value in found]
                else:
                    keyed = None  # `**other`: keys not known
            return [ContainerValue(elements, exact=False, sequential=False, keyed=keyed)]
        if isinstance(expr, cst.IfExp):
            return self.values(expr.body, ctx, depth + 1) + self.values(expr.orelse, ctx, depth + 1)
        if isinstance(expr, cst.BooleanOperation):
            return self.values(expr.left, ctx, depth + 1) + self.values(expr.right, ctx, depth + 1)
        return []

    def _attribute_read(self, expr: cst.Attribute, ctx: Context, depth: int) -> list[Value]:
        assigned = attribute_set_before(ctx.analysis.model, expr) if self._budget.complete else None
        if assigned is not None:  # `self.llm = Llama(...)` just before: what the read sees
            return self.values(assigned, ctx, depth + 1)
        nested = self._nested_self_attribute(expr, ctx, depth)
        if nested:
            return nested
        out: list[Value] = []
        for base in self.values(expr.value, ctx, depth + 1):
            out += self._attribute(base, expr.attr.value, depth)
        return out

    def _nested_self_attribute(self, expr: cst.Attribute, ctx: Context, depth: int) -> list[Value]:
        """``self.mid.block_1`` where the class assigns ``self.mid.block_1 = ...`` itself
        (on a plain ``nn.Module()`` holder); ``[]`` otherwise."""
        inner = expr.value
        if ctx.self_class is None or not isinstance(inner, cst.Attribute) or not isinstance(inner.value, cst.Name):
            return []
        model = ctx.analysis.model
        if inner.value not in model.scopes:
            return []
        function = model.enclosing(expr, cst.FunctionDef)
        if not isinstance(function, cst.FunctionDef) or self_parameter(function) != inner.value.value:
            return []
        key = f"{inner.attr.value}.{expr.attr.value}"
        out: list[Value] = []
        for info in class_mro(ctx.self_class):
            owner_ctx = Context(info.analysis, ctx.self_class, ctx.self_env, self_env=ctx.self_env)
            for entry in info.attributes.get(key, ()):
                out += self._at_path(entry.value, entry.path, owner_ctx, depth)
        return out

    def _container(self, items: list[tuple[cst.BaseExpression, bool]], ctx: Context, depth: int) -> ContainerValue:
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

    def _name(self, expr: cst.Name, ctx: Context, depth: int) -> list[Value]:
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
            out += self._star_imported(ctx.analysis, expr.value, depth)
        return out

    def _star_imported(self, analysis: ModuleAnalysis, name: str, depth: int) -> list[Value]:
        """``name`` bound by ``from .layers import *`` from a module of the linted tree
        (the last star import that binds it wins, as in Python; ``__all__`` is not read)."""
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

    def _binding(self, binding: Binding, ctx: Context, depth: int) -> list[Value]:
        analysis = ctx.analysis
        if binding in ctx.env:
            arg, arg_ctx = ctx.env[binding]
            return self.values(arg, arg_ctx, depth + 1)
        kind = binding.kind
        if kind is BindingKind.FUNCTION and isinstance(binding.node, cst.FunctionDef):
            self_class = ctx.self_class
            if binding.scope.kind is ScopeKind.CLASS:
                self_class = None
            return [FunctionValue(binding.node, Context(analysis, self_class, ctx.env, self_env=ctx.self_env))]
        if kind is BindingKind.CLASS and isinstance(binding.node, cst.ClassDef):
            return [ClassValue(self.class_info(analysis, binding.node))]
        if kind is BindingKind.IMPORT and binding.target:
            return self._imported(binding.target, depth, analysis)
        if kind in (BindingKind.ASSIGNMENT, BindingKind.WALRUS) and binding.value is not None:
            values = self.values(binding.value, ctx, depth + 1)
            return self._with_appends(values, binding, ctx, depth)
        assigned = binding.assigned
        if assigned is not None and assigned.value is not None and kind is not BindingKind.AUGMENTED:
            # what the text shows (`for drop in (self.drop1, self.drop2)`, `with nullcontext(m) as x`), else
            # a loop element (`enumerate(zip(...))`) or a position (`name, layer = build_norm_layer(...)`)
            texts = candidate_values(assigned, analysis.model.qualified_names)
            if texts is not None:
                return [v for text in texts for v in self.values(text, ctx, depth + 1)]
            if kind is BindingKind.LOOP:
                return self._loop_element(assigned.value, assigned.path[1:], ctx, depth)
            return self._at_path(assigned.value, assigned.path, ctx, depth)
        if kind is BindingKind.PARAMETER and isinstance(binding.scope.node, cst.FunctionDef):
            function = binding.scope.node
            if self_parameter(function) == binding.name and binding.scope.parent is not None:
                if binding.scope.parent.kind is ScopeKind.CLASS:
                    info = ctx.self_class
                    if info is None and isinstance(binding.scope.parent.node, cst.ClassDef):
                        info = self.class_info(analysis, binding.scope.parent.node)
                    return [InstanceValue(info, ctx.self_env)] if info is not None else []
            default = binding.node.default if isinstance(binding.node, cst.Param) else None
            if default is not None:  # not bound by a call we follow: the default is what runs
                return self.values(default, Context(analysis, ctx.self_class, self_env=ctx.self_env), depth + 1)
            annotation = binding.node.annotation if isinstance(binding.node, cst.Param) else None
            if annotation is not None:  # `layer: ExpertBlock`: an instance of the annotated class of the tree
                return [
                    InstanceValue(v.info)
                    for v in self.values(annotation.annotation, Context(analysis), depth + 1)
                    if isinstance(v, ClassValue)
                ]
        return []

    def _with_appends(self, values: list[Value], binding: Binding, ctx: Context, depth: int) -> list[Value]:
        """A list assigned empty and filled with ``append``/``extend``/``+= [...]`` in the same scope."""
        containers = [v for v in values if isinstance(v, ContainerValue)]
        if not containers:
            return values
        model = ctx.analysis.model
        extra: list[Value] = []
        for mutation in model.mutations:
            if mutation.base != binding.name or mutation.kind is not MutationKind.METHOD or mutation.scope is not binding.scope:
                continue
            call = mutation.node
            if isinstance(call, cst.Call) and mutation.method in ("append", "insert", "extend"):
                if not self._decisions.runs(call, ctx):
                    continue
                for arg in call.args[-1:]:
                    found = self.values(arg.value, ctx, depth + 1)
                    if mutation.method == "extend":
                        found = [e for v in found if isinstance(v, ContainerValue) for e in v.elements]
                    extra += found
        for other in binding.scope.bindings.get(binding.name, ()):
            node = other.node
            # `stages += [Stage(...)]` in a loop (timm's LeViT): the same as `extend`
            if other.kind is BindingKind.AUGMENTED and isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.AddAssign):
                if self._decisions.runs(node, ctx):
                    found = self.values(node.value, ctx, depth + 1)
                    extra += [e for v in found if isinstance(v, ContainerValue) for e in v.elements]
        if not extra:
            return values
        return [
            ContainerValue(v.elements + extra, exact=False, sequential=v.sequential) if isinstance(v, ContainerValue) else v for v in values
        ]

    def _at_path(self, expr: cst.BaseExpression, path: tuple[int | str, ...], ctx: Context, depth: int) -> list[Value]:
        """``expr``'s values along ``path`` (:attr:`Assigned.path`): a position of an exact tuple
        (``name, layer = build_norm_layer(...)``), every element for :data:`EACH`; nothing
        for what ``__enter__`` returns (``candidate_values`` reads ``nullcontext``)."""
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

    def _loop_element(self, iterable: cst.BaseExpression, steps: tuple[int | str, ...], ctx: Context, depth: int) -> list[Value]:
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
            analysis = self._imports.module(base.module, (name,))
            if analysis is None:
                return []
            values = [
                v
                for binding in analysis.model.module_scope.bindings.get(name, ())
                for v in self._binding(binding, Context(analysis), depth + 1)
            ]
            if not values and analysis.module_name:
                submodule = f"{analysis.module_name}.{name}"
                if self._imports.is_module(submodule):
                    values = [ModuleValue(submodule)]
            return values
        if isinstance(base, InstanceValue):
            method = find_method(base.info, name)
            if method is not None:
                node, owner = method
                method_ctx = Context(owner.analysis, base.info, self_env=base.env)
                if is_property(node):  # `self.norm1` is what the property returns
                    return [
                        v
                        for ret in returns_of(node, partial(self._decisions.decide, ctx=method_ctx))
                        if ret.value is not None
                        for v in self.values(ret.value, method_ctx, depth + 1)
                    ]
                # a staticmethod reached through an instance binds no `self`
                return [FunctionValue(node, method_ctx, bound_method=self_parameter(node) is not None)]
            out: list[Value] = []
            extra: list[Value] = []
            for info in class_mro(base.info):
                owner_ctx = Context(info.analysis, base.info, base.env, self_env=base.env)
                for entry in info.attributes.get(name, ()):
                    out += self._at_path(entry.value, entry.path, owner_ctx, depth)
                for expr, _ in info.appended.get(name, ()):
                    extra += self.values(expr, owner_ctx, depth + 1)
            if extra:
                containers = [v for v in out if isinstance(v, ContainerValue)] or [ContainerValue([])]
                out = [v for v in out if not isinstance(v, ContainerValue)] + [
                    ContainerValue(c.elements + extra, exact=False, sequential=c.sequential) for c in containers
                ]
            return out
        if isinstance(base, ClassValue):
            method = find_method(base.info, name)
            if method is not None:
                return [FunctionValue(method[0], Context(method[1].analysis))]
        return []

    def _call(self, call: cst.Call, ctx: Context, depth: int) -> list[Value]:
        model = ctx.analysis.model
        names = model.qualified_names(call.func) if call.func in model.scopes else frozenset()
        for name in names:
            factory = norm_factory(name)
            if factory is not None:
                return norm_factory_values(factory, call, ctx, depth, values=self.values, literal=self._decisions.literal)
            wrapper = FORWARDING_WRAPPERS.get(name)
            if wrapper is not None:  # `deepspeed.initialize(model=critic)`: an engine forwarding to `critic`
                arg = call_argument(call, *wrapper.model)
                return [wrapper_returned(wrapper, self.values(arg.value, ctx, depth + 1) if arg and not arg.star else [])]
        if "builtins.getattr" in names and len(call.args) >= 2 and not any(a.star for a in call.args):
            return self._getattr(call, ctx, depth)
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "get" and 1 <= len(call.args) <= 2:
            bases = [b for b in self.values(call.func.value, ctx, depth + 1) if isinstance(b, ContainerValue)]
            if bases and all(b.keyed is not None for b in bases):
                key = self._decisions.literal(call.args[0].value, ctx, depth + 1)
                got: list[Value] = []
                for base in bases:
                    selected = base.select(key)
                    got += base.elements if selected is None else selected
                    if not selected and len(call.args) == 2:
                        got += self.values(call.args[1].value, ctx, depth + 1)
                return got
        if names & PARTIAL_QUALIFIED_NAMES and call.args:
            bound = {a.keyword.value for a in call.args if a.keyword is not None}
            return [
                partially_applied(v) if len(call.args) > 1 else v
                for v in self.values(call.args[0].value, ctx, depth + 1)
                if isinstance(v, (FunctionValue, ClassValue))
                # `partial(nn.BatchNorm2d, eps=1e-3)` as a `norm_layer=` factory; not when the
                # partial sets the switch (`track_running_stats=False`), read from the final call
                or (isinstance(v, LayerClassValue) and not (v.fact.switch and v.fact.switch[0] in bound))
            ]
        if names & CONTAINER_CLASSES:
            args = [a for a in call.args if a.keyword is None]
            if any(n.endswith((".Sequential", ".SequentialModule")) for n in names):
                return [self._container([(a.value, a.star == "*") for a in args], ctx, depth)]
            if len(args) == 1 and not args[0].star:
                inner = self.values(args[0].value, ctx, depth + 1)
                containers: list[Value] = [v for v in inner if isinstance(v, ContainerValue)]
                return containers[:1] or [ContainerValue([], exact=False)]
            return [ContainerValue([], exact=not args)]
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in MODULE_METHODS_RETURNING_SELF | CLASS_CONSTRUCTORS:
            method, receivers = call.func.attr.value, self.values(call.func.value, ctx, depth + 1)  # `Proj(c).to(dt)`: the Proj
            kinds = (ClassValue,) if method in CLASS_CONSTRUCTORS else (LayerUse, InstanceValue)  # `M.from_pretrained(p)`: an M
            same: list[Value] = [
                InstanceValue(v.info) if isinstance(v, ClassValue) else v
                for v in receivers
                if isinstance(v, kinds) and not (isinstance(v, (ClassValue, InstanceValue)) and find_method(v.info, method))
            ]
            if same:
                return same
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "children" and not call.args:
            held = [self.held(v, False) for v in self.values(call.func.value, ctx, depth + 1) if isinstance(v, InstanceValue)]
            return [ContainerValue([h for h in one if _module_like(h)], False) for one in held]
        out: list[Value] = []
        for callee in self.values(call.func, ctx, depth + 1):
            if isinstance(callee, ClassValue):
                out.append(InstanceValue(callee.info, self._constructor_env(callee, call, ctx)))
            elif isinstance(callee, LayerClassValue):
                out.append(LayerUse(callee.qualified, callee.fact, call, ctx))
            elif isinstance(callee, TorchValue):
                out.append(callee)
                # torch wrappers of a module (checkpoint_wrapper, DDP, torch.compile) run it
                first = next((a for a in call.args if a.keyword is None and not a.star), None)
                if first is not None:
                    out += [v for v in self.values(first.value, ctx, depth + 1) if isinstance(v, (InstanceValue, ContainerValue, LayerUse))]
            elif isinstance(callee, FunctionValue) and isinstance(callee.node, cst.FunctionDef):
                inner_ctx = bind_arguments(callee, tuple(call.args), ctx)
                for ret in returns_of(callee.node, partial(self._decisions.decide, ctx=inner_ctx)):
                    if ret.value is not None:
                        out += self.values(ret.value, inner_ctx, depth + 1)
        return out

    def _getattr(self, call: cst.Call, ctx: Context, depth: int) -> list[Value]:
        """``getattr(obj, name)``: the attribute when ``name`` is known, or, for a name only
        known at run time, what ``self.add_module(<same expression>, module)`` stored (the
        mm-style ``@property def norm1(self): return getattr(self, self.norm1_name)``)."""
        key = self._decisions.literal(call.args[1].value, ctx, depth + 1)
        name = key if isinstance(key, str) else dynamic_key(ctx.analysis, call.args[1].value)
        out: list[Value] = []
        for base in self.values(call.args[0].value, ctx, depth + 1):
            out += self._attribute(base, name, depth + 1)
        return out

    def _imported(self, qualified: str, depth: int, importer: ModuleAnalysis | None = None) -> list[Value]:
        layer = layer_fact({qualified})
        if layer is not None:
            return [LayerClassValue(*layer)]
        if qualified == "torch" or qualified.startswith("torch."):
            # torch's own code: its random and stateful layers and functions are in the
            # torchfacts tables, so whatever else it is, it is known and plain
            return [TorchValue()]
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

    def _constructor_env(self, callee: ClassValue, call: cst.Call, ctx: Context) -> dict[Binding, tuple[cst.BaseExpression, Context]]:
        """``__init__``'s parameters bound to the arguments of ``call`` (evaluated in ``ctx``)."""
        init = find_method(callee.info, "__init__")
        if init is None:
            return {}
        node, owner = init
        init_ctx = Context(owner.analysis, callee.info, open_call=callee.partial)  # a partial's arguments are not seen
        bound = bind_arguments(FunctionValue(node, init_ctx, bound_method=True), tuple(call.args), ctx)
        return bound.env if bound.open_call or bound.bound is not node else ConstructorEnv(bound.env, node)


def _module_like(value: Value) -> bool:
    """Whether a value an instance holds can be a submodule (an instance, a layer, a sequence),
    one that ``self.children()`` yields (timm's RegStage: ``checkpoint_seq(self.children(), x)``)."""
    return isinstance(value, (InstanceValue, LayerUse)) or (isinstance(value, ContainerValue) and value.sequential)

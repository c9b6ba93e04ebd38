"""Evaluating expressions to what they denote (names, bindings, attributes, calls, imports), with a step budget: the evaluator's core, mixed into :class:`ckptlint.checkpoint.evaluator.regions.RegionBuilder`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.checkpoint.evaluator.class_summary import (
    dynamic_key,
    is_property,
    self_parameter,
)
from ckptlint.semantic.walk import returns_of
from ckptlint.checkpoint.evaluator.denotations import (
    MAX_EVAL_DEPTH,
    ClassInfo,
    ClassValue,
    ConstructorEnv,
    ContainerValue,
    Context,
    FunctionValue,
    InstanceValue,
    LayerClassValue,
    LayerUse,
    ModuleValue,
    OpaqueValue,
    TorchValue,
    Value,
    call_argument,
    partially_applied,
)
from ckptlint.checkpoint.evaluator.literals import skip_self_copies
from ckptlint.checkpoint.sites.options import NOT_LITERAL
from ckptlint.facts.apis import PARTIAL_QUALIFIED_NAMES
from ckptlint.facts.hf_formats import CLASS_CONSTRUCTORS
from ckptlint.facts.torch_facts import (
    CONTAINER_CLASSES,
    MODULE_METHODS_RETURNING_SELF,
    NORM_FACTORIES,
    LayerFact,
    LayerKind,
    NormFactory,
    layer_fact,
)
from ckptlint.semantic.assignments import candidate_values
from ckptlint.semantic.bindings import EACH, Binding, BindingKind, MutationKind, ScopeKind

if TYPE_CHECKING:
    from ckptlint.semantic.analysis import ModuleAnalysis

_MAX_VALUES = 64

class ExpressionEvaluation:
    """What an expression denotes: the region evaluator's core."""

    # ------------------------------------------------------------------ evaluation
    def _called(self, func: cst.BaseExpression, ctx: Context) -> list[Value]:
        """What calling ``func`` runs (functions, module instances, layers); constructing an
        object (a class, a layer class) is not running its forward."""
        return [v for v in self._values(func, ctx, 0) if not isinstance(v, (ClassValue, LayerClassValue))]

    def _values(self, expr: cst.BaseExpression, ctx: Context, depth: int) -> list[Value]:
        if depth > MAX_EVAL_DEPTH:
            return []
        key = (id(expr), id(ctx))
        known = self._memo.get(key)
        if known is not None and known[0] is ctx and known[1] is expr:
            return known[2]
        if self._steps is not None:
            if self._steps <= 0:
                return []
            self._steps -= 1
        found = self._evaluate(expr, ctx, depth)[:_MAX_VALUES]
        self._memo[key] = (ctx, expr, found)
        return found

    def _evaluate(self, expr: cst.BaseExpression, ctx: Context, depth: int) -> list[Value]:
        model = ctx.analysis.model
        if isinstance(expr, (cst.Name, cst.Attribute)):
            layer = layer_fact(model.qualified_names(expr)) if expr in model.scopes else None
            if layer is not None:
                return [LayerClassValue(*layer)]
        if isinstance(expr, cst.Name):
            return self._name(expr, ctx, depth)
        if isinstance(expr, cst.Attribute):
            nested = self._nested_self_attribute(expr, ctx, depth)
            if nested:
                return nested
            out: list[Value] = []
            for base in self._values(expr.value, ctx, depth + 1):
                out += self._attribute(base, expr.attr.value, depth)
            return out
        if isinstance(expr, cst.Subscript):
            out = []
            key: object = NOT_LITERAL
            if len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Slice):
                # `self.resnets[1:]` (diffusers' `zip(self.attentions, self.resnets[1:])`): a
                # container again, exactly sliced when the bounds are literals
                bounds = expr.slice[0].slice
                parts = [self.literal(b, ctx, depth + 1) if b is not None else None for b in (bounds.lower, bounds.upper, bounds.step)]
                known = all(p is None or (isinstance(p, int) and not isinstance(p, bool)) for p in parts)
                for base in self._values(expr.value, ctx, depth + 1):
                    if isinstance(base, ContainerValue) and base.sequential:
                        if known and base.exact:
                            out.append(ContainerValue(base.elements[slice(*parts)], exact=True))  # type: ignore[misc]
                        else:
                            out.append(ContainerValue(list(base.elements), exact=False))
                return out
            if len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
                key = self.literal(expr.slice[0].slice.value, ctx, depth + 1)
            for base in self._values(expr.value, ctx, depth + 1):
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
            return [ContainerValue(self._values(expr.elt, ctx, depth + 1), exact=False)]
        if isinstance(expr, cst.Dict):
            elements: list[Value] = []
            keyed: list[tuple[object, Value]] | None = []
            for element in expr.elements:
                if isinstance(element, cst.DictElement):
                    found = self._values(element.value, ctx, depth + 1)
                    elements += found
                    if keyed is not None:
                        key = self.literal(element.key, ctx, depth + 1)
                        keyed += [(key, value) for value in found]
                else:
                    keyed = None  # `**other`: keys not known
            return [ContainerValue(elements, exact=False, sequential=False, keyed=keyed)]
        if isinstance(expr, cst.IfExp):
            return self._values(expr.body, ctx, depth + 1) + self._values(expr.orelse, ctx, depth + 1)
        if isinstance(expr, cst.BooleanOperation):
            return self._values(expr.left, ctx, depth + 1) + self._values(expr.right, ctx, depth + 1)
        return []

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
        for info in self._mro(ctx.self_class):
            owner_ctx = Context(info.analysis, ctx.self_class, ctx.self_env, self_env=ctx.self_env)
            for entry in info.attributes.get(key, ()):
                out += self._at_path(entry.value, entry.path, owner_ctx, depth)
        return out

    def _container(self, items: list[tuple[cst.BaseExpression, bool]], ctx: Context, depth: int) -> ContainerValue:
        """A container of ``items`` (expression, starred?) in order."""
        out: list[Value] = []
        exact = True
        for expr, starred in items:
            found = self._values(expr, ctx, depth + 1)
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
        for binding in bindings:
            out += self._binding(binding, ctx, depth)
        if not bindings and model.star_imports:
            out += self._star_imported(ctx.analysis, expr.value, depth)
        return out

    def _star_imported(self, analysis: ModuleAnalysis, name: str, depth: int) -> list[Value]:
        """``name`` bound by ``from .layers import *`` from a module of the linted tree
        (the last star import that binds it wins, as in Python; ``__all__`` is not read)."""
        if self.project is None or depth > MAX_EVAL_DEPTH:
            return []
        for module in reversed(analysis.model.star_imports):
            other = self.project.analysis_for_names(module, (name,))
            if other is None or other.source.path == analysis.source.path:
                continue
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
            return self._values(arg, arg_ctx, depth + 1)
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
            values = self._values(binding.value, ctx, depth + 1)
            return self._with_appends(values, binding, ctx, depth)
        assigned = binding.assigned
        if assigned is not None and assigned.value is not None and kind is not BindingKind.AUGMENTED:
            # what the text shows (`for drop in (self.drop1, self.drop2)`, `with nullcontext(m) as x`), else
            # a loop element (`enumerate(zip(...))`) or a position (`name, layer = build_norm_layer(...)`)
            texts = candidate_values(assigned, analysis.model.qualified_names)
            if texts is not None:
                return [v for text in texts for v in self._values(text, ctx, depth + 1)]
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
                return self._values(default, Context(analysis, ctx.self_class, self_env=ctx.self_env), depth + 1)
            annotation = binding.node.annotation if isinstance(binding.node, cst.Param) else None
            if annotation is not None:  # `layer: ExpertBlock`: an instance of the annotated class of the tree
                return [
                    InstanceValue(v.info)
                    for v in self._values(annotation.annotation, Context(analysis), depth + 1)
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
                if not self.runs(call, ctx):
                    continue
                for arg in call.args[-1:]:
                    found = self._values(arg.value, ctx, depth + 1)
                    if mutation.method == "extend":
                        found = [e for v in found if isinstance(v, ContainerValue) for e in v.elements]
                    extra += found
        for other in binding.scope.bindings.get(binding.name, ()):
            node = other.node
            # `stages += [Stage(...)]` in a loop (timm's LeViT): the same as `extend`
            if other.kind is BindingKind.AUGMENTED and isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.AddAssign):
                if self.runs(node, ctx):
                    found = self._values(node.value, ctx, depth + 1)
                    extra += [e for v in found if isinstance(v, ContainerValue) for e in v.elements]
        if not extra:
            return values
        return [
            ContainerValue(v.elements + extra, exact=False, sequential=v.sequential) if isinstance(v, ContainerValue) else v
            for v in values
        ]

    def _at_path(self, expr: cst.BaseExpression, path: tuple[int | str, ...], ctx: Context, depth: int) -> list[Value]:
        """``expr``'s values along ``path`` (:attr:`Assigned.path`): a position of an exact tuple
        (``name, layer = build_norm_layer(...)``), every element for :data:`EACH`; nothing
        for what ``__enter__`` returns (``candidate_values`` reads ``nullcontext``)."""
        values = self._values(expr, ctx, depth + 1)
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
        path = [step for step in steps if isinstance(step, int)]
        if len(path) != len(steps):
            return []
        model = ctx.analysis.model
        for _ in range(4):
            if not path:
                break
            if isinstance(iterable, cst.Name) and iterable in model.scopes:
                # `blocks = list(zip(self.resnets, self.attentions))` then
                # `for i, (resnet, attn) in enumerate(blocks)` (diffusers' UNet blocks)
                bindings = model.lookup(iterable.value, model.scope_of(iterable))
                if len(bindings) != 1 or bindings[0].kind is not BindingKind.ASSIGNMENT or bindings[0].value is None:
                    return []
                iterable = bindings[0].value
            if not isinstance(iterable, cst.Call):
                return []
            names = model.qualified_names(iterable.func)
            positional = [a for a in iterable.args if a.keyword is None and not a.star]
            if names & {"builtins.list", "builtins.tuple"} and len(positional) == 1:
                iterable = positional[0].value
            elif "builtins.enumerate" in names and path[0] == 1 and positional:
                iterable, path = positional[0].value, path[1:]
            elif "builtins.zip" in names and path[0] < len(positional):
                iterable, path = positional[path[0]].value, path[1:]
            else:
                return []
        if path:
            return []
        out: list[Value] = []
        for value in self._values(iterable, ctx, depth + 1):
            if isinstance(value, ContainerValue):
                out += value.elements
        return out

    def _attribute(self, base: Value, name: str, depth: int) -> list[Value]:
        if isinstance(base, TorchValue):
            return [base]
        if isinstance(base, ModuleValue):
            analysis = self.project.analysis_for_names(base.module, (name,)) if self.project is not None else None
            if analysis is None:
                return []
            values = [
                v
                for binding in analysis.model.module_scope.bindings.get(name, ())
                for v in self._binding(binding, Context(analysis), depth + 1)
            ]
            if not values and self.project is not None and analysis.module_name:
                submodule = f"{analysis.module_name}.{name}"
                if self.project.module_parses(submodule):
                    values = [ModuleValue(submodule)]
            return values
        if isinstance(base, InstanceValue):
            method = self._method(base.info, name)
            if method is not None:
                node, owner = method
                method_ctx = Context(owner.analysis, base.info, self_env=base.env)
                if is_property(node):  # `self.norm1` is what the property returns
                    return [
                        v
                        for ret in returns_of(node, lambda test, c=method_ctx: self.decide(test, c))
                        if ret.value is not None
                        for v in self._values(ret.value, method_ctx, depth + 1)
                    ]
                return [FunctionValue(node, method_ctx, bound_method=True)]
            out: list[Value] = []
            extra: list[Value] = []
            for info in self._mro(base.info):
                owner_ctx = Context(info.analysis, base.info, base.env, self_env=base.env)
                for entry in info.attributes.get(name, ()):
                    out += self._at_path(entry.value, entry.path, owner_ctx, depth)
                for expr, _ in info.appended.get(name, ()):
                    extra += self._values(expr, owner_ctx, depth + 1)
            if extra:
                containers = [v for v in out if isinstance(v, ContainerValue)] or [ContainerValue([])]
                out = [v for v in out if not isinstance(v, ContainerValue)] + [
                    ContainerValue(c.elements + extra, exact=False, sequential=c.sequential) for c in containers
                ]
            return out
        if isinstance(base, ClassValue):
            method = self._method(base.info, name)
            if method is not None:
                return [FunctionValue(method[0], Context(method[1].analysis))]
        return []

    def _call(self, call: cst.Call, ctx: Context, depth: int) -> list[Value]:
        model = ctx.analysis.model
        names = model.qualified_names(call.func) if call.func in model.scopes else frozenset()
        for name in names:
            factory = NORM_FACTORIES.get(name)
            if factory is not None:
                return self._norm_factory(factory, call, ctx, depth)
        if "builtins.getattr" in names and len(call.args) >= 2 and not any(a.star for a in call.args):
            return self._getattr(call, ctx, depth)
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "get" and 1 <= len(call.args) <= 2:
            bases = [b for b in self._values(call.func.value, ctx, depth + 1) if isinstance(b, ContainerValue)]
            if bases and all(b.keyed is not None for b in bases):
                key = self.literal(call.args[0].value, ctx, depth + 1)
                out: list[Value] = []
                for base in bases:
                    selected = base.select(key)
                    out += base.elements if selected is None else selected
                    if not selected and len(call.args) == 2:
                        out += self._values(call.args[1].value, ctx, depth + 1)
                return out
        if names & PARTIAL_QUALIFIED_NAMES and call.args:
            bound = {a.keyword.value for a in call.args if a.keyword is not None}
            return [
                partially_applied(v) if len(call.args) > 1 else v
                for v in self._values(call.args[0].value, ctx, depth + 1)
                if isinstance(v, (FunctionValue, ClassValue))
                # `partial(nn.BatchNorm2d, eps=1e-3)` as a `norm_layer=` factory; not when the
                # partial sets the switch (`track_running_stats=False`), read from the final call
                or (isinstance(v, LayerClassValue) and not (v.fact.switch and v.fact.switch[0] in bound))
            ]
        if names & CONTAINER_CLASSES:
            args = [a for a in call.args if a.keyword is None]
            if any(n.endswith(".Sequential") for n in names):
                return [self._container([(a.value, a.star == "*") for a in args], ctx, depth)]
            if len(args) == 1 and not args[0].star:
                inner = self._values(args[0].value, ctx, depth + 1)
                return [v for v in inner if isinstance(v, ContainerValue)][:1] or [ContainerValue([], exact=False)]
            return [ContainerValue([], exact=not args)]
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in MODULE_METHODS_RETURNING_SELF | CLASS_CONSTRUCTORS:
            method, receivers = call.func.attr.value, self._values(call.func.value, ctx, depth + 1)  # `Proj(c).to(dt)`: the Proj
            kinds = (ClassValue,) if method in CLASS_CONSTRUCTORS else (LayerUse, InstanceValue)  # `M.from_pretrained(p)`: an M
            same = [InstanceValue(v.info) if isinstance(v, ClassValue) else v for v in receivers if isinstance(v, kinds) and not (
                isinstance(v, (ClassValue, InstanceValue)) and self._method(v.info, method))]
            if same:
                return same
        out: list[Value] = []
        for callee in self._values(call.func, ctx, depth + 1):
            if isinstance(callee, ClassValue):
                out.append(InstanceValue(callee.info, self._constructor_env(callee, call, ctx)))
            elif isinstance(callee, LayerClassValue):
                out.append(LayerUse(callee.qualified, callee.fact, call, ctx))
            elif isinstance(callee, TorchValue):
                out.append(callee)
                # torch wrappers of a module (checkpoint_wrapper, DDP, torch.compile) run it
                first = next((a for a in call.args if a.keyword is None and not a.star), None)
                if first is not None:
                    out += [
                        v
                        for v in self._values(first.value, ctx, depth + 1)
                        if isinstance(v, (InstanceValue, ContainerValue, LayerUse))
                    ]
            elif isinstance(callee, FunctionValue) and isinstance(callee.node, cst.FunctionDef):
                inner_ctx = self._bind(callee, tuple(call.args), ctx)
                for ret in returns_of(callee.node, lambda test, c=inner_ctx: self.decide(test, c)):
                    if ret.value is not None:
                        out += self._values(ret.value, inner_ctx, depth + 1)
        return out

    def _norm_factory(self, factory: NormFactory, call: cst.Call, ctx: Context, depth: int) -> list[Value]:
        """A norm layer built from a config (``build_norm_layer(dict(type='BN'), c)``, a ``ConvModule``
        running it): the layer ``cfg['type']`` names (its other keys are the layer's keywords);
        an opaque value for a type without training behaviour (GroupNorm); nothing when unknown."""
        keyword, position = factory.config
        arg = call_argument(call, keyword, position)
        if arg is None:
            return []
        layer: Value | None = None
        config = self.literal(arg.value, ctx, depth + 1)
        if isinstance(config, dict) and isinstance(config.get("type"), str):
            qualified = factory.types.get(config["type"])
            if qualified is None:
                return []
            fact = layer_fact({qualified})
            layer = LayerUse(fact[0], fact[1], call, ctx, config) if fact is not None else OpaqueValue()
        else:
            for value in self._config_types(arg.value, ctx, depth + 1):
                layer = LayerUse(value.qualified, value.fact, call, ctx, config)
                break
        if layer is None:
            return []
        return [ContainerValue([OpaqueValue(), layer])] if factory.returns_pair or factory.module else [layer]

    def _config_types(self, expr: cst.BaseExpression, ctx: Context, depth: int) -> list[LayerClassValue]:
        """The torch layer classes given as ``type=`` of a ``dict(type=nn.BatchNorm2d, ...)``
        config (followed through names and parameters like :meth:`literal`)."""
        if depth > MAX_EVAL_DEPTH:
            return []
        model = ctx.analysis.model
        if isinstance(expr, cst.Name) and expr in model.scopes:
            bindings = skip_self_copies(model.lookup(expr.value, model.scope_of(expr)), model)
            if len(bindings) != 1:
                return []
            binding = bindings[0]
            if binding in ctx.env:
                arg, arg_ctx = ctx.env[binding]
                return self._config_types(arg, arg_ctx, depth + 1)
            if isinstance(binding.node, cst.Param) and binding.node.default is not None:
                return self._config_types(binding.node.default, Context(ctx.analysis, ctx.self_class), depth + 1)
            if binding.kind is BindingKind.ASSIGNMENT and binding.value is not None:
                return self._config_types(binding.value, ctx, depth + 1)
            return []
        if isinstance(expr, cst.Call) and "builtins.dict" in model.qualified_names(expr.func):
            for arg in expr.args:
                if arg.keyword is not None and arg.keyword.value == "type":
                    return [v for v in self._values(arg.value, ctx, depth + 1) if isinstance(v, LayerClassValue)]
        return []

    def _getattr(self, call: cst.Call, ctx: Context, depth: int) -> list[Value]:
        """``getattr(obj, name)``: the attribute when ``name`` is known, or, for a name only
        known at run time, what ``self.add_module(<same expression>, module)`` stored (the
        mm-style ``@property def norm1(self): return getattr(self, self.norm1_name)``)."""
        key = self.literal(call.args[1].value, ctx, depth + 1)
        name = key if isinstance(key, str) else dynamic_key(ctx.analysis, call.args[1].value)
        out: list[Value] = []
        for base in self._values(call.args[0].value, ctx, depth + 1):
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
        if self.project is None or depth > MAX_EVAL_DEPTH:
            return []
        if self._classes_only and not qualified.rsplit(".", 1)[-1][:1].isupper():
            return []
        if self.project.module_parses(qualified):
            return [ModuleValue(qualified)]
        parts = qualified.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            rest = parts[cut:]
            prefix = ".".join(parts[:cut])
            analysis = self.project.analysis_for_names(prefix, [rest[0], *self._imported_beside(importer, prefix)])
            if analysis is None:
                continue
            values: list[Value] = []
            for binding in analysis.model.module_scope.bindings.get(rest[0], ()):
                values += self._binding(binding, Context(analysis), depth + 1)
            for attr in rest[1:]:
                values = [v for base in values for v in self._attribute(base, attr, depth + 1)]
            return values
        return []

    def _imported_beside(self, importer: ModuleAnalysis | None, module: str) -> frozenset[str]:
        """The names ``importer`` imports from ``module`` (``from .norm import A, B``): asked
        for together, so that a module parsed partially for ``A`` is not parsed again for
        ``B`` (see :meth:`Project.analysis_for_names`)."""
        if importer is None:
            return frozenset()
        key = (id(importer), module)
        found = self._beside.get(key)
        if found is None:
            start = module + "."
            found = frozenset(
                b.target[len(start) :].split(".", 1)[0]
                for bindings in importer.model.module_scope.bindings.values()
                for b in bindings
                if b.kind is BindingKind.IMPORT and b.target and b.target.startswith(start)
            )
            self._beside[key] = found
        return found

    def _constructor_env(self, callee: ClassValue, call: cst.Call, ctx: Context) -> dict[Binding, tuple[cst.BaseExpression, Context]]:
        """``__init__``'s parameters bound to the arguments of ``call`` (evaluated in ``ctx``)."""
        init = self._method(callee.info, "__init__")
        if init is None:
            return {}
        node, owner = init
        init_ctx = Context(owner.analysis, callee.info, open_call=callee.partial)  # a partial's arguments are not seen
        bound = self._bind(FunctionValue(node, init_ctx, bound_method=True), tuple(call.args), ctx)
        return bound.env if bound.open_call or bound.bound is not node else ConstructorEnv(bound.env, node)

    def _method(self, info: ClassInfo, name: str) -> tuple[cst.FunctionDef, ClassInfo] | None:
        return next(((owner.methods[name], owner) for owner in self._mro(info) if name in owner.methods), None)

    def _mro(self, info: ClassInfo) -> list[ClassInfo]:
        order: list[ClassInfo] = []
        stack = [info]
        while stack and len(order) < 16:
            current = stack.pop(0)
            if current in order:
                continue
            order.append(current)
            stack += [b.info for b in current.bases if isinstance(b, ClassValue)]
        return order

    def _layer_base(self, info: ClassInfo) -> tuple[str, LayerFact] | None:
        for owner in self._mro(info):
            for base in owner.bases:
                if isinstance(base, LayerClassValue) and base.fact.kind is not LayerKind.CONTAINER:
                    return base.qualified, base.fact
        return None

"""Literal values and branch decisions: which code of a frame runs for the arguments a site
passes (:class:`LiteralDecisions`, one of the objects the region builder is composed of)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.checkpoint.evaluator.class_summary import class_mro, self_parameter
from ckptlint.checkpoint.evaluator.config_values import annotated_class, shipped_values
from ckptlint.checkpoint.evaluator.denotations import MAX_EVAL_DEPTH, ClassInfo, Context
from ckptlint.checkpoint.sites.options import NOT_LITERAL, literal_value
from ckptlint.semantic.bindings import Binding, BindingKind
from ckptlint.semantic.reaching import reaching

if TYPE_CHECKING:
    from ckptlint.semantic.analysis import ModuleAnalysis


def _constructor_setting(value: cst.BaseExpression, method: cst.FunctionDef | None) -> bool:
    """Whether ``self.<attr> = value`` records how the object was built: assigned in
    ``__init__`` from its arguments (not a literal, which is typically a switch flipped
    from outside, like ``self.save_attention = False``), and never assigned elsewhere in the
    module (``model.block.<attr> = ...``)."""
    if method is None or method.name.value != "__init__":
        return False
    if isinstance(value, (cst.SimpleString, cst.Integer, cst.Float, cst.ConcatenatedString)):
        return False
    if isinstance(value, cst.Name) and value.value in ("True", "False", "None"):
        return False
    return True


def _self_write_class(analysis: ModuleAnalysis, node: cst.CSTNode, attr: str) -> cst.ClassDef | None:
    """The class ``C`` when ``node`` assigns ``attr`` only as ``self.<attr>`` (``self`` the first
    parameter of the method of ``C`` it is written in, directly in ``C``'s body), else ``None``."""
    model = analysis.model
    function = model.enclosing(node, cst.FunctionDef)
    if not isinstance(function, cst.FunctionDef):
        return None
    cls = model.parent(function)
    cls = model.parent(cls) if isinstance(cls, cst.IndentedBlock) else None
    self_name = self_parameter(function)
    if not isinstance(cls, cst.ClassDef) or self_name is None:
        return None
    targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [getattr(node, "target", None)]
    for target in targets:
        if isinstance(target, cst.Attribute) and target.attr.value == attr:
            if not (isinstance(target.value, cst.Name) and target.value.value == self_name):
                return None
        elif target is not None and not isinstance(target, cst.Attribute):
            return None  # a tuple target: not read here
    return cls


def _related_classes(analysis: ModuleAnalysis, owner: ClassInfo) -> set[str]:
    """The names of ``owner``, its bases of the tree and the classes of ``analysis``'s module
    that derive from one of them (by the last name of a base, repeatedly)."""
    related = {info.name for info in class_mro(owner)}
    classes = [n for n in analysis.model.scope_of_definition if isinstance(n, cst.ClassDef)]
    grown = True
    while grown:
        grown = False
        for cls in classes:
            if cls.name.value in related:
                continue
            bases = {_last_name(b.value) for b in cls.bases}
            if bases & related:
                related.add(cls.name.value)
                grown = True
    return related


def _last_name(expr: cst.BaseExpression) -> str:
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    return expr.value if isinstance(expr, cst.Name) else ""


#: Calls that return a copy of their one argument (``copy.deepcopy(cfg)``).
_COPY_FUNCTIONS = frozenset({"copy.deepcopy", "copy.copy", "builtins.dict"})


def _copy_of_itself(binding: Binding, model) -> bool:  # noqa: ANN001 - a SemanticModel
    """Whether ``binding`` is ``X = copy.deepcopy(X)`` (``copy.copy(X)``, ``dict(X)``,
    ``X.copy()``): the name keeps an equal value."""
    value = binding.value
    if binding.kind is not BindingKind.ASSIGNMENT or not isinstance(value, cst.Call):
        return False
    func = value.func
    if isinstance(func, cst.Attribute) and func.attr.value == "copy" and not value.args:
        return isinstance(func.value, cst.Name) and func.value.value == binding.name
    if len(value.args) != 1 or value.args[0].keyword is not None or value.args[0].star:
        return False
    argument = value.args[0].value
    if not (isinstance(argument, cst.Name) and argument.value == binding.name):
        return False
    return func in model.scopes and bool(model.qualified_names(func) & _COPY_FUNCTIONS)


def _runs_once(binding: Binding, model) -> bool:  # noqa: ANN001 - a SemanticModel
    """Whether ``binding`` is an assignment that runs at most once a call of its function: not
    in a loop, where its value could read what an earlier iteration assigned."""
    if binding.kind is not BindingKind.ASSIGNMENT or binding.value is None:
        return False
    for ancestor in model.ancestors(binding.node):
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.Module)):
            return True
        if isinstance(ancestor, (cst.For, cst.While)):
            return False
    return True


def skip_self_copies(bindings: list[Binding], model) -> list[Binding]:  # noqa: ANN001 - a SemanticModel
    """``bindings`` of one name less its copies of itself, when one binding is left and the
    name is never mutated (item or method writes): mmpose's "protect mutable default
    arguments" ``norm_cfg = copy.deepcopy(norm_cfg)`` keeps the parameter's value, so
    ``build_norm_layer(norm_cfg, c)`` still builds what the default (or the caller) says."""
    if len(bindings) < 2:
        return bindings
    kept = [b for b in bindings if not _copy_of_itself(b, model)]
    if len(kept) != 1 or model.mutations_of(kept[0].name, kept[0].scope):
        return bindings
    return kept


@lru_cache(maxsize=4096)
def _string_literal(raw: str) -> object:
    """The value of a string literal's source text (libcst's ``evaluated_value`` compiles
    each one; registry keys and config types repeat a lot)."""
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        return NOT_LITERAL


_BUILTIN_TYPES: dict[str, type] = {
    "list": list,
    "dict": dict,
    "tuple": tuple,
    "set": set,
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "NoneType": type(None),
}


@dataclass(frozen=True)
class _BuiltinType:
    """A builtin class as a literal (``list`` in ``type(x) == list``)."""

    name: str


def _compare(operator: cst.BaseCompOp, left: object, right: object) -> object:
    """``left <operator> right`` for the operators branch conditions use, or NOT_LITERAL."""
    try:
        if isinstance(operator, cst.Equal):
            return left == right
        if isinstance(operator, cst.NotEqual):
            return left != right
        if isinstance(operator, cst.Is):
            return left is right if right is None or isinstance(right, bool) else left == right
        if isinstance(operator, cst.IsNot):
            return left is not right if right is None or isinstance(right, bool) else left != right
        if isinstance(operator, cst.In) and isinstance(right, (tuple, list, frozenset, str, dict)):
            return left in right
        if isinstance(operator, cst.NotIn) and isinstance(right, (tuple, list, frozenset, str, dict)):
            return left not in right
    except Exception:  # noqa: BLE001 - incomparable literals
        return NOT_LITERAL
    return NOT_LITERAL


class LiteralDecisions:
    """Literal values and branch decisions of the region evaluator: what Python value an
    expression has for the arguments a call binds, and so which branches of an ``if`` run.

    Keeps, per module analysis and attribute name, the writes of the attribute (for
    :meth:`assigned_outside`), for the lifetime of one linted module."""

    def __init__(self) -> None:
        self._outside: dict[tuple[int, str], list[cst.CSTNode]] = {}
        self._shipped: dict[tuple[int, int, str], frozenset[object] | None] = {}

    def literal(self, expr: cst.BaseExpression | None, ctx: Context, depth: int = 0) -> object:
        """The Python value ``expr`` has when evaluated in ``ctx``, or :data:`NOT_LITERAL`.

        Beyond :func:`~ckptlint.checkpoint.sites.options.literal_value` (constants, names bound to equal
        constants), a parameter is followed to the argument the call bound to it (``ctx.env``)
        or, when the call passed nothing for it, to its default (not after a call with
        ``*``/``**`` arguments or unseen arguments, ``ctx.open_call``; ``__init__``'s
        parameters always fall back to defaults, as region values do); a local name assigned
        once is followed to its value; ``self.attr`` assigned once in the class is followed
        to that value with the constructor's bindings; ``==``, ``!=``, ``is``, ``is not``,
        ``in``, ``not in``, ``not``, ``and`` and ``or`` are computed when their operands are
        known.
        """
        if expr is None or depth > MAX_EVAL_DEPTH:
            return NOT_LITERAL
        if isinstance(expr, cst.SimpleString):
            return _string_literal(expr.value)
        if isinstance(expr, cst.Name):
            return self._name(expr, ctx, depth)
        if isinstance(expr, cst.Attribute):
            return self._self_attribute(expr, ctx, depth)
        if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1:
            left = self.literal(expr.left, ctx, depth + 1)
            target = expr.comparisons[0]
            right = self.literal(target.comparator, ctx, depth + 1)
            if left is NOT_LITERAL or right is NOT_LITERAL:
                return NOT_LITERAL
            return _compare(target.operator, left, right)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            inner = self.literal(expr.expression, ctx, depth + 1)
            return NOT_LITERAL if inner is NOT_LITERAL else not inner
        if isinstance(expr, cst.BooleanOperation):
            return self._boolean(expr, ctx, depth)
        if isinstance(expr, cst.Dict):
            mapping: dict[object, object] = {}
            for element in expr.elements:
                if not isinstance(element, cst.DictElement):
                    return NOT_LITERAL
                key = self.literal(element.key, ctx, depth + 1)
                if not isinstance(key, (str, int)):
                    return NOT_LITERAL
                mapping[key] = self.literal(element.value, ctx, depth + 1)
            return mapping  # values may be NOT_LITERAL: a key read from it is then unknown
        if isinstance(expr, cst.Call):
            return self._call(expr, ctx, depth)
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
            container = self.literal(expr.value, ctx, depth + 1)
            key = self.literal(expr.slice[0].slice.value, ctx, depth + 1)
            if isinstance(container, dict) and isinstance(key, (str, int)):
                return container.get(key, NOT_LITERAL)
            return NOT_LITERAL
        if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
            return self._display(expr, ctx, depth)
        return literal_value(expr, ctx.analysis.model)

    def _name(self, expr: cst.Name, ctx: Context, depth: int) -> object:
        """A name: a constant, a parameter (its argument or default), a name assigned once."""
        if expr.value in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[expr.value]
        model = ctx.analysis.model
        if expr not in model.scopes:
            return NOT_LITERAL
        bindings = skip_self_copies(model.lookup(expr.value, model.scope_of(expr)), model)
        if len(bindings) > 1:  # `norm = {...}[norm]`: a binding's own value reads the name before it
            ancestors = {id(a) for a in model.ancestors(expr)}
            bindings = [b for b in bindings if not (id(b.value) in ancestors and _runs_once(b, model))]
        if not bindings and expr.value in _BUILTIN_TYPES:
            return _BuiltinType(expr.value)
        if len(bindings) != 1:
            return literal_value(expr, model) if bindings else NOT_LITERAL
        binding = bindings[0]
        if binding in ctx.env:
            arg, arg_ctx = ctx.env[binding]
            return self.literal(arg, arg_ctx, depth + 1)
        if binding.kind is BindingKind.PARAMETER and isinstance(binding.node, cst.Param):
            function = binding.scope.node
            is_init = isinstance(function, cst.FunctionDef) and function.name.value == "__init__"
            if binding.node.default is None:
                return NOT_LITERAL
            if not is_init and (ctx.open_call or function is not ctx.bound):
                return NOT_LITERAL
            if binding.node.star:
                return NOT_LITERAL
            return self.literal(binding.node.default, Context(ctx.analysis, ctx.self_class), depth + 1)
        if binding.kind is BindingKind.ASSIGNMENT and binding.value is not None:
            return self.literal(binding.value, ctx, depth + 1)
        return NOT_LITERAL

    def _self_attribute(self, expr: cst.Attribute, ctx: Context, depth: int) -> object:
        """``self.attr`` assigned once in the class, by the constructor from its arguments."""
        model = ctx.analysis.model
        if not (isinstance(expr.value, cst.Name) and ctx.self_class is not None and expr.value in model.scopes):
            return NOT_LITERAL
        function = model.enclosing(expr, cst.FunctionDef)
        if not (isinstance(function, cst.FunctionDef) and self_parameter(function) == expr.value.value):
            return NOT_LITERAL
        assigned = [
            (value, info, method, path)
            for info in class_mro(ctx.self_class)
            for value, method, path in info.attributes.get(expr.attr.value, ())
        ]
        if (
            len(assigned) == 1
            and not assigned[0][3]  # a position of a call's result: not a literal
            and _constructor_setting(assigned[0][0], assigned[0][2])
            and not self.assigned_outside(assigned[0][1].analysis, expr.attr.value, assigned[0][2], ctx.self_class)
        ):
            value, info, _, _ = assigned[0]
            owner_ctx = Context(info.analysis, ctx.self_class, ctx.self_env, self_env=ctx.self_env)
            return self.literal(value, owner_ctx, depth + 1)
        return NOT_LITERAL

    def _boolean(self, expr: cst.BooleanOperation, ctx: Context, depth: int) -> object:
        """``a and b``, ``a or b``, as Python computes them, when what decides is known."""
        left = self.literal(expr.left, ctx, depth + 1)
        is_and = isinstance(expr.operator, cst.And)
        if left is not NOT_LITERAL and bool(left) is not is_and:
            return left  # `False and ...`, `True or ...`: decided by the left operand
        right = self.literal(expr.right, ctx, depth + 1)
        if left is NOT_LITERAL:
            # `x and False` is falsy and `x or True` truthy whatever x is
            if right is not NOT_LITERAL and bool(right) is not is_and:
                return bool(right)
            return NOT_LITERAL
        return right

    def _call(self, expr: cst.Call, ctx: Context, depth: int) -> object:
        """``type(x)``, ``isinstance(x, kinds)`` of builtin types, ``dict(k=v, ...)``."""
        model = ctx.analysis.model
        if len(expr.args) in (1, 2) and not any(a.star or a.keyword for a in expr.args):
            called = model.qualified_names(expr.func) if expr.func in model.scopes else frozenset()
            if "builtins.type" in called and len(expr.args) == 1:
                value = self.literal(expr.args[0].value, ctx, depth + 1)
                if value is NOT_LITERAL or isinstance(value, (dict, _BuiltinType)):
                    return NOT_LITERAL
                return _BuiltinType(type(value).__name__)
            if "builtins.isinstance" in called and len(expr.args) == 2:
                value = self.literal(expr.args[0].value, ctx, depth + 1)
                kinds = self.literal(expr.args[1].value, ctx, depth + 1)
                kinds = kinds if isinstance(kinds, tuple) else (kinds,)
                if value is NOT_LITERAL or isinstance(value, (dict, _BuiltinType)):
                    return NOT_LITERAL
                if not kinds or not all(isinstance(k, _BuiltinType) for k in kinds):
                    return NOT_LITERAL
                return any(isinstance(value, _BUILTIN_TYPES[k.name]) for k in kinds)
        if "builtins.dict" in model.qualified_names(expr.func):
            if any(a.keyword is None for a in expr.args):
                return NOT_LITERAL
            return {a.keyword.value: self.literal(a.value, ctx, depth + 1) for a in expr.args if a.keyword}
        return literal_value(expr, model)

    def _display(self, expr: cst.Tuple | cst.List | cst.Set, ctx: Context, depth: int) -> object:
        """A tuple, list or set display whose elements are all known."""
        items = [self.literal(e.value, ctx, depth + 1) for e in expr.elements]
        if any(i is NOT_LITERAL for i in items) or any(isinstance(e, cst.StarredElement) for e in expr.elements):
            return NOT_LITERAL
        if isinstance(expr, cst.List):
            return list(items)
        if isinstance(expr, cst.Set):
            try:
                return frozenset(items)
            except TypeError:  # unhashable items
                return NOT_LITERAL
        return tuple(items)

    def assigned_outside(self, analysis: ModuleAnalysis, attr: str, init: cst.FunctionDef | None, owner: ClassInfo | None = None) -> bool:
        """Whether ``<anything>.<attr> = ...`` (or ``+=``) appears in ``analysis``'s module
        outside the function ``init`` (or in a statement a partial parse left out). With
        ``owner`` (the class whose instance is read), ``self.<attr> = ...`` in a method of a
        class of the module that is neither ``owner``, a base of it, nor a subclass of one of
        them does not count: it sets another class's instances (mmaction2's blocks and
        backbones each keep their own ``self.norm_cfg``)."""
        if attr in analysis.unparsed_attribute_writes:
            return True  # written in a statement a partial parse left out (never inside `init`)
        key = (id(analysis), attr)
        found = self._outside.get(key)
        if found is None:
            found = []
            for mutation in analysis.model.mutations:
                node = mutation.node
                if mutation.kind not in ("attribute", "augmented"):
                    continue
                targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [getattr(node, "target", None)]
                if any(isinstance(t, cst.Attribute) and t.attr.value == attr for t in targets):
                    found.append(node)
            self._outside[key] = found
        writes = [node for node in found if not any(a is init for a in analysis.model.ancestors(node))]
        if owner is None or not writes:
            return bool(writes)
        related = _related_classes(analysis, owner)
        for node in writes:
            writer = _self_write_class(analysis, node, attr)
            if writer is None or writer.name.value in related:
                return True
        return False

    def decide(self, test: cst.BaseExpression, ctx: Context) -> bool | None:
        """Whether the branch condition ``test`` is true (``True``/``False``) when evaluated
        in ``ctx``, or ``None`` when it is not decided (then both branches may run)."""
        value = self.literal(test, ctx)
        if value is NOT_LITERAL:
            return self._decide_by_choices(test, ctx)
        try:
            return bool(value)
        except Exception:  # noqa: BLE001 - a literal whose truth cannot be taken
            return None

    def choices(self, expr: cst.BaseExpression, ctx: Context, depth: int = 0) -> frozenset[object] | None:
        """The values ``expr`` may have in ``ctx`` when not one is known: a field of a
        configuration class of the module read through a parameter annotated with it
        (``cfg.attn_layer``, ``cfg: NfCfg``) has the values the module's own configurations give
        it (:func:`~ckptlint.checkpoint.evaluator.config_values.shipped_values`), followed through
        the argument a call bound to a parameter, a local name assigned once and
        ``.lower()``/``.upper()``; ``None`` when unknown."""
        value = self.literal(expr, ctx, depth)
        if value is not NOT_LITERAL:
            return frozenset({value}) if isinstance(value, (str, int, float, bool, type(None))) else None
        if depth > MAX_EVAL_DEPTH:
            return None
        model = ctx.analysis.model
        if isinstance(expr, cst.Call) and not expr.args and isinstance(expr.func, cst.Attribute):
            method = expr.func.attr.value
            inner = self.choices(expr.func.value, ctx, depth + 1) if method in ("lower", "upper") else None
            if inner is None:
                return None
            return frozenset(getattr(v, method)() for v in inner if isinstance(v, str))
        name = expr.value if isinstance(expr, cst.Attribute) else expr
        if not isinstance(name, cst.Name) or name not in model.scopes:
            return None
        # a binding whose own statement holds the read (`t = t.lower()`) does not reach it
        bindings = [b for b in reaching(model, name) if not any(a is b.node for a in model.ancestors(name))]
        if len(bindings) > 1 and isinstance(expr, cst.Name):
            found: set[object] = set()
            for one in bindings:  # every binding that may reach the read: the union
                values = self._binding_choices(one, ctx, depth)
                if values is None:
                    return None
                found |= values
            return frozenset(found)
        if len(bindings) != 1:
            return None
        binding = bindings[0]
        if isinstance(expr, cst.Attribute):
            copied = binding.value if binding.kind is BindingKind.ASSIGNMENT else None
            if isinstance(copied, cst.Call) and copied.args and isinstance(copied.args[0].value, cst.Name):
                # `cfg = replace(cfg, **kwargs)`: the configuration it was given, overlaid
                func = copied.func.attr if isinstance(copied.func, cst.Attribute) else copied.func
                source = copied.args[0].value
                copies = [b for b in reaching(model, source) if b is not binding] if getattr(func, "value", "") == "replace" else []
                binding = copies[0] if len(copies) == 1 else binding
            if binding in ctx.env or binding.kind is not BindingKind.PARAMETER or not isinstance(binding.node, cst.Param):
                return None
            cls = annotated_class(ctx.analysis, binding.node)
            if cls is None:
                return None
            key = (id(ctx.analysis), id(cls), expr.attr.value)
            if key not in self._shipped:
                self._shipped[key] = shipped_values(ctx.analysis, cls, expr.attr.value)
            return self._shipped[key]
        return self._binding_choices(binding, ctx, depth)

    def _binding_choices(self, binding: Binding, ctx: Context, depth: int) -> frozenset[object] | None:
        """:meth:`choices` of a name's binding: the argument bound to a parameter, an assigned value."""
        if binding in ctx.env:
            arg, arg_ctx = ctx.env[binding]
            return self.choices(arg, arg_ctx, depth + 1)
        if binding.kind is BindingKind.ASSIGNMENT and binding.value is not None:
            return self.choices(binding.value, ctx, depth + 1)
        return None

    def _decide_by_choices(self, test: cst.BaseExpression, ctx: Context) -> bool | None:
        """``test`` decided by every value its operand may have (:meth:`choices`): ``attn_type
        == 'lambda'`` is false when no shipped configuration gives ``'lambda'``."""
        operand = test.left if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 else test
        if not isinstance(operand, (cst.Name, cst.Attribute, cst.Call)):
            return None
        values = self.choices(operand, ctx)
        if not values:
            return None
        if operand is test:
            outcomes = {bool(v) for v in values}
        else:
            assert isinstance(test, cst.Comparison)
            right = self.literal(test.comparisons[0].comparator, ctx)
            if right is NOT_LITERAL:
                return None
            results = [_compare(test.comparisons[0].operator, v, right) for v in values]
            if any(r is NOT_LITERAL for r in results):
                return None
            outcomes = {bool(r) for r in results}
        return outcomes.pop() if len(outcomes) == 1 else None

    def runs(self, node: cst.CSTNode, ctx: Context) -> bool:
        """Whether ``node`` can run when its function runs in ``ctx``: ``False`` when it sits
        in a branch of an ``if`` (statement or expression) that ``ctx`` decides against."""
        model = ctx.analysis.model
        below = node
        for ancestor in model.ancestors(node):
            if isinstance(ancestor, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return True
            if isinstance(ancestor, (cst.If, cst.IfExp)) and below is not ancestor.test:
                taken = self.decide(ancestor.test, ctx)
                if taken is not None and (below is ancestor.body) is not taken:
                    return False
            below = ancestor
        return True

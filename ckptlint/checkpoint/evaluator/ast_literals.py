"""Literal values and branch decisions on CPython's ``ast``: which code of a frame runs for
the arguments a site passes (:class:`LiteralDecisions`, one of the objects the region builder
is composed of; its tables are in :mod:`ckptlint.checkpoint.evaluator.literals`).

Nothing here evaluates what an expression denotes (no evaluator, no budget): a literal
follows parameters to the arguments a context binds, names assigned once, ``self.attr``
assigned once by the constructor (through the class summaries' method order) and the values
a module's configuration class ships.

``a and b and c`` (one ``ast.BoolOp``) is decided as the nested ``(a and b) and c``, one
depth per level; a string written in parts is one literal.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ckptlint.checkpoint.evaluator.ast_class_summary import class_mro, self_parameter
from ckptlint.checkpoint.evaluator.ast_config_values import annotated_class, shipped_values
from ckptlint.checkpoint.evaluator.denotations import MAX_EVAL_DEPTH, Context
from ckptlint.checkpoint.evaluator.literals import _BUILTIN_TYPES, _COPY_FUNCTIONS, _BuiltinType
from ckptlint.checkpoint.sites.ast_options import argument_value, literal_value, ordered_arguments
from ckptlint.checkpoint.sites.options import NOT_LITERAL
from ckptlint.semantic.ast_reaching import reaching
from ckptlint.semantic.ast_subscripts import one_index
from ckptlint.semantic.bindings import BindingKind

if TYPE_CHECKING:
    from ckptlint.checkpoint.evaluator.ast_class_summary import AstClassInfo, AstMethod
    from ckptlint.semantic.ast_analysis import AstAnalysis
    from ckptlint.semantic.ast_model import AstBinding, AstModel

    AstContext = Context[AstAnalysis, ast.expr, ast.AST]

__all__ = ["LiteralDecisions", "binding_default", "skip_self_copies"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: Constants a constructor's setting takes as a literal switch (strings, numbers but imaginary
#: ones, ``True``/``False``/``None``).
_SWITCH_CONSTANTS = (str, bytes, int, float, bool, type(None))


def _constructor_setting(value: ast.expr, method: AstMethod | None) -> bool:
    """Whether ``self.<attr> = value`` records how the object was built (see
    ``literals._constructor_setting``)."""
    if method is None or method.name != "__init__":
        return False
    return not (isinstance(value, ast.Constant) and isinstance(value.value, _SWITCH_CONSTANTS))


def _self_write_class(analysis: AstAnalysis, node: ast.AST, attr: str) -> ast.ClassDef | None:
    """The class ``C`` when ``node`` assigns ``attr`` only as ``self.<attr>`` in a method of
    ``C`` (directly in its body), else ``None``."""
    model = analysis.model
    function = model.enclosing(node, *_FUNCTIONS)
    if not isinstance(function, _FUNCTIONS):
        return None
    cls = model.parent(function)
    self_name = self_parameter(function)
    if not isinstance(cls, ast.ClassDef) or self_name is None:
        return None
    for target in _targets(node):
        if isinstance(target, ast.Attribute) and target.attr == attr:
            if not (isinstance(target.value, ast.Name) and target.value.id == self_name):
                return None
        elif target is not None and not isinstance(target, ast.Attribute):
            return None  # a tuple target: not read here
    return cls


def _targets(node: ast.AST) -> list[Any]:
    """The targets of a mutation's node: an assignment's targets, else its
    ``target`` (``None`` for a node without one: ``with``, ``setattr``)."""
    if isinstance(node, ast.Assign):
        return list(node.targets)
    return [getattr(node, "target", None)]


def _related_classes(analysis: AstAnalysis, owner: AstClassInfo) -> set[str]:
    """The names of ``owner``, its bases of the tree and the classes of ``analysis``'s module
    that derive from one of them (by the last name of a base, repeatedly)."""
    related = {info.name for info in class_mro(owner)}
    classes = [n for n in analysis.model.scope_of_definition if isinstance(n, ast.ClassDef)]
    grown = True
    while grown:
        grown = False
        for cls in classes:
            if cls.name in related:
                continue
            bases = {_last_name(b) for b in cls.bases}
            if bases & related:
                related.add(cls.name)
                grown = True
    return related


def _last_name(expr: ast.expr) -> str:
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return expr.id if isinstance(expr, ast.Name) else ""


def _copy_of_itself(binding: AstBinding, model: AstModel) -> bool:
    """Whether ``binding`` is ``X = copy.deepcopy(X)`` (``copy.copy(X)``, ``dict(X)``,
    ``X.copy()``): the name keeps an equal value."""
    value = binding.value
    if binding.kind is not BindingKind.ASSIGNMENT or not isinstance(value, ast.Call):
        return False
    func = value.func
    if isinstance(func, ast.Attribute) and func.attr == "copy" and not value.args and not value.keywords:
        return isinstance(func.value, ast.Name) and func.value.id == binding.name
    if len(value.args) != 1 or value.keywords or isinstance(value.args[0], ast.Starred):
        return False
    argument = value.args[0]
    if not (isinstance(argument, ast.Name) and argument.id == binding.name):
        return False
    return func in model.parents and bool(model.qualified_names(func) & _COPY_FUNCTIONS)


def _runs_once(binding: AstBinding, model: AstModel) -> bool:
    """Whether ``binding`` is an assignment that runs at most once a call of its function."""
    if binding.kind is not BindingKind.ASSIGNMENT or binding.value is None:
        return False
    for ancestor in model.ancestors(binding.node):
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.Module)):
            return True
        if isinstance(ancestor, (ast.For, ast.AsyncFor, ast.While)):
            return False
    return True


def skip_self_copies(bindings: list[AstBinding], model: AstModel) -> list[AstBinding]:
    """``bindings`` of one name less its copies of itself, when one binding is left and the
    name is never mutated (``cfg = copy.deepcopy(cfg)`` adds no value of its own)."""
    if len(bindings) < 2:
        return bindings
    kept = [b for b in bindings if not _copy_of_itself(b, model)]
    if len(kept) != 1 or model.mutations_of(kept[0].name, kept[0].scope):
        return bindings
    return kept


def _compare(operator: ast.cmpop, left: object, right: object) -> object:
    """``left <operator> right`` for the operators branch conditions use, or NOT_LITERAL."""
    try:
        if isinstance(operator, ast.Eq):
            return left == right
        if isinstance(operator, ast.NotEq):
            return left != right
        if isinstance(operator, ast.Is):
            return left is right if right is None or isinstance(right, bool) else left == right
        if isinstance(operator, ast.IsNot):
            return left is not right if right is None or isinstance(right, bool) else left != right
        if isinstance(operator, ast.In) and isinstance(right, (tuple, list, frozenset, str, dict)):
            return left in right
        if isinstance(operator, ast.NotIn) and isinstance(right, (tuple, list, frozenset, str, dict)):
            return left not in right
    except Exception:  # noqa: BLE001 - incomparable literals
        return NOT_LITERAL
    return NOT_LITERAL


def binding_default(binding: AstBinding) -> ast.expr | None:
    """The default of the parameter ``binding`` binds, ``None`` when it has none."""
    function = binding.scope.node
    param = binding.node
    args: ast.arguments = function.args  # type: ignore[attr-defined]
    positional = [*args.posonlyargs, *args.args]
    for index, one in enumerate(positional):
        if one is param:
            offset = index - (len(positional) - len(args.defaults))
            return args.defaults[offset] if offset >= 0 else None
    for one, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if one is param:
            return default
    return None


def _is_star_parameter(binding: AstBinding) -> bool:
    args: ast.arguments = binding.scope.node.args  # type: ignore[attr-defined]
    return binding.node is args.vararg or binding.node is args.kwarg


class LiteralDecisions:
    """Literal values and branch decisions of the region evaluator.

    Keeps, per module analysis and attribute name, the writes of the attribute (for
    :meth:`assigned_outside`), and the shipped values of configuration fields, for the
    lifetime of one linted module."""

    def __init__(self) -> None:
        self._outside: dict[tuple[int, str], list[ast.AST]] = {}
        self._shipped: dict[tuple[int, int, str], frozenset[object] | None] = {}

    def literal(self, expr: ast.expr | None, ctx: AstContext, depth: int = 0) -> object:
        """The Python value ``expr`` has when evaluated in ``ctx``, or :data:`NOT_LITERAL` when
        it is not known (or ``depth`` is past :data:`MAX_EVAL_DEPTH`)."""
        if expr is None or depth > MAX_EVAL_DEPTH:
            return NOT_LITERAL
        if isinstance(expr, ast.Name):
            return self._name(expr, ctx, depth)
        if isinstance(expr, ast.Attribute):
            return self._self_attribute(expr, ctx, depth)
        if isinstance(expr, ast.Compare) and len(expr.ops) == 1:
            left = self.literal(expr.left, ctx, depth + 1)
            right = self.literal(expr.comparators[0], ctx, depth + 1)
            if left is NOT_LITERAL or right is NOT_LITERAL:
                return NOT_LITERAL
            return _compare(expr.ops[0], left, right)
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
            inner = self.literal(expr.operand, ctx, depth + 1)
            return NOT_LITERAL if inner is NOT_LITERAL else not inner
        if isinstance(expr, ast.BoolOp):
            return self._boolean(isinstance(expr.op, ast.And), expr.values, ctx, depth)
        if isinstance(expr, ast.Dict):
            mapping: dict[object, object] = {}
            for key_expr, value in zip(expr.keys, expr.values, strict=True):
                if key_expr is None:  # `**other`
                    return NOT_LITERAL
                key = self.literal(key_expr, ctx, depth + 1)
                if not isinstance(key, (str, int)):
                    return NOT_LITERAL
                mapping[key] = self.literal(value, ctx, depth + 1)
            return mapping  # values may be NOT_LITERAL: a key read from it is then unknown
        if isinstance(expr, ast.Call):
            return self._call(expr, ctx, depth)
        if isinstance(expr, ast.Subscript) and (index := one_index(ctx.analysis.model, expr)) is not None:
            container = self.literal(expr.value, ctx, depth + 1)
            key = self.literal(index, ctx, depth + 1)
            if isinstance(container, dict) and isinstance(key, (str, int)):
                return container.get(key, NOT_LITERAL)
            return NOT_LITERAL
        if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
            return self._display(expr, ctx, depth)
        return literal_value(expr, ctx.analysis.model)

    def _name(self, expr: ast.Name, ctx: AstContext, depth: int) -> object:
        """A name: a parameter (its argument or default), a name assigned once."""
        model = ctx.analysis.model
        if expr not in model.parents:
            return NOT_LITERAL
        bindings = skip_self_copies(model.lookup(expr.id, model.scope_of(expr)), model)
        if len(bindings) > 1:  # `norm = {...}[norm]`: a binding's own value reads the name before it
            ancestors = {id(a) for a in model.ancestors(expr)}
            bindings = [b for b in bindings if not (id(b.value) in ancestors and _runs_once(b, model))]
        if not bindings and expr.id in _BUILTIN_TYPES:
            return _BuiltinType(expr.id)
        if len(bindings) != 1:
            return literal_value(expr, model) if bindings else NOT_LITERAL
        binding = bindings[0]
        if binding in ctx.env:
            arg, arg_ctx = ctx.env[binding]
            return self.literal(arg, arg_ctx, depth + 1)
        if binding.kind is BindingKind.PARAMETER and isinstance(binding.node, ast.arg):
            function = binding.scope.node
            is_init = isinstance(function, _FUNCTIONS) and function.name == "__init__"
            default = binding_default(binding)
            if default is None:
                return NOT_LITERAL
            if not is_init and (ctx.open_call or function is not ctx.bound):
                return NOT_LITERAL
            if _is_star_parameter(binding):
                return NOT_LITERAL
            return self.literal(default, Context(ctx.analysis, ctx.self_class), depth + 1)
        if binding.kind is BindingKind.ASSIGNMENT and binding.value is not None:
            return self.literal(binding.value, ctx, depth + 1)
        return NOT_LITERAL

    def _self_attribute(self, expr: ast.Attribute, ctx: AstContext, depth: int) -> object:
        """``self.attr`` assigned once in the class, by the constructor from its arguments."""
        model = ctx.analysis.model
        if not (isinstance(expr.value, ast.Name) and ctx.self_class is not None and expr.value in model.parents):
            return NOT_LITERAL
        function = model.enclosing(expr, *_FUNCTIONS)
        if not (isinstance(function, _FUNCTIONS) and self_parameter(function) == expr.value.id):
            return NOT_LITERAL
        assigned = [
            (value, info, method, path)
            for info in class_mro(ctx.self_class)
            for value, method, path in info.attributes.get(expr.attr, ())
        ]
        if (
            len(assigned) == 1
            and not assigned[0][3]  # a position of a call's result: not a literal
            and _constructor_setting(assigned[0][0], assigned[0][2])
            and not self.assigned_outside(assigned[0][1].analysis, expr.attr, assigned[0][2], ctx.self_class)
        ):
            value, info, _, _ = assigned[0]
            owner_ctx: AstContext = Context(info.analysis, ctx.self_class, ctx.self_env, self_env=ctx.self_env)
            return self.literal(value, owner_ctx, depth + 1)
        return NOT_LITERAL

    def _boolean(self, is_and: bool, values: list[ast.expr], ctx: AstContext, depth: int) -> object:
        """``a and b``, ``a or b``, as Python computes them, when what decides is known; more
        operands are read nested (``(a and b) and c``), each level one deeper."""
        if len(values) == 1:
            return self.literal(values[0], ctx, depth)
        if depth > MAX_EVAL_DEPTH:  # the depth check of the inner operation
            return NOT_LITERAL
        left = self._boolean(is_and, values[:-1], ctx, depth + 1) if len(values) > 2 else self.literal(values[0], ctx, depth + 1)
        if left is not NOT_LITERAL and bool(left) is not is_and:
            return left  # `False and ...`, `True or ...`: decided by the left operand
        right = self.literal(values[-1], ctx, depth + 1)
        if left is NOT_LITERAL:
            # `x and False` is falsy and `x or True` truthy whatever x is
            if right is not NOT_LITERAL and bool(right) is not is_and:
                return bool(right)
            return NOT_LITERAL
        return right

    def _call(self, expr: ast.Call, ctx: AstContext, depth: int) -> object:
        """``type(x)``, ``isinstance(x, kinds)`` of builtin types, ``dict(k=v, ...)``."""
        model = ctx.analysis.model
        if len(expr.args) in (1, 2) and not expr.keywords and not any(isinstance(a, ast.Starred) for a in expr.args):
            called = model.qualified_names(expr.func) if expr.func in model.parents else frozenset()
            if "builtins.type" in called and len(expr.args) == 1:
                value = self.literal(expr.args[0], ctx, depth + 1)
                if value is NOT_LITERAL or isinstance(value, (dict, _BuiltinType)):
                    return NOT_LITERAL
                return _BuiltinType(type(value).__name__)
            if "builtins.isinstance" in called and len(expr.args) == 2:
                value = self.literal(expr.args[0], ctx, depth + 1)
                kinds = self.literal(expr.args[1], ctx, depth + 1)
                kinds = kinds if isinstance(kinds, tuple) else (kinds,)
                if value is NOT_LITERAL or isinstance(value, (dict, _BuiltinType)):
                    return NOT_LITERAL
                if not kinds or not all(isinstance(k, _BuiltinType) for k in kinds):
                    return NOT_LITERAL
                return any(isinstance(value, _BUILTIN_TYPES[k.name]) for k in kinds)
        if "builtins.dict" in model.qualified_names(expr.func):
            if expr.args or any(k.arg is None for k in expr.keywords):
                return NOT_LITERAL
            return {k.arg: self.literal(k.value, ctx, depth + 1) for k in expr.keywords}
        return literal_value(expr, model)

    def _display(self, expr: ast.Tuple | ast.List | ast.Set, ctx: AstContext, depth: int) -> object:
        """A tuple, list or set display whose elements are all known."""
        items = [self.literal(e.value if isinstance(e, ast.Starred) else e, ctx, depth + 1) for e in expr.elts]
        if any(i is NOT_LITERAL for i in items) or any(isinstance(e, ast.Starred) for e in expr.elts):
            return NOT_LITERAL
        if isinstance(expr, ast.List):
            return list(items)
        if isinstance(expr, ast.Set):
            try:
                return frozenset(items)
            except TypeError:  # unhashable items
                return NOT_LITERAL
        return tuple(items)

    def assigned_outside(self, analysis: AstAnalysis, attr: str, init: AstMethod | None, owner: AstClassInfo | None = None) -> bool:
        """Whether ``<anything>.<attr> = ...`` (or ``+=``) appears in ``analysis``'s module
        outside the function ``init`` (the module is read whole, so no statement is left
        out)."""
        key = (id(analysis), attr)
        found = self._outside.get(key)
        if found is None:
            found = []
            for mutation in analysis.model.mutations:
                if mutation.kind not in ("attribute", "augmented"):
                    continue
                if any(isinstance(t, ast.Attribute) and t.attr == attr for t in _targets(mutation.node)):
                    found.append(mutation.node)
            self._outside[key] = found
        writes = [node for node in found if not any(a is init for a in analysis.model.ancestors(node))]
        if owner is None or not writes:
            return bool(writes)
        related = _related_classes(analysis, owner)
        for node in writes:
            writer = _self_write_class(analysis, node, attr)
            if writer is None or writer.name in related:
                return True
        return False

    def decide(self, test: ast.expr, ctx: AstContext) -> bool | None:
        """Whether the branch condition ``test`` is true (``True``/``False``) when evaluated
        in ``ctx``, or ``None`` when it is not decided (then both branches may run)."""
        value = self.literal(test, ctx)
        if value is NOT_LITERAL:
            return self._decide_by_choices(test, ctx)
        try:
            return bool(value)
        except Exception:  # noqa: BLE001 - a literal whose truth cannot be taken
            return None

    def choices(self, expr: ast.expr, ctx: AstContext, depth: int = 0) -> frozenset[object] | None:
        """The values ``expr`` may have in ``ctx`` when not one is known (its literal, a
        ``.lower()``/``.upper()`` of such values, the union over the bindings that may reach a
        name, a configuration field's shipped values); ``None`` when unknown."""
        value = self.literal(expr, ctx, depth)
        if value is not NOT_LITERAL:
            return frozenset({value}) if isinstance(value, (str, int, float, bool, type(None))) else None
        if depth > MAX_EVAL_DEPTH:
            return None
        model = ctx.analysis.model
        if isinstance(expr, ast.Call) and not expr.args and not expr.keywords and isinstance(expr.func, ast.Attribute):
            method = expr.func.attr
            inner = self.choices(expr.func.value, ctx, depth + 1) if method in ("lower", "upper") else None
            if inner is None:
                return None
            return frozenset(getattr(v, method)() for v in inner if isinstance(v, str))
        name = expr.value if isinstance(expr, ast.Attribute) else expr
        if not isinstance(name, ast.Name) or name not in model.parents:
            return None
        # a binding whose own statement holds the read (`t = t.lower()`) does not reach it
        bindings = [b for b in reaching(model, name) if not any(a is b.node for a in model.ancestors(name))]
        if len(bindings) > 1 and isinstance(expr, ast.Name):
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
        if isinstance(expr, ast.Attribute):
            copied = binding.value if binding.kind is BindingKind.ASSIGNMENT else None
            arguments = ordered_arguments(copied) if isinstance(copied, ast.Call) else []
            if isinstance(copied, ast.Call) and arguments and isinstance(argument_value(arguments[0]), ast.Name):
                # `cfg = replace(cfg, **kwargs)`: the configuration it was given, overlaid
                source: ast.Name = argument_value(arguments[0])  # type: ignore[assignment]
                func = copied.func
                called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
                copies = [b for b in reaching(model, source) if b is not binding] if called == "replace" else []
                binding = copies[0] if len(copies) == 1 else binding
            if binding in ctx.env or binding.kind is not BindingKind.PARAMETER or not isinstance(binding.node, ast.arg):
                return None
            cls = annotated_class(ctx.analysis, binding.node)
            if cls is None:
                return None
            key = (id(ctx.analysis), id(cls), expr.attr)
            if key not in self._shipped:
                self._shipped[key] = shipped_values(ctx.analysis, cls, expr.attr)
            return self._shipped[key]
        return self._binding_choices(binding, ctx, depth)

    def _binding_choices(self, binding: AstBinding, ctx: AstContext, depth: int) -> frozenset[object] | None:
        """:meth:`choices` of a name's binding: the argument bound to a parameter, an assigned value."""
        if binding in ctx.env:
            arg, arg_ctx = ctx.env[binding]
            return self.choices(arg, arg_ctx, depth + 1)
        if binding.kind is BindingKind.ASSIGNMENT and binding.value is not None:
            return self.choices(binding.value, ctx, depth + 1)
        return None

    def _decide_by_choices(self, test: ast.expr, ctx: AstContext) -> bool | None:
        """``test`` decided by every value its operand may have (:meth:`choices`)."""
        operand = test.left if isinstance(test, ast.Compare) and len(test.ops) == 1 else test
        if not isinstance(operand, (ast.Name, ast.Attribute, ast.Call)):
            return None
        values = self.choices(operand, ctx)
        if not values:
            return None
        if operand is test:
            outcomes = {bool(v) for v in values}
        else:
            assert isinstance(test, ast.Compare)
            right = self.literal(test.comparators[0], ctx)
            if right is NOT_LITERAL:
                return None
            results = [_compare(test.ops[0], v, right) for v in values]
            if any(r is NOT_LITERAL for r in results):
                return None
            outcomes = {bool(r) for r in results}
        return outcomes.pop() if len(outcomes) == 1 else None

    def runs(self, node: ast.AST, ctx: AstContext) -> bool:
        """Whether ``node`` can run when its function runs in ``ctx``: ``False`` when it sits
        in a branch of an ``if`` (statement or expression) that ``ctx`` decides against."""
        model = ctx.analysis.model
        below = node
        for ancestor in model.ancestors(node):
            if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                return True
            if isinstance(ancestor, (ast.If, ast.IfExp)) and below is not ancestor.test:
                taken = self.decide(ancestor.test, ctx)
                in_body = any(s is below for s in ancestor.body) if isinstance(ancestor, ast.If) else below is ancestor.body
                if taken is not None and in_body is not taken:
                    return False
            below = ancestor
        return True

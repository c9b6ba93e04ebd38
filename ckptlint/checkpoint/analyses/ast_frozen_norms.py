"""BatchNorm layers that a backbone keeps in eval mode while it trains (CKP203), into
:class:`~ckptlint.checkpoint.analyses.frozen_norms.Freeze` records (:mod:`ckptlint.checkpoint.analyses.frozen_norms`
tells what is judged).

A block whose body sits on its header's line (``if mode: ...``,
``if isinstance(m, _BatchNorm): m.eval()``) holds no statement; the second parameter of
``train`` and the parameters whose default is followed are positional-or-keyword and
keyword-only ones (not positional-only); ``a and b and c`` is one ``BoolOp``.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ckptlint.checkpoint.analyses.ast_class_users import class_users
from ckptlint.checkpoint.analyses.frozen_norms import Freeze
from ckptlint.checkpoint.evaluator.ast_class_summary import self_parameter
from ckptlint.checkpoint.sites.ast_options import literal_value, ordered_arguments
from ckptlint.checkpoint.sites.options import NOT_LITERAL
from ckptlint.facts.torch_facts import batchnorm_instances
from ckptlint.semantic.ast_lines import body_on_header

if TYPE_CHECKING:
    from ckptlint.checkpoint.evaluator.ast_class_summary import AstClassInfo, AstMethod
    from ckptlint.checkpoint.evaluator.ast_regions import AstRegionBuilder
    from ckptlint.checkpoint.sites.ast_site_builders import AstSite
    from ckptlint.semantic.ast_analysis import AstAnalysis
    from ckptlint.semantic.ast_model import AstModel

__all__ = ["Freeze", "frozen_batchnorms", "parent_freeze"]


def frozen_batchnorms(builder: AstRegionBuilder, site: AstSite, analysis: AstAnalysis) -> Freeze | None:
    """The BatchNorm layers that the backbone owning ``site``'s class keeps in eval mode in
    training with its default settings, or ``None``."""
    cls = builder.enclosing_class(analysis, site.call)
    if cls is None:
        return None
    known: dict[ast.ClassDef, Freeze | None] = analysis.derived.setdefault("frozen_batchnorms", {})  # type: ignore[assignment]
    if cls.node not in known:
        known[cls.node] = _frozen_for(builder, analysis, cls)
    return known[cls.node]


def _frozen_for(builder: AstRegionBuilder, analysis: AstAnalysis, cls: AstClassInfo) -> Freeze | None:
    own = _freeze(builder, cls)
    if own is not None:
        return own  # the backbone checkpoints its own stages
    users, complete = class_users(builder, analysis, cls)
    if not users or not complete:
        return None
    freezes = [_freeze(builder, user) for user in users]
    if any(f is None for f in freezes):
        return None
    layers = frozenset.intersection(*(f.layers for f in freezes))  # type: ignore[union-attr]
    if not layers:
        return None
    owners = tuple(dict.fromkeys(o for f in freezes for o in f.owners))  # type: ignore[union-attr]
    flags = tuple(dict.fromkeys(g for f in freezes for g in f.flags))  # type: ignore[union-attr]
    return Freeze(layers, owners, flags)


def parent_freeze(builder: AstRegionBuilder, parent: AstClassInfo) -> Freeze | None:
    """What the ``train`` of ``parent`` keeps in eval mode with its default settings, or
    ``None``."""
    return _freeze(builder, parent)


# ------------------------------------------------------------------ what train() does
def _freeze(builder: AstRegionBuilder, cls: AstClassInfo) -> Freeze | None:
    """What ``cls``'s ``train`` (its own or a base class's of the tree) freezes by default."""
    found = builder.method(cls, "train")
    if found is None:
        return None
    train, owner = found
    self_name = self_parameter(train)
    params = train.args.args
    model = owner.analysis.model
    if self_name is None or body_on_header(model, train.body):
        return None
    mode = params[1].arg if len(params) > 1 else None
    statements = train.body
    start = next((i for i, s in enumerate(statements) if _calls_super_train(s)), None)
    if start is None:
        return None
    for statement in statements[start + 1 :]:
        for tests, kinds in _freezing_loops(model, statement, self_name, []):
            flags: list[str] = []
            if all(_on_by_default(builder, cls, test, self_name, mode, flags) for test in tests) and flags:
                layers = frozenset().union(*(batchnorm_instances(q) for q in _qualified(model, kinds)))
                if layers:
                    return Freeze(layers, (cls.name,), tuple(flags))
    return None


def _calls_super_train(statement: ast.stmt) -> bool:
    """``super().train(mode)`` / ``super(ResNet, self).train(mode)`` as a statement."""
    call = statement.value if isinstance(statement, ast.Expr) else None
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
        return False
    receiver = call.func.value
    return (
        call.func.attr == "train"
        and isinstance(receiver, ast.Call)
        and isinstance(receiver.func, ast.Name)
        and receiver.func.id == "super"
    )


def _block(model: AstModel, body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of a block, none when it sits on its header's line."""
    return [] if body_on_header(model, body) else body


def _freezing_loops(model: AstModel, statement: ast.stmt, self_name: str, tests: list[ast.expr]) -> list[tuple[list[ast.expr], ast.expr]]:
    """``for m in self.modules(): if isinstance(m, T): m.eval()`` reached through the bodies
    (never the ``else``) of ``if`` statements: ``(the tests on the way, T)`` for each."""
    found: list[tuple[list[ast.expr], ast.expr]] = []
    if isinstance(statement, ast.If):
        for inner in _block(model, statement.body):
            found += _freezing_loops(model, inner, self_name, [*tests, statement.test])
    elif (
        isinstance(statement, (ast.For, ast.AsyncFor))
        and isinstance(statement.target, ast.Name)
        and _modules_of(statement.iter, self_name)
    ):
        variable = statement.target.id
        for inner in _block(model, statement.body):
            kinds = _isinstance_eval(model, inner, variable)
            if kinds is not None:
                found.append((tests, kinds))
    return found


def _modules_of(expr: ast.expr, self_name: str) -> bool:
    """``self.modules()``."""
    return (
        isinstance(expr, ast.Call)
        and not expr.args
        and not expr.keywords
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr == "modules"
        and isinstance(expr.func.value, ast.Name)
        and expr.func.value.id == self_name
    )


def _argument_value(arg: ast.expr | ast.keyword) -> ast.expr:
    """What an argument passes: a keyword's or a starred one's value, else the argument."""
    return arg.value if isinstance(arg, (ast.keyword, ast.Starred)) else arg


def _isinstance_eval(model: AstModel, statement: ast.stmt, variable: str) -> ast.expr | None:
    """``T`` of ``if isinstance(m, T): ... m.eval() ...`` (``m.eval()`` a statement of the body)."""
    if not isinstance(statement, ast.If) or not isinstance(statement.test, ast.Call):
        return None
    test = statement.test
    args = ordered_arguments(test)
    if not (isinstance(test.func, ast.Name) and test.func.id == "isinstance" and len(args) == 2):
        return None
    first = _argument_value(args[0])
    if not (isinstance(first, ast.Name) and first.id == variable):
        return None
    for inner in _block(model, statement.body):
        call = inner.value if isinstance(inner, ast.Expr) else None
        if (
            isinstance(call, ast.Call)
            and not call.args
            and not call.keywords
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "eval"
            and isinstance(call.func.value, ast.Name)
            and call.func.value.id == variable
        ):
            return _argument_value(args[1])
    return None


def _qualified(model: AstModel, kinds: ast.expr) -> set[str]:
    """The qualified names of the classes ``isinstance`` tests (a tuple: each element)."""
    elements = [_argument_value(e) for e in kinds.elts] if isinstance(kinds, ast.Tuple) else [kinds]
    names: set[str] = set()
    for element in elements:
        if element in model.parents or isinstance(element, ast.Attribute):
            names |= set(model.qualified_names(element))
    return names


def _on_by_default(
    builder: AstRegionBuilder, cls: AstClassInfo, test: ast.expr, self_name: str, mode: str | None, flags: list[str]
) -> bool:
    """Whether ``test`` is true in training (``mode`` true) with ``cls``'s default settings:
    a conjunction of ``mode`` and ``self.<flag>`` whose default is ``True`` (each flag is
    added to ``flags``)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return all(_on_by_default(builder, cls, value, self_name, mode, flags) for value in test.values)
    if isinstance(test, ast.Name) and mode is not None and test.id == mode:
        return True
    if isinstance(test, ast.Attribute) and isinstance(test.value, ast.Name) and test.value.id == self_name:
        flag = test.attr
        if _flag_default(builder, cls, flag) is True:
            flags.append(flag)
            return True
    return False


def _defaults(function: AstMethod) -> dict[str, ast.expr | None]:
    """The default of each positional-or-keyword and keyword-only parameter (``None``: none),
    positional-or-keyword ones first, in order."""
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    given = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    found: dict[str, ast.expr | None] = {}
    for param, default in zip(positional, given, strict=True):
        if param in args.args:
            found.setdefault(param.arg, default)
    for param, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        found.setdefault(param.arg, kw_default)
    return found


def _flag_default(builder: AstRegionBuilder, cls: AstClassInfo, flag: str) -> object:
    """The value ``self.<flag>`` has in an instance of ``cls`` built with default arguments."""
    order = builder.mro(cls)
    params: set[str] = set()
    for info in order:
        for value, method, path in info.attributes.get(flag, ()):
            if method is None or method.name != "__init__" or not isinstance(value, ast.Name) or path:
                return NOT_LITERAL
            if builder.assigned_outside(info.analysis, flag, method):
                return NOT_LITERAL
            params.add(value.id)
    if len(params) != 1:
        return NOT_LITERAL
    (param,) = params
    for info in order:
        init = info.methods.get("__init__")
        if init is None:
            continue
        defaults = _defaults(init)
        if param in defaults:
            default = defaults[param]
            return NOT_LITERAL if default is None else literal_value(default, info.analysis.model)
        passed = [
            node
            for statement in init.body
            for node in ast.walk(statement)
            if isinstance(node, ast.keyword) and node.arg == param
        ]
        if passed:
            first = min(passed, key=lambda k: (k.lineno, k.col_offset))
            return literal_value(first.value, info.analysis.model)
    return NOT_LITERAL

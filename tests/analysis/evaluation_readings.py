"""The values of the expression evaluator on ``ast`` that the golden answers of
``test_ast_evaluation.py`` record (they were compared with libcst's while it lived): for every
expression of interest (the checkpointed callable of every site, the callee of every call in
a method, every ``self.X`` read in ``forward``, every module-level name read), its values in
a plain and a complete query, and what an instance of every class holds, each value
described (kind, the ``def`` of a function, a class's module and qualified name, ...);
positions 1-based ``(row, col)`` start and end."""

from __future__ import annotations

import ast
import warnings
from collections import Counter

from ckptlint.checkpoint.evaluator import ast_evaluation, ast_imports, ast_literals
from ckptlint.checkpoint.evaluator.ast_regions import FILE_BUDGET, QUERY_BUDGET, EvaluationBudget
from ckptlint.checkpoint.evaluator.denotations import (
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
    TorchValue,
)
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.checkpoint.sites.options import NOT_LITERAL
from ckptlint.checkpoint.sites.site import SiteForm
from ckptlint.facts.apis import ApiKind
from ckptlint.semantic.ast_analysis import AstAnalysis
from ckptlint.semantic.project import AstProject
from ckptlint.text.source import SourceFile

__all__ = ["evaluation_answers"]

_MAX_LEVELS = 6


def _norm(value: object) -> str:
    """A literal as text."""
    if value is NOT_LITERAL:
        return "NOT_LITERAL"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_norm(v)}" for k, v in value.items()) + "}"
    return repr(value)


class _Side:
    """The evaluator and how its nodes are described (:class:`_AstSide` says how)."""

    def __init__(self, evaluator: object, budget: EvaluationBudget) -> None:
        self.evaluator = evaluator
        self.budget = budget
        self.out: list[tuple] = []

    def ask(self, kind: str, position: tuple, expr: object, analysis: object) -> None:
        """Both queries of ``expr`` (plain, complete), their answers described."""
        for complete in (False, True):
            with self.budget.query(QUERY_BUDGET, complete):
                ctx = Context(analysis, self.evaluator.enclosing_class(analysis, expr))  # type: ignore[attr-defined]
                found = self.evaluator.values(expr, ctx)  # type: ignore[attr-defined]
            self.out.append((kind, complete, position, [self.describe(v) for v in found]))

    def ask_held(self, analysis: object, node: object) -> None:
        """What an instance of class ``node`` holds (:meth:`ExpressionEvaluator.held`), as
        the region builder asks it: one query, containers opened."""
        with self.budget.query(QUERY_BUDGET):
            info = self.evaluator.class_info(analysis, node)  # type: ignore[attr-defined]
            found = self.evaluator.held(InstanceValue(info))  # type: ignore[attr-defined]
        self.out.append(("held", False, self.def_key(analysis, node), [self.describe(v) for v in found]))

    def describe(self, value: object, level: int = 0) -> tuple:
        if level > _MAX_LEVELS:
            return ("...",)
        if isinstance(value, ForwardingValue):
            return ("forwarding", value.wrapper.holder, [self.describe(v, level + 1) for v in value.wrapped])
        if isinstance(value, TorchValue):
            return ("torch",)
        if isinstance(value, ModuleValue):
            return ("module", value.module)
        if isinstance(value, FunctionValue):
            ctx = value.ctx
            bound = sorted(b.name for b in ctx.env)
            self_class = ctx.self_class.qualname if ctx.self_class is not None else None
            return ("function", self.def_key(ctx.analysis, value.node), value.bound_method, ctx.open_call, self_class, bound)
        if isinstance(value, ClassValue):
            return ("class", value.info.analysis.module_name, value.info.qualname, value.partial)
        if isinstance(value, InstanceValue):
            env = sorted(b.name for b in value.env)
            return ("instance", value.info.analysis.module_name, value.info.qualname, env, isinstance(value.env, ConstructorEnv))
        if isinstance(value, LayerClassValue):
            return ("layer class", value.qualified)
        if isinstance(value, LayerUse):
            where = self.position(value.ctx.analysis, value.call) if value.call is not None else None
            return ("layer", value.qualified, value.ctx.analysis.module_name, where, _norm(value.config))
        if isinstance(value, ContainerValue):
            keys = None if value.keyed is None else [_norm(k) for k, _ in value.keyed]
            return ("container", value.exact, value.sequential, keys, [self.describe(e, level + 1) for e in value.elements])
        return ("opaque",)


class _AstSide(_Side):
    def __init__(self, loader: AstProject | None) -> None:
        budget = EvaluationBudget(FILE_BUDGET)
        resolver = ast_imports.ImportResolver(loader)
        super().__init__(ast_evaluation.ExpressionEvaluator(budget, ast_literals.LiteralDecisions(), resolver), budget)

    def position(self, analysis: object, node: object) -> tuple:
        return analysis.range(node)  # type: ignore[attr-defined]

    def def_key(self, analysis: object, node: object) -> tuple:
        if isinstance(node, ast.Lambda):
            return ("lambda", analysis.module_name, self.position(analysis, node))  # type: ignore[attr-defined]
        scope = analysis.model.scope_of_definition.get(node)  # type: ignore[attr-defined]
        return (analysis.module_name, scope.qualname if scope else "?", node.lineno)  # type: ignore[attr-defined]


def _ast_expressions(analysis: AstAnalysis, sites: Counter[tuple]) -> list[tuple[str, tuple, ast.expr]]:
    """``(kind, position, expression)`` of the module's expressions of interest on ``ast``; the
    sites' callables are those at the positions of ``sites`` (counted)."""
    found: list[tuple[str, tuple, ast.expr]] = []
    wanted = Counter(sites)
    for node in ast.walk(analysis.tree):  # outer nodes first: a parenthesised name is its own node
        if isinstance(node, ast.expr) and wanted:
            where = analysis.range(node)
            if wanted[where] > 0:
                found += [("site", where, node)] * wanted.pop(where)
    for cls in [n for n in ast.walk(analysis.tree) if isinstance(n, ast.ClassDef)]:
        for method in cls.body:
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(method):
                if isinstance(node, ast.Call):
                    found.append(("call", analysis.range(node.func), node.func))
            params = [*method.args.posonlyargs, *method.args.args]
            if method.name == "forward" and params:
                for node in ast.walk(method):
                    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                        if isinstance(node.value, ast.Name) and node.value.id == params[0].arg:
                            found.append(("self read", analysis.range(node), node))
    stack: list[ast.AST] = list(analysis.tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            found.append(("name", analysis.range(node), node))
        stack.extend(ast.iter_child_nodes(node))
    return sorted(found, key=lambda item: (item[1], item[0]))


def _site_callables(analysis: AstAnalysis) -> Counter[tuple]:
    """Where the callables of the module's checkpoint sites (found for the module alone) are:
    not of helper calls nor of policies (whose callable is no node of the module)."""
    saved, analysis.project = analysis.project, None
    try:
        sites = ast_site_index(analysis).sites
    finally:
        analysis.project = saved
    return Counter(
        analysis.range(s.function)
        for s in sites
        if s.function is not None and s.form is not SiteForm.HELPER_CALL and s.api.kind is not ApiKind.POLICY
    )


def evaluation_answers(
    text: str,
    module_name: str = "pkg.mod",
    is_package: bool = False,
    path: str = "<compared>",
    loader: AstProject | None = None,
) -> tuple[list[tuple], Counter[str], Counter[str]]:
    """The answers of the evaluator for ``text``'s expressions of interest (sorted), how many
    of each kind were asked and how many got a value in the plain query; with ``loader``
    imported names are followed into the other modules of the tree."""
    source = SourceFile(path, text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(text)
    analysis = AstAnalysis(source, tree, module_name, is_package)
    analysis.project = loader
    side = _AstSide(loader)
    items = _ast_expressions(analysis, _site_callables(analysis))
    for kind, where, expr in items:
        side.ask(kind, where, expr, analysis)
    classes = [n for n in ast.walk(analysis.tree) if isinstance(n, ast.ClassDef)]
    for node in sorted(classes, key=lambda n: (n.lineno, n.col_offset)):
        side.ask_held(analysis, node)
    asked = Counter(kind for kind, _, _ in items)
    asked["held"] += len(classes)
    answered = Counter(reading[0] for reading in side.out if reading[3] and not reading[1])
    analysis.release()
    return sorted(side.out, key=repr), asked, answered

"""The expression evaluator on CPython's ``ast`` against libcst's: same values, and what each costs.

For one text, :func:`compare` reads the module both ways and builds each side's evaluator as
the region builder builds libcst's (an :class:`EvaluationBudget` of ``FILE_BUDGET`` steps, the
side's ``LiteralDecisions``, ``ImportResolver`` and ``ExpressionEvaluator``), then asks both,
in the same order, for the values of every expression of interest, each in its own query
of ``QUERY_BUDGET`` steps evaluated where it is written (``self`` an instance of the enclosing
class), once plainly and once as a complete query:

- ``site``: the checkpointed callable of every checkpoint site of the module (libcst's sites,
  found for the module alone; the ``ast`` node at the same position);
- ``call``: the callee of every call in every function of every class;
- ``self read``: every ``self.X`` read in a ``forward`` method;
- ``name``: every name read at module level (outside functions, classes and lambdas);
- ``held``: for every class of the module, what an instance of it holds (``held``, after the
  expressions above, in the order of the classes' ``class`` lines).

The expressions are keyed by their 1-based ``(row, column)`` start and end; the reads
(``self read``, ``name``) are chosen on ``ast`` (its load contexts) and looked up in libcst's
tree by position. Each answer is compared as a list of descriptions: the kind of value, the
qualified name of a function's ``def`` (or a lambda's position), whether a method is bound
and the parameters its context binds, a class's module and qualified name, an instance's
class and the constructor's bound parameters, a layer's table name, where its constructor
call is and its config, containers with their elements, opaque and torch values.

Over a folder (``python benchmarks/ast_evaluation_parity.py TREE [TREE ...]``): the files the
gate lets through, each compared with a loader of the tree around it (one
``Project()`` for libcst, an ``AstProject`` over another for ``ast``, so imported
names are followed into other modules), with the CPU time of each side's evaluations, summed.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from ckptlint.checkpoint.evaluator import ast_evaluation, ast_imports, ast_literals, evaluation, imports, literals
from ckptlint.checkpoint.evaluator.budget import EvaluationBudget
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
from ckptlint.checkpoint.evaluator.regions import FILE_BUDGET, QUERY_BUDGET
from ckptlint.checkpoint.sites.options import NOT_LITERAL
from ckptlint.checkpoint.sites.sites import collect_sites
from ckptlint.semantic.analysis import ModuleAnalysis
from ckptlint.semantic.ast_analysis import AstAnalysis
from ckptlint.semantic.parse import parse_module_unvalidated
from ckptlint.semantic.project import AstProject, Project, module_name_for
from ckptlint.semantic.walk import iter_tree
from ckptlint.text.positions import node_offsets
from ckptlint.text.source import SourceFile

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling modules

from parity_files import comparable_files, multiset_mismatches

_TIMES = ("libcst_parse", "libcst_model", "libcst_values", "ast_parse", "ast_model", "ast_values")
KINDS = ("site", "call", "self read", "name", "held")
_MAX_LEVELS = 6


@dataclass
class EvaluationComparison:
    """What :func:`compare` compared (libcst's expressions, by kind), how many answers were
    not empty, and where the two sides differ."""

    items: Counter[str] = field(default_factory=Counter)
    answered: Counter[str] = field(default_factory=Counter)
    mismatches: list[str] = field(default_factory=list)
    times: dict[str, float] = field(default_factory=lambda: dict.fromkeys(_TIMES, 0.0))

    def add(self, other: EvaluationComparison) -> None:
        self.items.update(other.items)
        self.answered.update(other.answered)
        self.mismatches += other.mismatches
        for key, value in other.times.items():
            self.times[key] += value


def _norm(value: object) -> str:
    """A literal as text."""
    if value is NOT_LITERAL:
        return "NOT_LITERAL"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_norm(v)}" for k, v in value.items()) + "}"
    return repr(value)


class _Side:
    """One side's evaluator and how its nodes are described."""

    def __init__(self, evaluator: object, budget: EvaluationBudget) -> None:
        self.evaluator = evaluator
        self.budget = budget
        self.out: list[tuple] = []

    def position(self, analysis: object, node: object) -> tuple: ...
    def def_key(self, analysis: object, node: object) -> tuple: ...

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


class _CstSide(_Side):
    def __init__(self, project: Project | None) -> None:
        budget = EvaluationBudget(FILE_BUDGET)
        resolver = imports.ImportResolver(project)
        super().__init__(evaluation.ExpressionEvaluator(budget, literals.LiteralDecisions(), resolver), budget)
        self._offsets: dict[int, tuple[object, dict]] = {}

    def offsets(self, analysis: ModuleAnalysis) -> dict:
        known = self._offsets.get(id(analysis))
        if known is None or known[0] is not analysis:
            known = self._offsets[id(analysis)] = (analysis, node_offsets(analysis.module))
        return known[1]

    def position(self, analysis: object, node: object) -> tuple:
        start, end = self.offsets(analysis)[node]  # type: ignore[arg-type]
        return (analysis.source.position(start), analysis.source.position(end))  # type: ignore[attr-defined]

    def def_key(self, analysis: object, node: object) -> tuple:
        if isinstance(node, cst.Lambda):
            return ("lambda", analysis.module_name, self.position(analysis, node))  # type: ignore[attr-defined]
        scope = analysis.model.scope_of_definition.get(node)  # type: ignore[attr-defined]
        return (analysis.module_name, scope.qualname if scope else "?", self.position(analysis, node.name)[0][0])  # type: ignore[attr-defined]


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


# ------------------------------------------------------------------ expressions of interest
def _ast_expressions(analysis: AstAnalysis, sites: Counter[tuple]) -> list[tuple[str, tuple, ast.expr]]:
    """``(kind, position, expression)`` of the module's expressions of interest on ``ast``; the
    sites' callables are those at the positions of ``sites`` (libcst's, counted)."""
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


def _cst_sites(analysis: ModuleAnalysis, side: _CstSide) -> list[tuple[str, tuple, cst.BaseExpression]]:
    """The callables of the module's checkpoint sites (found alone) that are nodes of its tree."""
    offsets = side.offsets(analysis)
    return [
        ("site", side.position(analysis, site.function), site.function)
        for site in collect_sites(analysis.model).sites
        if site.function is not None and site.function in offsets
    ]


def _cst_expressions(analysis: ModuleAnalysis, side: _CstSide, reads: set[tuple]) -> list[tuple[str, tuple, cst.BaseExpression]]:
    """The same on libcst: calls found on its tree, the reads of ``reads`` (kind, position:
    chosen on ``ast``) looked up by position."""
    found: list[tuple[str, tuple, cst.BaseExpression]] = []
    position = side.position
    for cls in [n for n in iter_tree(analysis.module) if isinstance(n, cst.ClassDef)]:
        for method in cls.body.body:
            if not isinstance(method, cst.FunctionDef):
                continue
            for node in iter_tree(method):
                if isinstance(node, cst.Call):
                    found.append(("call", position(analysis, node.func), node.func))
    for node in side.offsets(analysis):
        if isinstance(node, (cst.Name, cst.Attribute)):
            where = position(analysis, node)
            for kind in ("self read", "name"):
                if (kind, where) in reads and (kind == "name") == isinstance(node, cst.Name):
                    found.append((kind, where, node))
    return sorted(found, key=lambda item: (item[1], item[0]))


# ------------------------------------------------------------------ one module
def compare(
    text: str,
    module_name: str = "",
    is_package: bool = False,
    path: str = "<compared>",
    project: Project | None = None,
    loader: AstProject | None = None,
) -> EvaluationComparison:
    """Ask both evaluators for the values of ``text``'s expressions of interest and compare
    them (see the module docstring); with ``project`` and ``loader`` (libcst's and ``ast``'s
    loaders of the tree around the file), imported names are followed into other modules."""
    result = EvaluationComparison()
    times = result.times
    source = SourceFile(path, text)

    begin = time.process_time()
    module = parse_module_unvalidated(text)
    times["libcst_parse"] += time.process_time() - begin
    cst_analysis = ModuleAnalysis(source, module, module_name, is_package)
    cst_analysis.project = project
    begin = time.process_time()
    cst_analysis.model  # noqa: B018 - built here to time it
    times["libcst_model"] += time.process_time() - begin

    begin = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(text)
    times["ast_parse"] += time.process_time() - begin
    ast_analysis = AstAnalysis(source, tree, module_name, is_package)
    ast_analysis.project = loader
    begin = time.process_time()
    ast_analysis.model  # noqa: B018 - built here to time it
    times["ast_model"] += time.process_time() - begin

    cst_side = _CstSide(project)
    sites = _cst_sites(cst_analysis, cst_side)
    ast_side = _AstSide(loader)
    ast_items = _ast_expressions(ast_analysis, Counter(where for _, where, _ in sites))
    begin = time.process_time()
    for kind, where, expr in ast_items:
        ast_side.ask(kind, where, expr, ast_analysis)
    ast_classes = [n for n in ast.walk(ast_analysis.tree) if isinstance(n, ast.ClassDef)]
    for node in sorted(ast_classes, key=lambda n: (n.lineno, n.col_offset)):
        ast_side.ask_held(ast_analysis, node)
    times["ast_values"] += time.process_time() - begin

    reads = {(kind, where) for kind, where, _ in ast_items if kind in ("self read", "name")}
    cst_items = sorted(sites + _cst_expressions(cst_analysis, cst_side, reads), key=lambda item: (item[1], item[0]))
    begin = time.process_time()
    for kind, where, expr in cst_items:
        cst_side.ask(kind, where, expr, cst_analysis)
    cst_classes = [n for n in cst_side.offsets(cst_analysis) if isinstance(n, cst.ClassDef)]
    for node in sorted(cst_classes, key=lambda n: cst_side.position(cst_analysis, n.name)):
        cst_side.ask_held(cst_analysis, node)
    times["libcst_values"] += time.process_time() - begin

    result.items.update(kind for kind, _, _ in cst_items)
    result.items["held"] += len(cst_classes)
    result.answered.update(reading[0] for reading in cst_side.out if reading[3] and not reading[1])
    result.mismatches += multiset_mismatches(cst_side.out, ast_side.out)
    cst_analysis.release()
    ast_analysis.release()
    return result


# --------------------------------------------------------------------------- corpus runs
def run_tree(root: Path, every_file: bool = False, max_files: int | None = None) -> dict[str, object]:
    """Compare both evaluators on the (gated) files of ``root`` (the first ``max_files`` in
    path order when given), with loaders of the tree, and sum their CPU times."""
    total = EvaluationComparison()
    compared, skipped = comparable_files(root, every_file)
    compared = compared[:max_files] if max_files is not None else compared
    project = Project()
    loader = AstProject(Project())
    for one in compared:
        name, is_package, home = module_name_for(one.path)
        project.track(home)
        loader.project.track(home)
        loader.evict()
        found = compare(one.text, name, is_package, str(one.path), project, loader)
        found.mismatches = [f"{one.path.relative_to(root)}: {m}" for m in found.mismatches]
        total.add(found)
    return {
        "tree": root.name,
        "files": len(compared),
        "skipped": skipped,
        "items": {kind: total.items[kind] for kind in KINDS},
        "answered": {kind: total.answered[kind] for kind in KINDS},
        "mismatches": total.mismatches,
        "cpu_s": {key: round(value, 3) for key, value in total.times.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--all", action="store_true", help="every .py file, not only the gated ones")
    parser.add_argument("--json", type=Path, help="write the numbers here")
    parser.add_argument("--max-files", type=int, help="compare only the first N gated files of each tree")
    args = parser.parse_args(argv)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    reports = []
    for tree in args.trees:
        report = run_tree(tree.resolve(), args.all, args.max_files)
        reports.append(report)
        cpu: dict[str, float] = report["cpu_s"]  # type: ignore[assignment]
        print(
            f"{report['tree']}: {report['files']} files ({report['skipped']} skipped), compared {report['items']}, "
            f"libcst answered {report['answered']}, {len(report['mismatches'])} mismatches; "  # type: ignore[arg-type]
            f"CPU libcst values {cpu['libcst_values']:.2f} s, ast values {cpu['ast_values']:.2f} s"
        )
        for mismatch in report["mismatches"][:30]:  # type: ignore[index]
            print("  ", mismatch)
    if args.json is not None:
        args.json.write_text(json.dumps(reports, indent=2), encoding="utf-8")
    return 1 if any(r["mismatches"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())

"""The evaluator's stateless pieces on CPython's ``ast`` against libcst's: same answers, and what each costs.

For one text, :func:`compare` reads the module both ways (the module alone) and compares, as
multisets of readings, positions as 1-based ``(row, column)`` starts and ends:

- class summaries (:mod:`~ckptlint.checkpoint.evaluator.class_summary` and its ``ast`` twin),
  for every class: qualified name, methods (name, ``def`` line, ``self`` parameter,
  property), each attribute's values in order (where each starts and ends, the method that
  assigns it, the path), appended values, buffers, the method order (:func:`class_mro`), the
  torch layer it derives from (:func:`layer_base`) and, for every method name of that order,
  the class :func:`find_method` finds it in. The evaluator fills a class's bases; here a base
  is a torch layer class by its qualified name, a class of the module by a name bound once
  to it, else an opaque value (both sides alike);
- calls of the module's functions (a name bound once to a ``def`` or a lambda) and methods
  (``self.m(...)`` in a method, found along the method order): the callee's signature
  (:func:`signature_of`) and the context :func:`bind_arguments` makes (each bound parameter
  with where its argument starts and ends, the keywords passed, ``open_call``, ``bound``);
- loops: for every ``for`` target (comprehensions included), the container
  :func:`iterated_container` finds;
- literals (:class:`LiteralDecisions`): for every ``if``/``while``/ternary test, its
  ``literal`` and ``decide`` in the context of the method around it (``self`` an instance of
  its class); for every name and attribute read, its ``literal`` there; and, in the context
  each call above binds, every test of the callee (``literal``, ``decide``) and whether each
  call in the callee ``runs``.

Over a folder (``python benchmarks/ast_evaluator_parity.py TREE [TREE ...]``): the files the
gate lets through, each compared, with the CPU time of each side's pieces (parse and model
apart), summed over files.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from ckptlint.checkpoint.evaluator import (
    arguments,
    ast_arguments,
    ast_class_summary,
    ast_iteration,
    ast_literals,
    class_summary,
    iteration,
    literals,
)
from ckptlint.checkpoint.evaluator.denotations import ClassValue, Context, FunctionValue, LayerClassValue, OpaqueValue
from ckptlint.checkpoint.sites.options import NOT_LITERAL
from ckptlint.facts.torch_facts import layer_fact
from ckptlint.semantic.analysis import ModuleAnalysis
from ckptlint.semantic.ast_analysis import AstAnalysis
from ckptlint.semantic.bindings import BindingKind, ScopeKind
from ckptlint.semantic.parse import parse_module_unvalidated
from ckptlint.text.positions import node_offsets
from ckptlint.text.source import SourceFile

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling modules

from parity_files import comparable_files, multiset_mismatches

_TIMES = ("libcst_parse", "libcst_model", "libcst_pieces", "ast_parse", "ast_model", "ast_pieces")
_KINDS = ("class", "call", "loop", "test", "read", "bound test", "runs")


@dataclass
class EvaluatorComparison:
    """What :func:`compare` compared (libcst's readings, by kind), what libcst's literals
    answered (a value or a decision) and where the two readings differ."""

    items: Counter[str] = field(default_factory=Counter)
    answered: Counter[str] = field(default_factory=Counter)
    mismatches: list[str] = field(default_factory=list)
    times: dict[str, float] = field(default_factory=lambda: dict.fromkeys(_TIMES, 0.0))

    def add(self, other: EvaluatorComparison) -> None:
        self.items.update(other.items)
        self.answered.update(other.answered)
        self.mismatches += other.mismatches
        for key, value in other.times.items():
            self.times[key] += value


def _norm(value: object) -> str:
    """A literal as text, sets sorted (their order is no part of the answer)."""
    if value is NOT_LITERAL:
        return "NOT_LITERAL"
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(_norm(v) for v in value)) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_norm(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return type(value).__name__ + "(" + ", ".join(_norm(v) for v in value) + ")"
    return repr(value)


class _Reader:
    """One side's readings of one module (the libcst and ``ast`` subclasses say how nodes look)."""

    def __init__(self, analysis: object, offsets: Callable[[object], tuple[int, int]]) -> None:
        self.analysis = analysis
        self.model = analysis.model  # type: ignore[attr-defined]
        self.offsets = offsets
        self.infos: dict[int, object] = {}
        self.decisions: object = None
        self.out: list[tuple] = []
        self.answered: Counter[str] = Counter()

    # -- node kinds, per side
    def key(self, node: object) -> tuple | None: ...
    def def_key(self, node: object) -> tuple: ...

    # -- shared
    def info(self, node: object) -> object:
        """The summary of class ``node``, its bases filled (see the module docstring)."""
        known = self.infos.get(id(node))
        if known is not None:
            return known
        info = self.summarise(self.analysis, node)
        self.infos[id(node)] = info
        info.bases = [self.base_value(base) for base in self.class_bases(node)]  # type: ignore[attr-defined]
        return info

    def base_value(self, base: object) -> object:
        model = self.model
        fact = layer_fact(model.qualified_names(base))
        if fact is not None:
            return LayerClassValue(*fact)
        name = self.name_of(base)
        if name is not None:
            bindings = model.lookup(name, model.scope_of(base))
            if len(bindings) == 1 and bindings[0].kind is BindingKind.CLASS:
                return ClassValue(self.info(bindings[0].node))
        return OpaqueValue()

    def enclosing_class(self, node: object) -> object | None:
        model = self.model
        function = model.enclosing(node, *self.FUNCTIONS)
        while function is not None:
            scope = model.scope_of(function)
            if scope.kind is ScopeKind.CLASS:
                return self.info(scope.node)
            function = model.enclosing(function, *self.FUNCTIONS)
        return None

    def read_classes(self) -> None:
        for node in list(self.model.scope_of_definition):
            if not isinstance(node, self.CLASS):
                continue
            info = self.info(node)
            mro = self.mod.class_mro(info)
            methods = [
                (name, self.def_key(m), self.mod.self_parameter(m), self.mod.is_property(m)) for name, m in info.methods.items()
            ]
            attributes = [
                (name, [(self.key(v), self.def_key(m) if m is not None else None, p) for v, m, p in values])
                for name, values in info.attributes.items()
            ]
            appended = [(name, [(self.key(v), self.def_key(m)) for v, m in values]) for name, values in info.appended.items()]
            found = {}
            for owner in mro:
                for name in owner.methods:
                    hit = self.mod.find_method(info, name)
                    found[name] = (self.def_key(hit[0]), hit[1].qualname) if hit is not None else None
            base = self.mod.layer_base(info)
            self.out.append(
                (
                    "class",
                    info.qualname,
                    info.name,
                    tuple(methods),
                    tuple(attributes),
                    tuple(appended),
                    tuple(sorted(info.buffers)),
                    tuple(i.qualname for i in mro),
                    base[0] if base is not None else None,
                    tuple(sorted(found.items())),
                )
            )

    def callee(self, call: object) -> tuple[object, bool, object] | None:
        """The ``def``/lambda a call of the module runs, whether it is a bound method, and the
        class of ``self`` for a method; ``None`` when not one of those."""
        model = self.model
        func = call.func  # type: ignore[attr-defined]
        name = self.name_of(func)
        if name is not None:
            bindings = model.lookup(name, model.scope_of(func))
            if len(bindings) != 1:
                return None
            binding = bindings[0]
            if binding.kind is BindingKind.FUNCTION:
                return binding.node, False, None
            if binding.kind is BindingKind.ASSIGNMENT and isinstance(binding.value, self.LAMBDA):
                return binding.value, False, None
            return None
        owner, attr = self.attribute_of(func)
        if owner is None:
            return None
        method = model.enclosing(call, *self.FUNCTIONS)
        if method is None or self.mod.self_parameter(method) != owner:
            return None
        cls = self.class_of_method(method)
        if cls is None:
            return None
        info = self.info(cls)
        hit = self.mod.find_method(info, attr)
        if hit is None:
            return None
        return hit[0], True, info

    def read_calls(self) -> None:
        for call in list(self.model.calls):
            found = self.callee(call)
            if found is None:
                continue
            node, bound_method, info = found
            value = FunctionValue(node, Context(self.analysis, info), bound_method)
            caller = Context(self.analysis)
            signature = self.sig_mod.signature_of(value)
            ctx = self.bind(value, call, caller)
            env = sorted((b.name, self.key(arg), arg_ctx is caller) for b, (arg, arg_ctx) in ctx.env.items())
            self.out.append(
                (
                    "call",
                    self.key(call),
                    self.def_key(node),
                    None if signature is None else (tuple(sorted(signature.keywords)), signature.var_keyword, self.def_key(signature.node)),
                    tuple(env),
                    tuple(sorted(ctx.keyword_params)),
                    ctx.open_call,
                    None if ctx.bound is None else self.def_key(ctx.bound),
                )
            )
            self.read_bound(call, node, ctx)

    def read_bound(self, call: object, function: object, ctx: object) -> None:
        decisions = self.decisions
        for node in self.walk(function):
            test = self.test_of(node)
            if test is not None:
                value = decisions.literal(test, ctx)  # type: ignore[attr-defined]
                decided = decisions.decide(test, ctx)  # type: ignore[attr-defined]
                self.out.append(("bound test", self.key(call), self.key(test), _norm(value), decided))
                self.answered["bound test"] += value is not NOT_LITERAL or decided is not None
            elif isinstance(node, self.CALL):
                runs = decisions.runs(node, ctx)  # type: ignore[attr-defined]
                self.out.append(("runs", self.key(call), self.key(node), runs))
                self.answered["runs"] += not runs

    def read_loops(self) -> None:
        model = self.model
        for scope in [model.module_scope, *model.scope_of_definition.values()]:
            for bindings in scope.bindings.values():
                for binding in bindings:
                    assigned = binding.assigned
                    if binding.kind is not BindingKind.LOOP or assigned is None or assigned.value is None:
                        continue
                    found = self.iter_mod.iterated_container(assigned.value, assigned.path[1:], model)
                    where = self.key(found) if found is not None else None
                    self.out.append(("loop", binding.name, self.key(assigned.target), assigned.path, where))
                    self.answered["loop"] += found is not None

    def read_literals(self, reads: set[tuple] | None) -> set[tuple]:
        """Tests and reads in their method's context; ``reads``: the keys of the reads to
        read (``None``: every ``Load`` name and attribute, whose keys are returned)."""
        decisions = self.decisions
        keys: set[tuple] = set()
        contexts: dict[int, object] = {}
        for node in self.every_node():
            test = self.test_of(node)
            read = self.is_read(node, reads)
            if test is None and not read:
                continue
            info = self.enclosing_class(node)
            ctx = contexts.get(id(info))
            if ctx is None:
                ctx = contexts[id(info)] = Context(self.analysis, info)
            if test is not None:
                value = decisions.literal(test, ctx)  # type: ignore[attr-defined]
                decided = decisions.decide(test, ctx)  # type: ignore[attr-defined]
                self.out.append(("test", self.key(test), _norm(value), decided))
                self.answered["test"] += value is not NOT_LITERAL or decided is not None
            if read:
                key = self.key(node)
                keys.add(key)  # type: ignore[arg-type]
                value = decisions.literal(node, ctx)  # type: ignore[attr-defined]
                self.out.append(("read", key, _norm(value)))
                self.answered["read"] += value is not NOT_LITERAL
        return keys


class _CstReader(_Reader):
    FUNCTIONS = (cst.FunctionDef,)
    CLASS = cst.ClassDef
    LAMBDA = cst.Lambda
    CALL = cst.Call
    mod = class_summary
    sig_mod = arguments
    iter_mod = iteration

    def __init__(self, analysis: ModuleAnalysis) -> None:
        offsets = node_offsets(analysis.module)
        position = analysis.source.position
        super().__init__(analysis, lambda node: (position(offsets[node][0]), position(offsets[node][1])))  # type: ignore[index]
        self.summarise = class_summary.summarise_class
        self.decisions = literals.LiteralDecisions()

    def key(self, node: object) -> tuple | None:
        if node is None:
            return None
        if isinstance(node, cst.Tuple):  # a parenthesized tuple starts inside its parenthesis in libcst
            return ("tuple", len(node.elements), self.key(node.elements[0].value) if node.elements else None)
        if isinstance(node, cst.GeneratorExp):  # its parentheses are its own in ast, not in libcst
            return ("generator", self.key(node.elt))
        return self.offsets(node)

    def def_key(self, node: object) -> tuple:
        if isinstance(node, cst.Lambda):
            return ("lambda", self.offsets(node))
        scope = self.model.scope_of_definition.get(node)
        return (scope.qualname if scope else "?", self.offsets(node.name)[0][0])  # type: ignore[attr-defined]

    def class_bases(self, node: cst.ClassDef) -> list[object]:
        return [b.value for b in node.bases]

    def name_of(self, expr: object) -> str | None:
        return expr.value if isinstance(expr, cst.Name) else None

    def attribute_of(self, expr: object) -> tuple[str | None, str]:
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
            return expr.value.value, expr.attr.value
        return None, ""

    def class_of_method(self, method: cst.FunctionDef) -> cst.ClassDef | None:
        block = self.model.parent(method)
        cls = self.model.parent(block) if isinstance(block, cst.IndentedBlock) else None
        return cls if isinstance(cls, cst.ClassDef) else None

    def bind(self, value: object, call: cst.Call, caller: object) -> object:
        return arguments.bind_arguments(value, tuple(call.args), caller)  # type: ignore[arg-type]

    def walk(self, function: object) -> list[object]:
        from ckptlint.semantic.walk import iter_tree

        return list(iter_tree(function.body))  # type: ignore[attr-defined]

    def every_node(self) -> list[object]:
        return list(self.model.scopes)

    def test_of(self, node: object) -> object | None:
        return node.test if isinstance(node, (cst.If, cst.While, cst.IfExp)) else None

    def is_read(self, node: object, reads: set[tuple] | None) -> bool:
        return isinstance(node, (cst.Name, cst.Attribute)) and reads is not None and self.key(node) in reads


class _AstReader(_Reader):
    FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
    CLASS = ast.ClassDef
    LAMBDA = ast.Lambda
    CALL = ast.Call
    mod = ast_class_summary
    sig_mod = ast_arguments
    iter_mod = ast_iteration

    def __init__(self, analysis: AstAnalysis) -> None:
        super().__init__(analysis, analysis.range)  # type: ignore[arg-type]
        self.summarise = ast_class_summary.summarise_class
        self.decisions = ast_literals.LiteralDecisions()

    def key(self, node: object) -> tuple | None:
        if node is None:
            return None
        if isinstance(node, ast.Tuple):  # a starred element starts at its value in libcst
            return ("tuple", len(node.elts), self.key(node.elts[0]) if node.elts else None)
        if isinstance(node, ast.GeneratorExp):
            return ("generator", self.key(node.elt))
        if isinstance(node, ast.Starred):
            return self.key(node.value)
        return self.offsets(node)

    def def_key(self, node: object) -> tuple:
        if isinstance(node, ast.Lambda):
            return ("lambda", self.offsets(node))
        scope = self.model.scope_of_definition.get(node)
        return (scope.qualname if scope else "?", node.lineno)  # type: ignore[attr-defined]

    def class_bases(self, node: ast.ClassDef) -> list[object]:
        return list(node.bases)

    def name_of(self, expr: object) -> str | None:
        return expr.id if isinstance(expr, ast.Name) else None

    def attribute_of(self, expr: object) -> tuple[str | None, str]:
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
            return expr.value.id, expr.attr
        return None, ""

    def class_of_method(self, method: object) -> ast.ClassDef | None:
        cls = self.model.parent(method)
        return cls if isinstance(cls, ast.ClassDef) else None

    def bind(self, value: object, call: ast.Call, caller: object) -> object:
        return ast_arguments.bind_arguments(value, call.args, call.keywords, caller)  # type: ignore[arg-type]

    def walk(self, function: object) -> list[object]:
        body = function.body  # type: ignore[attr-defined]
        return [n for statement in (body if isinstance(body, list) else [body]) for n in ast.walk(statement)]

    def every_node(self) -> list[object]:
        return list(ast.walk(self.model.module))

    def test_of(self, node: object) -> object | None:
        return node.test if isinstance(node, (ast.If, ast.While, ast.IfExp)) else None

    def is_read(self, node: object, reads: set[tuple] | None) -> bool:
        return isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load)


def compare(text: str, module_name: str = "", is_package: bool = False, path: str = "<compared>") -> EvaluatorComparison:
    """Read ``text``'s classes, calls, loops and literals both ways and compare them (see the
    module docstring)."""
    result = EvaluatorComparison()
    times = result.times
    source = SourceFile(path, text)

    begin = time.process_time()
    module = parse_module_unvalidated(text)
    times["libcst_parse"] += time.process_time() - begin
    cst_analysis = ModuleAnalysis(source, module, module_name, is_package)
    begin = time.process_time()
    cst_analysis.model  # noqa: B018 - built here to time it
    times["libcst_model"] += time.process_time() - begin

    begin = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(text)
    times["ast_parse"] += time.process_time() - begin
    ast_analysis = AstAnalysis(source, tree, module_name, is_package)
    begin = time.process_time()
    ast_analysis.model  # noqa: B018 - built here to time it
    times["ast_model"] += time.process_time() - begin

    ast_reader = _AstReader(ast_analysis)
    begin = time.process_time()
    ast_reader.read_classes()
    ast_reader.read_calls()
    ast_reader.read_loops()
    reads = ast_reader.read_literals(None)
    times["ast_pieces"] += time.process_time() - begin

    cst_reader = _CstReader(cst_analysis)
    begin = time.process_time()
    cst_reader.read_classes()
    cst_reader.read_calls()
    cst_reader.read_loops()
    cst_reader.read_literals(reads)
    times["libcst_pieces"] += time.process_time() - begin

    result.items.update(reading[0] for reading in cst_reader.out)
    result.answered.update(cst_reader.answered)
    result.mismatches += multiset_mismatches(cst_reader.out, ast_reader.out)
    cst_analysis.release()
    ast_analysis.release()
    return result


# --------------------------------------------------------------------------- corpus runs
def run_tree(root: Path, every_file: bool = False) -> dict[str, object]:
    """Compare both readings on the (gated) files of ``root`` and sum their CPU times."""
    total = EvaluatorComparison()
    compared, skipped = comparable_files(root, every_file)
    for one in compared:
        found = compare(one.text, one.module_name, one.is_package, str(one.path))
        found.mismatches = [f"{one.path.relative_to(root)}: {m}" for m in found.mismatches]
        total.add(found)
    return {
        "tree": root.name,
        "files": len(compared),
        "skipped": skipped,
        "items": {kind: total.items[kind] for kind in _KINDS},
        "answered": {kind: total.answered[kind] for kind in _KINDS if kind in total.answered},
        "mismatches": total.mismatches,
        "cpu_s": {key: round(value, 3) for key, value in total.times.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--all", action="store_true", help="every .py file, not only the gated ones")
    parser.add_argument("--json", type=Path, help="write the numbers here")
    args = parser.parse_args(argv)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    reports = []
    for tree in args.trees:
        report = run_tree(tree.resolve(), args.all)
        reports.append(report)
        cpu: dict[str, float] = report["cpu_s"]  # type: ignore[assignment]
        print(
            f"{report['tree']}: {report['files']} files ({report['skipped']} skipped), compared {report['items']}, "
            f"libcst answered {report['answered']}, {len(report['mismatches'])} mismatches; "  # type: ignore[arg-type]
            f"CPU libcst pieces {cpu['libcst_pieces']:.2f} s, ast pieces {cpu['ast_pieces']:.2f} s"
        )
        for mismatch in report["mismatches"][:30]:  # type: ignore[index]
            print("  ", mismatch)
    if args.json is not None:
        args.json.write_text(json.dumps(reports, indent=2), encoding="utf-8")
    return 1 if any(r["mismatches"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())

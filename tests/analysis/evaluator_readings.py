"""The readings of the evaluator's pieces without evaluator state on ``ast`` that the golden
answers of ``test_ast_evaluator_leaves.py`` record (they were compared with libcst's while it
lived): every class summary field by field, the signature and argument binding of every call
of a module function or method, the container of every ``for`` target, and the
``literal``/``decide``/``runs`` answers of ``LiteralDecisions`` for every test and every name
and attribute read; positions 1-based ``(row, col)``."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable

from ckptlint.checkpoint.evaluator import ast_arguments, ast_class_summary, ast_iteration, ast_literals
from ckptlint.checkpoint.evaluator.denotations import ClassValue, Context, FunctionValue, LayerClassValue, OpaqueValue
from ckptlint.checkpoint.sites.options import NOT_LITERAL
from ckptlint.facts.torch_facts import layer_fact
from ckptlint.semantic.ast_analysis import AstAnalysis
from ckptlint.semantic.bindings import BindingKind, ScopeKind
from ckptlint.text.source import SourceFile

__all__ = ["AstReader", "evaluator_answers"]


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
    """The readings of one module (:class:`AstReader` says how nodes look)."""

    def __init__(self, analysis: object, offsets: Callable[[object], tuple[int, int]]) -> None:
        self.analysis = analysis
        self.model = analysis.model  # type: ignore[attr-defined]
        self.offsets = offsets
        self.infos: dict[int, object] = {}
        self.decisions: object = None
        self.out: list[tuple] = []
        self.answered: Counter[str] = Counter()

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


class AstReader(_Reader):
    """The readings of an ``ast`` analysis: call :meth:`read` (``out`` holds them)."""

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


def evaluator_answers(text: str, module_name: str = "pkg.mod", is_package: bool = False) -> tuple[list[tuple], Counter[str], Counter[str]]:
    """The readings of ``text`` (sorted), how many of each kind and how many answered."""
    analysis = AstAnalysis(SourceFile("<compared>", text), ast.parse(text), module_name, is_package)
    reader = AstReader(analysis)
    reader.read_classes()
    reader.read_calls()
    reader.read_loops()
    reader.read_literals(None)
    analysis.release()
    return sorted(reader.out, key=repr), Counter(r[0] for r in reader.out), reader.answered

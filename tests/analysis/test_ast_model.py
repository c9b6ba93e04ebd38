"""The semantic model on CPython's ``ast`` (ckptlint.semantic.ast_model), its answers recorded
while they equalled the libcst model's: for every name read of the rule examples, the test
cases, the shared cases as recorded and hand-written programs, the scope, bindings (kind, name,
where, value), qualified names, ``precedes``, enclosing function and mutations; per scope the
bound names and mutations; the calls, ``from`` imports and star imports (golden answers:
``__snapshots__/test_ast_model.ambr``); and the model's own answers on small programs."""

from __future__ import annotations

import ast
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from goldens import case_params, example_params, parses, read_case, render, rule_examples
from hypothesis import HealthCheck, given, settings
from test_properties import programs  # the property tests' random programs

from ckptlint.semantic.ast_assignments import assignments
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.bindings import Binding, BindingKind, Mutation, MutationKind, Scope, ScopeKind
from ckptlint.text.source import SourceFile

ROOT = Path(__file__).resolve().parents[2]

#: ``ast`` node classes under the name the readings give them (libcst's, when recorded).
_NODE_NAMES = {
    "AsyncFor": "For",
    "comprehension": "CompFor",
    "withitem": "WithItem",
    "alias": "ImportAlias",
    "AsyncFunctionDef": "FunctionDef",
    "arg": "Param",
    "Delete": "Del",
    "AsyncWith": "With",
}


def _rule_examples() -> list[tuple[str, str]]:
    """The rule examples that parse (kept for the modules that import it)."""
    return rule_examples()


def _parses(text: str) -> bool:
    return parses(text)


def _case_files() -> list[Path]:
    """The test cases and the shared cases present (kept for the modules that import it)."""
    return [p for p in (param.values[0] for param in case_params()) if p.is_file()]


def _dump(node: ast.AST) -> str:
    """``ast.dump`` as Python 3.12 and earlier write it (3.13 leaves out empty fields)."""
    if sys.version_info >= (3, 13):
        return ast.dump(node, show_empty=True)  # type: ignore[call-arg]
    return ast.dump(node)


class _Reader:
    """The readings of one model: positions 1-based ``(row, col)``, values as ``ast.dump``."""

    def __init__(self, model: AstModel, position: Callable[[ast.AST], tuple[int, int]]) -> None:
        self.model = model
        self.position = position
        self._bindings: dict[int, tuple] = {}
        self._mutations: dict[tuple[str, int], list[tuple]] = {}

    def anchor(self, node: ast.AST) -> tuple[int, int]:
        if type(node) is ast.comprehension:
            return self.first_name(node.target)
        if type(node) is ast.withitem:
            target = node.optional_vars
            return self.first_name(target) if target is not None else self.position(node.context_expr)
        if type(node) is ast.Module:
            return (0, 0)
        return self.position(node)

    def first_name(self, node: ast.AST) -> tuple[int, int]:
        found = [self.position(n) for n in ast.walk(node) if type(n) is ast.Name]
        return min(found) if found else self.position(node)

    def scope(self, scope: Scope | None) -> tuple | None:
        if scope is None:
            return None
        if scope.kind.value == "comprehension":
            return (scope.kind.value, scope.qualname, self.first_name(scope.node.generators[0].target))  # type: ignore[attr-defined]
        return (scope.kind.value, scope.qualname, self.anchor(scope.node))  # type: ignore[arg-type]

    def binding(self, binding: Binding) -> tuple:
        found = self._bindings.get(id(binding))
        if found is None:
            assigned = binding.assigned
            where = self.position(assigned.target) if assigned is not None else self.anchor(binding.node)  # type: ignore[arg-type]
            how = None
            if assigned is not None:
                value = None if assigned.value is None else _dump(assigned.value)  # type: ignore[arg-type]
                how = (assigned.kind.value, value, assigned.path, assigned.attr)
            found = self._bindings[id(binding)] = (
                binding.kind.value,
                binding.name,
                where,
                _NODE_NAMES.get(type(binding.node).__name__, type(binding.node).__name__),
                self.scope(binding.scope),
                self.scope(binding.declared_in),
                binding.target,
                None if binding.value is None else _dump(binding.value),  # type: ignore[arg-type]
                how,
            )
        return found

    def mutation(self, mutation: Mutation) -> tuple:
        name = type(mutation.node).__name__
        return (mutation.base, _NODE_NAMES.get(name, name), self.anchor(mutation.node), mutation.kind.value, mutation.method)  # type: ignore[arg-type]

    def scopes(self) -> list[tuple]:
        model = self.model
        mutations: dict[int, list[tuple]] = {}
        for mutation in model.mutations:
            mutations.setdefault(id(mutation.scope), []).append(self.mutation(mutation))
        return [
            (
                self.scope(scope),
                sorted((name, [self.binding(b) for b in bindings]) for name, bindings in scope.bindings.items()),
                sorted(scope.globals),
                sorted(scope.nonlocals),
                sorted(mutations.get(id(scope), []), key=repr),
            )
            for scope in [model.module_scope, *model.scope_of_definition.values()]
        ]

    def read(self, name: ast.Name) -> tuple:
        model = self.model
        scope = model.scope_of(name)
        found = model.bindings_at(name)
        key = (name.id, id(scope))
        if key not in self._mutations:
            self._mutations[key] = sorted((self.mutation(m) for m in model.mutations_of(name.id, scope)), key=repr)
        function = model.enclosing(name, ast.FunctionDef, ast.AsyncFunctionDef)
        return (
            self.scope(scope),
            [self.binding(b)[:3] for b in model.bindings_of(name)],  # in full under its scope
            [self.binding(b)[:3] for b in found],
            sorted(model.qualified_names(name)),
            [model.precedes(b.node, name) for b in found if b.kind is not BindingKind.PARAMETER],
            None if function is None else self.anchor(function),
            self._mutations[key],
        )


def _answers(text: str, module_name: str = "pkg.mod", is_package: bool = False) -> dict[str, list]:
    """What the model of ``text`` answers: per name read (its bindings by kind, name and
    where; in full under the scopes), ``True``/``False``/``None`` and
    attribute read its readings; per scope its bindings and mutations; the calls (start, end),
    the modules of the ``from`` imports and the star imports."""
    source = SourceFile("<compared>", text)
    tree = ast.parse(text)

    def position(node: ast.AST) -> tuple[int, int]:
        return source.ast_position(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(node: ast.AST) -> tuple[int, int]:
        return source.ast_position(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    reader = _Reader(AstModel.build(tree, module_name, is_package), position)
    model = reader.model
    reads = []
    for node in ast.walk(tree):
        kind = type(node)
        if kind is ast.Name and type(node.ctx) is ast.Load:  # type: ignore[attr-defined]
            reads.append((position(node), node.id, reader.read(node)))  # type: ignore[attr-defined, arg-type]
        elif kind is ast.Constant and any(node.value is c for c in (True, False, None)):  # type: ignore[attr-defined]
            reads.append((position(node), repr(node.value), sorted(model.qualified_names(node))))  # type: ignore[attr-defined, arg-type]
        elif kind is ast.Attribute and type(node.ctx) is ast.Load:  # type: ignore[attr-defined]
            reads.append(((position(node), end(node)), "attribute", sorted(model.qualified_names(node))))  # type: ignore[arg-type]
    found = {
        "reads": sorted(reads, key=repr),
        "scopes": sorted(reader.scopes(), key=repr),
        "calls": sorted((position(c), end(c)) for c in model.calls),
        "from imports": sorted((model.absolute_module(n) for n in ast.walk(tree) if type(n) is ast.ImportFrom), key=repr),  # type: ignore[arg-type]
        "star imports": model.star_imports,
    }
    model.release()
    return found


def _golden(text: str, module_name: str = "pkg.mod", is_package: bool = False) -> str:
    found = _answers(text, module_name, is_package)
    assert found["scopes"]  # the module, at least
    return "\n".join(f"{key}:\n{render(value)}" for key, value in found.items())


@pytest.mark.parametrize(("label", "text"), example_params())
def test_rule_examples(label: str, text: str, snapshot) -> None:
    assert _golden(text) == snapshot


@pytest.mark.parametrize("path", case_params())
def test_cases(path: Path, snapshot) -> None:
    assert _golden(read_case(path), "pkg.cases." + path.stem) == snapshot


TRICKY = {
    "comprehension scopes": """
        size = 4
        rows = [[r * s for s in range(r)] for r in range(size)]
        gen = (t for t in range(size) if t)
        total = sum(t for t in rows)
        table = {k: v for k, v in {}.items()}
        unique = {u for u in rows}
        print(rows, gen, total, table, unique)
    """,
    "class bodies invisible to methods": """
        import torch.nn as nn
        class Block(nn.Module):
            width = 4
            widths = [width for _ in range(3)]
            later = [q for q in range(width)]
            def forward(self, x, n=width):
                return width, n, self.width, x
    """,
    "global and nonlocal": """
        counter = 0
        def bump():
            global counter
            counter += 1
            def inner():
                nonlocal local
                local = 2
                return local
            local = 1
            return inner, counter
        def shadow():
            counter = 5
            return counter
    """,
    "walrus in comprehensions": """
        def walrus(items):
            if (n := len(items)) > 1:
                pass
            found = [last := v for v in items if (w := v)]
            class Holder:
                kept = [(h := i) for i in items]
            return n, found, last, w, h, Holder
    """,
    "star and relative imports": """
        from torch import *
        from torch.nn import *
        from . import sibling
        from .. import parent
        from ..up import thing as other
        from .helpers.sub import helper
        import os.path as osp, os
        print(checkpoint, Linear, sibling, parent, other, helper, osp, os.sep)
    """,
    "del": """
        x = {}
        del x["k"], x.attr
        del x
        print(x)
    """,
    "with as tuple": """
        import contextlib
        def withs(path):
            with open(path) as fh, contextlib.nullcontext((1, 2)) as (u, v):
                return fh.read(), u, v
            with open(path) as self.handle:
                pass
    """,
    "augmented assignment": """
        total = 0
        total += 1
        items = []
        items[0] += 1
        items.attr -= 2
        print(total, items)
    """,
    "annotations without value": """
        import torch.nn as nn
        layer: nn.Module
        width: "int"
        depth: int = 3
        class Config:
            name: str
            size: int = 4
        print(layer, width, depth)
    """,
    "match statements": """
        import torch.nn as nn
        def matcher(command):
            match command:
                case {"go": where, **rest}:
                    return where, rest
                case Point(x=0, y=yy) if yy > 0:
                    return yy
                case [first, *others]:
                    return first, others
                case nn.Linear() as layer:
                    return layer
                case _:
                    return None
    """,
    "decorators": """
        import functools
        from torch.utils.checkpoint import checkpoint
        def deco(fn):
            return fn
        @deco
        @functools.wraps(checkpoint)
        def wrapped(*args, k: "Config" = None, **kwargs) -> "Config":
            return checkpoint(*args, **kwargs)
        class Config:
            @staticmethod
            @deco
            def other(x):
                return x
    """,
    "lambdas with defaults": """
        x = 1
        lam = lambda m, *n, o=x, **p: (m, n, o, p)
        rows = [(lambda v=v, u=x: v + u) for v in range(3)]
        nested = lambda a: lambda b=a: a + b
    """,
    "unpacking and aliases": """
        import os
        from torch.utils.checkpoint import checkpoint as ckpt, checkpoint_sequential
        a, (b, *c), d = 1, (2, 3, 4), 5
        e = f = g = os.getcwd()
        h, i = pair = (ckpt, checkpoint_sequential)
        first, *rest = ckpt, ckpt, ckpt
        alias = ckpt
        chained = alias
        setattr(os, "extra", 5)
        print(a, b, c, d, e, f, g, h, i, pair, first, rest, chained)
    """,
    "loops and bindings at a read": """
        def loops(blocks1, blocks3):
            for blk in blocks1:
                use(blk)
            for blk in blocks3:
                use(blk)
            for blk in blocks3:
                blk = wrap(blk)
                use(blk)
            else:
                use(blk)
            async def agen():
                async for item in blocks1:
                    yield item
                async with ctx() as (p, q), other() as r.s:
                    use(p, q, r)
    """,
    "except and mutations": """
        cache = {}
        def handlers():
            try:
                cache["k"] = 1
                cache.setdefault("j", []).append(2)
            except (ValueError, KeyError) as err:
                return err
            except Exception:
                raise
    """,
    "non-ascii columns and f-strings": """
        unicode_é = "é"; après = unicode_é + f"{unicode_é!r:>{len(unicode_é)}}"
        print(après, f"{après} {unicode_é}")
    """,
}


@pytest.mark.parametrize("label", sorted(TRICKY))
def test_tricky_programs(label: str, snapshot) -> None:
    assert _golden(textwrap.dedent(TRICKY[label])) == snapshot


def test_relative_imports_in_a_package(snapshot) -> None:
    text = "from . import a\nfrom .b import c\nfrom .. import d\nfrom ... import e\nfrom .... import f\nprint(a, c, d, e, f)\n"
    assert _golden(text, "pkg.sub", is_package=True) == snapshot
    assert _golden(text, "pkg.sub.mod", is_package=False) == snapshot
    model = AstModel.build(ast.parse(text), "pkg.sub", is_package=True)
    froms = [n for n in model.module.body if isinstance(n, ast.ImportFrom)]
    assert [model.absolute_module(n) for n in froms] == ["pkg.sub", "pkg.sub.b", "pkg", "", None]


BUDGET = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.slow
@BUDGET
@given(programs())
def test_random_programs(text: str) -> None:
    """The model reads every random program (its answers were libcst's while it lived)."""
    assert _answers(text)["scopes"]


# ------------------------------------------------------------- the model's own answers
def _model(text: str, name: str = "pkg.mod") -> AstModel:
    return AstModel.build(ast.parse(textwrap.dedent(text)), name)


def _name(model: AstModel, identifier: str, line: int) -> ast.Name:
    return next(
        n for n in ast.walk(model.module) if isinstance(n, ast.Name) and n.id == identifier and n.lineno == line
    )


def test_scopes_bindings_and_qualified_names() -> None:
    model = _model("""
        from torch.utils.checkpoint import checkpoint as ckpt
        run = ckpt
        class Block:
            size = 4
            def forward(self, x, n=size):
                return run(size, x)
    """)
    read = _name(model, "run", 7)
    assert model.scope_of(read).qualname == "Block.forward"
    assert model.qualified_names(read) == {"torch.utils.checkpoint.checkpoint"}
    assert model.lookup("size", model.scope_of(read)) == []  # the class body is invisible
    default = _name(model, "size", 6)
    assert model.scope_of(default).kind is ScopeKind.CLASS
    [binding] = model.bindings_of(default)
    assert (binding.kind, binding.value.value) == (BindingKind.ASSIGNMENT, 4)  # type: ignore[union-attr]
    [block] = model.lookup("Block", model.module_scope)
    assert block.target == "pkg.mod.Block"


def test_global_walrus_loops_and_mutations() -> None:
    model = _model("""
        total = 0
        def f(blocks):
            global total
            total += 1
            found = [(w := b) for b in blocks]
            for blk in blocks:
                blk.append(w)
            return found
    """)
    [first, second] = model.module_scope.bindings["total"]
    assert second.kind is BindingKind.AUGMENTED and second.declared_in is not None
    function = model.scope_of(_name(model, "found", 9))
    assert [b.kind for b in function.bindings["w"]] == [BindingKind.WALRUS]
    [mutation] = model.mutations_of("blk", function)
    assert (mutation.kind, mutation.method) == (MutationKind.METHOD, "append")
    read = _name(model, "blk", 8)
    [loop] = model.bindings_at(read)
    assert loop.kind is BindingKind.LOOP and model.precedes(loop.node, read) is True
    assert model.precedes(read, loop.node) is False
    assert model.enclosing(read, ast.FunctionDef) is model.module.body[1]


def test_assignments_of_every_form() -> None:
    tree = ast.parse("a, (b, *c) = x, (y, z, w)\nwith m as (p, q): pass\nsetattr(o, 'k', v)\n")
    unpacked = assignments(tree.body[0])
    assert [(ast.unparse(a.target), a.value and ast.unparse(a.value), a.path) for a in unpacked] == [
        ("a", "x", ()),
        ("b", "y", ()),
        ("c", None, ()),
    ]
    entered = assignments(tree.body[1].items[0])  # type: ignore[attr-defined]
    assert [(ast.unparse(a.target), a.path) for a in entered] == [("p", ("enter", 0)), ("q", ("enter", 1))]
    [attribute] = assignments(tree.body[2].value)  # type: ignore[attr-defined]
    assert (attribute.attr, ast.unparse(attribute.owner)) == ("k", "o")  # type: ignore[arg-type]


def test_the_production_path_does_not_use_it() -> None:
    """No module of the package imports the ``ast`` model but the other modules of the port
    (``ast_*.py``) and the rules (which run on it)."""
    importers = []
    for path in (ROOT / "ckptlint").rglob("*.py"):
        if path.name.startswith("ast_") or path.parent.name == "rules":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("ast_model"):
                importers.append(path.relative_to(ROOT).as_posix())
            elif isinstance(node, ast.Import) and any(a.name.endswith("ast_model") for a in node.names):
                importers.append(path.relative_to(ROOT).as_posix())
    assert importers == []


def test_the_nodes_the_walk_passes_over_have_no_children_and_bind_nothing() -> None:
    """``AstModel._walk`` skips :data:`_LEAVES` when it pops them (their parents are set when
    their parent is walked): each has no child node and is not a node ``_enter`` handles."""
    from ckptlint.semantic import ast_model
    from ckptlint.semantic.ast_walk import child_nodes

    tree = ast.parse("import os as o\nfor x in y:\n    pass\n    break\n    continue\nz = 1\n")
    met = {type(node) for node in ast.walk(tree)}
    assert ast_model._LEAVES <= met
    for node in ast.walk(tree):
        if type(node) in ast_model._LEAVES:
            assert child_nodes(node) == []
            assert type(node) not in ast_model._ENTERED

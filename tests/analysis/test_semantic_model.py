"""The semantic model on ``ast`` tested directly (scopes, bindings, qualified names, order,
mutations, reaching bindings), not through a rule: each answer here is what every rule builds
on (the answers the libcst model gave on the same programs)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.ast_reaching import reaching
from ckptlint.semantic.bindings import BindingKind, ScopeKind

_TEXTS: dict[int, str] = {}  # a model's source text, by the model's id


def build(source: str, module_name: str = "pkg.model", is_package: bool = False) -> AstModel:
    text = textwrap.dedent(source)
    model = AstModel.build(ast.parse(text), module_name, is_package)
    _TEXTS[id(model)] = text
    return model


def code(model: AstModel, node: ast.AST) -> str:
    """The source text of ``node``."""
    return ast.get_source_segment(_TEXTS[id(model)], node) or ""


def _start(node: ast.AST) -> tuple[int, int]:
    return (node.lineno, node.col_offset)  # type: ignore[attr-defined]


def names(model: AstModel, kind: type[ast.AST] = ast.Name) -> dict[str, list[ast.AST]]:
    """Every node of ``kind`` by its source text, in source order."""
    found: dict[str, list[ast.AST]] = {}
    for node in sorted((n for n in ast.walk(model.module) if isinstance(n, kind)), key=_start):
        found.setdefault(code(model, node), []).append(node)
    return found


def test_imports_give_qualified_names_with_aliases_and_relative_forms() -> None:
    model = build(
        """
        import torch.utils.checkpoint as cp
        from torch.utils.checkpoint import checkpoint as ckpt
        from .layers import Block
        from ..util import helper
        ckpt; cp.checkpoint; Block; helper; len; undefined
        """,
        module_name="pkg.sub.model",
    )
    uses = {text: model.qualified_names(nodes[-1]) for text, nodes in names(model, ast.Name).items()}
    assert uses["ckpt"] == {"torch.utils.checkpoint.checkpoint"}
    assert uses["Block"] == {"pkg.sub.layers.Block"}
    assert uses["helper"] == {"pkg.util.helper"}
    assert uses["len"] == {"builtins.len"}
    assert uses["undefined"] == frozenset()
    attribute = names(model, ast.Attribute)["cp.checkpoint"][-1]
    assert model.qualified_names(attribute) == {"torch.utils.checkpoint.checkpoint"}


def test_relative_import_above_the_top_package_resolves_to_nothing() -> None:
    model = build("from ... import x\n", module_name="pkg.model")
    (node,) = [n for n in model.module.body if isinstance(n, ast.ImportFrom)]
    assert model.absolute_module(node) is None


def test_package_init_resolves_relative_imports_against_itself() -> None:
    model = build("from .layers import Block\nBlock\n", module_name="pkg", is_package=True)
    assert model.qualified_names(names(model)["Block"][-1]) == {"pkg.layers.Block"}


def test_aliases_are_followed_and_local_definitions_are_qualified() -> None:
    model = build(
        """
        from torch.utils.checkpoint import checkpoint
        run = checkpoint
        class Block:
            def forward(self, x):
                return x
        run; Block
        """
    )
    found = names(model)
    assert model.qualified_names(found["run"][-1]) == {"torch.utils.checkpoint.checkpoint"}
    assert model.qualified_names(found["Block"][-1]) == {"pkg.model.Block"}


def test_scopes_follow_legb_and_skip_class_bodies() -> None:
    model = build(
        """
        x = 1
        class C:
            x = 2
            def m(self):
                return x
        def f(x):
            return [x for x in range(3)]
        """
    )
    found = names(model)
    in_method = found["x"][2]  # `return x` inside C.m
    (binding,) = model.bindings_of(in_method)
    assert binding.scope.kind is ScopeKind.MODULE and binding.kind is BindingKind.ASSIGNMENT
    parameter = model.lookup("x", model.scope_of(found["x"][-1]))  # the comprehension's x
    assert [b.kind for b in parameter] == [BindingKind.LOOP]
    assert parameter[0].scope.kind is ScopeKind.COMPREHENSION


def test_global_and_nonlocal_rebindings_land_in_the_owner_scope() -> None:
    model = build(
        """
        counter = 0
        def bump():
            global counter
            counter += 1
        """
    )
    kinds = sorted(b.kind.value for b in model.module_scope.bindings["counter"])
    assert kinds == ["assignment", "augmented-assignment"]
    rebinding = next(b for b in model.module_scope.bindings["counter"] if b.kind is BindingKind.AUGMENTED)
    assert rebinding.declared_in is not None and rebinding.declared_in.kind is ScopeKind.FUNCTION


@pytest.mark.parametrize(
    ("statement", "kind", "method"),
    [
        ("cache.hits = 1", "attribute", None),
        ("cache['k'] = 1", "subscript", None),
        ("cache.hits += 1", "augmented", None),
        ("del cache['k']", "delete", None),
        ("cache.append(1)", "method", "append"),
    ],
)
def test_mutations_are_recorded_on_the_leftmost_name(statement: str, kind: str, method: str | None) -> None:
    model = build(f"cache = {{}}\ndef f():\n    {statement}\n")
    (mutation,) = model.mutations_of("cache", model.module_scope)
    assert (mutation.base, str(getattr(mutation.kind, "value", mutation.kind)), mutation.method) == ("cache", kind, method)


def test_precedes_is_source_order() -> None:
    model = build("a = 1\nif a:\n    b = 2\nc = 3\n")
    found = names(model)
    a, b, c = found["a"][0], found["b"][0], found["c"][0]
    assert model.precedes(a, b) is True
    assert model.precedes(c, b) is False
    assert model.precedes(b, b) is True


def test_calls_parents_and_enclosing() -> None:
    model = build("def f(x):\n    return g(h(x))\n")
    assert [code(model, c) for c in model.calls] == ["g(h(x))", "h(x)"]
    inner = model.calls[1]
    assert isinstance(model.enclosing(inner, ast.FunctionDef), ast.FunctionDef)
    assert model.enclosing(inner, ast.ClassDef) is None
    assert model.parent(model.module) is None


def _reaching_kinds(model: AstModel, name: ast.Name) -> list[str]:
    def where(b) -> str:
        return "param" if isinstance(b.node, ast.arg) else code(model, b.node).splitlines()[0].strip()

    return [f"{b.kind.value}@{where(b)}" for b in reaching(model, name)]


def test_a_plain_assignment_kills_earlier_bindings_in_straight_line_code() -> None:
    model = build(
        """\
        def f(kwargs, flag):
            kwargs = {"a": 1, **kwargs}
            use(kwargs)
            if flag:
                kwargs = {}
            use(kwargs)
        """
    )
    first_rhs, first_use, second_use = [n for n in names(model)["kwargs"] if isinstance(model.parent(n), (ast.Dict, ast.Call))]
    assert _reaching_kinds(model, first_rhs) == ["parameter@param"]  # its own `=` does not reach its value
    assert _reaching_kinds(model, first_use) == ['assignment@kwargs = {"a": 1, **kwargs}']
    assert _reaching_kinds(model, second_use) == ['assignment@kwargs = {"a": 1, **kwargs}', "assignment@kwargs = {}"]


def test_reads_in_loops_and_nested_scopes_keep_every_binding() -> None:
    model = build(
        """\
        def f(x):
            for _ in range(3):
                use(x)
                x = g(x)
        """
    )
    read = [
        n
        for n in names(model)["x"]
        if isinstance(model.parent(n), ast.Call) and code(model, model.parent(n)).startswith("use")
    ][0]
    assert sorted(_reaching_kinds(model, read)) == ["assignment@x = g(x)", "parameter@param"]

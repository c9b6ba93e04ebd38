"""The semantic model on CPython's ``ast`` (ckptlint.semantic.ast_model) answers as the one on
libcst (ckptlint.semantic.model) does: for every name read of the rule examples (the classes'
``VALID``/``INVALID`` programs and the ``rules/CKPxxx.md`` code blocks), the test cases, the
shared cases when present and hand-written programs, the same scope, bindings (kind, name,
where, value), qualified names, ``precedes``, enclosing function and mutations; per scope the
same bound names and mutations (the comparison is ``benchmarks/ast_model_parity.py``'s, which
runs it over real trees)."""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from parity_scripts import load_parity
from test_properties import programs  # the property tests' random programs

from ckptlint.rules import ALL_RULES, Invalid
from ckptlint.semantic.ast_assignments import assignments
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.bindings import BindingKind, MutationKind, ScopeKind

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "cases"
SHARED_CASES = ROOT.parent / "shared" / "cases"
_BLOCK = re.compile(r"^```python (?:bad|good|fixed)\n(.*?)^```", re.MULTILINE | re.DOTALL)


parity = load_parity("ast_model_parity")


def _assert_same(text: str, module_name: str = "pkg.mod", is_package: bool = False) -> None:
    found = parity.compare(text, module_name, is_package)
    assert found.mismatches == []
    assert found.scopes >= 1  # the module, at least


def _rule_examples() -> list[tuple[str, str]]:
    found = []
    for code, rule in sorted(ALL_RULES.items()):
        for kind in ("VALID", "INVALID"):
            for index, example in enumerate(getattr(rule, kind)):
                text = example.code if isinstance(example, Invalid) else example
                found.append((f"{code}-{kind.lower()}-{index}", textwrap.dedent(text)))
        page = ROOT / "rules" / f"{code}.md"
        if page.exists():
            for index, block in enumerate(_BLOCK.findall(page.read_text(encoding="utf-8"))):
                found.append((f"{code}-page-{index}", block))
    return found


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


@pytest.mark.parametrize(("label", "text"), [pytest.param(t, x, id=t) for t, x in _rule_examples() if _parses(x)])
def test_rule_examples(label: str, text: str) -> None:
    _assert_same(text)


def _case_files() -> list[Path]:
    files = sorted(CASES.rglob("*.py"))
    if SHARED_CASES.is_dir():
        files += sorted(SHARED_CASES.rglob("*.py"))
    return [f for f in files if _parses(f.read_text(encoding="utf-8"))]


@pytest.mark.parametrize("path", _case_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_cases(path: Path) -> None:
    _assert_same(path.read_text(encoding="utf-8"), "pkg.cases." + path.stem)


def test_shared_cases_are_compared_when_present() -> None:
    if not SHARED_CASES.is_dir():
        pytest.skip("no ../shared/cases next to the project")
    assert any(p.is_relative_to(SHARED_CASES) for p in _case_files())


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
def test_tricky_programs(label: str) -> None:
    _assert_same(textwrap.dedent(TRICKY[label]))


def test_relative_imports_in_a_package() -> None:
    text = "from . import a\nfrom .b import c\nfrom .. import d\nfrom ... import e\nfrom .... import f\nprint(a, c, d, e, f)\n"
    _assert_same(text, "pkg.sub", is_package=True)
    _assert_same(text, "pkg.sub.mod", is_package=False)
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
    _assert_same(text)


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

"""Home-made recompute functions found on CPython's ``ast``
(ckptlint.checkpoint.sites.ast_homemade), recorded while they were libcst's
(ckptlint.checkpoint.sites.homemade, for the module alone): the implementations and helpers,
in order, with their class and function ranges (1-based), stored-callable index, re-run
calls, RNG and autocast restores and API rows; on the rule examples, the test cases, the
shared cases as recorded and hand-written programs (stored callables, reversible networks,
helpers), and the programs of the reversible-network tests (golden answers:
``__snapshots__/test_ast_homemade.ambr`` and ``__digests__/homemade_reversible.json``)."""

from __future__ import annotations

import ast
import functools
import textwrap
from pathlib import Path

import pytest
from goldens import case_params, check_suite, example_params, parses, read_case, render
from index_readings import homemade_readings
from site_readings import positions

from ckptlint.checkpoint.sites.ast_homemade import home_made
from ckptlint.semantic.ast_model import AstModel
from ckptlint.text.source import SourceFile

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def _answers(text: str, module_name: str = "pkg.mod") -> list[tuple]:
    """The home-made implementations, then helpers, of ``text`` read alone."""
    model = AstModel.build(ast.parse(text), module_name, False, text)
    found = homemade_readings(home_made(model), *positions(SourceFile("<compared>", text)))
    model.release()
    return found


def _counts(text: str) -> tuple[int, int]:
    found = _answers(text)
    return sum(r[0] == "implementation" for r in found), sum(r[0] == "helper" for r in found)


@pytest.mark.parametrize(("label", "text"), example_params())
def test_rule_examples(label: str, text: str, snapshot) -> None:
    assert render(_answers(text)) == snapshot


def test_rule_examples_hold_implementations() -> None:
    """The examples are not empty of what is recorded."""
    found = [_counts(p.values[1]) for p in example_params()]
    assert sum(i for i, _ in found) >= 10
    assert sum(h for _, h in found) >= 10


@pytest.mark.parametrize("path", case_params())
def test_cases(path: Path, snapshot) -> None:
    assert render(_answers(read_case(path), "pkg.cases." + path.stem)) == snapshot


PROGRAMS = {
    "stored callables every way": """
        import torch
        from torch.cuda.amp import custom_bwd, custom_fwd

        class CheckpointFunction(torch.autograd.Function):
            @staticmethod
            @custom_fwd
            def forward(ctx, run_function, length, *args):
                ctx.run_function = run_function
                with torch.no_grad():
                    return run_function(*args)

            @staticmethod
            @custom_bwd
            def backward(ctx, *grads):
                state = torch.get_rng_state()
                torch.set_rng_state(state)
                with torch.enable_grad():
                    out = ctx.run_function(*grads)
                    again = ctx.run_function(out)
                return out, again

        class Walrus(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, fn):
                if (f := fn):
                    setattr(ctx, "fn", f)
                ctx.kept, ctx.other = fn, x
                return fn(x)

            @staticmethod
            async def backward(ctx, g):
                run = ctx.fn
                (again := ctx.kept)(g)
                return run(g, {"a": ctx.fn(g)})

        class Autocast(torch.autograd.Function):
            @staticmethod
            def forward(ctx, fn, x):
                ctx.fn = fn
                ctx.enabled = torch.is_autocast_enabled()
                return ctx.fn(x)

            @staticmethod
            def backward(ctx, g):
                with torch.autocast("cuda", enabled=ctx.enabled):
                    return ctx.fn(g)

        class NotRun(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, backward_op):
                ctx.backward_op = backward_op
                return x

            @staticmethod
            def backward(ctx, g):
                return ctx.backward_op(g)

        def checkpoint(func, inputs, params, flag):
            if flag:
                return CheckpointFunction.apply(func, len(inputs), *inputs, *params)
            return func(*inputs)

        def keyword_only(x, *, fn):
            return Walrus.apply(x, fn)

        def starred(*fns):
            return Walrus.apply(None, *fns)

        def nested(fn):
            def inner(x):
                return Autocast.apply(fn, x)
            return inner
    """,
    "reversible networks": """
        import torch
        from torch.autograd import Function

        class Deterministic(torch.nn.Module):
            def forward(self, *args, set_rng=False):
                return self.net(*args)

        class ReversibleBlock(torch.nn.Module):
            def forward(self, x):
                return x

            def backward_pass(self, y, dy, **kwargs):
                with torch.enable_grad():
                    gy1 = self.g(y, set_rng=True)
                torch.set_grad_enabled(True)
                fx2 = self.f.forward(y)
                return gy1, fx2

            def backward_grads(self, y, dy):
                torch.set_grad_enabled(True)
                y.backward(dy)

        class _ReversibleFunction(Function):
            @staticmethod
            def forward(ctx, x, blocks, kwargs):
                for block in blocks:
                    x = block(x, **kwargs)
                ctx.blocks = blocks
                return x

            @staticmethod
            def backward(ctx, dy):
                for block in ctx.blocks[::-1]:
                    y, dy = block.backward_pass(y, dy)
                return dy, None, None

        class RevBackProp(Function):
            @staticmethod
            def forward(ctx, x, layers, buffer_layers):
                layers = list(layers)
                for _, layer in enumerate(layers):
                    x = layer(x)
                ctx.layers = layers
                return x

            @staticmethod
            def backward(ctx, dx):
                layers = ctx.layers
                for _, layer in enumerate(layers[::-1]):
                    dx = layer.backward_pass(dx, dx)
                return dx, None, None

        class FastRevBackProp(RevBackProp):
            @staticmethod
            def backward(ctx, dx):
                layers = ctx.layers
                layer = layers[-1]
                for i, (this_layer, next_layer) in enumerate(zip(layers[1:][::-1], layers[:-1][::-1])):
                    dx = this_layer.backward_pass(dx, dx)
                    next_layer.backward_grads(dx, dx)
                return layer.backward_pass(dx, dx), None, None

        class Faster(FastRevBackProp):
            pass

        class ReverseFunction(torch.autograd.Function):
            @staticmethod
            def forward(ctx, run_functions, alpha, *args):
                l0, l1, *rest = run_functions
                ctx.run_functions = run_functions
                ctx.enabled = torch.is_autocast_enabled()
                return l1(l0(args[0]))

            @staticmethod
            def backward(ctx, *grads):
                l0, l1, *rest = ctx.run_functions
                with torch.random.fork_rng(), torch.enable_grad(), torch.cuda.amp.autocast(ctx.enabled):
                    c = l1(grads[0])
                    l0(c)
                with torch.set_grad_enabled(mode=True):
                    l0(c)
                return None, None

        def run(x, layers):
            executing_fn = RevBackProp.apply
            return executing_fn(x, layers, [])
    """,
    "subscripts and arguments": """
        import torch

        class Picked(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, blocks):
                ctx.blocks = blocks
                first = blocks[(0, 1)]
                second = blocks[0, 1]
                first(x)
                return blocks[0](x)

            @staticmethod
            def backward(ctx, g):
                blocks = ctx.blocks
                one = blocks[(0)]
                two = blocks[0, 1]
                three = blocks[()]
                with torch.enable_grad():
                    one(g)
                    two(g)
                    three(g)
                for b in reversed(iterable=blocks):
                    b(g)
                for b in list(*blocks):
                    with torch.enable_grad():
                        b(g)
                return g, None
    """,
    "libcst's order: dicts, keywords among starred arguments, except clauses": """
        import torch

        class P(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, blocks):
                ctx.blocks = blocks
                a, b = blocks
                a(x)
                return x

            @staticmethod
            def backward(ctx, g):
                blocks = ctx.blocks
                one = blocks[(0), 1]
                two = blocks[(0, 1), 2]
                three = blocks[((0), 1)]
                with torch.enable_grad():
                    one(g); two(g); three(g)
                    d = {one(g): two(g), "k": blocks[0](g), **three(g)}
                    for b in blocks:
                        f(*g, k=b(g), *b(g))
                return g, None

        class S(torch.autograd.Function):
            @staticmethod
            def forward(ctx, fn, x):
                ctx.fn = fn
                return fn(x)

            @staticmethod
            def backward(ctx, g):
                try:
                    pass
                except ctx.fn(0):
                    ctx.fn(7)
                return {ctx.fn(1): ctx.fn(2), ctx.fn(3): ctx.fn(4)}, f(*g, k=ctx.fn(5), *ctx.fn(6))

        def h(fn, **kw):
            return S.apply(**kw), S.apply(fn, 1)
    """,
}


_ORDER = "libcst's order: dicts, keywords among starred arguments, except clauses"


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs(name: str, snapshot) -> None:
    text = textwrap.dedent(PROGRAMS[name])
    assert render(_answers(text)) == snapshot
    counts = {
        # NotRun is none; ``starred`` passes ``*fns``, ``nested`` calls apply only in ``inner``,
        # whose ``fn`` is not its own parameter
        "stored callables every way": (3, 2),
        "reversible networks": (5, 0),
        "subscripts and arguments": (1, 0),
        "libcst's order: dicts, keywords among starred arguments, except clauses": (2, 1),
    }[name]
    assert _counts(text) == counts


@pytest.mark.parametrize("index", ["-1,", "(-1),", "::-1, 0", "(-1)"])
def test_reversible_blocks_taken_by_a_tuple_index(index: str, snapshot) -> None:
    """``layer = layers[-1,]`` is one element for libcst (one ``Index``); ``ast`` gives a tuple."""
    text = textwrap.dedent(PROGRAMS["reversible networks"])
    changed = text.replace("layer = layers[-1]", f"layer = layers[{index}]")
    assert changed != text
    assert render(_answers(changed)) == snapshot


def test_records_read_on_ast() -> None:
    """The ``ast`` records' own values, spelt out."""
    model = AstModel.build(ast.parse(textwrap.dedent(PROGRAMS["stored callables every way"])), "pkg.mod")
    found = home_made(model)
    first = found.implementations["pkg.mod.CheckpointFunction"]
    assert (first.function_index, first.restores_rng, first.restores_autocast) == (0, True, True)
    assert [call.lineno for call in first.reruns] == [20, 19]  # libcst's walk: last statement first
    assert first.api.qualified_names == ("pkg.mod.CheckpointFunction.apply",)
    helper = found.helpers["pkg.mod.checkpoint"]
    assert (helper.parameter, helper.index, helper.implementation is first) == ("func", 0, True)
    assert sorted(found.helpers) == ["pkg.mod.checkpoint", "pkg.mod.keyword_only"]
    assert found.helpers["pkg.mod.keyword_only"].index == 1  # keyword-only parameters follow
    walrus = found.implementations["pkg.mod.Walrus"]
    assert (walrus.function_index, [c.lineno for c in walrus.reruns]) == (1, [35, 35, 34])
    picked = home_made(AstModel.build(ast.parse(textwrap.dedent(PROGRAMS["subscripts and arguments"])), "m"))
    # ``blocks[(0)]`` and ``blocks[()]`` are one element each, ``blocks[0, 1]`` is not; the loop
    # over ``reversed(iterable=blocks)`` runs without grad
    assert [c.lineno for c in picked.implementations["m.Picked"].reruns] == [20, 22, 27]
    reversible = home_made(AstModel.build(ast.parse(textwrap.dedent(PROGRAMS["reversible networks"])), "m"))
    fast = reversible.implementations["m.FastRevBackProp"]
    assert (fast.api.rerun_method, fast.function_index, [c.lineno for c in fast.reruns]) == ("backward_pass", 1, [60, 62])
    ordered = home_made(AstModel.build(ast.parse(textwrap.dedent(PROGRAMS[_ORDER])), "m")).implementations
    # libcst's walk: a dict's keys and values alternate, ``k=`` sits among the starred
    # arguments, an ``except`` clause's type is read before its body
    assert [(c.lineno, c.col_offset) for c in ordered["m.S"].reruns] == [
        (37, 81), (37, 69), (37, 49), (37, 38), (37, 27), (37, 16), (35, 15), (36, 12)
    ]  # fmt: skip
    # ``blocks[(0), 1]`` and ``blocks[(0, 1), 2]`` take two indices, ``blocks[((0), 1)]`` one
    assert [(c.lineno, c.col_offset) for c in ordered["m.P"].reruns] == [(19, 28), (20, 54), (22, 24), (22, 31)]


def _reversible_test_programs() -> list[tuple[str, str]]:
    """The programs the reversible-network tests hold (string literals that parse and define
    a class, and their block template filled every way), each read as a module."""
    from test_reversible import BATCH_NORM, LAYER_NORM, SAVE_AUTOCAST, SEED, _blocks

    found = [
        (f"blocks {norm} {restore!r} {save!r}", _blocks(norm, restore, save))
        for norm in (LAYER_NORM, BATCH_NORM)
        for restore in (SEED, "")
        for save in (SAVE_AUTOCAST, "")
    ]
    for name in ("test_reversible.py", "test_reversible_inherited.py"):
        tree = ast.parse((ROOT / "tests" / "analysis" / name).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if type(node) is ast.Constant and type(node.value) is str and "class " in node.value:
                text = textwrap.dedent(node.value)
                if parses(text):
                    found.append((f"{name}:{node.lineno}", text))
    return found


_REVERSIBLE = _reversible_test_programs()


def test_reversible_test_programs(request: pytest.FixtureRequest) -> None:
    texts = [text for _, text in _REVERSIBLE]
    check_suite(request, "homemade_reversible", texts, _answers)
    assert sum(_counts(text)[0] for text in texts) >= 10

"""The reads of outer state on CPython's ``ast``
(:func:`ckptlint.checkpoint.analyses.ast_outer_reads.mutable_reads`) and the writes
(:func:`ckptlint.checkpoint.analyses.ast_outer_writes.outer_writes`), recorded while they
were libcst's, on regions built by hand for every site and on the builder's regions: for the
rule examples, the test cases, the shared cases as recorded, the programs of the test suite
and hand-written programs for the corners of the reads (the writes' corners are in
``test_ast_outer_writes.py``). Golden answers: ``__snapshots__/test_ast_outer_reads.ambr``
and ``__digests__/outer_access_suite.json``; the readings are ``outer_access_readings.py``'s."""

from __future__ import annotations

import functools
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from goldens import case_params, check_suite, example_params, read_case, render
from outer_access_readings import outer_access_answers
from test_ast_evaluator_leaves import _SUITE


@functools.cache
def answers(text: str, module_name: str = "pkg.mod") -> tuple[list[tuple], Counter[str]]:
    """The answers for ``text``, dedented (made once: the counts reuse them)."""
    return outer_access_answers(textwrap.dedent(text), module_name)


def golden(text: str, module_name: str = "pkg.mod") -> str:
    """The regions of ``text`` that hold a read or a write, one line each."""
    return render(answers(text, module_name)[0])


@pytest.mark.parametrize(("label", "text"), example_params())
def test_rule_examples(label: str, text: str, snapshot) -> None:
    assert golden(text) == snapshot


@pytest.mark.parametrize("path", case_params())
def test_cases(path: Path, snapshot) -> None:
    assert golden(read_case(path), "pkg.cases." + path.stem) == snapshot


def test_programs_of_the_test_suite(request: pytest.FixtureRequest) -> None:
    """One test for them all (a few hundred small programs)."""
    assert check_suite(request, "outer_access_suite", _SUITE, golden) >= 100


PROGRAMS = {
    "module state": """
        import torch
        from torch.utils.checkpoint import checkpoint
        SCALE = 1.0
        STATE = {"n": 0, "flag": False}
        COUNTS = []
        try:
            import apex
            HAVE_APEX = True
        except ImportError:
            HAVE_APEX = False

        def set_scale(value):
            global SCALE
            SCALE = value

        def body(x):
            STATE["flag"] = True
            return x * SCALE + STATE["n"] + len(COUNTS) + HAVE_APEX

        def run(x):
            y = checkpoint(body, x, use_reentrant=False)
            set_scale(0.5)
            COUNTS.append(1)
            STATE["n"] += 1
            return y

        if __name__ == "__main__":
            SCALE = 2.0
            run(torch.ones(2))
        """,
    "region writes": """
        from torch.utils.checkpoint import checkpoint
        _CACHE = {}
        _INITIALIZED = False
        _TRACKER = None
        _STACK = []
        _SEEN = set()
        W = None

        def init():
            global _INITIALIZED, _TRACKER
            if _INITIALIZED:
                return
            _TRACKER = object()
            _INITIALIZED = True

        def body(x, key):
            init()
            if key not in _CACHE:
                _CACHE[key] = x * 2
            _STACK.append(x); y = _STACK[-1]
            _STACK.pop()
            W.grad = None
            _SEEN.add(key)
            return _CACHE[key] + y + _TRACKER + len(_SEEN) + W

        def run(x):
            return checkpoint(body, x, "k", use_reentrant=False)
        """,
    "closures": """
        from torch.utils.checkpoint import checkpoint

        def model(layers, x, use_cache=True, past=None):
            scale = 1.0
            kwargs = {}
            outs = []
            for i, layer in enumerate(layers):
                if use_cache:
                    use_cache = False
                past_kv = past[i] if past is not None else None
                fn = lambda h: layer(h, past_kv, scale, kwargs, use_cache) + i
                x = checkpoint(fn, x, use_reentrant=False)
                if i > 2:
                    kwargs["window"] = i
                outs.append(x)
            scale = 2.0
            return outs

        def factory(block):
            count = 0
            def bump():
                nonlocal count
                count += 1
            def inner(x):
                bump()
                return block(x) * count
            return inner

        def later(x, blocks):
            memo = []
            def run_block(h):
                return blocks[0](h) + len(memo)
            weight = 3
            y = checkpoint(run_block, x, use_reentrant=False)
            memo.append(y)
            helper(memo)
            return y * weight
        """,
    "direct calls": """
        from torch.utils.checkpoint import checkpoint

        def outer(x, blocks):
            state = {"k": 1}
            def checkpoint_forward(h):
                return blocks(h) * state["k"]
            state["k"] = 2
            y = checkpoint_forward(x)
            state["k"] = 3
            def step(h):
                return checkpoint(checkpoint_forward, h, use_reentrant=False)
            z = step(y)
            step(z)
            return z

        def escapes(x, blocks, inner=None):
            total = [0]
            def fwd(h):
                return blocks(h) + total[0]
            out = checkpoint(fwd, x, use_reentrant=False)
            total[0] += 1
            register(fwd)
            return out
        """,
    "names spelled as strings": """
        from torch.utils.checkpoint import checkpoint

        def plain(x, blocks):
            level = [1]
            def step(h):
                return checkpoint(lambda v: blocks(v) * level[0], h, use_reentrant=False)
            level[0] = 2
            return step(x)

        def keyword(x, blocks):
            level = [1]
            def step(h):
                return checkpoint(lambda v: blocks(v) * level[0], h, use_reentrant=False)
            level[0] = 2
            configure(step=3)
            return step(x)

        def parameter(x, blocks):
            level = [1]
            def step(h):
                return checkpoint(lambda v: blocks(v) * level[0], h, use_reentrant=False)
            level[0] = 2
            other = lambda step: step
            return step(x)

        def imported(x, blocks):
            level = [1]
            def step(h):
                return checkpoint(lambda v: blocks(v) * level[0], h, use_reentrant=False)
            level[0] = 2
            from .step import tools
            import step.more as more
            return step(x)

        def handled(x, blocks):
            level = [1]
            def step(h):
                return checkpoint(lambda v: blocks(v) * level[0], h, use_reentrant=False)
            level[0] = 2
            try:
                pass
            except ValueError as step:
                pass
            return step(x)

        def shadowed(x, blocks):
            level = [1]
            def step(h):
                return checkpoint(lambda v: blocks(v) * level[0], h, use_reentrant=False)
            level[0] = 2
            class Inner:
                def step(self):
                    return 1
            return step(x)
        """,
    "written before read": """
        from torch.utils.checkpoint import checkpoint

        class Pipe:
            def run(self, layers, x):
                holder = self
                for idx, layer in enumerate(layers):
                    holder.curr_layer = idx; seed = holder.base + holder.curr_layer
                    if idx: holder.last = idx; seed += holder.last
                    holder.curr_layer = idx
                    x = checkpoint(lambda h: layer(h) + holder.curr_layer + holder.forward_funcs + seed, x, use_reentrant=False)
                return x
        """,
    "module attributes": """
        import torch
        import pkg.config as config
        import pkg.config
        from torch.utils.checkpoint import checkpoint

        def body(x):
            return x * config.FLAG + pkg.config.SCALE + config.OTHER

        def train(x, steps):
            config.OTHER = 1
            for _ in range(steps):
                y = checkpoint(body, x, use_reentrant=False)
                config.FLAG = not config.FLAG
            pkg.config.SCALE = 2
            return y
        """,
    "phase guards": """
        import torch
        from torch.utils.checkpoint import checkpoint
        from fairscale.nn.checkpoint import is_checkpointing, is_recomputing
        COUNTER = 0

        def body(x):
            global COUNTER
            if not is_recomputing():
                COUNTER += 1
            y = x * COUNTER if torch.is_grad_enabled() else x
            return y

        def run(x):
            a = checkpoint(body, x, use_reentrant=True)
            b = checkpoint(body, x, use_reentrant=False)
            return a + b
        """,
    "scripts and setters": """
        import torch
        from torch.utils.checkpoint import checkpoint
        RATE = 0.1
        HIST = []

        def set_rate(value):
            global RATE
            RATE = value

        def f(x):
            return x * RATE + len(HIST)

        for step in range(3):
            y = checkpoint(f, torch.ones(1), use_reentrant=False)
            HIST.append(y)
        set_rate(0.2)
        set_rate(0.3)
        """,
    "parentheses and comments": """
        from torch.utils.checkpoint import checkpoint
        TABLE = {}
        OPTS = {"a": 1}

        def body(x):
            v = (TABLE)[  # the key
                "a"
            ] + (OPTS).get("a")
            return x + v

        def run(x):
            (TABLE)["a"] = x
            return checkpoint(body, x, use_reentrant=False)
        """,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs(name: str, snapshot) -> None:
    assert golden(PROGRAMS[name]) == snapshot


def totals(texts: list[str]) -> Counter[str]:
    """How many sites, regions, reads and writes ``texts`` hold, summed."""
    total: Counter[str] = Counter()
    for text in texts:
        total.update(answers(text)[1])
    return total


def test_the_inputs_hold_what_is_compared() -> None:
    """The programs above, the rule examples and the suite's programs are not empty of reads
    and writes, on hand-built regions and on the builders' ones."""
    assert totals(list(PROGRAMS.values()))["read"] >= 60
    total = totals([p.values[1] for p in example_params()] + _SUITE)
    for kind, least in {"site": 600, "region": 3000, "read": 100, "write": 200}.items():
        assert total[kind] >= least, kind

"""The write exemptions of CKP202 on CPython's ``ast``
(:mod:`ckptlint.checkpoint.analyses.ast_write_exemptions`), recorded while they answered as
libcst's (:mod:`ckptlint.checkpoint.analyses.write_exemptions`): for every region, frame,
assignment, call, name and ``if`` of the regions ``outer_state_readings.hand_regions``
builds, the balanced calls, RNG setters, constants and their keys, shape bookkeeping, memo
fills, idempotent conversions, saved-and-restored state, one-time writes, writes after the
last saved tensor, phase guards, diagnostic counters, exit guards and assignments in bodies.
Inputs: the rule examples, the test cases, the shared cases as recorded, the programs of the
test suite and hand-written programs of every pattern the exemptions name (golden answers:
``__snapshots__/test_ast_write_exemptions.ambr``, ``__digests__/write_exemptions_suite.json``)."""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path

import pytest
from goldens import case_params, check_suite, example_params, read_case
from outer_state_readings import yes_counts
from test_ast_evaluator_leaves import _SUITE
from test_ast_outer_state import _answers, _golden

#: The kinds of answers of ``write_exemptions``.
KINDS = {
    "balanced", "rng", "constant", "constant key", "shape", "memo fill", "conversion", "restored", "once",
    "after saved", "phase", "counter", "exit guard", "exit body", "assigns",
}  # fmt: skip


@pytest.mark.parametrize(("label", "text"), example_params())
def test_rule_examples(label: str, text: str, snapshot) -> None:
    assert _golden(text, KINDS) == snapshot


@pytest.mark.parametrize("path", case_params())
def test_cases(path: Path, snapshot) -> None:
    assert _golden(read_case(path), KINDS) == snapshot


def test_programs_of_the_test_suite(request: pytest.FixtureRequest) -> None:
    assert check_suite(request, "write_exemptions_suite", _SUITE, lambda text: _golden(text, KINDS)) >= 100


PROGRAMS = {
    "memo fills and lazy initialisation": """
        import torch
        _CACHE = {}
        _INITIALIZED = False

        class Conv2dSame(torch.nn.Module):
            def forward(self, x):
                if self.pad is None:
                    self.pad = compute(x)
                if key not in self.cache:
                    self.cache[key] = build(x)
                if key in self.table:
                    use(self.table[key])
                else:
                    self.table[key] = build(x)
                if self.cos is None or x.size(0) > self.cached_len:
                    self.cos = x.cos()
                    self.cached_len = x.size(0)
                if not self._initialized:
                    self.setup(); self._initialized = True
                if self._cached.device != x.device:
                    self._cached = x.new_zeros(1)
                if self.kv is not None and self.kv.shape == x.shape:
                    pass
                else:
                    self.kv = x.clone()
                if self.one is None: self.one = x
                if self.other is not None: use(self.other)
                else: self.other = x
                if self.elif_value is not None:
                    pass
                elif flag:
                    self.elif_value = x
                cache = _CACHE.get(key)
                if cache is None:
                    _CACHE[key] = cache = make(x)
                while x.size(1) >= self.end or 0 >= self.end:
                    self.end *= 2
                while x.size(1) >= self.limit:
                    self.limit *= 2
                    y = x
                while self.stop: self.stop -= 1
                return x

        def setup_tracker(seed):
            global _INITIALIZED
            if _INITIALIZED:
                return
            _TRACKER.add(seed)
            _INITIALIZED = True

        def streams(self, k):
            if len(self._streams) > 0:
                return self._streams
            self._streams[k] = new()
        """,
    "exit guards and guards of several lines": """
        class Once:
            def forward(self, x):
                if self.done: return x
                if self.ready:
                    log(); return x
                if self.count > 3:
                    raise ValueError(
                        "too many")
                for item in x:
                    if item.skip:
                        continue
                    if item.big: a = 1; continue
                if self.long:
                    a = 1
                    return a
                if self.other: a = 1; return a
                self.done = True
                return x
        """,
    "counters, logging and phases": """
        import logging
        import torch
        from fairscale.nn.checkpoint import is_recomputing, is_checkpointing
        logger = logging.getLogger(__name__)

        class Block(torch.nn.Module):
            def forward(self, h):
                self.print_idx += 1
                self.calls += 1
                self.steps += 1
                if not is_recomputing():
                    self.seen += 1
                    stats.append(h)
                y = self.f(h) if is_checkpointing() else h
                if torch.is_grad_enabled():
                    self.grad_calls += 1
                elif x:
                    self.other += 1
                self.ticks += 1.0
                return h, self.out

            def report(self):
                if self.print_idx == 0:
                    logger.debug("first")
                elif self.print_idx > 3:
                    if verbose:
                        logger.info("late %s", self.print_idx)
                else:
                    pass
                self.logger.warning("calls %d", self.calls)
                print(self.steps)
                return self.steps * 2
        """,
    "rng state, push and pop, saved and restored": """
        import torch
        from torch import cuda
        _STACK = []

        def _set_cuda_rng_state(state):
            torch.cuda.default_generators[0].set_state(state)

        def _set_other(state):
            torch._C._cuda_setRNGState(state)

        class Tracker:
            def fork(self, name):
                orig = self._current_state_name
                self._current_state_name = name
                _set_cuda_rng_state(self.states[name])
                torch.cuda.set_rng_state(self.states[name])
                self._current_state_name = orig

            def push(self, msg):
                _STACK.append(msg)
                self.names.append(msg)
                self.seen.add(msg)
                self.queue.appendleft(msg)

            def pop(self):
                _STACK.pop()
                self.names.pop(0)
                self.seen.remove(1)
                self.queue.popleft()

            def forward(self, x):
                self.push(x)
                y = x * 2
                self.pop()
                _set_other(x)
                return y
        """,
    "constants, conversions and shapes": """
        import torch

        class Net(torch.nn.Module):
            def forward(self, x, T=None):
                self.a = None
                self.b: int = 0
                self.c = []
                self.d = {}
                self.e = ()
                self.f = list()
                self.g = dict(a=1)
                self.h = -1.5
                self.i = "text"
                self.j = (1, 2)
                self.k = LIMIT
                T = T.to(x.dtype) if T is not None else None
                self.w = self.w.to(x.device).float()
                self.v = self.v.to(self.v.device)
                self.u = self.u if cond else self.u.cuda()
                self.t = T.to(dtype=x.dtype) if T is None else T
                self.H, self.W = x.shape[-2:]
                self.n = x.size(0)
                self.m = len(x)
                self.p = int(x.numel())
                self.q = x.sum()
                self.r = x.dtype
                return x
        """,
    "writes after the last saved tensor": """
        class Model:
            def forward(self, x):
                h = self.layer(x)
                self.print_idx += 1
                self.other += 2; self.more += 3
                return h, self.state

            def two(self, x):
                self.count += 1
                y = x + 1
                return y

            def three(self, x):
                self.count += 1
                return (x, *rest)

            def four(self, x):
                if x:
                    self.count += 1
                    return x, None
                self.count += 1
                return x.sum()
        """,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs(name: str, snapshot) -> None:
    assert _golden(textwrap.dedent(PROGRAMS[name]), KINDS) == snapshot


def test_the_programs_hold_every_exemption() -> None:
    """Each exemption answers yes somewhere in the hand-written programs, so the recorded
    answers are not all ``False``."""
    yes = sum((yes_counts(_answers(textwrap.dedent(p))) for p in PROGRAMS.values()), Counter())
    for kind in ("balanced", "rng", "constant", "constant key", "shape", "memo fill", "conversion", "restored", "once",
                 "after saved", "phase", "counter", "exit guard", "exit body", "assigns"):  # fmt: skip
        assert yes[kind] > 0, kind

"""The end-of-region resets of CKP202 on CPython's ``ast``
(:mod:`ckptlint.checkpoint.analyses.ast_end_resets`), recorded while they answered as
libcst's (:mod:`ckptlint.checkpoint.analyses.end_resets`): for every region
``outer_state_readings.hand_regions`` builds, the resets (frame, attribute, statement line,
constant) and, for every assignment and method call of its frames, whether they cover it.
Inputs: the rule examples, the test cases, the shared cases as recorded, the programs of the
test suite and hand-written programs after fairseq's MoE layer (golden answers:
``__snapshots__/test_ast_end_resets.ambr``, ``__digests__/end_resets_suite.json``)."""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path

import pytest
from goldens import case_params, check_suite, example_params, read_case
from outer_state_readings import yes_counts
from test_ast_evaluator_leaves import _SUITE
from test_ast_outer_state import _answers, _golden

KINDS = {"resets", "covers"}


@pytest.mark.parametrize(("label", "text"), example_params())
def test_rule_examples(label: str, text: str, snapshot) -> None:
    assert _golden(text, KINDS) == snapshot


@pytest.mark.parametrize("path", case_params())
def test_cases(path: Path, snapshot) -> None:
    assert _golden(read_case(path), KINDS) == snapshot


def test_programs_of_the_test_suite(request: pytest.FixtureRequest) -> None:
    assert check_suite(request, "end_resets_suite", _SUITE, lambda text: _golden(text, KINDS)) >= 100


PROGRAMS = {
    "fairseq's MoE layer": """
        import time
        import torch

        class MOELayer(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.a2a_cpu_time_ms = 0.0
                self.a2a_cuda_event_intervals = []
                self.calls = 0

            def forward(self, x):
                start = time.time()
                self.a2a_cpu_time_ms += time.time() - start
                self.a2a_cuda_event_intervals.append((start, start))
                self.calls += 1
                y = self.experts(x)
                self.record_all_to_all_stats()
                return y

            def record_all_to_all_stats(self):
                self.metadata["all_to_all_cpu_time_ms"] = self.a2a_cpu_time_ms
                self.a2a_cpu_time_ms = 0.0
                self.a2a_cuda_event_intervals = []
        """,
    "resets in the frame, on shared lines and after returns": """
        class Stats:
            def __init__(self):
                self.total = 0
                self.items = []
                self.flag = False
                self.other = None

            def forward(self, x):
                self.total += x; self.items.append(x)
                self.helper(x)
                self.other = 1
                if x:
                    self.flag = True
                self.total = 0; self.items = []
                self.flag = False
                return x

            def helper(self, x):
                self.total += 2
                self.flag = True

            def early(self, x):
                self.total += 1
                if x:
                    return x
                self.total = 0

            def touched_after(self, x):
                self.total += 1
                self.total = 0
                print(self.total)

            def calls_after(self, x):
                self.total += 1
                self.total = 0
                self.log(x)

            def posonly(self, /, x):
                self.total += 1
                self.reset_all()

            def reset_all(this):
                this.total = 0
                this.items = list()

            def one_line(self, x): self.total = 0

            def with_match(self, x):
                self.total += 1
                match x:
                    case 1:
                        self.total = 0
                    case _:
                        pass
                self.items.append(x)
                self.total = 0; self.items = []
        """,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs(name: str, snapshot) -> None:
    assert _golden(textwrap.dedent(PROGRAMS[name]), KINDS) == snapshot


def test_the_programs_hold_resets_and_covered_writes() -> None:
    yes = sum((yes_counts(_answers(textwrap.dedent(p))) for p in PROGRAMS.values()), Counter())
    assert yes["resets"] >= 5
    assert yes["covers"] >= 4

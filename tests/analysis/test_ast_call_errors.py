"""The call errors of a site on ``ast`` (:mod:`ckptlint.checkpoint.sites.ast_call_errors`) are
libcst's (:mod:`ckptlint.checkpoint.sites.call_errors`): for every site of the rule examples,
the cases and the test-suite programs, read alone, what the reentrant variant, the
``checkpoint_sequential`` call and the composable ``checkpoint`` raise for, with and without
``own_only``/``certain``, and whether the site always raises; the keywords as names and
positions."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from test_ast_evaluator_leaves import _SUITE
from test_ast_model import _case_files, _parses, _rule_examples

from ckptlint.checkpoint.sites import ast_call_errors, call_errors
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.checkpoint.sites.sites import site_index
from ckptlint.semantic.analysis import ModuleAnalysis
from ckptlint.semantic.ast_analysis import parse_ast
from ckptlint.semantic.parse import parse_module_unvalidated
from ckptlint.text.source import SourceFile

_EXAMPLES = [text for _, text in _rule_examples() if _parses(text)]


def _readings(errors, site, model, start) -> tuple:
    """What ``errors`` (either module) answers for ``site``; ``start`` gives a node's position."""
    keywords = errors._function_keywords(site)
    sequential = [start(arg) for arg in errors.sequential_unexpected_keywords(site)]
    every = [start(arg) for arg in errors.sequential_unexpected_keywords(site, own_only=False)]
    return (
        start(site.call),
        [start(arg) for arg in keywords],
        [errors.reentrant_raising(site, model, keywords, own_only=o, certain=c) for o in (True, False) for c in (True, False)],
        errors.sequential_extra_positionals(site),
        errors.sequential_extra_positionals(site, own_only=False),
        sequential,
        every,
        [errors.composable_raising(site, keywords, own_only=o) for o in (True, False)],
        [errors.own_option(site, value) for value in site.options.values()],
        errors.always_raises(site, model),
    )


def _compared(text: str) -> tuple[list[tuple], list[tuple]]:
    source = SourceFile("<compared>", text)
    analysis = ModuleAnalysis(source, parse_module_unvalidated(text), "pkg.mod", False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        twin = parse_ast(source, "pkg.mod")
    assert twin is not None

    def cst_start(node):
        return analysis.range(node)[0]

    expected = [_readings(call_errors, s, analysis.model, cst_start) for s in site_index(analysis).sites]
    got = [_readings(ast_call_errors, s, twin.model, twin.start) for s in ast_site_index(twin).sites]
    return expected, got


@pytest.mark.parametrize("text", _EXAMPLES)
def test_rule_examples(text: str) -> None:
    expected, got = _compared(text)
    assert got == expected


@pytest.mark.parametrize("path", _case_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_cases(path: Path) -> None:
    expected, got = _compared(path.read_text(encoding="utf-8"))
    assert got == expected


def test_programs_of_the_test_suite_and_what_they_hold() -> None:
    found, sites, raising = [], 0, 0
    for index, text in enumerate(_SUITE + _EXAMPLES):
        expected, got = _compared(text)
        if got != expected:
            found.append((index, expected, got))
        sites += len(expected)
        raising += sum(1 for reading in expected if reading[-1])
    assert found == []
    assert sites >= 500 and raising >= 10  # the inputs hold sites, and sites that always raise

"""The call errors of a site on ``ast`` (:mod:`ckptlint.checkpoint.sites.ast_call_errors`),
recorded while they equalled libcst's: for every site of the rule examples, the cases and the
test-suite programs, read alone, what the reentrant variant, the ``checkpoint_sequential``
call and the composable ``checkpoint`` raise for, with and without ``own_only``/``certain``,
and whether the site always raises; the keywords as positions (golden answers:
``__snapshots__/test_ast_call_errors.ambr``, ``__digests__/call_errors.json``)."""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

import pytest
from goldens import case_params, check_suite, example_params, read_case, render
from test_ast_evaluator_leaves import _SUITE

from ckptlint.checkpoint.sites import ast_call_errors
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.semantic.ast_analysis import parse_ast
from ckptlint.text.source import SourceFile


def _readings(errors, site, model, start) -> tuple:
    """What ``errors`` answers for ``site``; ``start`` gives a node's position."""
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


@functools.cache
def _answers(text: str) -> list[tuple]:
    """The readings of every site of ``text`` as module ``pkg.mod``."""
    source = SourceFile("<compared>", text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        twin = parse_ast(source, "pkg.mod")
    assert twin is not None
    return [_readings(ast_call_errors, s, twin.model, twin.start) for s in ast_site_index(twin).sites]


@pytest.mark.parametrize(("label", "text"), example_params())
def test_rule_examples(label: str, text: str, snapshot) -> None:
    assert render(_answers(text)) == snapshot


@pytest.mark.parametrize("path", case_params())
def test_cases(path: Path, snapshot) -> None:
    assert render(_answers(read_case(path))) == snapshot


def test_programs_of_the_test_suite_and_what_they_hold(request: pytest.FixtureRequest) -> None:
    assert check_suite(request, "call_errors", _SUITE, _answers) >= 100
    found = [reading for text in _SUITE for reading in _answers(text)]
    examples = [reading for param in example_params() for reading in _answers(param.values[1])]
    sites = len(found) + len(examples)
    raising = sum(1 for reading in found + examples if reading[-1])
    assert sites >= 500 and raising >= 10  # the inputs hold sites, and sites that always raise

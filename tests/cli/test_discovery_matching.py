"""The fast matchers of discovery agree with pathspec pattern by pattern."""

from __future__ import annotations

import itertools

import pathspec
import pytest

from ckptlint.config.discovery import _any_pattern_regex
from ckptlint.config.patterns import exclude_matcher as _exclude_matcher
from ckptlint.config.patterns import pattern_matches

PATTERNS = ["build", ".git", "*.pyc", "docs/", "/top.py", "a/**/b", "!keep.py", "foo[0-9]", "x y", "tests/fixtures", "*_pb2.py"]
PATHS = [
    "build/x.py", "a/build/y.py", "a/b.py", "a/x/b/c.py", "docs/", "docs/x.py", "sub/docs/x.py", "top.py",
    "sub/top.py", "keep.py", "foo1.py", "foo1/x.py", "x y/z.py", "tests/fixtures/a.py", "q/tests/fixtures/a.py",
    "m_pb2.py", "builder.py", "build/", ".git/", "a/", "z.pyc", "sub/keep.py",
]


@pytest.mark.parametrize("size", [1, 2, 3])
def test_exclude_matcher_equals_any_single_pattern(size: int) -> None:
    for combo in itertools.combinations(PATTERNS, size):
        matches = _exclude_matcher(combo)
        for path in PATHS:
            assert matches(path) == any(pattern_matches(p, path) for p in combo), (combo, path)


@pytest.mark.parametrize("size", [1, 2, 3])
def test_gitignore_prefilter_never_hides_a_match(size: int) -> None:
    for combo in itertools.combinations(PATTERNS, size):
        spec = pathspec.GitIgnoreSpec.from_lines(combo)
        prefilter = _any_pattern_regex(spec)
        assert prefilter is not None
        for path in PATHS:
            if prefilter.search(path) is None:
                assert spec.check_file(path).include is None, (combo, path)

"""Gitignore-style path patterns (pathspec's ``GitIgnoreSpec``), as ``exclude``,
``per-file-ignores`` and ``.gitignore`` files use them."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pathspec

# pathspec (about 25 ms to import) is imported where a pattern is compiled: linting files
# named on the command line without --force-exclude never needs it.

__all__ = ["exclude_matcher", "pattern_matches"]


@lru_cache(maxsize=512)
def _pattern(pattern: str) -> pathspec.PathSpec:
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines([pattern])


def pattern_matches(pattern: str, relative_path: str) -> bool:
    """Whether gitignore-style ``pattern`` matches ``relative_path`` (``/``-separated).

    A pattern without a slash matches a file or folder of that name at any depth (and all
    below a matched folder); one with a slash is anchored to the settings' root.
    """
    return _pattern(pattern).match_file(relative_path)


_GLOB_CHARACTERS = frozenset("*?[]!\\/ ")


@lru_cache(maxsize=64)
def exclude_matcher(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """A function telling whether any of ``patterns`` matches a relative path (``/``-separated,
    ending in ``/`` for a folder), equal to ``any(pattern_matches(p, path) ...)`` but fast:
    plain names (``.git``, ``build``: a file or folder of that name at any depth) are looked
    up in a set of the path's components, and the other patterns are compiled into one
    ``GitIgnoreSpec`` (one spec per pattern when there are negations, whose meaning
    depends on the order)."""
    plain = frozenset(p for p in patterns if p and not (_GLOB_CHARACTERS & set(p)))
    others = [p for p in patterns if p not in plain]
    match_others: Callable[[str], bool]
    if any(p.startswith("!") for p in others):
        specs = [_pattern(p) for p in others]

        def match_others(path: str) -> bool:
            return any(spec.match_file(path) for spec in specs)

    elif others:
        import pathspec

        match_others = pathspec.GitIgnoreSpec.from_lines(others).match_file
    else:

        def match_others(path: str) -> bool:
            return False

    def matches(path: str) -> bool:
        if plain and not plain.isdisjoint(path.rstrip("/").split("/")):
            return True
        return match_others(path)

    return matches

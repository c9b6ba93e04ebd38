"""Version ranges of libraries, and how a declared range meets the range of a library fact.

A range is a union of intervals of :class:`packaging.version.Version` built from PEP 440
specifiers that ``packaging`` parses (``>=5.4``, ``==4.57.*``, ``~=5.4``, ``!=5.1``); nothing
here parses a specifier by hand. Two kinds of ranges meet:

- the range a project declares for a library (:class:`TargetVersion`, read by
  :mod:`ckptlint.config.declarations` or given as an override);
- the range of a library fact (:mod:`ckptlint.facts.version_facts`): the versions in which
  a behaviour was checked in the library's source.

:func:`decide` says whether every declared version lies in a fact's range (``INSIDE``), some
do (``PARTLY``), none do (``OUTSIDE``), or nothing is declared (``UNDECLARED``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import cached_property

from packaging.specifiers import InvalidSpecifier, Specifier, SpecifierSet
from packaging.version import InvalidVersion, Version

__all__ = [
    "Decision",
    "Placement",
    "TargetVersion",
    "VersionRange",
    "decide",
    "specifier_range",
]

@dataclass(frozen=True)
class _End:
    """One end of an interval: a version, and whether the version itself is in."""

    version: Version
    inclusive: bool


def _lower_key(end: _End | None) -> tuple:
    if end is None:
        return (0,)
    return (1, end.version, 0 if end.inclusive else 1)


def _upper_key(end: _End | None) -> tuple:
    if end is None:
        return (2,)
    return (1, end.version, 1 if end.inclusive else 0)


def _empty(low: _End | None, high: _End | None) -> bool:
    if low is None or high is None:
        return False
    if low.version != high.version:
        return low.version > high.version
    return not (low.inclusive and high.inclusive)


def _next_release(version: Version, keep: int) -> Version:
    """The first release after every version starting with the first ``keep`` parts of
    ``version``'s release: ``(5.4, keep=1)`` -> ``6``."""
    release = list(version.release[:keep]) or [0]
    release[-1] += 1
    epoch = f"{version.epoch}!" if version.epoch else ""
    return Version(epoch + ".".join(str(part) for part in release))


@dataclass(frozen=True)
class VersionRange:
    """A set of versions: sorted, disjoint intervals ``(low, high)``; ``None`` is an open end.

    Pre-releases are ordered as ``packaging`` orders them (``5.0rc1 < 5.0``); a range is a
    set of versions, so ``<5.0`` holds ``5.0rc1`` although pip would not pick it."""

    intervals: tuple[tuple[_End | None, _End | None], ...]

    @staticmethod
    def everything() -> VersionRange:
        return VersionRange(((None, None),))

    @property
    def is_empty(self) -> bool:
        return not self.intervals

    @property
    def is_everything(self) -> bool:
        return self.intervals == ((None, None),)

    def intersection(self, other: VersionRange) -> VersionRange:
        found = []
        for low_a, high_a in self.intervals:
            for low_b, high_b in other.intervals:
                low = max(low_a, low_b, key=_lower_key)
                high = min(high_a, high_b, key=_upper_key)
                if not _empty(low, high):
                    found.append((low, high))
        return _normalised(found)

    def union(self, other: VersionRange) -> VersionRange:
        return _normalised([*self.intervals, *other.intervals])

    def complement(self) -> VersionRange:
        """Every version this range leaves out."""
        gaps: list[tuple[_End | None, _End | None]] = []
        previous: _End | None = None  # the start of the gap after the last interval
        first = True
        for low, high in self.intervals:
            if low is not None:
                gaps.append((None if first else previous, _End(low.version, not low.inclusive)))
            first = False
            if high is None:
                return _normalised([g for g in gaps if not _empty(*g)])
            previous = _End(high.version, not high.inclusive)
        gaps.append((None if first else previous, None))
        return _normalised([g for g in gaps if not _empty(*g)])

    def issubset(self, other: VersionRange) -> bool:
        return self.intersection(other.complement()).is_empty

    def __str__(self) -> str:
        """``>=4.40,<5.0`` or ``<4.0 or >=4.2``; intervals that only single versions separate
        (``!=4.52.0,!=4.52.1`` in a declaration) read as one with its exceptions:
        ``>=4.51.3,<5.0.0 except 4.52.0 and 4.52.1``, ``... except 12 single versions``
        beyond :data:`_SHOWN_EXCEPTIONS`."""
        if self.is_empty:
            return "no version"
        groups: list[tuple[_End | None, _End | None, list[Version]]] = []
        for low, high in self.intervals:
            if groups and _single_gap(groups[-1][1], low):
                last_low, last_high, holes = groups[-1]
                assert last_high is not None
                groups[-1] = (last_low, high, [*holes, last_high.version])
            else:
                groups.append((low, high, []))
        return " or ".join(_interval_text(low, high) + _exceptions(holes) for low, high, holes in groups)


#: How many single versions left out of a range are named before they are counted.
_SHOWN_EXCEPTIONS = 2


def _single_gap(high: _End | None, low: _End | None) -> bool:
    """Whether one interval ending at ``high`` and the next starting at ``low`` leave out
    exactly one version between them (``<4.52.0`` then ``>4.52.0``)."""
    return high is not None and low is not None and high.version == low.version and not (high.inclusive or low.inclusive)


def _exceptions(holes: list[Version]) -> str:
    if not holes:
        return ""
    if len(holes) <= _SHOWN_EXCEPTIONS:
        return " except " + " and ".join(str(hole) for hole in holes)
    return f" except {len(holes)} single versions"


def _interval_text(low: _End | None, high: _End | None) -> str:
    if low is None and high is None:
        return "any version"
    if low is not None and high is not None and low.version == high.version:
        return f"=={low.version}"
    parts = []
    if low is not None:
        parts.append(f"{'>=' if low.inclusive else '>'}{low.version}")
    if high is not None:
        parts.append(f"{'<=' if high.inclusive else '<'}{high.version}")
    return ",".join(parts)


def _normalised(intervals: list[tuple[_End | None, _End | None]]) -> VersionRange:
    """Sort and merge overlapping or touching intervals."""
    ordered = sorted(intervals, key=lambda pair: _lower_key(pair[0]))
    merged: list[tuple[_End | None, _End | None]] = []
    for low, high in ordered:
        if merged:
            last_low, last_high = merged[-1]
            touching = last_high is None or (
                low is not None
                and (
                    low.version < last_high.version
                    or (low.version == last_high.version and (low.inclusive or last_high.inclusive))
                )
            )
            if touching:
                merged[-1] = (last_low, max(last_high, high, key=_upper_key))
                continue
        merged.append((low, high))
    return VersionRange(tuple(merged))


def _one_specifier(spec: Specifier) -> VersionRange:
    operator, text = spec.operator, spec.version
    if text.endswith(".*"):  # ==5.* / !=5.4.*
        prefix = Version(text[:-2])
        span = VersionRange(((_End(prefix, True), _End(_next_release(prefix, len(prefix.release)), False)),))
        return span if operator == "==" else span.complement()
    try:
        version = Version(text)
    except InvalidVersion:  # === with a non-PEP 440 string
        return VersionRange(())
    if operator in ("==", "==="):
        return VersionRange(((_End(version, True), _End(version, True)),))
    if operator == "!=":
        return VersionRange(((_End(version, True), _End(version, True)),)).complement()
    if operator == ">=":
        return VersionRange(((_End(version, True), None),))
    if operator == ">":
        return VersionRange(((_End(version, False), None),))
    if operator == "<=":
        return VersionRange(((None, _End(version, True)),))
    if operator == "<":
        return VersionRange(((None, _End(version, False)),))
    if operator == "~=":  # ~=5.4 is >=5.4, ==5.*
        upper = _next_release(version, max(len(version.release) - 1, 1))
        return VersionRange(((_End(version, True), _End(upper, False)),))
    raise InvalidSpecifier(str(spec))


def specifier_range(specifiers: str | SpecifierSet) -> VersionRange:
    """The versions a PEP 440 specifier set allows (``""``: every version).

    Raises:
        packaging.specifiers.InvalidSpecifier: for text ``packaging`` does not accept.
    """
    found = VersionRange.everything()
    for spec in SpecifierSet(specifiers) if isinstance(specifiers, str) else specifiers:
        found = found.intersection(_one_specifier(spec))
    return found


@dataclass(frozen=True)
class TargetVersion:
    """The versions of one library a project allows, and where that was read.

    Attributes:
        library: the library's normalised name (``"transformers"``).
        alternatives: PEP 440 specifier sets, one per place that declares the library (the
            main dependencies, an extra, a dependency group, a requirements file); the
            project allows their union. ``""`` allows every version.
        source: the file that declared it (a path; several joined by ``"; "``), or the override (``"--target-version"``,
            ``"[tool.ckptlint] target-versions"``).
        line: the 1-based line of the first declaration in ``source`` (``0``: unknown).
    """

    library: str
    alternatives: tuple[str, ...]
    source: str
    line: int = 0

    @cached_property
    def range(self) -> VersionRange:
        found = VersionRange(())
        for specifiers in self.alternatives:
            found = found.union(specifier_range(specifiers))
        return found

    @property
    def declared(self) -> str:
        """The declaration as a requirement (``transformers>=5.4``; ``transformers>=4.40 or
        transformers>=5.0`` for alternatives)."""
        return " or ".join(f"{self.library}{spec}" for spec in self.alternatives) or self.library

    @property
    def where(self) -> str:
        """``requirements.txt:3`` (the file name and line) or the override's name."""
        from pathlib import PurePath

        names = [PurePath(part).name for part in self.source.split("; ")]
        if self.line:
            names[0] = f"{names[0]}:{self.line}"  # the line is the first file's
        return ", ".join(names)

    def __str__(self) -> str:
        """``transformers >=5.4 (transformers>=5.4 in /project/requirements.txt:3)``."""
        return f"{self.library} {self.range} ({self.declared} in {self.source}{f':{self.line}' if self.line else ''})"


class Placement(str, Enum):
    """Where a declared range lies against a fact's range."""

    INSIDE = "inside"  # every declared version
    PARTLY = "partly"  # some declared versions
    OUTSIDE = "outside"  # no declared version
    UNDECLARED = "undeclared"  # the project declares no version of the library


@dataclass(frozen=True)
class Decision:
    """:func:`decide`'s answer: the placement and the declared versions inside the fact's
    range (``overlap``; every version when undeclared)."""

    placement: Placement
    overlap: VersionRange
    target: TargetVersion | None

    def which(self, library: str) -> str:
        """The versions the decision is about, for messages: the declaration when all of it
        is (```transformers<5` (requirements.txt:3)``), the part of it that is
        (``transformers >=4.30,<5.0, which `transformers>=4.30` (requirements.txt:3) allows``),
        or the fact's range when nothing is declared (``transformers <5.0``)."""
        if self.target is None:
            return f"{library} {self.overlap}"
        if self.placement is Placement.INSIDE:
            return f"`{self.target.declared}` ({self.target.where})"
        return f"{library} {self.overlap}, which `{self.target.declared}` ({self.target.where}) allows"


def decide(target: TargetVersion | None, fact_range: VersionRange) -> Decision:
    """Place the declared ``target`` (``None``: undeclared) against ``fact_range``.

    A declared range that is empty (contradictory specifiers) is taken as undeclared."""
    if target is None or target.range.is_empty:
        return Decision(Placement.UNDECLARED, fact_range, None)
    overlap = target.range.intersection(fact_range)
    if overlap.is_empty:
        return Decision(Placement.OUTSIDE, overlap, target)
    if target.range.issubset(fact_range):
        return Decision(Placement.INSIDE, overlap, target)
    return Decision(Placement.PARTLY, overlap, target)

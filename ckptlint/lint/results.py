"""The records a lint run produces: one file's result, the problems met, the run's result (leaf module)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from enum import Enum

from ckptlint.rule_codes import IO_ERROR, REGION_RULES
from ckptlint.text.diagnostics import Diagnostic
from ckptlint.text.source import SourceFile


class FixMode(str, Enum):
    NONE = "none"  # report only
    APPLY = "apply"  # compute fixed text (the caller writes it)
    DIFF = "diff"  # compute fixed text to show a diff


class ProblemKind(str, Enum):
    """Why a file could not be linted (fully); see :class:`Problem`."""

    IO = "io"  # cannot be read
    DECODE = "decode"  # not text / bad encoding
    PARSE = "parse"  # too large or too deeply nested to parse
    TIMEOUT = "timeout"  # took longer than the per-file time limit
    WARNING = "warning"  # checked; something in it is ignored (a noqa comment that names no code)
    INTERNAL = "internal"  # a bug in ckptlint or a rule
    FIX = "fix"  # a fix would break the file


@dataclass
class Problem:
    """A file that could not be linted (fully), with a one-line reason.

    ``kind``: a :class:`ProblemKind` (a plain string is converted; ``ValueError`` for an
    unknown one). For ``WARNING`` the ``message`` starts with the row. ``detail`` holds a
    traceback for ``--verbose``.
    """

    path: str
    message: str
    kind: ProblemKind
    detail: str | None = None

    def __post_init__(self) -> None:
        self.kind = ProblemKind(self.kind)

    def line(self) -> str:
        return f"{self.path}: {self.message}"

    @property
    def unchecked(self) -> bool:
        """Whether the file was not checked at all (reported as CKP902, not as an error)."""
        return self.kind in UNCHECKED_KINDS


#: Problem kinds that mean "this file was not checked": reported as CKP902 diagnostics.
UNCHECKED_KINDS = frozenset({ProblemKind.IO, ProblemKind.DECODE, ProblemKind.PARSE, ProblemKind.TIMEOUT})


def io_error(path: str, message: str) -> Diagnostic:
    """CKP902 (io-error) at 1:1 of ``path``: the file could not be read, decoded, parsed into a
    tree or written, so it was not checked (ruff's E902). Never suppressed, never fixable."""
    return Diagnostic(code=IO_ERROR, message=message, path=path, start=(1, 1), end=(1, 1), noqa_row=None)


@dataclass
class FileResult:
    """What linting one file gave."""

    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    fixed: int = 0
    source: SourceFile | None = None
    fixed_text: str | None = None
    raw: bytes | None = None
    dependencies: list[str] = field(default_factory=list)
    fixed_codes: dict[str, int] = field(default_factory=dict)  # code -> findings fixed
    noqa_used_elsewhere: set[tuple[str, int]] = field(default_factory=set)  # (path, row) of other files
    #: with a fix: the findings of the file as read (reported instead when the fixed file cannot be written)
    diagnostics_before_fix: list[Diagnostic] | None = None
    #: parsing work this file cost (:mod:`ckptlint.perf` counters; empty for a cached result)
    perf: dict[str, int] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return self.source is not None and self.fixed_text is not None and self.fixed_text != self.source.text


def one_per_line(found: Iterable[Diagnostic]) -> list[Diagnostic]:
    """One finding per problem: a region rule (:data:`~ckptlint.rule_codes.REGION_RULES`)
    reports a line of shared code once for every checkpoint site whose region reaches it, from the file of each site
    (torchtune's attention reached by fifteen recipes). Those are merged into the first
    (by message, so by site), which says how many other sites reach the line."""
    groups: dict[tuple, list[Diagnostic]] = {}
    out: list[Diagnostic] = []
    for diagnostic in found:
        if diagnostic.code in REGION_RULES and diagnostic.fix is None:
            groups.setdefault((diagnostic.code, diagnostic.path, diagnostic.start, diagnostic.end), []).append(diagnostic)
        else:
            out.append(diagnostic)
    for group in groups.values():
        group.sort(key=lambda d: d.message)
        first = group[0]
        if len(group) > 1:
            others = len(group) - 1
            first = replace(
                first,
                message=f"{first.message} (the same line is also recomputed by {others} other checkpoint "
                f"site{'s' if others > 1 else ''})",
            )
        out.append(first)
    return out


@dataclass
class RunResult:
    """What linting a set of files gave, in a stable order."""

    results: list[FileResult]
    #: ``True`` when the run was interrupted (SIGINT/SIGTERM): ``results`` holds the files done.
    interrupted: bool = False
    #: how many of the files given were done (read, and gated out, cached or linted)
    files_done: int = 0

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """Every finding, plus a CKP902 for each file that could not be checked, sorted."""
        found = [d for r in self.results for d in r.diagnostics]
        found += [io_error(p.path, p.message) for r in self.results for p in r.problems if p.unchecked]
        unique = {(d.code, d.path, d.start, d.end, d.message): d for d in found}
        return sorted(one_per_line(unique.values()), key=lambda d: d.sort_key)

    @property
    def problems(self) -> list[Problem]:
        """Errors met (internal errors, refused fixes); files not checked are in :attr:`diagnostics`,
        warnings in :attr:`warnings`."""
        found = (p for r in self.results for p in r.problems if not p.unchecked and p.kind is not ProblemKind.WARNING)
        return sorted(found, key=lambda p: (p.path, p.message))

    @property
    def warnings(self) -> list[Problem]:
        """Things ignored in files that were checked (a ``# noqa:`` without codes), by path and row."""
        found = {(p.path, p.message): p for r in self.results for p in r.problems if p.kind is ProblemKind.WARNING}
        return [found[key] for key in sorted(found, key=lambda k: (k[0], int(k[1].split(":")[0]), k[1]))]

    @property
    def fixed(self) -> int:
        return sum(r.fixed for r in self.results)

"""The rule interface (after Fixit: small classes with their valid/invalid examples).

A rule declares its code, kebab-case name, one-line summary, severity and whether it can
fix, plus ``VALID`` and ``INVALID`` example programs that the test suite runs. Its
:meth:`Rule.check` reads the module's :class:`~ckptlint.semantic.analysis.ModuleAnalysis` (the
semantic model and checkpoint sites) and calls :meth:`RuleContext.report`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from typing import TYPE_CHECKING, ClassVar

import libcst as cst

from ckptlint.text.diagnostics import Applicability, Diagnostic, Edit, Fix

if TYPE_CHECKING:
    from ckptlint.checkpoint.regions import Region, RegionBuilder
    from ckptlint.checkpoint.site import CheckpointSite
    from ckptlint.semantic.analysis import ModuleAnalysis
    from ckptlint.semantic.project import Project

__all__ = ["FixAvailability", "Invalid", "Rule", "RuleContext", "Severity"]


class Severity(str, Enum):
    """``error``: the code raises or computes wrong values; ``warning``: it works today but
    is fragile, slow or deprecated."""

    ERROR = "error"
    WARNING = "warning"


class FixAvailability(str, Enum):
    NONE = "none"
    SOMETIMES = "sometimes"
    ALWAYS = "always"


@dataclass(frozen=True)
class Invalid:
    """An example the rule must report; ``fixed`` is the source after
    ``--fix --unsafe-fixes`` (``None``: not checked), ``count`` the findings expected."""

    code: str
    fixed: str | None = None
    count: int = 1


class Rule:
    """Base class of every rule. Subclasses set the class attributes and implement
    :meth:`check`."""

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    severity: ClassVar[Severity] = Severity.WARNING
    fix_availability: ClassVar[FixAvailability] = FixAvailability.NONE
    VALID: ClassVar[tuple[str, ...]] = ()
    INVALID: ClassVar[tuple[Invalid, ...]] = ()

    def check(self, ctx: RuleContext) -> None:
        """Report every finding of this rule in ``ctx.analysis``."""
        raise NotImplementedError


class RuleContext:
    """What a rule sees while it checks one module, and where it reports.

    Attributes:
        analysis: the module being linted.
        project: the linted tree, for resolving code in other files (may be ``None``).
        code: the code of the rule being run (set by the engine).
    """

    def __init__(
        self,
        analysis: ModuleAnalysis,
        project: Project | None,
        sink: Callable[[Diagnostic], None],
    ) -> None:
        self.analysis = analysis
        self.project = project
        if analysis.project is None:
            analysis.project = project  # sites follow imports into the linted tree
        self._sink = sink
        self._reported: set[tuple[str, int]] = set()
        self.code = ""

    def site_regions(self) -> Iterator[tuple[CheckpointSite, Region]]:
        """Every site of the module that names the callable it checkpoints, with its region
        (what the site recomputes; regions are built once per site and shared by rules)."""
        for site in self.analysis.sites.sites:
            if site.function is not None:
                yield site, self.regions.region(site, self.analysis)

    @cached_property
    def regions(self) -> RegionBuilder:
        """The region builder shared by every rule run on this module."""
        from ckptlint.checkpoint.regions import RegionBuilder

        return RegionBuilder(self.project)

    def report(
        self,
        node: cst.CSTNode,
        message: str,
        *,
        fix: Fix | None = None,
        analysis: ModuleAnalysis | None = None,
        code: str | None = None,
        once: bool = False,
    ) -> None:
        """Report ``message`` at ``node`` of ``analysis`` (default: the linted module).

        With ``once``, a node already reported by this rule is skipped (a statement reached
        from several checkpoint sites is reported for the first)."""
        if once:
            key = (code or self.code, id(node))
            if key in self._reported:
                return
            self._reported.add(key)
        where = analysis or self.analysis
        start, end = where.range(node)
        self._sink(
            Diagnostic(
                code=code or self.code,
                message=message,
                path=where.source.path,
                start=start,
                end=end,
                fix=fix,
                noqa_row=start[0],
            )
        )

    @staticmethod
    def fix(applicability: Applicability, message: str, *edits: Edit) -> Fix:
        """A :class:`Fix` from edits, sorted by position so output is stable. Insertions at
        the same position keep the order they are given in (they are applied in it)."""
        return Fix(applicability, message, tuple(sorted(edits, key=lambda e: (e.start, e.end))))

"""The rule interface (after Fixit: small classes with their valid/invalid examples).

A rule declares its code (its name, summary, severity and fix availability are data in
:mod:`ckptlint.registry`), plus ``VALID`` and ``INVALID`` example programs that the test
suite runs (:mod:`ckptlint.testing`). Its
:meth:`Rule.check` reads the module's :class:`~ckptlint.semantic.analysis.ModuleAnalysis` (the
semantic model and checkpoint sites) and calls :meth:`RuleContext.report`.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, ClassVar

import libcst as cst

from ckptlint.checkpoint.analyses.path_conditions import path_parts
from ckptlint.checkpoint.analyses.reentrant_backward import may_skip_backward, never_backward
from ckptlint.checkpoint.sites.call_errors import always_raises
from ckptlint.checkpoint.sites.guards import Condition, condition_parts, format_condition, helper_parts, joined, node_condition
from ckptlint.checkpoint.sites.sites import site_index
from ckptlint.facts.version_facts import VersionFact
from ckptlint.facts.versions import Decision, TargetVersion, decide
from ckptlint.registry import RULES, FixAvailability, Severity
from ckptlint.text.diagnostics import Applicability, Diagnostic, Edit, Fix

if TYPE_CHECKING:
    from ckptlint.checkpoint.evaluator.region import Region
    from ckptlint.checkpoint.evaluator.regions import RegionBuilder
    from ckptlint.checkpoint.sites.sites import CheckpointSite
    from ckptlint.semantic.analysis import ModuleAnalysis
    from ckptlint.semantic.project import Project

__all__ = ["FixAvailability", "Invalid", "Rule", "RuleContext", "Severity"]


@dataclass(frozen=True)
class Invalid:
    """An example the rule must report (run by :func:`ckptlint.testing.check_invalid`).

    Attributes:
        code: the program; an indented triple-quoted block is dedented (:func:`textwrap.dedent`).
        fixed: the program after ``--fix --unsafe-fixes`` (dedented too), or ``None``: no
            finding carries a fix.
        at: ``(row, column)``, 1-based, of the first finding.
        message: a fragment of every finding's message.
        count: the findings expected.
    """

    code: str
    fixed: str | None = None
    at: tuple[int, int] | None = None
    message: str | None = None
    count: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "code", textwrap.dedent(self.code))
        if self.fixed is not None:
            object.__setattr__(self, "fixed", textwrap.dedent(self.fixed))


class Rule:
    """Base class of every rule. Subclasses set ``code`` and implement :meth:`check`; the
    rest of the metadata (``name``, ``summary``, ``severity``, ``fix_availability``,
    ``default_enabled``) comes from the rule's entry in :data:`ckptlint.registry.RULES`
    when the subclass is defined (``KeyError`` for a code the registry lacks)."""

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    severity: ClassVar[Severity] = Severity.WARNING
    fix_availability: ClassVar[FixAvailability] = FixAvailability.NONE
    default_enabled: ClassVar[bool] = True
    VALID: ClassVar[tuple[str, ...]] = ()
    INVALID: ClassVar[tuple[Invalid, ...]] = ()

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        code = cls.__dict__.get("code")
        if code is None:
            return  # an abstract intermediate class, or a test double inheriting a code
        info = RULES[code]
        cls.name = info.name
        cls.summary = info.summary
        cls.severity = info.severity
        cls.fix_availability = info.fix_availability
        cls.default_enabled = info.default_enabled
        cls.VALID = tuple(textwrap.dedent(example) for example in cls.__dict__.get("VALID", ()))

    def check(self, ctx: RuleContext) -> None:
        """Report every finding of this rule in ``ctx.analysis``."""
        raise NotImplementedError


#: The most calls a region may leave unfollowed at its depth for a finding to follow it deeper
#: (:meth:`RuleContext._path_parts`): past it the deeper region is costly and, on the corpus,
#: never whole (TransformerEngine's attention regions leave 21 to 111 such calls; unilm's YOCO 1).
DEEPER_CUT_CALLS = 8


class RuleContext:
    """What a rule sees while it checks one module, and where it reports.

    Attributes:
        analysis: the module being linted.
        project: the linted tree, for resolving code in other files (may be ``None``).
        code: the code of the rule being run (set by the engine).
        target_versions: library -> the versions the project allows (absent: undeclared);
            see :meth:`decide`.
    """

    def __init__(
        self,
        analysis: ModuleAnalysis,
        project: Project | None,
        sink: Callable[[Diagnostic], None],
        target_versions: tuple[TargetVersion, ...] = (),
    ) -> None:
        self.analysis = analysis
        self.target_versions = {target.library: target for target in target_versions}
        self.project = project
        if analysis.project is None:
            analysis.project = project  # sites follow imports into the linted tree
        self._sink = sink
        self._reported: set[tuple[str, int]] = set()
        self._conditions: dict[int, Condition] = {}
        self.code = ""

    def decide(self, fact: VersionFact) -> Decision:
        """Where the project's declared versions of ``fact.library`` lie against the versions
        ``fact`` holds in (:func:`ckptlint.facts.versions.decide`)."""
        return decide(self.target_versions.get(fact.library), fact.range)

    def site_regions(self) -> Iterator[tuple[CheckpointSite, Region]]:
        """Every site of the module that names the callable it checkpoints, with its region
        (what the site recomputes; regions are built once per site and shared by rules).

        A site that recomputes nothing (:meth:`recomputes_nothing`) is left out: the rules
        that judge a region (CKP1xx, CKP2xx) have nothing to judge there."""
        for site in site_index(self.analysis).sites:
            if site.function is not None and not self.recomputes_nothing(site):
                yield site, self.regions.region(site, self.analysis)

    def recomputes_nothing(self, site: CheckpointSite) -> bool:
        """Whether ``site`` never recomputes its function: it raises whenever it runs (the
        arguments CKP002 reports as raising,
        :func:`~ckptlint.checkpoint.sites.call_errors.always_raises`), so the function never
        runs under it; or it runs the reentrant variant and backward never reaches it (the
        function returns no tensor and no tuple, or no input can be a tensor:
        :func:`~ckptlint.checkpoint.analyses.reentrant_backward.never_backward`). The one
        place region rules ask; CKP002 reports the raising call itself. Answered once per site."""
        if always_raises(site, self.analysis.model):
            return True
        if site.function is None or not may_skip_backward(site):
            return False
        cached = site.extra.get("never_backward")
        if not isinstance(cached, bool):
            cached = never_backward(site, self.regions.region(site, self.analysis))
            site.extra["never_backward"] = cached
        return cached

    def condition(self, site: CheckpointSite) -> str:
        """The condition under which ``site`` runs, as a message suffix (``"; this code runs
        only when `self.with_cp` is true (it defaults to `False`) and `x.requires_grad`"``),
        read from the function and class around it (:func:`~ckptlint.checkpoint.sites.guards.site_condition`);
        ``""`` when no ``if`` guards it. Answered once per site."""
        return format_condition(self._site_parts(site))

    def _site_parts(self, site: CheckpointSite) -> Condition:
        key = id(site.call)
        if key not in self._conditions:
            self._conditions[key] = joined(condition_parts(self.analysis, site.call), helper_parts(self.analysis, site))
        return self._conditions[key]

    def region_condition(self, site: CheckpointSite, node: cst.CSTNode, analysis: ModuleAnalysis | None = None) -> str:
        """The condition under which ``node`` (of ``analysis``, default the linted module), a
        node of the region ``site`` recomputes, runs there: the site's (:meth:`condition`), then
        the tests around ``node`` in its own function and those of its callers (a switch inside
        the region, ``if self.dropnet_ratio > 0: frand = float(uniform(0, 1))``)."""
        where = analysis or self.analysis
        if where is self.analysis and any(ancestor is site.call for ancestor in (node, *where.model.ancestors(node))):
            return self.condition(site)
        # the region calls the function around `node` with arguments it chooses: its parameters' defaults say nothing
        own = condition_parts(where, node, parameters_given=True)
        return format_condition(joined(self._site_parts(site), self._path_parts(site, node, where), own))

    def _path_parts(self, site: CheckpointSite, node: cst.CSTNode, where: ModuleAnalysis) -> Condition:
        """The tests on the region's way to ``node`` (:func:`~ckptlint.checkpoint.analyses.path_conditions.path_parts`),
        from the region followed deeper when the usual one was cut at its depth; none when
        not every way is known."""
        region = self.regions.region(site, self.analysis)
        parts = path_parts(region, node, where)
        if parts is None and region.resolved and 0 < len(region.cut_calls) <= DEEPER_CUT_CALLS:
            parts = path_parts(self.regions.deep_region(site, self.analysis), node, where)
        return parts or ()

    def condition_at(self, node: cst.CSTNode, analysis: ModuleAnalysis | None = None) -> str:
        """The condition under which ``node`` (of ``analysis``, default the linted module)
        runs, as :meth:`condition` states it for a site; for the findings of rules that read
        calls rather than sites (:func:`~ckptlint.checkpoint.sites.guards.node_condition`)."""
        return node_condition(analysis or self.analysis, node)

    @cached_property
    def regions(self) -> RegionBuilder:
        """The region builder shared by every rule run on this module."""
        from ckptlint.checkpoint.evaluator.regions import RegionBuilder

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
        site: CheckpointSite | None = None,
        guarded: cst.CSTNode | None = None,
    ) -> None:
        """Report ``message`` at ``node`` of ``analysis`` (default: the linted module).

        With ``once``, a node already reported by this rule is skipped (a statement reached
        from several checkpoint sites is reported for the first). With ``site`` (the region
        rules, and every rule whose finding is about a site), the message ends with the
        condition under which the site runs (:meth:`condition`) when an ``if`` guards it, and,
        for a node of the region outside the site's call, the tests around that node
        (:meth:`region_condition`); with ``guarded`` (a node of ``analysis``: the call a call-level rule reads),
        with the condition under which that node runs (:meth:`condition_at`)."""
        where = analysis or self.analysis
        if site is not None:
            message += self.region_condition(site, node, where)
        elif guarded is not None:
            message += self.condition_at(guarded, where)
        start, end = where.range(node)
        diagnostic = Diagnostic(
            code=code or self.code,
            message=message,
            path=where.source.path,
            start=start,
            end=end,
            fix=fix,
            noqa_row=start[0],
        )
        if once:
            key = (code or self.code, id(node))
            if key in self._reported:
                return
            self._reported.add(key)
        self._sink(diagnostic)

    @staticmethod
    def fix(applicability: Applicability, message: str, *edits: Edit) -> Fix:
        """A :class:`Fix` from edits, sorted by position so output is stable. Insertions at
        the same position keep the order they are given in (they are applied in it)."""
        return Fix(applicability, message, tuple(sorted(edits, key=lambda e: (e.start, e.end))))

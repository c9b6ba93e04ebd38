"""The rule interface (after Fixit: small classes with their valid/invalid examples), on
CPython's ``ast``.

A rule declares its code (its name, summary, severity and fix availability are data in
:mod:`ckptlint.registry`), plus ``VALID`` and ``INVALID`` example programs that the test
suite runs (:mod:`ckptlint.testing`). Its :meth:`Rule.check` reads the module's
:class:`~ckptlint.semantic.ast_analysis.AstAnalysis` (the semantic model and checkpoint
sites) and calls :meth:`RuleContext.report`, positions read from ``ast``
(:meth:`AstAnalysis.range <ckptlint.semantic.ast_analysis.AstAnalysis.range>`).

:class:`RuleContext` answers the version decisions and the condition texts
(:mod:`ckptlint.checkpoint.sites.ast_guards`) and reports
:class:`~ckptlint.text.diagnostics.Diagnostic` records. A fix is offered through
:meth:`RuleContext.fix_from`: its applicability and message are known when the finding is
reported; its edits are built by :mod:`ckptlint.rules.edits` (libcst parses the smallest
statement around an edited node) only when they are read
(:class:`~ckptlint.text.diagnostics.Fix`), so a run that shows no edits never parses with
libcst.

What a region rule asks (the region of a site, the tests on the region's way to a node, whether
a site recomputes nothing) is the region builder's and the analyses' on ``ast``
(``checkpoint/evaluator/ast_regions.py``, ``checkpoint/analyses/ast_path_conditions.py``,
``ast_reentrant_backward.py``), imported when first asked: CKP001 to CKP004 ask the
builder's queries (``signature``, ``receivers``, ``method_signature``); CKP005, CKP101 to
CKP103, CKP201 to CKP203 ask regions (``recomputes_nothing`` builds a reentrant site's region
for ``never_backward``), and CKP102, CKP103, CKP201 and CKP202 report nodes of a region with
their path conditions.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, ClassVar

from ckptlint.checkpoint.sites.ast_call_errors import always_raises
from ckptlint.checkpoint.sites.ast_guards import Condition, condition_parts, format_condition, helper_parts, joined, node_condition
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.facts.version_facts import VersionFact
from ckptlint.facts.versions import Decision, TargetVersion, decide
from ckptlint.registry import RULES, FixAvailability, Severity
from ckptlint.rules.edits import NoCstNode
from ckptlint.text.diagnostics import Applicability, Diagnostic, Edit, Fix
from ckptlint.text.source import Position

if TYPE_CHECKING:
    from ckptlint.checkpoint.evaluator.ast_region import AstRegion
    from ckptlint.checkpoint.evaluator.ast_regions import AstRegionBuilder
    from ckptlint.checkpoint.sites.ast_site_builders import AstSite
    from ckptlint.semantic.ast_analysis import AstAnalysis
    from ckptlint.semantic.project import AstProject

__all__ = ["DEEPER_CUT_CALLS", "FixAvailability", "Invalid", "Rule", "RuleContext", "Severity"]


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


#: The most calls a region may leave unfollowed at its depth for a finding to follow it deeper
#: (:meth:`RuleContext._path_parts`): past it the deeper region is costly and, on the corpus,
#: never whole (TransformerEngine's attention regions leave 21 to 111 such calls; unilm's YOCO 1).
DEEPER_CUT_CALLS = 8


class Rule:
    """Base class of every rule. Subclasses set ``code`` and implement :meth:`check`; the
    rest of the metadata (``name``, ``summary``, ``severity``, ``fix_availability``,
    ``default_enabled``) comes from the rule's entry in :data:`ckptlint.registry.RULES`
    when the subclass is defined (``KeyError`` for a code the registry lacks); the ``VALID``
    examples it declares are dedented then (``INVALID`` ones dedent themselves)."""

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    severity: ClassVar[Severity] = Severity.WARNING
    fix_availability: ClassVar[FixAvailability] = FixAvailability.NONE
    default_enabled: ClassVar[bool] = True
    VALID: ClassVar[tuple[str, ...]] = ()
    INVALID: ClassVar[tuple[Invalid, ...]] = ()
    #: Whether :meth:`check` may ask ``ctx.regions`` (the region builder on ``ast``).
    reads_regions: ClassVar[bool] = False

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


class RuleContext:
    """What a rule sees while it checks one module read on ``ast``, and where it reports.

    Attributes:
        analysis: the module being linted.
        project: the loader of the linted tree's other modules (may be ``None``).
        code: the code of the rule being run (set by the engine).
        target_versions: library -> the versions the project allows (absent: undeclared).
    """

    def __init__(
        self,
        analysis: AstAnalysis,
        project: AstProject | None,
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

    def site_regions(self) -> Iterator[tuple[AstSite, AstRegion]]:
        """Every site of the module that names the callable it checkpoints and may recompute
        it, with its region (:meth:`ckptlint.rules.base.RuleContext.site_regions`)."""
        for site in ast_site_index(self.analysis).sites:
            if site.function is not None and not self.recomputes_nothing(site):
                yield site, self.regions.region(site, self.analysis)

    def recomputes_nothing(self, site: AstSite) -> bool:
        """Whether ``site`` never recomputes its function: it always raises
        (:func:`~ckptlint.checkpoint.sites.ast_call_errors.always_raises`), or it runs the
        reentrant variant and backward never reaches it (``never_backward`` of
        ``checkpoint/analyses/ast_reentrant_backward.py``); answered once per site
        (:meth:`ckptlint.rules.base.RuleContext.recomputes_nothing`)."""
        from ckptlint.checkpoint.analyses.reentrant_backward import may_skip_backward

        if always_raises(site, self.analysis.model):
            return True
        if site.function is None or not may_skip_backward(site):  # type: ignore[arg-type,unused-ignore]
            return False
        cached = site.extra.get("never_backward")
        if not isinstance(cached, bool):
            from ckptlint.checkpoint.analyses.ast_reentrant_backward import never_backward

            cached = never_backward(site, self.regions.region(site, self.analysis))
            site.extra["never_backward"] = cached
        return cached

    def condition(self, site: AstSite) -> str:
        """The condition under which ``site`` runs, as a message suffix (``"; this code runs
        only when ..."``), ``""`` when no ``if`` guards it; answered once per site."""
        return format_condition(self._site_parts(site))

    def _site_parts(self, site: AstSite) -> Condition:
        key = id(site.call)
        if key not in self._conditions:
            self._conditions[key] = joined(condition_parts(self.analysis, site.call), helper_parts(self.analysis, site))
        return self._conditions[key]

    def region_condition(self, site: AstSite, node: ast.AST, analysis: AstAnalysis | None = None) -> str:
        """The condition under which ``node`` (of ``analysis``, default the linted module), a
        node of the region ``site`` recomputes, runs there: the site's (:meth:`condition`), then
        the tests on the region's way to ``node`` and those around it
        (:meth:`ckptlint.rules.base.RuleContext.region_condition`)."""
        where = analysis or self.analysis
        if where is self.analysis and any(ancestor is site.call for ancestor in (node, *where.model.ancestors(node))):
            return self.condition(site)
        own = condition_parts(where, node, parameters_given=True)
        return format_condition(joined(self._site_parts(site), self._path_parts(site, node, where), own))

    def _path_parts(self, site: AstSite, node: ast.AST, where: AstAnalysis) -> Condition:
        """The tests on the region's way to ``node``, from the region followed deeper when the
        usual one was cut at its depth; none when not every way is known."""
        from ckptlint.checkpoint.analyses.ast_path_conditions import path_parts

        region = self.regions.region(site, self.analysis)
        parts = path_parts(region, node, where)
        if parts is None and region.resolved and 0 < len(region.cut_calls) <= DEEPER_CUT_CALLS:
            parts = path_parts(self.regions.deep_region(site, self.analysis), node, where)
        return parts or ()

    def condition_at(self, node: ast.AST, analysis: AstAnalysis | None = None) -> str:
        """The condition under which ``node`` (of ``analysis``, default the linted module)
        runs (:func:`~ckptlint.checkpoint.sites.ast_guards.node_condition`)."""
        return node_condition(analysis or self.analysis, node)

    @cached_property
    def regions(self) -> AstRegionBuilder:
        """The region builder shared by every rule run on this module."""
        from ckptlint.checkpoint.evaluator.ast_regions import AstRegionBuilder

        return AstRegionBuilder(self.project)

    def report(
        self,
        node: ast.AST,
        message: str,
        *,
        fix: Fix | None = None,
        analysis: AstAnalysis | None = None,
        code: str | None = None,
        once: bool = False,
        site: AstSite | None = None,
        guarded: ast.AST | None = None,
        whole: bool = False,
    ) -> None:
        """Report ``message`` at ``node`` of ``analysis`` (default: the linted module), as
        :meth:`ckptlint.rules.base.RuleContext.report` does: ``once`` skips a node this rule
        reported already; ``site`` ends the message with the condition under which the site
        runs and, for a node of its region, the tests around it; ``guarded`` with the
        condition under which that node runs. An ``ast.keyword`` with a name stands for its
        name (``ast`` has no node for it: the finding starts at the keyword and is the name
        long), or with ``whole`` for the whole argument (``name=value``)."""
        where = analysis or self.analysis
        if site is not None:
            message += self.region_condition(site, node, where)
        elif guarded is not None:
            message += self.condition_at(guarded, where)
        start, end = where.range(node) if whole else _range(where, node)
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
        return Fix(applicability, message, _sorted(edits))

    def fix_from(self, applicability: Applicability, message: str, edits: Callable[[], Edit | tuple[Edit, ...]]) -> Fix:
        """A :class:`Fix` whose edits ``edits()`` builds (through :mod:`ckptlint.rules.edits`)
        when they are first read, sorted as :meth:`fix` sorts them: none where libcst has no
        node for one of them (:class:`~ckptlint.rules.edits.NoCstNode`: it refuses the code
        around it; :meth:`Fix.resolved <ckptlint.text.diagnostics.Fix.resolved>` then drops
        the fix). Applicability and message are known at once; a finding's fix is built only
        in a run that shows or applies edits. Built with the recursion a file of the deepest
        nesting the linter accepts needs, when the linted text is long enough to hold one
        (:class:`~ckptlint.semantic.nesting.deep_recursion`), as the rules themselves run."""
        from ckptlint.semantic.nesting import DEEP, MAX_NESTING, deep_recursion

        depth = MAX_NESTING if len(self.analysis.source.text) >= DEEP else 0

        def build() -> tuple[Edit, ...] | None:
            try:
                with deep_recursion(depth):
                    built = edits()
            except NoCstNode:
                return None
            return _sorted((built,) if isinstance(built, Edit) else built)

        return Fix(applicability, message, build)


def _sorted(edits: tuple[Edit, ...]) -> tuple[Edit, ...]:
    return tuple(sorted(edits, key=lambda e: (e.start, e.end)))


def _range(analysis: AstAnalysis, node: ast.AST) -> tuple[Position, Position]:
    """The 1-based range of ``node``; for a named ``ast.keyword``, of its name alone."""
    start, end = analysis.range(node)
    if isinstance(node, ast.keyword) and node.arg is not None:
        end = analysis.source.ast_position(node.lineno, node.col_offset + len(node.arg.encode("utf-8")))
    return start, end

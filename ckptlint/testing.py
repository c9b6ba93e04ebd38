"""Testing helpers for ckptlint's rules and for tests of code that uses ckptlint (after
Fixit's ``testing.py``).

Sources are written as indented triple-quoted blocks and dedented here
(:func:`textwrap.dedent`), so a test reads like the code it lints::

    assert_lints(
        '''\\
        from torch.utils.checkpoint import checkpoint
        checkpoint(f, x)
        ''',
        "CKP001",
        at=(2, 1),
        message="without `use_reentrant`",
        fixed='''\\
        from torch.utils.checkpoint import checkpoint
        checkpoint(f, x, use_reentrant=False)
        ''',
    )

Rows and columns are 1-based, as in every output. ``message`` is a fragment that the
message must contain: a test that is not about the wording names the part it relies on.

The example runner (:func:`check_valid`, :func:`check_invalid`, :func:`check_fix_availability`,
:func:`examples`) executes every rule's ``VALID``/``INVALID`` examples; ``tests/test_rule_specs.py``
parametrizes it over the registry.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ckptlint.registry import FixAvailability

if TYPE_CHECKING:
    from ckptlint.rules.base import Invalid, Rule
    from ckptlint.text.diagnostics import Diagnostic

__all__ = [
    "UNCHECKED",
    "assert_clean",
    "assert_lints",
    "check_fix_availability",
    "check_invalid",
    "check_valid",
    "codes",
    "example_select",
    "example_versions",
    "examples",
    "findings",
    "fix",
    "lint",
    "located",
]


class _Unchecked:
    def __repr__(self) -> str:
        return "UNCHECKED"


#: ``fixed=UNCHECKED``: the fix is not checked (``fixed=None`` asserts that no fix is offered).
UNCHECKED: Any = _Unchecked()


def _select(select: str | Iterable[str] | None, code: str | None = None) -> list[str]:
    if select is None:
        return [code] if code else ["ALL"]
    if isinstance(select, str):
        return [select]
    return list(select)


def lint(
    source: str, select: str | Iterable[str] | None = None, *, versions: Mapping[str, str] | None = None
) -> list[Diagnostic]:
    """The diagnostics of ``source`` (dedented) with the rules ``select`` (a code, a prefix,
    ``"ALL"`` (the default) or several of them), sorted by position."""
    from ckptlint.api import lint_source

    return lint_source(textwrap.dedent(source), select=_select(select), target_versions=versions)


def located(source: str, select: str | Iterable[str] | None = None, *, messages: bool = False) -> list[tuple]:
    """``(row, code)`` of each diagnostic of :func:`lint`, in its order; ``(row, code,
    message)`` with ``messages``."""
    if messages:
        return [(d.start[0], d.code, d.message) for d in lint(source, select)]
    return [(d.start[0], d.code) for d in lint(source, select)]


def codes(source: str, select: str | Iterable[str] | None = None) -> list[str]:
    """The code of each diagnostic of :func:`lint`, in its order."""
    return [d.code for d in lint(source, select)]


def findings(source: str, code: str, select: str | Iterable[str] | None = None) -> list[Diagnostic]:
    """The diagnostics of rule ``code`` alone in ``source`` (dedented), run with the rules
    ``select`` (default: ``code`` alone)."""
    return [d for d in lint(source, _select(select, code)) if d.code == code]


def fix(
    source: str,
    select: str | Iterable[str] | None = None,
    *,
    unsafe: bool = True,
    versions: Mapping[str, str] | None = None,
) -> str:
    """``source`` (dedented) after ``--fix`` (with ``--unsafe-fixes`` unless ``unsafe`` is
    false) with the rules ``select`` (default ``"ALL"``)."""
    from ckptlint.api import fix_source

    return fix_source(textwrap.dedent(source), unsafe=unsafe, select=_select(select), target_versions=versions)


def assert_lints(
    source: str,
    code: str,
    *,
    at: tuple[int, int] | None = None,
    message: str | None = None,
    fixed: str | None = UNCHECKED,
    count: int | None = 1,
    select: str | Iterable[str] | None = None,
    versions: Mapping[str, str] | None = None,
) -> list[Diagnostic]:
    """Assert that rule ``code`` reports ``source`` (dedented); returns its diagnostics.

    Args:
        source: the program, an indented triple-quoted block is fine.
        code: the rule expected (only its findings are counted).
        at: ``(row, column)``, 1-based, of the first finding.
        message: a fragment every finding's message contains.
        fixed: the source (dedented) after ``--fix --unsafe-fixes``, checked to be a fixed
            point too; ``None``: no finding carries a fix; :data:`UNCHECKED` (default): not
            checked.
        count: how many findings (``None``: at least one).
        select: the rules to run (default: ``code`` alone).
        versions: the library versions to judge for (``{"transformers": ">=5.24"}``;
            default: nothing declared).

    Raises:
        AssertionError: with the findings, when one of the expectations fails.
    """
    rules = _select(select, code)
    found = [d for d in lint(source, rules, versions=versions) if d.code == code]
    shown = [(d.start, d.message) for d in found]
    if count is None:
        _check(bool(found), f"{code} not reported")
    else:
        _check(len(found) == count, f"{code}: expected {count} finding(s), got {shown}")
    if at is not None:
        _check(found[0].start == tuple(at), f"{code}: expected at {at}, got {shown}")
    if message is not None:
        for d in found:
            _check(message in d.message, f"{code}: {message!r} not in {d.message!r}")
    if fixed is None:
        _check(all(d.fix is None for d in found), f"{code}: a fix is offered: {[d.fix for d in found]}")
    elif fixed is not UNCHECKED:
        expected = textwrap.dedent(fixed)
        got = fix(source, rules, versions=versions)
        _check(got == expected, f"{code}: the fixed source differs:\n{_diff(expected, got)}")
        _check(fix(expected, rules, versions=versions) == expected, f"{code}: the fix is not idempotent")
    return found


def assert_clean(
    source: str,
    code: str | None = None,
    *,
    select: str | Iterable[str] | None = None,
    versions: Mapping[str, str] | None = None,
) -> None:
    """Assert that ``source`` (dedented) has no finding of rule ``code`` (of any selected rule
    when ``code`` is ``None``) with the rules ``select`` (default: ``code``, else ``"ALL"``)."""
    everything = lint(source, _select(select, code), versions=versions)
    broken = [d.message for d in everything if d.code == "CKP999"]
    _check(not broken, f"the source does not parse: {broken}")
    found = [d for d in everything if code is None or d.code == code]
    _check(found == [], f"unexpected findings: {[(d.code, d.start, d.message) for d in found]}")


# ---------------------------------------------------------------- the example runner


def example_select(rule: type[Rule]) -> list[str]:
    """The rule itself plus the rules its examples need (``EXAMPLE_SELECT``: CKP901 judges
    other rules' noqa codes)."""
    return [rule.code, *getattr(rule, "EXAMPLE_SELECT", ())]


def example_versions(rule: type[Rule]) -> dict[str, str] | None:
    """The library versions the rule's examples (and its page's) are judged for
    (``EXAMPLE_VERSIONS``: a rule that only speaks about projects on some versions)."""
    return getattr(rule, "EXAMPLE_VERSIONS", None)


def check_valid(rule: type[Rule], source: str) -> None:
    """A ``VALID`` example: the rule reports nothing."""
    assert_clean(source, rule.code, select=example_select(rule), versions=example_versions(rule))


def check_invalid(rule: type[Rule], example: Invalid) -> None:
    """An ``INVALID`` example: the rule reports it ``count`` times, the first at ``at`` with
    ``message`` in each message; ``fixed`` is the source after ``--fix --unsafe-fixes`` (and a
    fixed point), or ``None``: no finding carries a fix."""
    _check(example.at is not None and bool(example.message), f"{rule.code}: an Invalid example needs `at` and `message`")
    assert_lints(
        example.code,
        rule.code,
        at=example.at,
        message=example.message,
        fixed=example.fixed,
        count=example.count,
        select=example_select(rule),
        versions=example_versions(rule),
    )


def check_fix_availability(rule: type[Rule]) -> None:
    """The rule's examples match its fix availability: ``always``: every ``INVALID`` example
    has ``fixed``; ``none``: none has; ``sometimes``: at least one has and one has not."""
    with_fix = [example.fixed is not None for example in rule.INVALID]
    if not with_fix:
        return
    availability = rule.fix_availability
    if availability is FixAvailability.ALWAYS:
        _check(all(with_fix), f"{rule.code} is always fixable, but an example has no fix")
    elif availability is FixAvailability.NONE:
        _check(not any(with_fix), f"{rule.code} has no fix, but an example has one")
    else:
        _check(
            any(with_fix) and not all(with_fix),
            f"{rule.code} is sometimes fixable: it needs an example with a fix and one without",
        )


def examples(rules: Sequence[type[Rule]], kind: str) -> Iterator[tuple[type[Rule], Any, str]]:
    """``(rule, example, id)`` for each ``VALID`` (``kind="VALID"``) or ``INVALID`` example of
    ``rules``; the id reads ``CKP001-invalid-3``."""
    for rule in rules:
        for index, example in enumerate(getattr(rule, kind)):
            yield rule, example, f"{rule.code}-{kind.lower()}-{index}"


def _check(condition: bool, message: str) -> None:
    """``assert`` that survives ``python -O``: raises ``AssertionError(message)``."""
    if not condition:
        raise AssertionError(message)


def _diff(expected: str, got: str) -> str:
    import difflib

    from ckptlint.text.source import split_lines

    return "".join(difflib.unified_diff(split_lines(expected, True), split_lines(got, True), "expected", "got"))

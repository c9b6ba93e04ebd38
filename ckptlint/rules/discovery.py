"""Finding the rule classes: every ``ckpNNN_<name>`` module of the rules package, imported in
name order, defines the one :class:`~ckptlint.rules.base.Rule` of code ``CKPNNN``.

The registry (:mod:`ckptlint.registry`) stays the data; this module only pairs each registered
code with the class that checks it, and refuses a package where the two disagree.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Iterable, Sequence
from types import ModuleType

from ckptlint.rules.base import Rule

__all__ = ["RULE_MODULE", "RuleDiscoveryError", "discover_rules"]

#: The name of a rule module: ``ckp`` and the rule's three digits, ``_``, its name in snake case.
RULE_MODULE = re.compile(r"ckp(?P<number>\d{3})_[a-z0-9_]+")


class RuleDiscoveryError(RuntimeError):
    """The rules package and the registry disagree: a rule module defines no rule, or several,
    or one whose code is not its module's number, or a registered code has no rule module."""


def discover_rules(package_path: Iterable[str], package_name: str, codes: Sequence[str]) -> dict[str, type[Rule]]:
    """Import every rule module of a package and return ``code -> rule class`` in the order of
    ``codes`` (the registry's, sorted by code).

    Args:
        package_path: the package's ``__path__`` (the folders :func:`pkgutil.iter_modules` lists).
        package_name: the package's dotted name (``ckptlint.rules``).
        codes: every registered rule code; each must have exactly one rule module.

    Raises:
        RuleDiscoveryError: a ``ckpNNN_*`` module defines no :class:`Rule` subclass with a
            ``code``, or more than one, or one whose code is not ``CKPNNN``; two modules define
            the same code; or a code of
            ``codes`` has no module, or a module's rule is not in ``codes``. (A rule class whose
            code the registry lacks already fails when it is defined, with ``KeyError``.)
    """
    numbered = sorted(
        (info.name, match.group("number"))
        for info in pkgutil.iter_modules(list(package_path))
        if (match := RULE_MODULE.fullmatch(info.name)) is not None
    )
    found: dict[str, type[Rule]] = {}
    for name, number in numbered:
        module = importlib.import_module(f"{package_name}.{name}")
        rule = _the_rule_of(module)
        expected = f"CKP{number}"
        if rule.code != expected:
            raise RuleDiscoveryError(
                f"{module.__name__} defines {rule.__name__} with code {rule.code}; a rule module "
                f"named ckp{number}_... must define the rule {expected}"
            )
        if rule.code in found:
            raise RuleDiscoveryError(
                f"{found[rule.code].__module__} and {module.__name__} both define {rule.code}; one module a rule"
            )
        found[rule.code] = rule
    missing = [code for code in codes if code not in found]
    if missing:
        raise RuleDiscoveryError(
            f"no rule module defines {', '.join(missing)}: the registry (ckptlint/registry.py) lists "
            f"{'it' if len(missing) == 1 else 'them'}, so write "
            + ", ".join(f"{package_name.replace('.', '/')}/ckp{code[3:]}_<name>.py" for code in missing)
        )
    unregistered = [code for code in found if code not in codes]
    if unregistered:
        raise RuleDiscoveryError(
            f"{'rule' if len(unregistered) == 1 else 'rules'} {', '.join(unregistered)} not among the "
            "registered codes: add a row to the registry (ckptlint/registry.py)"
        )
    return {code: found[code] for code in codes}


def _the_rule_of(module: ModuleType) -> type[Rule]:
    """The one :class:`Rule` subclass with a ``code`` that ``module`` itself defines (classes it
    imports from elsewhere do not count)."""
    rules = [
        value
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, Rule)
        and value.__module__ == module.__name__
        and "code" in value.__dict__
    ]
    if not rules:
        raise RuleDiscoveryError(
            f"{module.__name__} defines no rule: a rule module holds one subclass of "
            "ckptlint.rules.base.Rule with `code = \"CKPNNN\"`"
        )
    if len(rules) > 1:
        names = ", ".join(sorted(f"{rule.__name__} ({rule.code})" for rule in rules))
        raise RuleDiscoveryError(f"{module.__name__} defines {len(rules)} rules ({names}); one rule a module")
    return rules[0]

"""Finding the ``ast`` twins of the rules: every ``ast_ckpNNN_<name>`` module of the rules
package defines the one :class:`~ckptlint.rules.ast_base.AstRule` of code ``CKPNNN`` (the twin
of :mod:`ckptlint.rules.discovery`, for the rules ported so far). Nothing on the linter's path
uses this module yet (the port to ``ast`` is in progress)."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

from ckptlint.rules.ast_base import AstRule
from ckptlint.rules.discovery import RuleDiscoveryError

__all__ = ["AST_RULE_MODULE", "ast_rules"]

#: The name of a twin's module: ``ast_`` and the libcst rule's module name.
AST_RULE_MODULE = re.compile(r"ast_ckp(?P<number>\d{3})_[a-z0-9_]+")


def ast_rules() -> dict[str, type[AstRule]]:
    """``code -> twin class`` for every ``ast_ckpNNN_*`` module of the rules package, by code.

    Raises:
        RuleDiscoveryError: a module defines no :class:`AstRule` subclass with a ``code``, or
            more than one, or one whose code is not its module's number.
    """
    folder = Path(__file__).parent
    found: dict[str, type[AstRule]] = {}
    for info in sorted(pkgutil.iter_modules([str(folder)]), key=lambda i: i.name):
        match = AST_RULE_MODULE.fullmatch(info.name)
        if match is None:
            continue
        module = importlib.import_module(f"{__package__}.{info.name}")
        rules = [
            value
            for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, AstRule) and value.__module__ == module.__name__ and "code" in value.__dict__
        ]
        expected = f"CKP{match.group('number')}"
        if len(rules) != 1 or rules[0].code != expected:
            raise RuleDiscoveryError(f"{module.__name__} must define one AstRule, of code {expected}")
        found[expected] = rules[0]
    return dict(sorted(found.items()))

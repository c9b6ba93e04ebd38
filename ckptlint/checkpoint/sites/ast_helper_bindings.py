"""The arguments of a helper call bound to the helper's parameters, on CPython's ``ast``, for
the ``HELPER_CALL`` sites of :mod:`ckptlint.checkpoint.sites.ast_helper_sites`: which argument
each parameter of the helper receives (positional, keyword, ``*args``/``**kwargs`` passed
on), and which parameters the call passes. The condition a finding states reads them
(:func:`ckptlint.checkpoint.sites.ast_guards.helper_parts`).
"""

from __future__ import annotations

import ast

from ckptlint.checkpoint.sites.ast_helper_summaries import AstHelperSummary
from ckptlint.checkpoint.sites.ast_options import AstArg, argument_value, literal_value, ordered_arguments
from ckptlint.checkpoint.sites.ast_site_builders import AstSite
from ckptlint.checkpoint.sites.options import NOT_LITERAL
from ckptlint.semantic.ast_model import AstModel

__all__ = ["BoundArguments", "parameter_arguments", "passed_parameters"]


class BoundArguments:
    """The arguments of one call of a helper, bound to its parameters: ``by_name`` (the
    argument each named parameter gets), ``rest`` (positional arguments that go to ``*args``),
    ``extra_keywords`` (keywords that go to ``**kwargs``) and ``open`` (a ``*`` or ``**``
    argument: what it binds is not known, and no positional argument after it binds)."""

    def __init__(self, summary: AstHelperSummary, call: ast.Call) -> None:
        self.by_name: dict[str, AstArg] = {}
        self.rest: list[AstArg] = []
        self.extra_keywords: list[ast.keyword] = []
        self.open = False
        params = list(summary.params)
        index = 0
        for arg in ordered_arguments(call):
            if isinstance(arg, ast.Starred):
                self.open = True
                continue
            if isinstance(arg, ast.keyword):
                if arg.arg is None:
                    self.open = True
                elif arg.arg in params or arg.arg in summary.keyword_only:
                    self.by_name[arg.arg] = arg
                else:
                    self.extra_keywords.append(arg)
                continue
            if self.open:
                continue
            if index < len(params):
                self.by_name[params[index]] = arg
            else:
                self.rest.append(arg)
            index += 1

    def literal(self, name: str, summary: AstHelperSummary, model: AstModel) -> object:
        """The literal value parameter ``name`` gets (passed, or its default), else
        :data:`~ckptlint.checkpoint.sites.options.NOT_LITERAL`."""
        arg = self.by_name.get(name)
        if arg is not None:
            return literal_value(argument_value(arg), model)
        if self.open:
            return NOT_LITERAL
        default = summary.defaults.get(name)
        return literal_value(default, summary.analysis) if default is not None else NOT_LITERAL


def parameter_arguments(site: AstSite, model: AstModel) -> dict[str, ast.expr | None]:
    """The parameters of the helper that ``site`` (a ``HELPER_CALL`` in ``model``'s module)
    calls whose value the call decides: each maps to the expression the call passes when it
    is no literal (``use_cp=self.with_cp``), or to ``None`` when the value is a literal
    (passed or the default) or cannot be known (a ``*`` or ``**`` argument may pass it); a
    parameter left at a default that is no literal is not listed. ``{}`` for another site."""
    summary = site.helper
    if summary is None:
        return {}
    bound = BoundArguments(summary, site.call)
    found: dict[str, ast.expr | None] = {}
    for name in (*summary.params, *summary.keyword_only):
        arg = bound.by_name.get(name)
        if arg is not None:
            value = argument_value(arg)
            found[name] = None if literal_value(value, model) is not NOT_LITERAL else value
        elif bound.open or bound.literal(name, summary, model) is not NOT_LITERAL:
            found[name] = None
    return found


def passed_parameters(site: AstSite) -> frozenset[str]:
    """The parameters of the helper ``site`` calls that the call may pass (by name, by
    position, or all of them after a ``*``/``**`` argument); empty for another site."""
    summary = site.helper
    if summary is None:
        return frozenset()
    bound = BoundArguments(summary, site.call)
    return frozenset((*summary.params, *summary.keyword_only)) if bound.open else frozenset(bound.by_name)

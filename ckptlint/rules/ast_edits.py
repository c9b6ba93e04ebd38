"""The edits of :mod:`ckptlint.rules.edits` for nodes found on CPython's ``ast``: the same
builders, the same :class:`~ckptlint.text.diagnostics.Edit` records, built from libcst's tree
of the smallest statement around the node only
(:func:`~ckptlint.text.ast_statement_cst.statement_cst`), never the whole module's.

Each function finds the libcst node that corresponds to the ``ast`` node it is given (the
same range; :meth:`StatementCst.node_for`) and hands it to the function of the same name of
:mod:`ckptlint.rules.edits`, with the statement's tree standing for the analysis: the text
logic (layout kept, trailing commas, a generator argument given its own parentheses, quotes
inside f-strings) is that module's, so both give the same edits. The statements parsed are
kept in the analysis's ``derived`` memo (a fix that edits one call twice parses it once).

``ast`` has no node for a keyword's name or an attribute's name: :func:`replace_node` given an
``ast.keyword`` replaces its name (as :class:`~ckptlint.checkpoint.sites.site.Misspelling`'s
``node`` stands for it on ``ast``), and :func:`replace_attribute_name` replaces the name after
an attribute's dot.

Raises :class:`NoCstNode` when libcst has no node for the ``ast`` node (libcst refuses the
code around it): the caller offers no fix. Nothing on the linter's path uses this module yet
(the port to ``ast`` is in progress).
"""

from __future__ import annotations

import ast

import libcst as cst

from ckptlint.rules import edits
from ckptlint.semantic.ast_analysis import AstAnalysis
from ckptlint.text.ast_statement_cst import StatementCst, ast_offsets, statement_cst
from ckptlint.text.diagnostics import Edit

__all__ = [
    "NoCstNode",
    "add_dict_entry",
    "add_keyword_argument",
    "remove_argument",
    "replace_attribute_name",
    "replace_node",
    "statement_of",
]

_MEMO = "ast_edits.statements"


class NoCstNode(LookupError):
    """libcst has no node for an ``ast`` node (it refuses the code around it)."""


def statement_of(analysis: AstAnalysis, node: ast.AST) -> tuple[StatementCst, cst.CSTNode]:
    """libcst's tree of the smallest statement around ``node`` (kept in ``analysis.derived``)
    and the libcst node in it that corresponds to ``node``. Raises :class:`NoCstNode`."""
    memo = analysis.derived.setdefault(_MEMO, {})
    assert isinstance(memo, dict)
    start, end = ast_offsets(analysis.source, node)
    for unit in memo.values():
        if unit.start <= start and end <= unit.end:
            found = unit.node_for(node)
            if found is not None:
                return unit, found
    unit = statement_cst(analysis.source, analysis.tree, node)
    if unit is None:
        raise NoCstNode(f"no libcst node for the {type(node).__name__} at {analysis.start(node)}")
    memo[(unit.start, unit.end, unit.prefix)] = unit
    found = unit.node_for(node)
    assert found is not None  # statement_cst answers a unit that has it
    return unit, found


def replace_node(analysis: AstAnalysis, node: ast.AST, content: str) -> Edit:
    """Replace the text of ``node`` by ``content`` (:func:`ckptlint.rules.edits.replace_node`);
    for an ``ast.keyword``, the keyword's name."""
    unit, found = statement_of(analysis, node)
    if isinstance(node, ast.keyword):
        assert isinstance(found, cst.Arg)
        if found.keyword is None:
            raise NoCstNode(f"a `**` argument has no name, at {analysis.start(node)}")
        return edits.replace_node(unit, found.keyword, content)
    return edits.replace_node(unit, found, content)


def replace_attribute_name(analysis: AstAnalysis, node: ast.Attribute, content: str) -> Edit:
    """Replace the name after the dot of attribute ``node`` (``enable`` of ``model.enable``)
    by ``content``."""
    unit, found = statement_of(analysis, node)
    if not isinstance(found, cst.Attribute):
        raise NoCstNode(f"no libcst attribute at {analysis.start(node)}")
    return edits.replace_node(unit, found.attr, content)


def add_keyword_argument(analysis: AstAnalysis, call: ast.Call, keyword: str) -> tuple[Edit, ...]:
    """Add ``keyword`` (``"use_reentrant=False"``) as the last argument of ``call``
    (:func:`ckptlint.rules.edits.add_keyword_argument`: the layout is kept)."""
    unit, found = statement_of(analysis, call)
    if not isinstance(found, cst.Call):
        raise NoCstNode(f"no libcst call at {analysis.start(call)}")
    return edits.add_keyword_argument(unit, found, keyword)


def remove_argument(analysis: AstAnalysis, call: ast.Call, arg: ast.expr | ast.keyword) -> tuple[Edit, ...]:
    """Remove argument ``arg`` (a positional expression, ``ast.Starred`` for ``*args``, or an
    ``ast.keyword``) from ``call`` with the comma that separates it
    (:func:`ckptlint.rules.edits.remove_argument`)."""
    unit, found = statement_of(analysis, call)
    if not isinstance(found, cst.Call):
        raise NoCstNode(f"no libcst call at {analysis.start(call)}")
    target = unit.node_for(arg)
    for candidate in found.args:
        if candidate is target or candidate.value is target:
            return edits.remove_argument(unit, found, candidate)
    raise NoCstNode(f"no libcst argument at {analysis.start(arg)}")


def add_dict_entry(analysis: AstAnalysis, node: ast.Dict, entry: str) -> tuple[Edit, ...]:
    """Add ``entry`` (``'"use_reentrant": False'``) as the last item of dict literal ``node``
    (:func:`ckptlint.rules.edits.add_dict_entry`)."""
    unit, found = statement_of(analysis, node)
    if not isinstance(found, cst.Dict):
        raise NoCstNode(f"no libcst dict at {analysis.start(node)}")
    return edits.add_dict_entry(unit, found, entry)

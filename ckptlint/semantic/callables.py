"""The parameters of a checkpointed callable, when this module defines it.

Enough to answer "does the function accept keyword ``k``?" for the site-level rules (a
keyword that is a real parameter is not a misspelled option, CKP003; a keyword the function
does not accept makes ``use_reentrant=False`` no fix, CKP002). Resolved: a ``def`` or a
lambda bound to a name, a lambda literal, ``self.method`` of the enclosing class, and a
factory call ``make(layer)`` whose ``def`` ends by returning a nested ``def``/lambda (the
``create_custom_forward(module)`` idiom of Hugging Face code). Anything else is unknown.

This module holds the record, :class:`Signature`; the reading is
:mod:`ckptlint.semantic.ast_callables`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

__all__ = ["Signature"]


@dataclass(frozen=True)
class Signature:
    """What a ``def``/lambda accepts.

    Attributes:
        keywords: names that can be passed by keyword (positional-or-keyword and
            keyword-only parameters).
        var_keyword: it has ``**kwargs``.
        node: the ``FunctionDef`` or ``Lambda``.
    """

    keywords: frozenset[str]
    var_keyword: bool
    node: ast.AST

    def accepts(self, keyword: str) -> bool:
        """Whether passing ``keyword=...`` binds (TypeError otherwise)."""
        return self.var_keyword or keyword in self.keywords



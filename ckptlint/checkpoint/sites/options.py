"""Reading the arguments of a call: literals, keyword options and ``**`` dictionaries.

The questions rules ask are of the form "is ``use_reentrant`` passed, and as what?". The
answer is an :class:`OptionValue` whose state tells a literal (``True``/``False``/a
string...), an expression only known at run time, absent, or unknown because it may hide in
a ``**kwargs`` whose content cannot be read.

Holds the records (:class:`OptionValue`, :class:`OptionState`, :class:`OptionOrigin`,
:data:`ABSENT`, :data:`UNKNOWN`, :data:`NOT_LITERAL`); :mod:`ckptlint.checkpoint.sites.ast_options` reads the
arguments into them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Generic

__all__ = ["ABSENT", "NOT_LITERAL", "OptionOrigin", "OptionState", "OptionValue", "UNKNOWN"]


from typing import TypeVar

#: The expression an option's value is read from, and the call argument carrying it
#: (``OptionValue[ast.expr, ast.AST]`` for ``ast`` sites).
E = TypeVar("E")
A = TypeVar("A")


class _NotLiteral:
    def __repr__(self) -> str:
        return "NOT_LITERAL"


NOT_LITERAL = _NotLiteral()


class OptionState(str, Enum):
    ABSENT = "absent"  # provably not passed (on at least one path, for ** dictionaries)
    LITERAL = "literal"  # a literal, possibly through a variable bound to one
    EXPRESSION = "expression"  # passed, value only known at run time
    UNKNOWN = "unknown"  # may be hidden in * / ** arguments of unknown content


class OptionOrigin(str, Enum):
    """Where a call's value for an option comes from."""

    NONE = ""  # ABSENT / UNKNOWN without a source
    KEYWORD = "keyword"  # the call's own keyword argument
    POSITIONAL = "positional"  # the call's own positional argument
    DICT = "dict"  # a `**` dictionary literal (or a variable bound to one)
    VARIABLE = "variable"  # a keyword or positional argument naming a variable bound to a literal
    DEFAULT = "default"  # not passed: the API's default applies


@dataclass(frozen=True)
class OptionValue(Generic[E, A]):
    """What a call passes for one option.

    Attributes:
        state: see :class:`OptionState`.
        value: the Python value for ``LITERAL`` (``True``, ``False``, ``None``, a str, ...).
        node: the expression that gives the value (for ``ABSENT`` from a dictionary, the
            dictionary literal that lacks the key).
        arg: the ``Arg`` of the call that carries it, when it is one of the call's own
            keyword or positional arguments (what a fix edits).
        origin: see :class:`OptionOrigin`.
    """

    state: OptionState
    value: object = None
    node: E | None = None
    arg: A | None = None
    origin: OptionOrigin = OptionOrigin.NONE

    @property
    def is_absent(self) -> bool:
        return self.state is OptionState.ABSENT

    @property
    def is_unknown(self) -> bool:
        return self.state is OptionState.UNKNOWN

    @property
    def is_passed(self) -> bool:
        return self.state in (OptionState.LITERAL, OptionState.EXPRESSION)

    @property
    def is_true(self) -> bool:
        return self.state is OptionState.LITERAL and self.value is True

    @property
    def is_false(self) -> bool:
        return self.state is OptionState.LITERAL and self.value is False


ABSENT: OptionValue = OptionValue(OptionState.ABSENT)


UNKNOWN: OptionValue = OptionValue(OptionState.UNKNOWN)



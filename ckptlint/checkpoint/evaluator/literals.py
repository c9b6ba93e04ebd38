"""The tables of literal values that
:class:`~ckptlint.checkpoint.evaluator.ast_literals.LiteralDecisions` reads: the calls that copy
their argument, the builtin classes a literal may name, and the record of such a class."""

from __future__ import annotations

from dataclasses import dataclass

#: Calls that return a copy of their one argument (``copy.deepcopy(cfg)``).
_COPY_FUNCTIONS = frozenset({"copy.deepcopy", "copy.copy", "builtins.dict"})


_BUILTIN_TYPES: dict[str, type] = {
    "list": list,
    "dict": dict,
    "tuple": tuple,
    "set": set,
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "NoneType": type(None),
}


@dataclass(frozen=True)
class _BuiltinType:
    """A builtin class as a literal (``list`` in ``type(x) == list``)."""

    name: str



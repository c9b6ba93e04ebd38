"""The evaluation budget: how many expressions one query and one linted file may evaluate, and
the memo of the query in progress."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import libcst as cst

    from ckptlint.checkpoint.evaluator.denotations import Context, Value

__all__ = ["EvaluationBudget", "Memo"]

#: Results of the query in progress, by ``(id(expression), id(context))``; the entry keeps
#: the context and expression themselves, so that a reused id is told apart.
Memo = dict[tuple[int, int], tuple["Context", "cst.BaseExpression", "list[Value]"]]


class EvaluationBudget:
    """Evaluation steps (expressions evaluated) for the queries of one linted module.

    A query (a region, one ``values`` or ``signature`` question) runs inside :meth:`query`,
    which allows it ``steps`` steps, or what is left of ``file_steps`` when that is less;
    each evaluation :meth:`take` s one. Past the bound the rest of the query is unknown
    (never a finding by itself). Steps taken outside a query are not counted.
    The steps used are added to the ``evaluation_steps`` counter of :mod:`ckptlint.perf`."""

    def __init__(self, file_steps: int) -> None:
        self._file_steps = file_steps  # left to the queries together
        self._steps: int | None = None  # left to the query in progress; None outside one
        #: results of the query in progress (cleared when it ends)
        self.memo: Memo = {}

    @contextmanager
    def query(self, steps: int) -> Iterator[None]:
        """Bound the evaluation steps of one query; a query inside another shares the
        outer bound (and its memo)."""
        if self._steps is not None:
            yield
            return
        allowed = min(steps, self._file_steps)
        self._steps = allowed
        try:
            yield
        finally:
            used = allowed - max(self._steps, 0)
            self._file_steps -= used
            _count_steps(used)
            self._steps = None
            self.memo.clear()

    def take(self) -> bool:
        """Take one step: ``False`` when the query in progress has none left (then the
        expression is not evaluated), ``True`` otherwise (always outside a query)."""
        steps = self._steps
        if steps is None:
            return True
        if steps <= 0:
            return False
        self._steps = steps - 1
        return True


def _count_steps(used: int) -> None:
    from ckptlint import perf

    perf.add("evaluation_steps", used)

"""The evaluation budget: how many expressions one query and one linted file may evaluate, the
memo of the query in progress and, for a complete query, the evaluations in progress (cycles)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ckptlint.checkpoint.evaluator.denotations import (
    MAX_EVAL_DEPTH,
    ClassValue,
    ContainerValue,
    ForwardingValue,
    FunctionValue,
    InstanceValue,
    LayerClassValue,
    LayerUse,
    ModuleValue,
    OpaqueValue,
)

if TYPE_CHECKING:
    import ast

    from ckptlint.checkpoint.evaluator.denotations import Context, Value


__all__ = ["EvaluationBudget", "Memo"]


#: Results of the query in progress, by ``(id(expression), id(context))``; the entry keeps
#: the context and expression themselves, so that a reused id is told apart.
Memo = dict[tuple[int, int], tuple["Context", "ast.expr", "list[Value]"]]


#: How many times a complete query evaluates a cycle (``model = wrap(model)``) again with the
#: values found so far before it gives up on knowing them whole.
_CYCLE_ROUNDS = 4


#: How deep a complete query follows evaluations (names, calls, returns): a model built by a
#: helper of another module and passed through a few ``model = convert(model)`` steps is
#: more than :data:`MAX_EVAL_DEPTH` deep; the query's steps bound what this costs.
_COMPLETE_DEPTH = 2 * MAX_EVAL_DEPTH


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
        #: the query in progress keeps what it does not know as an opaque value (see :meth:`query`)
        self.complete = False
        self._active: set[tuple[int, int]] = set()  # the evaluations in progress
        self._cycles: list[tuple[int, int]] = []  # those met again while in progress
        self._so_far: dict[tuple[int, int], list[Value]] = {}  # values found so far, by evaluation
        self._changes = 0  # how many times values so far changed

    @contextmanager
    def query(self, steps: int, complete: bool = False) -> Iterator[None]:
        """Bound the evaluation steps of one query; a query inside another shares the
        outer bound (and its memo). A ``complete`` query asks for every value an expression
        may denote: each part of it that is not known (a binding, a branch, a call, past a
        bound) is an opaque value instead of nothing, so an answer that lists only classes of
        the tree is known to be whole."""
        if self._steps is not None:
            yield
            return
        allowed = min(steps, self._file_steps)
        self._steps = allowed
        self.complete = complete
        try:
            yield
        finally:
            used = allowed - max(self._steps, 0)
            self._file_steps -= used
            _count_steps(used)
            self._steps = None
            self.complete = False
            self._active.clear()
            self._cycles.clear()
            self._so_far.clear()
            self.memo.clear()

    def evaluate(self, expr: ast.expr, ctx: Context, compute: Callable[[], list[Value]], limit: int) -> list[Value]:
        """The values of ``expr`` in ``ctx`` that ``compute`` finds (at most ``limit``), taking
        one step, memoised for the query.

        In a complete query nothing that is not known is left out: past the bound, past
        ``limit`` values and where ``compute`` finds nothing, an opaque value stands for it.
        An evaluation met again while it is in progress (a cycle: ``model = wrap(model)``, as
        a name's bindings are not ordered) gives its values so far; the first evaluation of
        the cycle is repeated until no values so far change (at most :data:`_CYCLE_ROUNDS`
        rounds, else an opaque value is added). What depends on values so far is not
        memoised."""
        key = (id(expr), id(ctx))
        known = self.memo.get(key)
        if known is not None and known[0] is ctx and known[1] is expr:
            return known[2]
        if not self.complete:
            if not self.take():
                return []
            found = compute()[:limit]
            self.memo[key] = (ctx, expr, found)
            return found
        if key in self._active:
            self._cycles.append(key)
            return self._so_far.get(key, [])
        if not self.take():
            return [OpaqueValue()]
        self._active.add(key)
        try:
            for _ in range(_CYCLE_ROUNDS):
                changes, start = self._changes, len(self._cycles)
                found = list({id(value): value for value in compute()}.values())  # the same value once
                if len(found) > limit:
                    found = found[:limit] + [OpaqueValue()]
                met = set(self._cycles[start:])
                del self._cycles[start:]
                if key in met and _identities(found) != _identities(self._so_far.get(key, [])):
                    self._so_far[key] = found  # what meeting it again gives from now on
                    self._changes += 1
                if met - {key}:
                    self._cycles.extend(met - {key})  # an evaluation above repeats this one
                    return found
                if not met or self._changes == changes:  # no cycle, or none changed: whole
                    found = found or [OpaqueValue()]
                    self.memo[key] = (ctx, expr, found)
                    return found
            return found + [OpaqueValue()]
        finally:
            self._active.discard(key)

    @property
    def depth(self) -> int:
        """How deep the query in progress follows evaluations: past it nothing is known."""
        return _COMPLETE_DEPTH if self.complete else MAX_EVAL_DEPTH

    @property
    def ran_out(self) -> bool:
        """Whether the query in progress has used all its steps (``False`` outside one)."""
        return self._steps is not None and self._steps <= 0

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


def _identities(values: list[Value]) -> frozenset[object]:
    """What ``values`` denote, for telling whether a cycle's values changed: classes,
    functions, layers and modules by what they are, containers and wrappers by their
    elements, every other value as one opaque value."""
    out: set[object] = set()
    for value in values:
        if isinstance(value, (InstanceValue, ClassValue)):
            out.add((type(value), id(value.info)))
        elif isinstance(value, FunctionValue):
            out.add((FunctionValue, id(value.node)))
        elif isinstance(value, (LayerUse, LayerClassValue)):
            out.add((type(value), value.qualified))
        elif isinstance(value, ModuleValue):
            out.add((ModuleValue, value.module))
        elif isinstance(value, ContainerValue):
            out.add((ContainerValue, _identities(value.elements)))
        elif isinstance(value, ForwardingValue):
            out.add((ForwardingValue, _identities(value.wrapped)))
        else:
            out.add(OpaqueValue)
    return frozenset(out)



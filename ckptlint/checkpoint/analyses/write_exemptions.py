"""Writes of outer state that a recomputation does not change, so CKP202 leaves them out:
balanced push/pop, code guarded by a recompute-phase predicate, RNG bookkeeping the API
restores, idempotent conversions, one-time fills, memo tables and sizes grown until they
fit, shape bookkeeping.

This module holds the tables those exemptions read (push and pop methods, RNG state setters,
empty constructors, idempotent conversions, shape attributes and calls); the analysis is
:mod:`ckptlint.checkpoint.analyses.ast_write_exemptions`.
"""

from __future__ import annotations

#: Mutating methods that add to a container, and the ones that take the addition back
#: (LIFO ``pop()``; ``pop(0)`` after ``append`` removes another element, so it is no pair).
_PUSHES = {"append": "pop", "appendleft": "popleft", "add": "discard"}


_POPS = {"pop": "append", "popleft": "appendleft", "discard": "add", "remove": "add"}


_RNG_STATE_SETTERS = frozenset(
    {"torch.set_rng_state", "torch.cuda.set_rng_state", "torch.random.set_rng_state", "torch.cuda.random.set_rng_state"}
)


#: Generator methods that set a generator's state (``torch.cuda.default_generators[i].set_state``,
#: ``torch._C._cuda_setRNGState`` in Megatron's ``_set_cuda_rng_state``).
_GENERATOR_SETTERS = frozenset({"set_state", "_cuda_setRNGState"})


#: Calls that build an empty container: ``list()`` is as constant as ``[]``.
_EMPTY_CONSTRUCTORS = frozenset({"list", "dict", "set", "tuple"})


#: Tensor methods ``f`` with ``f(f(t, *a), *a) == f(t, *a)``: converting twice with the same
#: arguments gives what converting once gave.
_IDEMPOTENT_CONVERSIONS = frozenset(
    {"to", "type", "type_as", "cuda", "cpu", "float", "half", "bfloat16", "double", "long", "int", "bool", "contiguous", "detach"}
)


_SHAPE_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "device"})


_SHAPE_CALLS = frozenset({"size", "dim", "len", "int", "tuple", "numel"})



"""Random operations in a region, and where their tensors' devices come from.

Shared by the randomness rules (CKP101-CKP103). An op is a call of a random torch function
(``torch.rand*``, ``F.dropout``, ...), a random tensor method (``x.bernoulli_()``), or a
random torch layer run in the region (``nn.Dropout``). Facts from torch.utils.checkpoint,
2.9 (unchanged in 2.13): with ``preserve_rng_state=True`` checkpoint stashes and restores the
CPU RNG state and that of **one** device type, inferred from the *positional* tensor
arguments; tensors moved to a device inside the region, tensors passed only by keyword,
explicit ``torch.Generator`` objects, Python ``random`` and NumPy are never restored.

This module holds the records :class:`RandomOp` and :class:`UnpreservedSource`; the analysis
is :mod:`ckptlint.checkpoint.analyses.ast_randomness`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from ckptlint.checkpoint.evaluator.denotations import LayerUse

# The node, module analysis, frame and expression a record holds (``ast`` nodes, an
# ``AstAnalysis`` and an ``AstFrame`` in :mod:`ckptlint.checkpoint.analyses.ast_randomness`).
N = TypeVar("N")
M = TypeVar("M")
R = TypeVar("R")
E = TypeVar("E")


__all__ = ["RandomOp", "UnpreservedSource"]


@dataclass(eq=False)
class RandomOp(Generic[N, M, R, E]):
    """One random operation of a region.

    Attributes:
        node: the call that draws (in ``analysis``).
        name: what it is, for messages (``F.dropout``, ``nn.Dropout``, ``.bernoulli_()``).
        frame: the function body it runs in (``None`` for a layer that is the checkpointed
            callable itself).
        active: ``False`` when provably off (``p=0``, ``training=False``), ``None`` unknown.
        tensor: the expression whose device the op draws on (receiver or first argument),
            ``None`` for factories that take a ``device=``.
    """

    node: N
    analysis: M
    name: str
    frame: R | None
    active: bool | None
    tensor: E | None
    layer: LayerUse | None = None


# ------------------------------------------------------------------ sources (CKP103)
@dataclass(eq=False)
class UnpreservedSource(Generic[N, M]):
    """A use of randomness checkpoint never restores."""

    node: N
    analysis: M
    what: str



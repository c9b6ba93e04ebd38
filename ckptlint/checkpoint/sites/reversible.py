"""Reversible-network recompute: ``torch.autograd.Function`` subclasses whose ``backward``
rebuilds the inputs of each block from its outputs and runs the block again under
``torch.enable_grad()``, the shape of RevNet/RevTorch, Reformer, RevViT and RevCol.

Read from public implementations (the shapes recognised here):

- lucidrains/reformer-pytorch ``reformer_pytorch/reversible.py`` (commit 365d5c8):
  ``_ReversibleFunction.forward(ctx, x, blocks, kwargs)`` runs ``block(x, **kwargs)`` for each
  block and stores ``ctx.blocks = blocks``; ``backward`` calls ``block.backward_pass(y, dy,
  **kwargs)`` for ``block in ctx.blocks[::-1]``; ``ReversibleBlock.backward_pass`` re-runs
  ``self.g(y1, set_rng=True, **g_args)`` and ``self.f(x2, set_rng=True, **f_args)`` under
  ``torch.enable_grad()`` on tensors rebuilt from the outputs (``x2 = y2 - gy1``), and
  ``Deterministic.forward`` restores the RNG state recorded in forward when ``set_rng`` is
  true (``torch.random.fork_rng`` + ``torch.set_rng_state``). Nothing captures autocast.
- open-mmlab/mmpretrain ``mmpretrain/models/backbones/revvit.py`` (RevViT):
  ``RevBackProp.forward(ctx, x, layers, buffer_layers)`` runs ``layer(x1, x2)`` for each
  layer, stores ``ctx.layers = layers``; ``backward`` calls ``layer.backward_pass(y1=...,
  ...)`` for ``_, layer in enumerate(layers[::-1])`` (``layers = ctx.layers``);
  ``RevTransformerEncoderLayer.backward_pass`` re-runs ``self.ffn``/``self.attn`` under
  ``torch.enable_grad()`` after ``torch.manual_seed(self.seeds[...])`` (the seeds drawn in
  forward). It is called as ``executing_fn = RevBackProp.apply; executing_fn(x, self.layers, [])``.
- megvii-research/RevCol ``models/revcol_function.py`` (commit 2c36531):
  ``ReverseFunction.forward(ctx, run_functions, alpha, *args)`` unpacks ``l0, l1, l2, l3 =
  run_functions`` and runs them; ``backward`` unpacks ``ctx.run_functions`` the same way and
  re-runs ``l3(c2, None)`` ... ``l0(x, c1_left)`` under ``torch.enable_grad()``,
  ``torch.random.fork_rng`` + ``set_device_states`` and the autocast state read in forward
  (``torch.is_autocast_enabled()``, re-entered with ``torch.cuda.amp.autocast(**...)``).

What is recognised: ``forward(ctx, ..., P, ...)`` stores its parameter ``P`` on ``ctx`` and
runs ``P`` or its elements (a ``for`` loop over ``P``, ``enumerate``/``reversed``/slices of
it, or a tuple unpacking of it); ``backward`` takes the stored value from ``ctx`` (directly
or through a local name) and, for its elements, calls either a method ``M`` that some class
of the module defines and that runs a part of its block under ``torch.enable_grad()`` (the
block's own ``backward_pass``), or the element itself inside ``with torch.enable_grad()``.

- karttikeya/minREV ``fast_rev.py`` (PaReprop, commit b0d95f2): ``FastRevBackProp(RevBackProp)``
  overrides only ``backward`` and inherits ``forward`` from ``rev.py``; it takes
  ``layer = layers[-1]`` and, per step, ``for i, (this_layer, next_layer) in
  enumerate(zip(layers[1:][::-1], layers[:-1][::-1]))``, re-running blocks through
  ``FineReversibleBlock.backward_pass_recover`` (``self.G(Y_1)`` and ``self.F(X_2)`` under
  ``torch.enable_grad()``) while ``backward_pass_grads`` only calls ``.backward`` on tensors
  it is handed. ``revswin.py`` has the same subclass next to its base. The caller
  (:mod:`ckptlint.checkpoint.sites.homemade`) hands such a class's bases to
  :func:`~ckptlint.checkpoint.sites.ast_reversible.reversible_shape`.

Holds the record (:class:`ReversibleShape`), which :mod:`ckptlint.checkpoint.sites.ast_reversible` builds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

# The re-run calls (``ReversibleShape[ast.Call]`` from
# :mod:`ckptlint.checkpoint.sites.ast_reversible`).
C = TypeVar("C")


__all__ = ["ReversibleShape"]


@dataclass(frozen=True)
class ReversibleShape(Generic[C]):
    """What :func:`~ckptlint.checkpoint.sites.ast_reversible.reversible_shape` read from one class.

    Attributes:
        function_index: index, among ``apply``'s arguments, of the stored blocks.
        reruns: the calls in ``backward`` that run the blocks again (``block.backward_pass(...)``
            or ``l3(...)``).
        method: the method of each block that re-runs it (``backward_pass``), or ``None``
            when the block itself is called.
        restores_rng: an RNG state is set around the re-run (in ``backward`` or in the
            method: ``torch.manual_seed(self.seeds[k])``, ``set_rng_state``, or a keyword
            such as ``set_rng=True`` asking the block to restore the state it recorded).
        restores_autocast: ``custom_bwd``, or the autocast state read in forward and
            re-entered in backward.
    """

    function_index: int
    reruns: tuple[C, ...]
    method: str | None
    restores_rng: bool
    restores_autocast: bool



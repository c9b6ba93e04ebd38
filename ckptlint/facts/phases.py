"""Predicates that tell the forward pass of a checkpointed region from its recomputation."""

from __future__ import annotations

__all__ = ["GRAD_MODE_PREDICATES", "RECOMPUTE_PHASE_PREDICATES"]


#: Predicates that are true in exactly one phase of a checkpointed region: code under
#: ``if is_recomputing():`` (or its ``else``) runs once per step by design, so the state rules
#: do not report it (fairscale's own docstring: "Use this to prevent duplicated side-effects
#: at forward propagation"). Sources: fairscale fairscale/nn/checkpoint/checkpoint_activations.py
#: 47-90 (``enable_checkpointing`` around the first forward only, ``enable_recomputing``
#: around the recompute in backward, 281 and 330), the same pair in fairscale/nn/pipe/checkpoint.py
#: 150-170; TransformerEngine transformer_engine/pytorch/distributed.py 284
#: (``_ACTIVATION_RECOMPUTE_PHASE``, set only around the recompute). Megatron's
#: ``tensor_parallel.random.is_checkpointing`` is true in both phases (random.py 608, 644) and
#: is not listed.
RECOMPUTE_PHASE_PREDICATES = frozenset(
    {
        "fairscale.nn.checkpoint.is_checkpointing",
        "fairscale.nn.checkpoint.is_recomputing",
        "fairscale.nn.checkpoint.checkpoint_activations.is_checkpointing",
        "fairscale.nn.checkpoint.checkpoint_activations.is_recomputing",
        "fairscale.nn.pipe.checkpoint.is_checkpointing",
        "fairscale.nn.pipe.checkpoint.is_recomputing",
        "transformer_engine.pytorch.distributed.in_fp8_activation_recompute_phase",
    }
)

#: Predicates that tell the two phases apart when the site runs the reentrant variant or
#: any ``autograd.Function`` implementation: its forward runs with recording off
#: (torch/utils/checkpoint.py 2.13, ``CheckpointFunction.forward`` ``with torch.no_grad()``;
#: an ``autograd.Function``'s ``forward`` always runs in no-grad mode, torch/autograd/function.py),
#: and its recompute under ``torch.enable_grad()`` (``CheckpointFunction.backward``; Megatron
#: core/tensor_parallel/random.py ``CheckpointFunction.backward``). Megatron's own
#: ``if torch.is_grad_enabled() and self.training: self.microbatch_count += 1`` ("skip counter
#: update for eval and activation checkpointing") so runs once per step. Under the
#: non-reentrant variant both phases record (its recompute runs under ``enable_grad`` too), so
#: these are no phase guard there.
GRAD_MODE_PREDICATES = frozenset({"torch.is_grad_enabled", "torch._C.is_grad_enabled", "torch.autograd.grad_mode.is_grad_enabled"})

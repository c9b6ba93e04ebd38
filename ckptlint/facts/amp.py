"""Names whose presence in a code base means its training step can run under autocast, which
CKP105 asks before it reports a home-made recompute that does not re-enter the autocast state
of forward.

A recompute in ``backward`` runs outside the ``torch.autocast`` block of the training step
(torch 2.9, 2.13: autocast state is thread-local and ``loss.backward()`` is called after the
block), so it matters only for a code base that runs its forward under autocast. Code bases
that get half precision by converting the weights (``model.convert_to_fp16()`` in openai's
improved-diffusion and consistency_models, DeepSpeed's fp16 engine in GLM) never enter it.

Each marker, as it appears in source text:

- ``autocast``: ``torch.autocast``, ``torch.amp.autocast``, ``torch.cuda.amp.autocast``,
  ``torch.cpu.amp.autocast`` (torch/amp/autocast_mode.py), ``accelerator.autocast()``
  (accelerate 1.15 ``Accelerator.autocast``); fairseq enters ``torch.cuda.amp.autocast`` in
  ``fairseq/tasks/fairseq_task.py`` ``train_step`` under ``--amp``;
- ``custom_fwd`` / ``custom_bwd``: ``torch.amp.custom_fwd``/``custom_bwd`` decorate autograd
  Functions meant to run under autocast (DeepSpeed ``deepspeed/runtime/zero/linear.py``);
- ``GradScaler``: loss scaling for autocast training (``torch.amp.GradScaler``);
- ``AmpOptimWrapper``: mmengine's optimizer wrapper that runs the forward under autocast
  (``optim_wrapper=dict(type='AmpOptimWrapper')`` in OpenMMLab configs);
- ``16-mixed``: Lightning's ``precision="16-mixed"``/``"bf16-mixed"`` (autocast in
  ``MixedPrecision.forward_context``, pytorch_lightning 2.6.6);
- trainers whose precision is a command-line or config flag that turns autocast on:
  ``pytorch_lightning`` / ``lightning`` (``Trainer(precision=16)``, also
  ``Trainer.add_argparse_args`` in CompVis stable-diffusion's ``main.py``), Hugging Face
  ``TrainingArguments`` (``fp16``/``bf16``: ``Trainer`` runs the forward under accelerate's
  autocast), accelerate's ``Accelerator(`` (``mixed_precision=``).
"""

from __future__ import annotations

__all__ = ["AUTOCAST_MARKERS"]

AUTOCAST_MARKERS: tuple[bytes, ...] = (
    b"autocast",
    b"custom_fwd",
    b"custom_bwd",
    b"GradScaler",
    b"AmpOptimWrapper",
    b"16-mixed",
    b"pytorch_lightning",
    b"lightning.pytorch",
    b"import lightning",
    b"from lightning",
    b"TrainingArguments",
    b"Accelerator(",
)

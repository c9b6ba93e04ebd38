"""The record of one activation-checkpointing API and the kinds of API, for the tables of
:mod:`ckptlint.facts.apis` (torch's and transformers' own) and
:mod:`ckptlint.facts.library_apis` (other libraries' entry points)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = ["CHECKPOINT_OPTIONS", "PARTIAL_QUALIFIED_NAMES", "UTILS_CHECKPOINT_MODULE", "ApiKind", "CheckpointApi"]

UTILS_CHECKPOINT_MODULE = "torch.utils.checkpoint"

#: Keyword options that ``torch.utils.checkpoint.checkpoint`` consumes itself (2.9);
#: every other keyword is forwarded to the checkpointed function.
CHECKPOINT_OPTIONS = ("use_reentrant", "preserve_rng_state", "context_fn", "determinism_check", "debug", "early_stop")

#: ``functools.partial`` spelled any way it can be imported.
PARTIAL_QUALIFIED_NAMES = frozenset({"functools.partial"})


class ApiKind(str, Enum):
    """What an API call does, which decides how its arguments are read."""

    FUNCTION = "function"  # checkpoint(function, *args, **options_and_kwargs)
    SEQUENTIAL = "sequential"  # checkpoint_sequential(functions, segments, input, use_reentrant)
    WRAPPER = "wrapper"  # checkpoint_wrapper(module, checkpoint_impl, checkpoint_fn, **kwargs)
    COMPOSABLE = "composable"  # torch.distributed._composable.checkpoint(module, **options)
    HF_ENABLE = "hf-enable"  # model.gradient_checkpointing_enable(gradient_checkpointing_kwargs)
    HF_TRAINING_ARGS = "hf-training-args"  # TrainingArguments(gradient_checkpointing=True, ...)
    # Libraries' own entry points (rows below, each with its source):
    LIBRARY_FUNCTION = "library-function"  # api(function, *leading, *inputs): Megatron, DeepSpeed, HF's func
    LIBRARY_SEQUENCE = "library-sequence"  # timm checkpoint_seq(functions, x, every, flatten, skip_last, ...)
    LIBRARY_WRAPPER = "library-wrapper"  # fairscale / fairseq checkpoint_wrapper(module, offload_to_cpu)
    POLICY = "policy"  # apply_activation_checkpointing(model, wrapper_fn, check_fn, auto_wrap_policy) & co.
    HOME_MADE = "home-made"  # a torch.autograd.Function of the linted tree that re-runs a callable


@dataclass(frozen=True)
class CheckpointApi:
    """One recognised API.

    Attributes:
        name: the name shown in messages.
        kind: how its arguments are read.
        qualified_names: every qualified name it is reachable under.
        positional: names of its leading positional parameters, in order.
        options: keyword names the API consumes as checkpoint options.
        reentrant_when_omitted: whether leaving ``use_reentrant`` out runs the reentrant
            variant (``True`` for torch.utils.checkpoint before 2.14 and transformers < 5).
        accepts_function_kwargs: whether other keywords are forwarded to the function
            (only the non-reentrant variant accepts them).
        fixed_reentrancy: for libraries' own implementations, the variant that always runs
            (``"reentrant"``: an ``autograd.Function`` re-running in ``backward``;
            ``"non-reentrant"``; ``"unknown"``: set at run time, timm's ``set_reentrant_ckpt``);
            ``None``: decided by ``use_reentrant`` as for torch.
        rng_restored: the RNG states restored before the recompute (``"cpu"``, ``"cuda"``:
            the device's default generator, ``"tracker"``: a model-parallel RNG tracker's
            states), ``("unknown",)`` when a run-time setting decides.
        restores_autocast: whether the recompute runs under the autocast state of forward
            (``None``: unknown).
        stops_early: its non-reentrant recompute stops at the last saved tensor (torch 2.13 ``early_stop``).
        patches_batchnorm: the wrapper stops BatchNorm from updating running statistics
            twice (fairscale's ``patch_batchnorm``): CKP203 does not apply.
        policy_keywords: for policies, the keywords that select the checkpointed classes.
        enabled_by_default: for ``TrainingArguments`` subclasses, checkpointing is on unless
            ``gradient_checkpointing=False`` is passed (trl's configs).
        method_names: attribute calls recognised by the method name alone (the receiver's
            type is not known statically: ``self._gradient_checkpointing_func(f, x)``).
        rerun_method: for a reversible recompute (Reformer, RevViT), the method of each block
            that ``backward`` re-runs (``backward_pass``), the region instead of ``forward``.
        source: where each fact was checked (file, and version or commit of the extract).
    """

    name: str
    kind: ApiKind
    qualified_names: tuple[str, ...]
    positional: tuple[str, ...]
    options: tuple[str, ...]
    reentrant_when_omitted: bool
    accepts_function_kwargs: bool = False
    fixed_reentrancy: str | None = None
    rng_restored: tuple[str, ...] = ("cpu", "cuda")
    restores_autocast: bool | None = True
    stops_early: bool = False
    patches_batchnorm: bool = False
    policy_keywords: tuple[str, ...] = ()
    enabled_by_default: bool = False
    method_names: tuple[str, ...] = ()
    rerun_method: str | None = None
    source: str = "torch/utils/checkpoint.py (2.9, 2.13)"

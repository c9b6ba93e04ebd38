"""Other libraries' own checkpoint entry points, as rows of the API table (see
:mod:`ckptlint.facts.apis`, which lists them in ``ALL_APIS``). Each row's ``source`` names the
file (and lines, and the releases checked) of the library's source each fact was read from."""

from __future__ import annotations

from ckptlint.facts.api_types import CHECKPOINT_OPTIONS, ApiKind, CheckpointApi

__all__ = [
    "HF_GRADIENT_CHECKPOINTING_FUNC",
    "TIMM_CHECKPOINT_SEQ",
    "TIMM_CHECKPOINT",
    "DEEPSPEED_CHECKPOINT",
    "DEEPSPEED_NON_REENTRANT",
    "DEEPSPEED_PIPE_FUNC",
    "MEGATRON_CHECKPOINT",
    "MEGATRON_WITHOUT_OUTPUT",
    "TE_CHECKPOINT",
    "COLOSSALAI_CHECKPOINT",
    "TORCH_CHECKPOINT_FUNCTION",
    "FAIRSCALE_CHECKPOINT_WRAPPER",
    "FAIRSEQ_CHECKPOINT_WRAPPER",
    "XFORMERS_CHECKPOINT",
    "XFORMERS_SELECTIVE_WRAPPER",
    "APPLY_ACTIVATION_CHECKPOINTING",
    "LIGHTNING_FSDP_STRATEGY",
    "TORCHTUNE_SET_ACTIVATION_CHECKPOINTING",
    "TRL_CONFIGS",
]

HF_GRADIENT_CHECKPOINTING_FUNC = CheckpointApi(
    name="_gradient_checkpointing_func",
    kind=ApiKind.LIBRARY_FUNCTION,
    qualified_names=(),
    positional=("function",),
    options=(),
    reentrant_when_omitted=False,
    fixed_reentrancy="unknown",
    method_names=("_gradient_checkpointing_func",),
    source=(
        "set by the enable call, so its options are unknown here: transformers modeling_utils.py "
        "gradient_checkpointing_enable (4.57: functools.partial(checkpoint, **kwargs), default "
        "{'use_reentrant': True}); diffusers src/diffusers/models/modeling_utils.py:295-321 "
        "enable_gradient_checkpointing (torch checkpoint, use_reentrant=False, or the function passed)"
    ),
)

TIMM_CHECKPOINT_SEQ = CheckpointApi(
    name="timm.models.checkpoint_seq",
    kind=ApiKind.LIBRARY_SEQUENCE,
    qualified_names=(
        "timm.models.checkpoint_seq",
        "timm.models._manipulate.checkpoint_seq",
        "timm.models.helpers.checkpoint_seq",
    ),
    positional=("functions", "x", "every", "flatten", "skip_last", "use_reentrant"),
    options=("use_reentrant", "every", "flatten", "skip_last"),
    reentrant_when_omitted=False,
    fixed_reentrancy="config",
    source=(
        "pytorch-image-models timm/models/_manipulate.py:213-285 (torch checkpoint per segment; "
        "use_reentrant=None reads timm.layers.config use_reentrant_ckpt(), default False, env "
        "TIMM_REENTRANT_CKPT, timm/layers/config.py:39-41,159-165); re-exported by timm/models/__init__.py:145"
    ),
)

TIMM_CHECKPOINT = CheckpointApi(
    name="timm.models.checkpoint",
    kind=ApiKind.LIBRARY_FUNCTION,
    qualified_names=("timm.models.checkpoint", "timm.models._manipulate.checkpoint", "timm.models.helpers.checkpoint"),
    positional=("function",),
    options=CHECKPOINT_OPTIONS,
    reentrant_when_omitted=False,
    accepts_function_kwargs=True,
    fixed_reentrancy="config",
    source="pytorch-image-models timm/models/_manipulate.py:191-210 (torch checkpoint, use_reentrant from config)",
)

DEEPSPEED_CHECKPOINT = CheckpointApi(
    name="deepspeed.checkpointing.checkpoint",
    kind=ApiKind.LIBRARY_FUNCTION,
    qualified_names=(
        "deepspeed.checkpointing.checkpoint",
        "deepspeed.runtime.activation_checkpointing.checkpointing.checkpoint",
    ),
    positional=("function",),
    options=(),
    reentrant_when_omitted=True,
    fixed_reentrancy="reentrant",
    rng_restored=("cpu", "cuda", "tracker"),
    restores_autocast=False,
    source=(
        "DeepSpeed deepspeed/runtime/activation_checkpointing/checkpointing.py:948-957 "
        "(CheckpointFunction.apply; RNG saved at 537-539 and restored in backward; no autocast "
        "handling); deepspeed/__init__.py:38 exposes it as deepspeed.checkpointing"
    ),
)

DEEPSPEED_NON_REENTRANT = CheckpointApi(
    name="deepspeed.checkpointing.non_reentrant_checkpoint",
    kind=ApiKind.LIBRARY_FUNCTION,
    qualified_names=(
        "deepspeed.checkpointing.non_reentrant_checkpoint",
        "deepspeed.runtime.activation_checkpointing.checkpointing.non_reentrant_checkpoint",
    ),
    positional=("function",),
    options=(),
    reentrant_when_omitted=False,
    fixed_reentrancy="non-reentrant",
    rng_restored=("cpu", "cuda", "tracker"),
    restores_autocast=False,
    source="DeepSpeed deepspeed/runtime/activation_checkpointing/checkpointing.py:704-945 (RNG at 759-761)",
)

DEEPSPEED_PIPE_FUNC = CheckpointApi(
    name="activation_checkpoint_func",
    kind=ApiKind.LIBRARY_FUNCTION,
    qualified_names=(),
    positional=("function",),
    options=(),
    reentrant_when_omitted=True,
    fixed_reentrancy="unknown",
    rng_restored=("unknown",),
    restores_autocast=None,
    method_names=("activation_checkpoint_func",),
    source=(
        "DeepSpeed deepspeed/runtime/pipe/module.py:135,205-211,388 (PipelineModule: "
        "deepspeed.checkpointing.checkpoint by default, non_reentrant_checkpoint when configured)"
    ),
)

MEGATRON_CHECKPOINT = CheckpointApi(
    name="megatron.core.tensor_parallel.checkpoint",
    kind=ApiKind.LIBRARY_FUNCTION,
    qualified_names=(
        "megatron.core.tensor_parallel.checkpoint",
        "megatron.core.tensor_parallel.random.checkpoint",
        "megatron.core.mpu.checkpoint",
    ),
    positional=("function", "distribute_saved_activations"),
    options=("distribute_saved_activations",),
    reentrant_when_omitted=True,
    fixed_reentrancy="reentrant",
    rng_restored=("cpu", "cuda", "tracker"),
    restores_autocast=False,
    source=(
        "Megatron-LM megatron/core/tensor_parallel/random.py:591-688 (CheckpointFunction: "
        "_get_all_rng_states / _set_all_rng_states under _fork_rng; no autocast handling); "
        "exported by megatron/core/tensor_parallel/__init__.py:37"
    ),
)

MEGATRON_WITHOUT_OUTPUT = CheckpointApi(
    name="megatron.core.tensor_parallel.CheckpointWithoutOutput.checkpoint",
    kind=ApiKind.LIBRARY_FUNCTION,
    qualified_names=(
        "megatron.core.tensor_parallel.CheckpointWithoutOutput.checkpoint",
        "megatron.core.tensor_parallel.random.CheckpointWithoutOutput.checkpoint",
    ),
    positional=("function",),
    options=(),
    reentrant_when_omitted=True,
    fixed_reentrancy="reentrant",
    rng_restored=("cpu", "cuda", "tracker"),
    restores_autocast=False,
    source=(
        "Megatron-LM megatron/core/tensor_parallel/random.py:848-960 (an instance's "
        "checkpoint(run_function, *args); RNG states saved in __init__ fields, restored in _recompute; "
        "only fp8_autocast re-entered)"
    ),
)

TE_CHECKPOINT = CheckpointApi(
    name="transformer_engine.pytorch.checkpoint",
    kind=ApiKind.LIBRARY_FUNCTION,
    qualified_names=("transformer_engine.pytorch.checkpoint", "transformer_engine.pytorch.distributed.checkpoint"),
    positional=("function",),
    options=("use_reentrant", "distribute_saved_activations", "get_rng_state_tracker", "tp_group"),
    reentrant_when_omitted=True,
    accepts_function_kwargs=True,
    rng_restored=("cpu", "cuda", "tracker"),
    restores_autocast=True,
    source=(
        "TransformerEngine transformer_engine/pytorch/distributed.py, re-exported as transformer_engine.pytorch."
        "checkpoint (pytorch/__init__.py:62). v1.5 to v2.18 (checked at each minor release): "
        "checkpoint(function, *args, **kwargs) pops use_reentrant (default True, no warning), "
        "distribute_saved_activations (False), tp_group and get_rng_state_tracker (None) from kwargs and "
        "forwards the rest to the function in both variants (2.18 lines 657-760); the deprecated positional "
        "form (function, bool, tracker, group, *args) still accepted (DeprecationWarning). Reentrant: "
        "_CheckpointFunction (327-472) restores the CPU and the device's default generator, and the "
        "tracker's states when get_rng_state_tracker is given; non-reentrant: _CheckpointFrame (475-522), the "
        "same states. Autocast of forward re-entered from v1.7 (_get_active_autocast_contexts, #791; "
        "v1.5-v1.6 do not); from v1.7 a function without TE modules goes to torch's checkpoint with "
        "use_reentrant passed. Before v1.5: checkpoint(function, distribute_saved_activations, "
        "get_cuda_rng_tracker, tp_group, *args, **kwargs), always reentrant (v1.4 lines 301-349)"
    ),
)

COLOSSALAI_CHECKPOINT = CheckpointApi(
    name="colossalai.legacy.utils.activation_checkpoint.checkpoint",
    kind=ApiKind.LIBRARY_FUNCTION,
    qualified_names=(
        "colossalai.legacy.utils.activation_checkpoint.checkpoint",
        "colossalai.utils.activation_checkpoint.checkpoint",
        "colossalai.utils.checkpoint",
    ),
    positional=("function", "activation_offload"),
    options=("use_reentrant", "activation_offload"),
    reentrant_when_omitted=True,
    rng_restored=("cpu", "cuda", "tracker"),
    restores_autocast=True,
    source=(
        "ColossalAI colossalai/legacy/utils/activation_checkpoint.py:141 checkpoint(function, "
        "activation_offload, *args, use_reentrant=True); RNG and seed states 39-41, 95-97; "
        "autocast had_autocast_in_fwd 44-47, 112-113"
    ),
)

TORCH_CHECKPOINT_FUNCTION = CheckpointApi(
    name="torch.utils.checkpoint.CheckpointFunction.apply",
    kind=ApiKind.LIBRARY_FUNCTION,
    qualified_names=("torch.utils.checkpoint.CheckpointFunction.apply",),
    positional=("function", "preserve_rng_state"),
    options=("preserve_rng_state",),
    reentrant_when_omitted=True,
    fixed_reentrancy="reentrant",
    source="torch/utils/checkpoint.py CheckpointFunction.forward(ctx, run_function, preserve_rng_state, *args) (2.9, 2.13)",
)

FAIRSCALE_CHECKPOINT_WRAPPER = CheckpointApi(
    name="fairscale.nn.checkpoint_wrapper",
    kind=ApiKind.LIBRARY_WRAPPER,
    qualified_names=(
        "fairscale.nn.checkpoint_wrapper",
        "fairscale.nn.checkpoint.checkpoint_wrapper",
        "fairscale.nn.checkpoint.checkpoint_activations.checkpoint_wrapper",
    ),
    positional=("module", "offload_to_cpu"),
    options=("offload_to_cpu",),
    reentrant_when_omitted=True,
    fixed_reentrancy="reentrant",
    patches_batchnorm=True,
    source=(
        "fairscale fairscale/nn/checkpoint/checkpoint_activations.py:99-150 (patch_batchnorm: "
        "BatchNorm does not track running stats under no_grad, so statistics update once per step, "
        "checkpoint_utils.py), RNG get_rng_state 215-226, autocast had_autocast_in_fwd 268"
    ),
)

FAIRSEQ_CHECKPOINT_WRAPPER = CheckpointApi(
    name="fairseq.modules.checkpoint_activations.checkpoint_wrapper",
    kind=ApiKind.LIBRARY_WRAPPER,
    qualified_names=("fairseq.modules.checkpoint_activations.checkpoint_wrapper",),
    positional=("m", "offload_to_cpu"),
    options=("offload_to_cpu",),
    reentrant_when_omitted=True,
    fixed_reentrancy="reentrant",
    restores_autocast=False,
    source=(
        "fairseq fairseq/modules/checkpoint_activations.py:14-37 (replaces m.forward), "
        "CheckpointFunction 148-222 (utils.get_rng_state / set_rng_state; no autocast, no BatchNorm patch)"
    ),
)

XFORMERS_CHECKPOINT = CheckpointApi(
    name="xformers.checkpoint",
    kind=ApiKind.LIBRARY_FUNCTION,
    qualified_names=("xformers.checkpoint", "xformers.checkpoint.checkpoint"),
    positional=("function",),
    options=("preserve_rng_state", "policy_fn"),
    reentrant_when_omitted=False,
    accepts_function_kwargs=True,
    fixed_reentrancy="non-reentrant",
    stops_early=True,
    source=(
        "facebookresearch/xformers xformers/checkpoint.py, re-exported by xformers/__init__.py:12-17 (the "
        "package's `checkpoint` is the function): v0.0.24 to v0.0.35 lines 175-206 checkpoint(function, *args, "
        "preserve_rng_state=True, policy_fn=None, **kwargs) returns torch.utils.checkpoint.checkpoint(function, "
        "*args, use_reentrant=False, preserve_rng_state=..., context_fn=selective_checkpoint_context_fn(policy_fn), "
        "**kwargs) (torch's RNG and autocast restore, its early stop); v0.0.22 to v0.0.23.post1 its "
        "own saved-tensor hooks with the same restores (fork_rng of the CPU and the inputs' devices, autocast "
        "from _get_autocast_kwargs; v0.0.23.post1 lines 138-279), no early stop"
    ),
)

XFORMERS_SELECTIVE_WRAPPER = CheckpointApi(
    name="xformers.checkpoint.selective_checkpoint_wrapper",
    kind=ApiKind.LIBRARY_WRAPPER,
    qualified_names=(
        "xformers.selective_checkpoint_wrapper",
        "xformers.checkpoint.selective_checkpoint_wrapper",
        "xformers.checkpoint.SelectiveCheckpointWrapper",
    ),
    positional=("module", "memory_budget", "policy_fn"),
    options=("memory_budget", "policy_fn"),
    reentrant_when_omitted=False,
    fixed_reentrancy="non-reentrant",
    stops_early=True,
    source=(
        "facebookresearch/xformers xformers/checkpoint.py (from v0.0.23.post1; v0.0.35 lines 475-545): "
        "selective_checkpoint_wrapper(module, memory_budget=None, policy_fn=None) returns "
        "SelectiveCheckpointWrapper(ActivationWrapper), whose forward calls xformers' checkpoint(module, "
        "*args, **kwargs, policy_fn=...); exactly one of memory_budget and policy_fn (ValueError otherwise)"
    ),
)

APPLY_ACTIVATION_CHECKPOINTING = CheckpointApi(
    name="apply_activation_checkpointing",
    kind=ApiKind.POLICY,
    qualified_names=(
        "torch.distributed.algorithms._checkpoint.checkpoint_wrapper.apply_activation_checkpointing",
    ),
    positional=("model", "checkpoint_wrapper_fn", "check_fn", "auto_wrap_policy"),
    options=("checkpoint_wrapper_fn", "check_fn", "auto_wrap_policy"),
    reentrant_when_omitted=False,
    policy_keywords=("check_fn", "auto_wrap_policy"),
    source=(
        "torch/distributed/algorithms/_checkpoint/checkpoint_wrapper.py apply_activation_checkpointing "
        "(2.13: default checkpoint_wrapper_fn=checkpoint_wrapper, NO_REENTRANT; check_fn=lambda _: True; "
        "auto_wrap_policy takes precedence; the root module is not wrapped); torch/distributed/fsdp/wrap.py "
        "ModuleWrapPolicy(module_classes)"
    ),
)

LIGHTNING_FSDP_STRATEGY = CheckpointApi(
    name="FSDPStrategy",
    kind=ApiKind.POLICY,
    qualified_names=tuple(
        f"{package}.strategies{module}.FSDPStrategy"
        for package in ("lightning.pytorch", "lightning.fabric", "pytorch_lightning", "lightning_fabric")
        for module in ("", ".fsdp")
    ),
    positional=(),
    options=("activation_checkpointing_policy", "activation_checkpointing"),
    reentrant_when_omitted=False,
    policy_keywords=("activation_checkpointing_policy", "activation_checkpointing"),
    source=(
        "pytorch-lightning src/lightning/fabric/strategies/fsdp.py:707-740 (a set becomes ModuleWrapPolicy, "
        "activation_checkpointing=[classes] becomes isinstance check_fn) and 814-835 "
        "(apply_activation_checkpointing with torch's checkpoint_wrapper)"
    ),
)

TORCHTUNE_SET_ACTIVATION_CHECKPOINTING = CheckpointApi(
    name="torchtune.training.set_activation_checkpointing",
    kind=ApiKind.POLICY,
    qualified_names=(
        "torchtune.training.set_activation_checkpointing",
        "torchtune.training.memory.set_activation_checkpointing",
    ),
    positional=("model", "auto_wrap_policy"),
    options=("auto_wrap_policy",),
    reentrant_when_omitted=False,
    policy_keywords=("auto_wrap_policy",),
    source="torchtune torchtune/training/memory.py:26-43 (a set becomes ModuleWrapPolicy; apply_activation_checkpointing)",
)

TRL_CONFIGS = CheckpointApi(
    name="trl config (TrainingArguments subclass)",
    kind=ApiKind.HF_TRAINING_ARGS,
    qualified_names=tuple(
        name
        for cls, module in (
            ("SFTConfig", "sft_config"),
            ("DPOConfig", "dpo_config"),
            ("GRPOConfig", "grpo_config"),
            ("KTOConfig", "kto_config"),
            ("RewardConfig", "reward_config"),
            ("RLOOConfig", "rloo_config"),
        )
        for name in (f"trl.{cls}", f"trl.trainer.{cls}", f"trl.trainer.{module}.{cls}")
    )
    + ("trl.trainer.base_config._BaseConfig",),
    positional=(),
    options=("gradient_checkpointing", "gradient_checkpointing_kwargs", "activation_checkpointing", "activation_checkpointing_kwargs"),
    reentrant_when_omitted=False,
    enabled_by_default=True,
    source=(
        "trl trl/trainer/base_config.py:21,61-62 (_BaseConfig(TrainingArguments), gradient_checkpointing "
        "defaults to True; each config subclasses it: sft_config.py:23, dpo_config.py:23, ...); "
        "trl/trainer/dpo_trainer.py:854-860 sets use_reentrant=False when unset (transformers < 5)"
    ),
)

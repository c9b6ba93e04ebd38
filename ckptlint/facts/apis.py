"""The table of activation-checkpointing APIs ckptlint recognises, as data.

Every rule asks the semantic model, which asks this table; nothing else in the code base
matches API names. Facts are from PyTorch's sources (torch/utils/checkpoint.py,
torch/distributed/algorithms/_checkpoint/checkpoint_wrapper.py,
torch/distributed/_composable/checkpoint_activation.py, 2.9; unchanged in 2.13) and from
transformers' modeling_utils.py / training_args.py (4.57, 5.0, 5.24; the default flipped in 5.0).
"""

from __future__ import annotations

from ckptlint.facts import library_apis as _library_apis
from ckptlint.facts.api_types import (
    CHECKPOINT_OPTIONS,
    PARTIAL_QUALIFIED_NAMES,
    UTILS_CHECKPOINT_MODULE,
    ApiKind,
    CheckpointApi,
)
from ckptlint.facts.library_apis import (
    APPLY_ACTIVATION_CHECKPOINTING,
    COLOSSALAI_CHECKPOINT,
    DEEPSPEED_CHECKPOINT,
    DEEPSPEED_NON_REENTRANT,
    DEEPSPEED_PIPE_FUNC,
    FAIRSCALE_CHECKPOINT_WRAPPER,
    FAIRSEQ_CHECKPOINT_WRAPPER,
    HF_GRADIENT_CHECKPOINTING_FUNC,
    LIGHTNING_FSDP_STRATEGY,
    MEGATRON_CHECKPOINT,
    MEGATRON_WITHOUT_OUTPUT,
    TE_CHECKPOINT,
    TIMM_CHECKPOINT,
    TIMM_CHECKPOINT_SEQ,
    TORCH_CHECKPOINT_FUNCTION,
    TORCHTUNE_SET_ACTIVATION_CHECKPOINTING,
    TRL_CONFIGS,
    XFORMERS_CHECKPOINT,
    XFORMERS_SELECTIVE_WRAPPER,
)

__all__ = [
    "ALL_APIS", "API_BY_QUALIFIED_NAME", "AUTOGRAD_FUNCTION_BASES", "HOME_MADE", "INSTANCE_METHOD_APIS",
    "METHOD_APIS", "TRAINING_ARGUMENTS_BASES", "gate_names", "ApiKind", "CheckpointApi", "CHECKPOINT_OPTIONS",
    "HF_ENABLE_METHODS", "MODULE_EXPORTS", "PEFT_PREPARE_KBIT", "PARTIAL_QUALIFIED_NAMES", "UTILS_CHECKPOINT_MODULE",
    "api_for",
    # other libraries' rows, part of this table
    *_library_apis.__all__,
]


CHECKPOINT = CheckpointApi(
    name="torch.utils.checkpoint.checkpoint",
    kind=ApiKind.FUNCTION,
    qualified_names=("torch.utils.checkpoint.checkpoint",),
    positional=("function",),
    options=CHECKPOINT_OPTIONS,
    reentrant_when_omitted=True,
    accepts_function_kwargs=True,
    stops_early=True,
)

CHECKPOINT_SEQUENTIAL = CheckpointApi(
    name="torch.utils.checkpoint.checkpoint_sequential",
    kind=ApiKind.SEQUENTIAL,
    qualified_names=("torch.utils.checkpoint.checkpoint_sequential",),
    positional=("functions", "segments", "input", "use_reentrant"),
    options=("use_reentrant", "preserve_rng_state"),
    reentrant_when_omitted=True,
)

CHECKPOINT_WRAPPER = CheckpointApi(
    name="checkpoint_wrapper",
    kind=ApiKind.WRAPPER,
    qualified_names=(
        "torch.distributed.algorithms._checkpoint.checkpoint_wrapper.checkpoint_wrapper",
    ),
    positional=("module", "checkpoint_impl", "checkpoint_fn"),
    options=("checkpoint_impl", "checkpoint_fn") + CHECKPOINT_OPTIONS,
    reentrant_when_omitted=False,
    accepts_function_kwargs=True,
)

COMPOSABLE_CHECKPOINT = CheckpointApi(
    name="torch.distributed._composable.checkpoint",
    kind=ApiKind.COMPOSABLE,
    qualified_names=(
        "torch.distributed._composable.checkpoint",
        "torch.distributed._composable.checkpoint_activation.checkpoint",
    ),
    positional=("module",),
    options=CHECKPOINT_OPTIONS,
    reentrant_when_omitted=False,
)

HF_GRADIENT_CHECKPOINTING_ENABLE = CheckpointApi(
    name="gradient_checkpointing_enable",
    kind=ApiKind.HF_ENABLE,
    qualified_names=(),
    positional=("gradient_checkpointing_kwargs",),
    options=("gradient_checkpointing_kwargs",),
    reentrant_when_omitted=True,
)

#: transformers 5.24: ``gradient_checkpointing_enable``'s new name (:mod:`ckptlint.facts.version_facts`).
HF_ACTIVATION_CHECKPOINTING_ENABLE = CheckpointApi(
    name="activation_checkpointing_enable",
    kind=ApiKind.HF_ENABLE,
    qualified_names=(),
    positional=("activation_checkpointing_kwargs", "every_n_layers", "offload"),
    options=("activation_checkpointing_kwargs", "every_n_layers", "offload"),
    reentrant_when_omitted=False,
    source="transformers 5.24.0 modeling_utils.py:3119-3158 (kwargs None -> {'use_reentrant': False})",
)

#: peft's switch: it calls ``model.gradient_checkpointing_enable(...)`` itself
#: (:data:`ckptlint.facts.version_facts.PEFT_KBIT_EMPTY_KWARGS` says with which kwargs).
PEFT_PREPARE_KBIT = CheckpointApi(
    name="prepare_model_for_kbit_training",
    kind=ApiKind.HF_ENABLE,
    qualified_names=tuple(
        f"{module}.{name}"
        for module in ("peft", "peft.utils", "peft.utils.other")
        for name in ("prepare_model_for_kbit_training", "prepare_model_for_int8_training")
    ),
    positional=("model", "use_gradient_checkpointing", "gradient_checkpointing_kwargs"),
    options=("use_gradient_checkpointing", "gradient_checkpointing_kwargs"),
    reentrant_when_omitted=True,
    source=(
        "huggingface/peft src/peft/utils/other.py, exported by peft/__init__.py and peft/utils/__init__.py: "
        "v0.20.0 lines 151-252 prepare_model_for_kbit_training(model, use_gradient_checkpointing=True, "
        "gradient_checkpointing_kwargs=None, ...): None becomes {}; only for a quantized model (8-/4-bit, GPTQ, "
        "AQLM, EETQ, HQQ, torchao) and use_gradient_checkpointing: model.gradient_checkpointing_enable("
        "gradient_checkpointing_kwargs=...) where the method takes it, else without; v0.4.0 line 62 and v0.5.0 "
        "line 81 (model, use_gradient_checkpointing=True) call gradient_checkpointing_enable(); "
        "prepare_model_for_int8_training(*args, **kwargs) forwards to it (v0.4.0-v0.9.0, gone in v0.10.0)"
    ),
)

HF_TRAINING_ARGUMENTS = CheckpointApi(
    name="TrainingArguments",
    kind=ApiKind.HF_TRAINING_ARGS,
    qualified_names=(
        "transformers.TrainingArguments",
        "transformers.training_args.TrainingArguments",
        "transformers.Seq2SeqTrainingArguments",
        "transformers.training_args_seq2seq.Seq2SeqTrainingArguments",
    ),
    positional=(),
    options=("gradient_checkpointing", "gradient_checkpointing_kwargs", "activation_checkpointing", "activation_checkpointing_kwargs"),
    reentrant_when_omitted=True,
)


ALL_APIS = (
    CHECKPOINT,
    CHECKPOINT_SEQUENTIAL,
    CHECKPOINT_WRAPPER,
    COMPOSABLE_CHECKPOINT,
    HF_GRADIENT_CHECKPOINTING_ENABLE,
    HF_ACTIVATION_CHECKPOINTING_ENABLE,
    PEFT_PREPARE_KBIT,
    HF_TRAINING_ARGUMENTS,
    HF_GRADIENT_CHECKPOINTING_FUNC,
    TIMM_CHECKPOINT_SEQ,
    TIMM_CHECKPOINT,
    DEEPSPEED_CHECKPOINT,
    DEEPSPEED_NON_REENTRANT,
    DEEPSPEED_PIPE_FUNC,
    MEGATRON_CHECKPOINT,
    MEGATRON_WITHOUT_OUTPUT,
    TE_CHECKPOINT,
    COLOSSALAI_CHECKPOINT,
    TORCH_CHECKPOINT_FUNCTION,
    FAIRSCALE_CHECKPOINT_WRAPPER,
    FAIRSEQ_CHECKPOINT_WRAPPER,
    XFORMERS_CHECKPOINT,
    XFORMERS_SELECTIVE_WRAPPER,
    APPLY_ACTIVATION_CHECKPOINTING,
    LIGHTNING_FSDP_STRATEGY,
    TORCHTUNE_SET_ACTIVATION_CHECKPOINTING,
    TRL_CONFIGS,
)

#: APIs whose call is a method of an instance of a class (``ckpt.checkpoint(f, x)`` after
#: ``ckpt = CheckpointWithoutOutput()``): the class's qualified names -> the API.
INSTANCE_METHOD_APIS: dict[str, tuple[str, CheckpointApi]] = {
    "megatron.core.tensor_parallel.CheckpointWithoutOutput": ("checkpoint", MEGATRON_WITHOUT_OUTPUT),
    "megatron.core.tensor_parallel.random.CheckpointWithoutOutput": ("checkpoint", MEGATRON_WITHOUT_OUTPUT),
}

#: Base classes whose subclasses (found in the linted tree) are ``TrainingArguments``.
TRAINING_ARGUMENTS_BASES = frozenset(HF_TRAINING_ARGUMENTS.qualified_names + TRL_CONFIGS.qualified_names)

#: ``torch.autograd.Function`` spelled any way it can be imported (home-made recompute).
AUTOGRAD_FUNCTION_BASES = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})

#: The template row of home-made implementations; each implementation found gets its own
#: copy with the facts read from its code (see :mod:`ckptlint.checkpoint.sites.homemade`).
HOME_MADE = CheckpointApi(
    name="home-made",
    kind=ApiKind.HOME_MADE,
    qualified_names=(),
    positional=("function",),
    options=(),
    reentrant_when_omitted=True,
    fixed_reentrancy="reentrant",
    source="the implementation in the linted tree",
)

API_BY_QUALIFIED_NAME: dict[str, CheckpointApi] = {
    qualified: api for api in ALL_APIS for qualified in api.qualified_names
}

#: Method names that are transformers' checkpointing switch whatever object they are
#: called on (the receiver's type is not known statically).
HF_ENABLE_METHODS: dict[str, CheckpointApi] = {
    "gradient_checkpointing_enable": HF_GRADIENT_CHECKPOINTING_ENABLE,
    "activation_checkpointing_enable": HF_ACTIVATION_CHECKPOINTING_ENABLE,
}

#: Method names that are a checkpoint API whatever they are called on (from the rows'
#: ``method_names``): ``self._gradient_checkpointing_func(block, x)``.
METHOD_APIS: dict[str, CheckpointApi] = {name: api for api in ALL_APIS for name in api.method_names}


def gate_names() -> tuple[frozenset[str], frozenset[str]]:
    """What the byte-level gate looks for, learnt from this table: ``(words, owners)``.

    ``words``: names that make a file worth parsing when they appear at all (method names,
    the last part of every qualified name that is not a plain ``checkpoint``, class names of
    instance-method APIs, configs that switch checkpointing on by default). ``owners``: modules that hold a ``checkpoint``
    function (``tensor_parallel``, ``checkpointing``...), for ``owner.checkpoint(`` calls.
    """
    words: set[str] = set(HF_ENABLE_METHODS) | set(METHOD_APIS)
    owners: set[str] = set()
    for api in ALL_APIS:
        if api.kind is ApiKind.HF_TRAINING_ARGS and not api.enabled_by_default:
            continue  # a site only with gradient_checkpointing=..., which the gate sees
        for qualified in api.qualified_names:
            parts = qualified.split(".")
            if parts[-1] == "checkpoint" or (parts[-1] == "apply" and parts[-2] == "CheckpointFunction"):
                owners.add(parts[-2])
            else:
                words.add(parts[-1])
    for qualified in INSTANCE_METHOD_APIS:
        words.add(qualified.rsplit(".", 1)[-1])
    return frozenset(words), frozenset(owners)

#: Names that ``from MODULE import *`` binds, for the modules that matter here.
MODULE_EXPORTS: dict[str, tuple[str, ...]] = {
    "torch.utils.checkpoint": ("checkpoint", "checkpoint_sequential"),
    "torch.distributed.algorithms._checkpoint.checkpoint_wrapper": ("checkpoint_wrapper",),
    "torch.distributed.checkpoint": ("save", "load", "async_save", "save_state_dict", "load_state_dict"),
}


def api_for(qualified_names: set[str] | frozenset[str]) -> CheckpointApi | None:
    """The API one of ``qualified_names`` denotes, or ``None``.

    When a name could be several things (a conditional import), the first recognised
    candidate in sorted order wins, so the answer is deterministic.
    """
    for qualified in sorted(qualified_names):
        api = API_BY_QUALIFIED_NAME.get(qualified)
        if api is not None:
            return api
    return None

"""The table of activation-checkpointing APIs ckptlint recognises, as data.

Every rule asks the semantic model, which asks this table; nothing else in the code base
matches API names. Facts are from PyTorch's sources (torch/utils/checkpoint.py,
torch/distributed/algorithms/_checkpoint/checkpoint_wrapper.py,
torch/distributed/_composable/checkpoint_activation.py, 2.9; unchanged in 2.13) and from
transformers' modeling_utils.py / training_args.py (4.57; the default flipped in 5.0).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = [
    "API_BY_QUALIFIED_NAME",
    "ApiKind",
    "CheckpointApi",
    "CHECKPOINT_OPTIONS",
    "HF_ENABLE_METHODS",
    "MODULE_EXPORTS",
    "PARTIAL_QUALIFIED_NAMES",
    "UTILS_CHECKPOINT_MODULE",
    "api_for",
]

UTILS_CHECKPOINT_MODULE = "torch.utils.checkpoint"

#: Keyword options that ``torch.utils.checkpoint.checkpoint`` consumes itself (2.9);
#: every other keyword is forwarded to the checkpointed function.
CHECKPOINT_OPTIONS = (
    "use_reentrant",
    "preserve_rng_state",
    "context_fn",
    "determinism_check",
    "debug",
    "early_stop",
)

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
    """

    name: str
    kind: ApiKind
    qualified_names: tuple[str, ...]
    positional: tuple[str, ...]
    options: tuple[str, ...]
    reentrant_when_omitted: bool
    accepts_function_kwargs: bool = False


CHECKPOINT = CheckpointApi(
    name="torch.utils.checkpoint.checkpoint",
    kind=ApiKind.FUNCTION,
    qualified_names=("torch.utils.checkpoint.checkpoint",),
    positional=("function",),
    options=CHECKPOINT_OPTIONS,
    reentrant_when_omitted=True,
    accepts_function_kwargs=True,
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
    options=("gradient_checkpointing", "gradient_checkpointing_kwargs"),
    reentrant_when_omitted=True,
)

ALL_APIS = (
    CHECKPOINT,
    CHECKPOINT_SEQUENTIAL,
    CHECKPOINT_WRAPPER,
    COMPOSABLE_CHECKPOINT,
    HF_GRADIENT_CHECKPOINTING_ENABLE,
    HF_TRAINING_ARGUMENTS,
)

API_BY_QUALIFIED_NAME: dict[str, CheckpointApi] = {
    qualified: api for api in ALL_APIS for qualified in api.qualified_names
}

#: Method names that are transformers' checkpointing switch whatever object they are
#: called on (the receiver's type is not known statically).
HF_ENABLE_METHODS: dict[str, CheckpointApi] = {
    "gradient_checkpointing_enable": HF_GRADIENT_CHECKPOINTING_ENABLE,
}

#: Names that ``from MODULE import *`` binds, for the modules that matter here.
MODULE_EXPORTS: dict[str, tuple[str, ...]] = {
    "torch.utils.checkpoint": ("checkpoint", "checkpoint_sequential"),
    "torch.distributed.algorithms._checkpoint.checkpoint_wrapper": ("checkpoint_wrapper",),
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

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
    "DCP_FUNCTIONS",
    "DcpFunction",
    "DcpOperation",
    "GRAD_MODE_CONTEXTS",
    "GradModeEffect",
    "HF_ENABLE_METHODS",
    "MODULE_BASE_CLASSES",
    "MODULE_EXPORTS",
    "MODULE_FACTORIES",
    "NOOP_CONTEXT_FN",
    "OPTIMIZER_PACKAGE",
    "PARTIAL_QUALIFIED_NAMES",
    "PATH_FACTORIES",
    "SCHEDULER_PACKAGE",
    "STATE_DICT_FACTORIES",
    "TORCH_LOAD",
    "TORCH_SAVE",
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


# --------------------------------------------------------------------------------------
# Names that are not activation checkpointing but are mistaken for it (CKP301-CKP304).

#: The default ``context_fn`` of torch.utils.checkpoint.checkpoint (2.9, 2.13); passing it
#: explicitly is accepted by the reentrant variant (identity check).
NOOP_CONTEXT_FN = "torch.utils.checkpoint.noop_context_fn"

#: ``torch.save`` / ``torch.load`` (training-state checkpoints, torch/serialization.py).
TORCH_SAVE = frozenset({"torch.save", "torch.serialization.save"})
TORCH_LOAD = frozenset({"torch.load", "torch.serialization.load"})

#: Calls that return a state dict (torch.distributed.checkpoint.state_dict, 2.9/2.13); the
#: method ``obj.state_dict()`` is recognised by name.
STATE_DICT_FACTORIES = frozenset(
    f"torch.distributed.checkpoint.state_dict.{name}"
    for name in ("get_state_dict", "get_model_state_dict", "get_optimizer_state_dict")
)

#: Calls that build a file-system path.
PATH_FACTORIES = frozenset(
    {
        "pathlib.Path",
        "pathlib.PurePath",
        "pathlib.PosixPath",
        "pathlib.WindowsPath",
        "os.path.join",
        "os.path.abspath",
        "os.path.expanduser",
        "os.path.realpath",
        "os.path.normpath",
        "os.fspath",
        "posixpath.join",
    }
)

#: Classes under this package are optimizers, except the schedulers below.
OPTIMIZER_PACKAGE = "torch.optim."
SCHEDULER_PACKAGE = "torch.optim.lr_scheduler."

#: Base classes that make a class an ``nn.Module``.
MODULE_BASE_CLASSES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})

#: Calls that return an ``nn.Module`` (wrappers keep the module type); ``torch.nn.<Name>``
#: with a capitalised name (layers and containers) is recognised by prefix.
MODULE_FACTORIES = frozenset(
    {
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.distributed.fsdp.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_shard",
        "torch.distributed._composable.fsdp.fully_shard",
        "torch.compile",
    }
)


class DcpOperation(str, Enum):
    SAVE = "save"
    LOAD = "load"


@dataclass(frozen=True)
class DcpFunction:
    """One function of ``torch.distributed.checkpoint`` (DCP; state_dict_saver.py and
    state_dict_loader.py, 2.9; unchanged in 2.13).

    Attributes:
        name: the public name (``"save"``).
        operation: save or load.
        returns_none: ``load`` and ``load_state_dict`` load in place and return ``None``.
        keyword_only_path: the path goes in ``checkpoint_id=`` (keyword-only); a second
            positional argument is taken as ``storage_writer``/``storage_reader`` by the
            ``_api_bc_check`` shim (utils.py), so a path there fails.
        deprecated: ``save_state_dict``/``load_state_dict`` warn ``FutureWarning``.
    """

    name: str
    operation: DcpOperation
    returns_none: bool
    keyword_only_path: bool
    deprecated: bool = False


_DCP = "torch.distributed.checkpoint"
_DCP_SAVE = DcpFunction("save", DcpOperation.SAVE, returns_none=False, keyword_only_path=True)
_DCP_ASYNC_SAVE = DcpFunction("async_save", DcpOperation.SAVE, returns_none=False, keyword_only_path=True)
_DCP_LOAD = DcpFunction("load", DcpOperation.LOAD, returns_none=True, keyword_only_path=True)
_DCP_SAVE_STATE_DICT = DcpFunction(
    "save_state_dict", DcpOperation.SAVE, returns_none=False, keyword_only_path=False, deprecated=True
)
_DCP_LOAD_STATE_DICT = DcpFunction(
    "load_state_dict", DcpOperation.LOAD, returns_none=True, keyword_only_path=False, deprecated=True
)

#: Qualified name -> DCP function, under the package and the modules that define them.
DCP_FUNCTIONS: dict[str, DcpFunction] = {
    f"{_DCP}.save": _DCP_SAVE,
    f"{_DCP}.state_dict_saver.save": _DCP_SAVE,
    f"{_DCP}.async_save": _DCP_ASYNC_SAVE,
    f"{_DCP}.state_dict_saver.async_save": _DCP_ASYNC_SAVE,
    f"{_DCP}.load": _DCP_LOAD,
    f"{_DCP}.state_dict_loader.load": _DCP_LOAD,
    f"{_DCP}.save_state_dict": _DCP_SAVE_STATE_DICT,
    f"{_DCP}.state_dict_saver.save_state_dict": _DCP_SAVE_STATE_DICT,
    f"{_DCP}.load_state_dict": _DCP_LOAD_STATE_DICT,
    f"{_DCP}.state_dict_loader.load_state_dict": _DCP_LOAD_STATE_DICT,
}


class GradModeEffect(str, Enum):
    """What a context manager or decorator does to autograd recording."""

    DISABLES = "disables"  # torch.no_grad(), torch.inference_mode()
    ENABLES = "enables"  # torch.enable_grad()
    SETS = "sets"  # torch.set_grad_enabled(mode): decided by its argument


#: Grad-mode context managers / decorators (torch/autograd/grad_mode.py, 2.9/2.13).
GRAD_MODE_CONTEXTS: dict[str, GradModeEffect] = {
    **{
        f"{prefix}.no_grad": GradModeEffect.DISABLES
        for prefix in ("torch", "torch.autograd", "torch.autograd.grad_mode")
    },
    **{
        f"{prefix}.inference_mode": GradModeEffect.DISABLES
        for prefix in ("torch", "torch.autograd", "torch.autograd.grad_mode")
    },
    **{
        f"{prefix}.enable_grad": GradModeEffect.ENABLES
        for prefix in ("torch", "torch.autograd", "torch.autograd.grad_mode")
    },
    **{
        f"{prefix}.set_grad_enabled": GradModeEffect.SETS
        for prefix in ("torch", "torch.autograd", "torch.autograd.grad_mode")
    },
}

"""Names that are not activation checkpointing but are mistaken for it (CKP301-CKP304):
``torch.save``/``torch.load``, state dicts, paths, optimizers, modules, and
``torch.distributed.checkpoint``'s functions. Facts from PyTorch's sources (2.9; unchanged in 2.13)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = [
    "DCP_FUNCTIONS",
    "DcpFunction",
    "DcpOperation",
    "MODULE_BASE_CLASSES",
    "MODULE_FACTORIES",
    "NOOP_CONTEXT_FN",
    "OPTIMIZER_PACKAGE",
    "PATH_FACTORIES",
    "SCHEDULER_PACKAGE",
    "STATE_DICT_FACTORIES",
    "TORCH_LOAD",
    "TORCH_SAVE",
]

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
            ``_api_bc_check`` shim (utils.py), so a path there fails. (Only the deprecated
            ``save_state_dict``/``load_state_dict``, which warn ``FutureWarning``, take it
            positionally.)
    """

    name: str
    operation: DcpOperation
    returns_none: bool
    keyword_only_path: bool


_DCP = "torch.distributed.checkpoint"
_DCP_SAVE = DcpFunction("save", DcpOperation.SAVE, returns_none=False, keyword_only_path=True)
_DCP_ASYNC_SAVE = DcpFunction("async_save", DcpOperation.SAVE, returns_none=False, keyword_only_path=True)
_DCP_LOAD = DcpFunction("load", DcpOperation.LOAD, returns_none=True, keyword_only_path=True)
_DCP_SAVE_STATE_DICT = DcpFunction(
    "save_state_dict", DcpOperation.SAVE, returns_none=False, keyword_only_path=False
)
_DCP_LOAD_STATE_DICT = DcpFunction(
    "load_state_dict", DcpOperation.LOAD, returns_none=True, keyword_only_path=False
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

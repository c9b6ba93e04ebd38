"""Put non-reentrant checkpoint wrappers around named blocks, and take them off again.

:func:`wrap` replaces each named submodule by ``checkpoint_wrapper(module,
checkpoint_impl=CheckpointImpl.NO_REENTRANT)`` (torch 2.13
``torch/distributed/algorithms/_checkpoint/checkpoint_wrapper.py``: the same wrapper
``apply_activation_checkpointing`` installs; it calls ``torch.utils.checkpoint.checkpoint(...,
use_reentrant=False)`` with ``preserve_rng_state=True``). The wrapper's state-dict hooks strip
the ``_checkpoint_wrapped_module.`` prefix it adds to parameter names, so ``state_dict()`` keys
stay those of the plain model. :func:`unwrap` puts the original modules back (the same
objects), restoring the module tree.
"""

from __future__ import annotations

from collections.abc import Iterable

from torch import nn

__all__ = ["WRAPPED", "unwrap", "wrap"]

WRAPPED = "_checkpoint_wrapped_module"


def _parent(model: nn.Module, name: str) -> tuple[nn.Module, str]:
    parent, _, child = name.rpartition(".")
    return (model.get_submodule(_wrapped_path(model, parent)) if parent else model), child


def _wrapped_path(model: nn.Module, name: str) -> str:
    """``name`` in a model where some of its ancestors may already be wrapped."""
    path: list[str] = []
    module = model
    for part in name.split(".") if name else []:
        module = getattr(module, part)
        path.append(part)
        if hasattr(module, WRAPPED) and isinstance(getattr(module, WRAPPED), nn.Module):
            module = getattr(module, WRAPPED)
            path.append(WRAPPED)
    return ".".join(path)


def wrap(model: nn.Module, names: Iterable[str]) -> list[str]:
    """Wrap each named block (names of the unwrapped model) in place; return the names wrapped
    now (a block already wrapped is left alone).

    Raises:
        AttributeError: a name is not a submodule of ``model``.
    """
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl, checkpoint_wrapper

    done = []
    for name in names:
        parent, child = _parent(model, name)
        module = getattr(parent, child)
        if hasattr(module, WRAPPED):
            continue
        setattr(parent, child, checkpoint_wrapper(module, checkpoint_impl=CheckpointImpl.NO_REENTRANT))
        done.append(name)
    return done


def unwrap(model: nn.Module, names: Iterable[str]) -> list[str]:
    """Replace the wrappers around the named blocks by the modules they wrap; return the names
    unwrapped (a block not wrapped is left alone)."""
    done = []
    for name in reversed(list(names)):
        parent, child = _parent(model, name)
        module = getattr(parent, child)
        inner = getattr(module, WRAPPED, None)
        if isinstance(inner, nn.Module):
            setattr(parent, child, inner)
            done.append(name)
    return done[::-1]

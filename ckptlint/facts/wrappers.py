"""Library calls that wrap a model in an object which forwards attribute lookups to it.

DeepSpeed (0.19.6, ``deepspeed/__init__.py`` and ``deepspeed/runtime/engine.py``):

- ``deepspeed.initialize(args=None, model=None, optimizer=None, ...)`` (lines 93-107: ``model``
  is the second parameter) builds a ``DeepSpeedEngine``, ``DeepSpeedHybridEngine`` or
  ``PipelineEngine`` around ``model`` and returns ``tuple([engine, engine.optimizer,
  engine.training_dataloader, engine.lr_scheduler])`` (lines 261-267): the engine first.
- ``DeepSpeedEngine._set_client_model`` stores the model as ``self.__dict__['module']``
  (engine.py 1742-1747), and ``DeepSpeedEngine.__getattr__`` (engine.py 974-987) "passes
  through attributes defined in the model if they are not overridden by ds-engine": a name the
  engine does not have is looked up on ``module``.
- ``DeepSpeedHybridEngine`` (``runtime/hybrid_engine.py`` 31) and ``PipelineEngine``
  (``runtime/pipe/engine.py`` 60) subclass ``DeepSpeedEngine``.
- No class of the ``deepspeed`` package (the three engines included) and no ``torch.nn.Module``
  defines ``gradient_checkpointing_enable``, ``gradient_checkpointing_disable``,
  ``activation_checkpointing_enable``, ``activation_checkpointing_disable`` or
  ``_set_gradient_checkpointing``: ``engine.gradient_checkpointing_enable()`` calls the model's
  own method.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FORWARDING_WRAPPERS", "ForwardingWrapper"]


@dataclass(frozen=True)
class ForwardingWrapper:
    """A call that returns a wrapper of a model forwarding some attribute lookups to it.

    Attributes:
        model: the keyword and position of the argument that is the wrapped model.
        element: the wrapper's position in the tuple the call returns and the tuple's length
            (``None``: the call returns the wrapper itself).
        holder: the wrapper's attribute that is the model itself (``engine.module``).
        forwarded: the attribute names the wrapper is known not to define itself, so that
            reading them on the wrapper reads them on the model; any other name may be the
            wrapper's own.
    """

    model: tuple[str, int]
    element: tuple[int, int] | None
    holder: str
    forwarded: frozenset[str]


#: Qualified name of the call -> what it returns (see the module's docstring for the sources).
FORWARDING_WRAPPERS: dict[str, ForwardingWrapper] = {
    "deepspeed.initialize": ForwardingWrapper(
        model=("model", 1),
        element=(0, 4),
        holder="module",
        forwarded=frozenset(
            {
                "gradient_checkpointing_enable",
                "gradient_checkpointing_disable",
                "activation_checkpointing_enable",
                "activation_checkpointing_disable",
                "_set_gradient_checkpointing",
            }
        ),
    ),
}

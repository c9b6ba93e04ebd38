"""Record every random op a function runs and whether checkpoint would preserve its RNG.

This is the runtime twin of rules CKP101 (``preserve_rng_state=False``), CKP102 (random op on a
device whose RNG is not stashed) and CKP103 (Python ``random``, NumPy, explicit
``torch.Generator``).

What ``torch.utils.checkpoint.checkpoint`` stashes (torch 2.9.1 ``torch/utils/checkpoint.py``
lines 130-181, 234-244 reentrant and 1524-1534 non-reentrant; unchanged in 2.13):

* the default CPU generator, always, when ``preserve_rng_state=True``;
* for ONE non-CPU device type, inferred from the tensors among the POSITIONAL arguments
  (``_infer_device_type``: CUDA wins, else the first type seen, else
  ``DefaultDeviceType.get_device_type()``), the default generator of each device index that a
  positional tensor argument lives on, and only if that device module was already
  initialised when checkpoint was called.

Tensors passed by keyword, captured in closures or moved to another device inside the function
do not count; explicit ``generator=`` objects, Python's :mod:`random` and NumPy are never
stashed (recomputation is wrapped in ``torch.random.fork_rng``, which only touches the default
generators).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

if TYPE_CHECKING:
    from collections.abc import Collection

    from torch._ops import OpOverload

from .inputs import clone_inputs
from .pyglobals import watch_state
from .states import capture_rng, numpy_states_equal, restore_rng
from .targets import Isolated

__all__ = [
    "NUMPY_RANDOM_RECORD",
    "PYTHON_RANDOM_RECORD",
    "RngRecord",
    "StashPlan",
    "audit_rng",
    "classify_random_op",
    "stash_plan",
]


@dataclass(frozen=True)
class RngRecord:
    """One random operation observed while running the function once.

    Attributes:
        op: the ATen overload, e.g. ``"aten.bernoulli_.float"``; ``"random (Python module)"`` or
            ``"numpy.random (global)"`` for the Python-level generators.
        device: where it ran, e.g. ``"cpu"``, ``"cuda:0"``.
        preserved: True when ``torch.utils.checkpoint.checkpoint`` with these inputs (and the
            audited ``preserve_rng_state``) restores that generator before recomputation, so the
            recomputed op draws the same numbers.
        source: ``"default generator"``, ``"explicit generator"``, ``"python random"`` or
            ``"numpy"``.
        reason: why it is (not) preserved.
        rule: the ckptlint rule that matches a non-preserved op (``"CKP101"``, ``"CKP102"``,
            ``"CKP103"``) or None when preserved.
    """

    op: str
    device: str
    preserved: bool
    source: str
    reason: str
    rule: str | None = None


@dataclass(frozen=True)
class StashPlan:
    """Which generators checkpoint would stash for a given set of positional inputs.

    Attributes:
        preserve_rng_state: the flag the plan is for.
        device_type: the type ``_infer_device_type`` picks (``"cpu"`` when no accelerator).
        devices: ``{"cuda:0", ...}`` whose default generator is stashed (besides the CPU one).
        initialized: whether the inferred device module was initialised at planning time.
        multiple_device_types: positional tensors live on two or more non-CPU device types
            (torch warns "at least two types of devices" and keeps one).
    """

    preserve_rng_state: bool
    device_type: str
    devices: frozenset[str]
    initialized: bool
    multiple_device_types: bool


def _infer_device_type(args: tuple) -> tuple[str, bool]:
    """Mirror of torch.utils.checkpoint._infer_device_type (torch 2.9.1 lines 130-153)."""
    types_seen = [
        t.device.type for t in tree_leaves(args) if isinstance(t, torch.Tensor) and t.device.type != "cpu"
    ]
    multiple = len(set(types_seen)) > 1
    if not types_seen:
        from torch.utils.checkpoint import DefaultDeviceType

        return DefaultDeviceType.get_device_type(), multiple
    if "cuda" in types_seen:
        return "cuda", multiple
    return types_seen[0], multiple


def stash_plan(*inputs: Any, preserve_rng_state: bool = True) -> StashPlan:
    """Return the :class:`StashPlan` checkpoint would follow for these positional ``inputs``.

    Source: torch.utils.checkpoint (2.9.1, same in 2.13): RNG state is stashed for CPU and
    the device type inferred from positional tensor arguments, for the device indices of
    those arguments (``get_device_states``), if ``device_module._initialized``.
    """
    device_type, multiple = _infer_device_type(inputs)
    module = getattr(torch, device_type, None)
    initialized = bool(getattr(module, "_initialized", False)) if device_type not in ("cpu", "meta") else False
    devices = frozenset(
        str(t.device)
        for t in tree_leaves(inputs)
        if isinstance(t, torch.Tensor) and t.device.type == device_type and t.device.type not in ("cpu", "meta")
    )
    if not initialized:
        devices = frozenset()
    return StashPlan(preserve_rng_state, device_type, devices, initialized, multiple)


def _generator_arg(func: Any, args: tuple, kwargs: dict) -> Any:
    if "generator" in kwargs:
        return kwargs["generator"]
    schema = getattr(func, "_schema", None)
    if schema is None:
        return None
    for i, arg in enumerate(schema.arguments):
        if arg.name == "generator":
            return args[i] if i < len(args) and not arg.kwarg_only else None
    return None


def _zero_dropout(func: Any, args: tuple, kwargs: dict) -> bool:
    """True for an attention op called with ``dropout_p=0``: it draws no random numbers.

    ``aten._scaled_dot_product_flash_attention_for_cpu`` and the other fused attention kernels
    carry the ``nondeterministic_seeded`` tag for their dropout whatever ``dropout_p`` is (torch
    2.13: ``torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default.tags``).
    """
    if "dropout_p" in kwargs:
        value = kwargs["dropout_p"]
    else:
        schema = getattr(func, "_schema", None)
        if schema is None:
            return False
        value = None
        for i, arg in enumerate(schema.arguments):
            if arg.name == "dropout_p":
                value = args[i] if i < len(args) and not arg.kwarg_only else arg.default_value
                break
        else:
            return False
    try:
        return float(value) == 0.0
    except (TypeError, ValueError):
        return False


def _same_generator(a: Any, b: Any) -> bool:
    # generators reach a dispatch mode as fresh Python wrappers; _cdata is the C++ pointer
    if a is b:
        return True
    ca, cb = getattr(a, "_cdata", None), getattr(b, "_cdata", None)
    return ca is not None and ca == cb


def _is_default_generator(gen: Any) -> bool:
    if gen is None or _same_generator(gen, torch.default_generator):
        return True
    dtype = gen.device.type if hasattr(gen, "device") else "cpu"
    defaults = getattr(getattr(torch, dtype, None), "default_generators", ())
    return any(_same_generator(gen, d) for d in defaults)


def _device_of(out: Any, args: tuple, kwargs: dict) -> str:
    for t in tree_leaves(out):
        if isinstance(t, torch.Tensor):
            return str(t.device)
    for t in tree_leaves((args, kwargs)):
        if isinstance(t, torch.Tensor):
            return str(t.device)
        if isinstance(t, torch.device):
            return str(t)
    return "cpu"


class _RandomOpRecorder(TorchDispatchMode):
    """Records (op name, device, generator) for ops tagged ``nondeterministic_seeded``."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, str, Any]] = []

    def __torch_dispatch__(
        self, func: OpOverload, types: Collection[type], args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if torch.Tag.nondeterministic_seeded in getattr(func, "tags", ()) and not _zero_dropout(func, args, kwargs):
            self.calls.append((str(func), _device_of(out, args, kwargs), _generator_arg(func, args, kwargs)))
        return out


#: the record for a function that consumed Python's ``random`` module
PYTHON_RANDOM_RECORD = RngRecord(
    "random (Python module)", "cpu", False, "python random", "Python's random module is never stashed by checkpoint", "CKP103",
)
#: the record for a function that consumed NumPy's global generator
NUMPY_RANDOM_RECORD = RngRecord(
    "numpy.random (global)", "cpu", False, "numpy", "NumPy's global generator is never stashed by checkpoint", "CKP103",
)


def classify_random_op(op: str, device: str, gen: Any, plan: StashPlan) -> RngRecord:
    """Whether checkpoint, stashing as ``plan`` says, replays the random op ``op`` that ran on
    ``device`` with generator ``gen`` (None: the default one), as an :class:`RngRecord`."""
    if not _is_default_generator(gen):
        return RngRecord(
            op, device, False, "explicit generator",
            "uses an explicit torch.Generator (generator=...); checkpoint only forks the default "
            "generators, so the recomputation draws different numbers",
            "CKP103",
        )
    if not plan.preserve_rng_state:
        return RngRecord(
            op, device, False, "default generator",
            "preserve_rng_state=False: checkpoint stashes no RNG state", "CKP101",
        )
    if device.startswith("cpu"):
        return RngRecord(op, device, True, "default generator", "the CPU generator is always stashed")
    if device in plan.devices:
        return RngRecord(
            op, device, True, "default generator",
            f"{device} is the device of a positional tensor argument and its RNG is stashed",
        )
    stashed = ", ".join(sorted(plan.devices)) or "none"
    why = (
        f"checkpoint infers device type {plan.device_type!r} from the positional tensor arguments "
        f"and stashes the RNG of: cpu, {stashed}"
    )
    if plan.device_type not in ("cpu", "meta") and not plan.initialized:
        why += f" ({plan.device_type} was not initialised before the call)"
    return RngRecord(op, device, False, "default generator", why + f"; the op ran on {device}", "CKP102")


def audit_rng(
    module_or_fn: Callable,
    *inputs: Any,
    preserve_rng_state: bool = True,
    kwargs: dict[str, Any] | None = None,
) -> list[RngRecord]:
    """Run ``module_or_fn(*inputs, **kwargs)`` once and return one record per random op.

    The function runs forward only (grad mode as the caller has it), under a
    ``torch.utils._python_dispatch.TorchDispatchMode`` that records every ATen op tagged
    ``torch.Tag.nondeterministic_seeded`` (dropout's ``bernoulli_``, ``rand``, ``randn``,
    ``randperm``, ``normal_``, ``multinomial`` ...; fused attention called with
    ``dropout_p=0`` is left out: it draws nothing), with the device it ran on and whether it used
    an explicit ``generator=``. Each record says whether checkpoint would restore that
    generator for these positional ``inputs`` (see :func:`stash_plan`). Python's
    :mod:`random` and NumPy's global generator are detected by comparing their state before
    and after the run: if the function consumed them, one record each (never preserved).

    A module (or a callable that can be deep-copied) is deep-copied first, tensor inputs are
    cloned, and every global RNG state and the plain-data globals the function names are put
    back afterwards, so the call leaves no trace. Errors raised by the function propagate.

    Returns:
        list of :class:`RngRecord` in execution order (Python/NumPy records last).
    """
    plan = stash_plan(*inputs, preserve_rng_state=preserve_rng_state)
    isolated = Isolated(module_or_fn)
    target, _ = isolated.fresh()
    args = clone_inputs(inputs)
    kw = clone_inputs(kwargs or {})
    watched = watch_state(module_or_fn)
    saved_globals = watched.snapshot()
    start = capture_rng()
    recorder = _RandomOpRecorder()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with recorder:
                target(*args, **kw)
        end = capture_rng()
    finally:
        restore_rng(start)
        watched.restore(saved_globals)
        isolated.close()
    records = [classify_random_op(op, dev, gen, plan) for op, dev, gen in recorder.calls]
    if start.python != end.python:
        records.append(PYTHON_RANDOM_RECORD)
    if not numpy_states_equal(start.numpy, end.numpy):
        records.append(NUMPY_RANDOM_RECORD)
    return records

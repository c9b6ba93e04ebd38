"""pytest plugin for ckptlint's runtime checks (entry point ``pytest11: ckptlint``).

Registered automatically when ckptlint is installed, so this module must stay cheap: it never
imports torch at import time. torch is imported inside the fixtures and hooks that need it,
and only when a test uses them (or the ``gpu`` marker / ``--ckpt-device`` option).

Provides:

* ``--ckpt-device DEVICE``: the device the fixtures use (default: ``cuda`` when available,
  else ``cpu``). An unknown or unavailable device is a usage error.
* marker ``gpu``: the test needs CUDA; it is skipped when torch or CUDA is not available.
* fixture ``ckpt_model_equivalence``: is the model the same with checkpointing on and off?
  (:func:`ckptlint.runtime.assert_checkpointing_equivalent` on the device; ``.memory(...)``
  runs :func:`ckptlint.runtime.compare_checkpointing_memory`).
* fixtures ``ckpt_device`` (a ``torch.device``), ``ckpt_equivalence``
  (:func:`ckptlint.runtime.assert_checkpoint_equivalent` on that device), ``ckpt_rng_audit``
  (:func:`ckptlint.runtime.audit_rng`) and ``ckpt_memory``
  (:func:`ckptlint.runtime.compare_memory`; reports are listed at the end of the run and
  attached to the test's ``user_properties``).
* fixture ``ckpt_plan``: :func:`ckptlint.runtime.plan_checkpointing` on the device, verified
  (on/off equivalence, measured peak within the budget) unless ``verify=False``; the plan's
  table is attached to the test's ``user_properties``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

_MEMORY_REPORTS = pytest.StashKey[list]()

_GPU_MARKER = "gpu: the test needs a CUDA device; skipped when torch or CUDA is not available"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ckptlint", "ckptlint: activation checkpointing checks")
    group.addoption(
        "--ckpt-device",
        action="store",
        default=None,
        metavar="DEVICE",
        dest="ckpt_device",
        help="device for the ckpt_* fixtures, e.g. cpu, cuda, cuda:1 (default: cuda if available, else cpu)",
    )


def _check_device(name: str) -> None:
    try:
        import torch
    except ImportError:
        raise pytest.UsageError(
            f"--ckpt-device={name}: torch is not installed (pip install 'ckptlint[runtime]')"
        ) from None
    try:
        dev = torch.device(name)
    except (RuntimeError, ValueError) as exc:
        raise pytest.UsageError(f"--ckpt-device={name}: not a torch device ({exc})") from None
    if dev.type == "cpu":
        return
    backend = getattr(torch, dev.type, None)
    available = getattr(backend, "is_available", None)
    if available is None or not available():
        raise pytest.UsageError(f"--ckpt-device={name}: {dev.type} is not available on this machine")
    count = getattr(backend, "device_count", None)
    if dev.index is not None and count is not None and dev.index >= count():
        raise pytest.UsageError(f"--ckpt-device={name}: only {count()} {dev.type} device(s) visible")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", _GPU_MARKER)
    config.stash[_MEMORY_REPORTS] = []
    name = config.getoption("ckpt_device", default=None)
    if name is not None:
        _check_device(name)


def _cuda_missing() -> str | None:
    try:
        import torch
    except ImportError:
        return "needs CUDA: torch is not installed"
    if not torch.cuda.is_available():
        return "needs CUDA: torch.cuda.is_available() is False"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu_items:
        return
    reason = _cuda_missing()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in gpu_items:
        item.add_marker(skip)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    reports = config.stash.get(_MEMORY_REPORTS, [])
    if not reports:
        return
    terminalreporter.section("ckptlint memory")
    for nodeid, report in reports:
        mem = "n/a" if report.memory_ratio is None else f"{report.memory_ratio:.3f}"
        tim = "n/a" if report.time_ratio is None else f"{report.time_ratio:.3f}"
        terminalreporter.write_line(f"{nodeid}: memory_ratio={mem} time_ratio={tim} on {report.plain.device}")


def _to_device(value: Any, device: Any) -> Any:
    import torch

    if isinstance(value, torch.nn.Module):
        return copy.deepcopy(value).to(device)
    if isinstance(value, torch.Tensor):
        moved = value.detach().to(device)
        if value.requires_grad:
            moved.requires_grad_(True)
        return moved
    if type(value) in (tuple, list):
        return type(value)(_to_device(v, device) for v in value)
    if type(value) is dict:
        return {k: _to_device(v, device) for k, v in value.items()}
    return value


@pytest.fixture(scope="session")
def ckpt_device(pytestconfig: pytest.Config) -> Any:
    """The ``torch.device`` chosen with ``--ckpt-device`` (default: cuda if available, else cpu)."""
    import torch

    name = pytestconfig.getoption("ckpt_device", default=None)
    if name is not None:
        return torch.device(name)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class EquivalenceChecker:
    """Callable returned by the ``ckpt_equivalence`` fixture.

    ``ckpt_equivalence(module_or_fn, *inputs, **options)`` moves a module (a deep copy) and the
    tensor inputs to ``device`` (unless ``to_device=False``), then calls
    :func:`ckptlint.runtime.assert_checkpoint_equivalent` with ``options`` and returns its
    report; raises :class:`ckptlint.runtime.CheckpointMismatch` on a difference.
    """

    def __init__(self, device: Any) -> None:
        self.device = device

    def __call__(self, module_or_fn: Callable, *inputs: Any, to_device: bool = True, **options: Any) -> Any:
        __tracebackhide__ = True
        from ckptlint.runtime import assert_checkpoint_equivalent

        if to_device:
            module_or_fn = _to_device(module_or_fn, self.device)
            inputs = _to_device(inputs, self.device)
        return assert_checkpoint_equivalent(module_or_fn, *inputs, **options)


class RngAuditor:
    """Callable returned by the ``ckpt_rng_audit`` fixture.

    ``ckpt_rng_audit(module_or_fn, *inputs, **options)`` moves a module copy and the tensor
    inputs to ``device`` (unless ``to_device=False``) and returns
    :func:`ckptlint.runtime.audit_rng`'s list of records.
    """

    def __init__(self, device: Any) -> None:
        self.device = device

    def __call__(self, module_or_fn: Callable, *inputs: Any, to_device: bool = True, **options: Any) -> list:
        from ckptlint.runtime import audit_rng

        if to_device:
            module_or_fn = _to_device(module_or_fn, self.device)
            inputs = _to_device(inputs, self.device)
        return audit_rng(module_or_fn, *inputs, **options)


class MemoryComparer:
    """Callable returned by the ``ckpt_memory`` fixture.

    ``ckpt_memory(plain_step, checkpointed_step, warmup=1, iters=5)`` runs
    :func:`ckptlint.runtime.compare_memory` on ``device`` and returns the
    :class:`ckptlint.runtime.MemoryReport`; ``ckpt_memory.measure(step)`` runs
    :func:`ckptlint.runtime.measure`. Each report is added to the test's ``user_properties``
    (``ckpt_memory_ratio``, ``ckpt_time_ratio``) and listed in the "ckptlint memory" summary.
    """

    def __init__(self, device: Any, request: pytest.FixtureRequest) -> None:
        self.device = device
        self._request = request

    def __call__(self, plain_step: Callable[[], Any], checkpointed_step: Callable[[], Any], **options: Any) -> Any:
        from ckptlint.runtime import compare_memory

        report = compare_memory(plain_step, checkpointed_step, device=self.device, **options)
        node = self._request.node
        node.user_properties.append(("ckpt_memory_ratio", report.memory_ratio))
        node.user_properties.append(("ckpt_time_ratio", report.time_ratio))
        self._request.config.stash[_MEMORY_REPORTS].append((node.nodeid, report))
        return report

    def measure(self, step_fn: Callable[[], Any], **options: Any) -> Any:
        from ckptlint.runtime import measure

        return measure(step_fn, device=self.device, **options)


_OPTION_NAMES = frozenset({"enable", "loss_fn", "rtol", "atol", "ignore_outputs", "ignore_warnings"})


class ModelEquivalenceChecker:
    """Callable returned by the ``ckpt_model_equivalence`` fixture.

    ``ckpt_model_equivalence(model, *inputs, enable="auto", **options_and_forward_kwargs)``
    moves a copy of the model, the tensor inputs and tensor keyword arguments (those in
    ``forward_kwargs={...}`` too) to ``device``
    (unless ``to_device=False``) and calls
    :func:`ckptlint.runtime.assert_checkpointing_equivalent`; raises
    :class:`ckptlint.runtime.CheckpointMismatch` on a difference and returns the report.
    ``ckpt_model_equivalence.memory(model, *inputs, **same)`` runs
    :func:`ckptlint.runtime.compare_checkpointing_memory` on ``device`` and records the report
    like ``ckpt_memory`` does.
    """

    def __init__(self, device: Any, request: pytest.FixtureRequest) -> None:
        self.device = device
        self._request = request

    def _move(self, model: Any, inputs: tuple, options: dict[str, Any], to_device: bool) -> tuple[Any, tuple, dict[str, Any]]:
        if not to_device:
            return model, inputs, options
        moved = {k: (v if k in _OPTION_NAMES else _to_device(v, self.device)) for k, v in options.items()}
        if isinstance(options.get("forward_kwargs"), dict):
            moved["forward_kwargs"] = {k: _to_device(v, self.device) for k, v in options["forward_kwargs"].items()}
        return _to_device(model, self.device), _to_device(inputs, self.device), moved

    def __call__(self, model: Any, *inputs: Any, to_device: bool = True, **options: Any) -> Any:
        __tracebackhide__ = True
        from ckptlint.runtime import assert_checkpointing_equivalent

        model, inputs, options = self._move(model, inputs, options, to_device)
        return assert_checkpointing_equivalent(model, *inputs, **options)

    def memory(self, model: Any, *inputs: Any, to_device: bool = True, **options: Any) -> Any:
        from ckptlint.runtime import compare_checkpointing_memory

        model, inputs, options = self._move(model, inputs, options, to_device)
        report = compare_checkpointing_memory(model, *inputs, device=self.device, **options)
        node = self._request.node
        node.user_properties.append(("ckpt_memory_ratio", report.memory_ratio))
        node.user_properties.append(("ckpt_time_ratio", report.time_ratio))
        self._request.config.stash[_MEMORY_REPORTS].append((node.nodeid, report))
        return report


@pytest.fixture
def ckpt_model_equivalence(ckpt_device: Any, request: pytest.FixtureRequest) -> ModelEquivalenceChecker:
    """``assert_checkpointing_equivalent`` on the ``--ckpt-device`` device (see ModelEquivalenceChecker)."""
    return ModelEquivalenceChecker(ckpt_device, request)


@pytest.fixture
def ckpt_equivalence(ckpt_device: Any) -> EquivalenceChecker:
    """``assert_checkpoint_equivalent`` on the ``--ckpt-device`` device (see EquivalenceChecker)."""
    return EquivalenceChecker(ckpt_device)


@pytest.fixture
def ckpt_rng_audit(ckpt_device: Any) -> RngAuditor:
    """``audit_rng`` on the ``--ckpt-device`` device (see RngAuditor)."""
    return RngAuditor(ckpt_device)


@pytest.fixture
def ckpt_memory(ckpt_device: Any, request: pytest.FixtureRequest) -> MemoryComparer:
    """``compare_memory`` / ``measure`` on the ``--ckpt-device`` device (see MemoryComparer)."""
    return MemoryComparer(ckpt_device, request)


class PlanChecker:
    """Callable returned by the ``ckpt_plan`` fixture.

    ``ckpt_plan(model, *inputs, budget=..., verify=True, to_device=True, **options)`` moves a
    copy of the model and the tensor inputs to ``device`` (unless ``to_device=False``), calls
    :func:`ckptlint.runtime.plan_checkpointing` with ``options`` (``loss_fn``, ``candidates``,
    ``forward_kwargs``, ``repeats``) and, with ``verify``, ``plan.verify()``; fails the test
    (``AssertionError``) when the plan is not equivalent or its measured peak exceeds the
    budget + 5 %. Returns the plan; ``plan.verification`` holds the verification (or None).
    """

    def __init__(self, device: Any, request: pytest.FixtureRequest) -> None:
        self.device = device
        self._request = request

    def __call__(self, model: Any, *inputs: Any, budget: Any, verify: bool = True, to_device: bool = True, **options: Any) -> Any:
        __tracebackhide__ = True
        from ckptlint.runtime import plan_checkpointing

        if to_device:
            model, inputs = _to_device(model, self.device), _to_device(inputs, self.device)
            if isinstance(options.get("forward_kwargs"), dict):
                options["forward_kwargs"] = _to_device(options["forward_kwargs"], self.device)
        plan = plan_checkpointing(model, *inputs, budget=budget, **options)
        self._request.node.user_properties.append(("ckpt_plan", plan.table()))
        plan.verification = plan.verify() if verify else None
        if plan.verification is not None and not plan.verification.ok:
            raise AssertionError(f"the checkpoint plan failed its check:\n{plan.verification}\n{plan}")
        return plan


@pytest.fixture
def ckpt_plan(ckpt_device: Any, request: pytest.FixtureRequest) -> PlanChecker:
    """``plan_checkpointing`` + ``plan.verify()`` on the ``--ckpt-device`` device (see PlanChecker)."""
    return PlanChecker(ckpt_device, request)

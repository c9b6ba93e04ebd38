"""Prove that checkpointing a module or function does not change a training step."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import torch
from torch.utils.checkpoint import checkpoint

from .compare import Difference, compare_tensors, flatten
from .inputs import clone_inputs
from .pyglobals import WatchedState, watch_state
from .report import CheckpointMismatch, EquivalenceReport, Evidence, VariantResult, diagnose, variant_label
from .rng_audit import RngRecord, audit_rng
from .states import RngSnapshot, capture_rng, restore_rng, rng_differences
from .targets import Isolated, plain_attributes
from .warning_keys import classify_warning

__all__ = ["DEFAULT_VARIANTS", "assert_checkpoint_equivalent", "check_checkpoint_equivalent"]

#: The variants checked when ``variants`` is None: both implementations, default options.
DEFAULT_VARIANTS: tuple[dict[str, Any], ...] = ({"use_reentrant": False}, {"use_reentrant": True})

_COTANGENT_SEED = 20240


@dataclass
class _Step:
    outputs: list[tuple[str, Any]] = field(default_factory=list)
    input_grads: dict[str, Any] = field(default_factory=dict)
    param_grads: dict[str, Any] = field(default_factory=dict)
    buffers: dict[str, torch.Tensor] = field(default_factory=dict)
    attrs: dict[str, Any] = field(default_factory=dict)
    rng: RngSnapshot | None = None
    python_state: dict[str, Any] = field(default_factory=dict)
    calls: int = 0
    warnings: list[str] = field(default_factory=list)
    other_warnings: list[str] = field(default_factory=list)
    error: BaseException | None = None


def default_loss(output: Any) -> torch.Tensor | None:
    """Reduce ``output`` to a scalar: ``sum_i (leaf_i * w_i).sum()`` over grad-requiring leaves.

    Each ``w_i`` is a fixed pseudo-random tensor of the leaf's shape drawn from a private
    ``torch.Generator`` (seeded per leaf index), so the global RNG is not touched and every
    element gets a distinct weight (a plain ``sum`` would give BatchNorm outputs a zero
    gradient). Returns None when no floating-point leaf requires grad.
    """
    total = None
    for i, (_, leaf) in enumerate(flatten(output, "output")):
        if not isinstance(leaf, torch.Tensor) or not leaf.requires_grad:
            continue
        if not (leaf.is_floating_point() or leaf.is_complex()):
            continue
        gen = torch.Generator().manual_seed(_COTANGENT_SEED + i)
        w = torch.randn(tuple(leaf.shape), generator=gen, dtype=torch.float32)
        w = w.to(device=leaf.device, dtype=leaf.real.dtype if leaf.is_complex() else leaf.dtype)
        term = (leaf * w).sum()
        term = term.real if term.is_complex() else term
        total = term if total is None else total + term
    return total


def _keep(value: Any) -> Any:
    return value.detach().clone() if isinstance(value, torch.Tensor) else value


def _run_step(
    isolated: Isolated,
    inputs: tuple,
    kwargs: dict[str, Any],
    ckpt_options: dict[str, Any] | None,
    loss_fn: Callable[[Any], torch.Tensor | None],
    watched: WatchedState,
    start_globals: dict[str, Any],
    start_rng: RngSnapshot,
    *,
    reraise: bool,
) -> _Step:
    restore_rng(start_rng)
    watched.restore(start_globals)
    target, modules = isolated.fresh()
    step = _Step()

    def counted(*args: Any, **kw: Any) -> Any:
        step.calls += 1  # noqa: CKP202 - counting recomputations is the point
        return target(*args, **kw)

    args = clone_inputs(inputs)
    kw = clone_inputs(kwargs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if ckpt_options is None:
                out = counted(*args, **kw)
            else:
                out = checkpoint(counted, *args, **ckpt_options, **kw)
            step.outputs = [(n, _keep(v)) for n, v in flatten(out, "output")]
            loss = loss_fn(out)
            if loss is not None and loss.requires_grad:
                loss.backward()
        except Exception as exc:
            if reraise:
                raise
            step.error = exc
    for w in caught:
        key = classify_warning(str(w.message))
        if key is None:
            step.other_warnings.append(f"{w.category.__name__}: {w.message}")
        elif key not in step.warnings:
            step.warnings.append(key)
    for name, leaf in flatten(tuple(args), "input"):
        if isinstance(leaf, torch.Tensor) and leaf.requires_grad:
            step.input_grads[f"grad of {name}"] = _keep(leaf.grad)
    for name, leaf in flatten(kw, "kwargs"):
        if isinstance(leaf, torch.Tensor) and leaf.requires_grad:
            step.input_grads[f"grad of {name}"] = _keep(leaf.grad)
    for prefix, module in modules.items():
        dot = f"{prefix}." if prefix else ""
        for name, p in module.named_parameters():
            if p.requires_grad:
                step.param_grads[f"grad of {dot}{name}"] = _keep(p.grad)
        for name, b in module.named_buffers():
            step.buffers[f"buffer {dot}{name}"] = _keep(b)
        for sub_name, sub in module.named_modules():
            where = f"{dot}{sub_name}".rstrip(".") or type(module).__name__
            for k, v in plain_attributes(sub).items():
                step.attrs[f"attribute {where}.{k}"] = v
    step.rng = capture_rng()
    step.python_state = watched.snapshot()
    return step


def _compare(ref: _Step, var: _Step, rtol: float, atol: float) -> list[Difference]:
    diffs: list[Difference] = []
    if var.error is not None:
        first = str(var.error).strip().splitlines()[0] if str(var.error).strip() else ""
        diffs.append(Difference("error", type(var.error).__name__, first))
    if var.error is None or var.outputs:
        ref_out, var_out = dict(ref.outputs), dict(var.outputs)
        for name in ref_out.keys() | var_out.keys():
            if name not in ref_out or name not in var_out:
                diffs.append(Difference("output", name, "present in only one run"))
                continue
            d = compare_tensors("output", name, ref_out[name], var_out[name], rtol=rtol, atol=atol)
            if d is not None:
                diffs.append(d)
    if var.error is None:
        for kind, a, b in (("input_grad", ref.input_grads, var.input_grads), ("param_grad", ref.param_grads, var.param_grads)):
            for name in a:
                d = compare_tensors(kind, name, a[name], b.get(name), rtol=rtol, atol=atol)
                if d is not None:
                    diffs.append(d)
        for name in ref.buffers:
            d = compare_tensors("buffer", name, ref.buffers[name], var.buffers.get(name), rtol=rtol, atol=atol)
            if d is not None:
                diffs.append(d)
    for name in ref.attrs:
        if ref.attrs[name] != var.attrs.get(name):
            diffs.append(
                Difference(
                    "module_attr", name,
                    f"{ref.attrs[name]!r} after the reference step, {var.attrs.get(name)!r} after the checkpointed step",
                )
            )
    for label in ref.python_state:
        a, b = ref.python_state[label], var.python_state.get(label)
        if a != b:
            diffs.append(
                Difference("python_state", label, f"{a!r} after the reference step, {b!r} after the checkpointed step")
            )
    assert ref.rng is not None and var.rng is not None
    for name in rng_differences(ref.rng, var.rng):
        diffs.append(Difference("rng", name, "state after the step differs from the reference"))
    return diffs


def _normalise_variants(variants: Iterable[dict[str, Any]] | None) -> list[dict[str, Any]]:
    if variants is None:
        return [dict(v) for v in DEFAULT_VARIANTS]
    out = []
    for v in variants:
        if not isinstance(v, dict):
            raise TypeError(f"each variant must be a dict of checkpoint keyword arguments, got {v!r}")
        if "function" in v:
            raise TypeError("a variant must not contain 'function'; pass the callable as module_or_fn")
        out.append(dict(v))
    if not out:
        raise ValueError("variants is empty: give at least one dict of checkpoint keyword arguments")
    return out


def check_checkpoint_equivalent(
    module_or_fn: Callable,
    *inputs: Any,
    variants: Iterable[dict[str, Any]] | None = None,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    kwargs: dict[str, Any] | None = None,
    loss_fn: Callable[[Any], torch.Tensor | None] | None = None,
    ignore_warnings: Iterable[str] = (),
) -> EquivalenceReport:
    """Like :func:`assert_checkpoint_equivalent` but return the report instead of raising."""
    variant_list = _normalise_variants(variants)
    loss = default_loss if loss_fn is None else loss_fn
    kwargs = dict(kwargs or {})
    ignored = set(ignore_warnings)
    watched = watch_state(module_or_fn)
    start_globals = watched.snapshot()
    start_rng = capture_rng()
    positional_grad = any(isinstance(a, torch.Tensor) and a.requires_grad for a in inputs)
    results: list[VariantResult] = []
    audit: list[RngRecord] | None = None
    try:
        with Isolated(module_or_fn) as isolated:
            try:
                ref = _run_step(isolated, inputs, kwargs, None, loss, watched, start_globals, start_rng, reraise=True)
            except Exception as exc:
                raise RuntimeError(
                    f"the reference step (no checkpoint) failed: {type(exc).__name__}: {exc}"
                ) from exc
            ref_changes = watched.changes(start_globals)
            for variant in variant_list:
                var = _run_step(isolated, inputs, kwargs, variant, loss, watched, start_globals, start_rng, reraise=False)
                diffs = _compare(ref, var, rtol, atol)
                for key in var.warnings:
                    if key not in ref.warnings and key not in ignored:
                        diffs.append(Difference("warning", key, "torch.utils.checkpoint warned: " + _WARNING_TEXT[key]))
                result = VariantResult(
                    variant, variant_label(variant), diffs, [], var.calls, ref.calls,
                    var.warnings, var.other_warnings, var.error,
                )
                if diffs:
                    if audit is None:
                        try:
                            audit = audit_rng(module_or_fn, *inputs, kwargs=kwargs)
                        except Exception:
                            audit = []
                    result.audit = audit
                    reentrant = variant.get("use_reentrant", None) in (True, None)
                    evidence = Evidence(
                        reentrant=reentrant,
                        preserve_rng_state=bool(variant.get("preserve_rng_state", True)),
                        calls=var.calls,
                        reference_calls=ref.calls,
                        warnings=var.warnings,
                        rng_changed=[d.name for d in diffs if d.kind == "rng"],
                        positional_grad_input=positional_grad,
                        reference_state_changes=ref_changes,
                        audit=audit,
                        error=var.error,
                    )
                    result.suggestions = diagnose(diffs, evidence)
                results.append(result)
    finally:
        restore_rng(start_rng)
        watched.restore(start_globals)
    return EquivalenceReport(results, rtol, atol)


_WARNING_TEXT = {
    "use_reentrant_omitted": "use_reentrant was not passed (torch then uses the reentrant variant)",
    "no_input_requires_grad": "None of the inputs have requires_grad=True (reentrant: gradients will be None)",
    "multiple_device_types": "tensor arguments on at least two device types; only one type's RNG is stashed",
}


def assert_checkpoint_equivalent(
    module_or_fn: Callable,
    *inputs: Any,
    variants: Iterable[dict[str, Any]] | None = None,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    kwargs: dict[str, Any] | None = None,
    loss_fn: Callable[[Any], torch.Tensor | None] | None = None,
    ignore_warnings: Iterable[str] = (),
) -> EquivalenceReport:
    """Assert that checkpointing ``module_or_fn`` leaves one training step unchanged.

    Runs a reference step ``loss_fn(module_or_fn(*inputs, **kwargs)).backward()`` without
    checkpointing, then the same step once per variant with
    ``torch.utils.checkpoint.checkpoint(module_or_fn, *inputs, **variant, **kwargs)``, each from
    identical states: a deep copy of the module (for a plain function, the modules it reaches
    are saved and reset instead), fresh leaf copies of the inputs, every global RNG (torch CPU,
    every visible device, Python ``random``, NumPy) and the plain-data globals the function
    names set back to their values at the call. Then compares by value:

    * outputs, gradients of grad-requiring inputs, the gradient of every parameter that
      requires grad (None only in the checkpointed run is reported: the reentrant
      no-input-requires-grad trap), buffers after the step (BatchNorm running statistics and
      ``num_batches_tracked``), public plain attributes of every submodule;
    * global RNG states after the step (CPU, every visible device, Python, NumPy);
    * plain globals and closure cells the function names, after the step;
    * warnings from torch.utils.checkpoint classified by stable keys
      (:data:`ckptlint.runtime.warning_keys.WARNING_KEYS`), unless listed in ``ignore_warnings``;
    * an exception raised by a checkpointed step (e.g. ``CheckpointError``, or ``ValueError``
      for options the variant does not accept) is reported as a difference.

    The number of times the function ran (forward plus recomputation) is recorded per variant
    and used to explain failures. The caller's RNG states and watched globals are left as they
    were; the caller's module is never modified.

    Args:
        module_or_fn: an ``nn.Module``, a bound method of one, a ``functools.partial`` or any
            callable taking ``*inputs``.
        *inputs: positional inputs (tensors, or nested tuples/lists/dicts); their
            ``requires_grad`` is kept, which matters for the reentrant variant.
        variants: a list of dicts of keyword arguments for ``torch.utils.checkpoint.checkpoint``
            (``use_reentrant``, ``preserve_rng_state``, ``early_stop``, ``context_fn``,
            ``determinism_check``, ``debug``); default :data:`DEFAULT_VARIANTS` (both
            ``use_reentrant`` values).
        rtol, atol: tolerances for floating-point tensors
            (``|checkpointed - reference| <= atol + rtol * |reference|``); integer buffers must
            match exactly.
        kwargs: keyword arguments for the function (passed through checkpoint, which accepts
            them only with ``use_reentrant=False``).
        loss_fn: maps the output to a scalar to backpropagate; default :func:`default_loss`.
        ignore_warnings: warning keys not to report (e.g. ``{"use_reentrant_omitted"}``).

    Returns:
        The :class:`EquivalenceReport` (all variants ok).

    Raises:
        CheckpointMismatch: (an ``AssertionError``) when a variant differs; its message names
            each differing tensor with max absolute and relative difference and the likely
            cause with a ckptlint rule code; ``.differences`` / ``.results`` hold the data.
        RuntimeError: when the reference step itself fails.
        TypeError, ValueError: for malformed ``variants``.
    """
    __tracebackhide__ = True  # pytest: show the caller's frame, not this one
    report = check_checkpoint_equivalent(
        module_or_fn, *inputs, variants=variants, rtol=rtol, atol=atol, kwargs=kwargs,
        loss_fn=loss_fn, ignore_warnings=ignore_warnings,
    )
    if not report.ok:
        raise CheckpointMismatch(report)
    return report

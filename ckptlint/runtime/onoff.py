"""Is my model the same with checkpointing on and off? One training step of each, compared.

:func:`check_checkpointing_equivalent` deep-copies a model twice, turns checkpointing off on
one copy and on on the other (the library's own switch, see :mod:`ckptlint.runtime.switches`,
or any callable), runs one training step on both from identical RNG and module state and
compares by value, like :func:`ckptlint.runtime.check_checkpoint_equivalent` does for one
callable. It also counts, per checkpointed region, how often the region was recomputed.
"""

from __future__ import annotations

import copy
import functools
import inspect
import warnings
from typing import Any, Callable, Iterable

import torch
from torch import nn

from .compare import Difference, flatten
from .equivalence import (
    _WARNING_TEXT,
    _compare,
    _ignore_matcher,
    _keep,
    _keep_tree,
    _record_input_grads,
    _Step,
    _vacuity_notes,
    _warn_vacuous,
    default_loss,
)
from .inputs import clone_inputs
from .memory import MemoryReport, compare_memory
from .pyglobals import watch_state
from .report import (
    CheckpointMismatch,
    EquivalenceReport,
    Evidence,
    VariantResult,
    diagnose,
    variant_label,
)
from .rng_audit import audit_rng
from .states import capture_rng, restore_rng
from .switches import (
    find_switch,
    is_checkpointing_on,
    resolve_enable,
    turn_off,
    unwrap_name,
)
from .targets import plain_attributes
from .warning_keys import classify_warning

__all__ = ["assert_checkpointing_equivalent", "check_checkpointing_equivalent", "compare_checkpointing_memory"]

_CKPT_FN_ATTRS = ("_gradient_checkpointing_func", "checkpoint_fn")


def _checkpoint_options(model: nn.Module) -> dict[str, Any]:
    """Keyword arguments of the checkpoint function the model's switch installed, when readable.

    transformers stores ``functools.partial(checkpoint, **kwargs)`` as
    ``_gradient_checkpointing_func``; ``CheckpointWrapper`` stores
    ``partial(checkpoint, use_reentrant=..., **kwargs)`` as ``checkpoint_fn`` (sources in
    :mod:`ckptlint.runtime.switches`). Other functions (diffusers' closure) give nothing.
    """
    options: dict[str, Any] = {}
    for m in model.modules():
        for attr in _CKPT_FN_ATTRS:
            fn = getattr(m, attr, None)
            if isinstance(fn, functools.partial):
                for k, v in fn.keywords.items():
                    options.setdefault(k, v)
    return options


class _RecomputeCounter:
    """Forward pre-hooks on every submodule counting calls made while backward runs.

    A call counts as a recomputation when ``torch._C._current_graph_task_id() != -1``: the
    autograd engine is running (both checkpoint implementations recompute inside backward;
    torch.utils.checkpoint uses the same call, torch 2.13).
    """

    def __init__(self, model: nn.Module):
        self.backward_calls: dict[str, int] = {}
        self.forward_calls: dict[str, int] = {}
        self.parents: dict[str, str] = {}
        self.wrapped: set[str] = set()  # modules a CheckpointWrapper wraps, by their clean name
        self.handles = []
        for name, module in model.named_modules():
            clean = unwrap_name(name)
            if name.endswith("_checkpoint_wrapped_module"):
                self.wrapped.add(clean)
            else:
                self.parents[clean] = clean.rsplit(".", 1)[0] if "." in clean else ""
            self.handles.append(module.register_forward_pre_hook(functools.partial(self._hook, clean)))

    def _hook(self, name: str, module: nn.Module, args: Any) -> None:
        task = getattr(torch._C, "_current_graph_task_id", None)
        calls = self.backward_calls if task is not None and task() != -1 else self.forward_calls
        calls[name] = calls.get(name, 0) + 1

    def remove(self) -> None:
        for h in self.handles:
            h.remove()

    def _ancestors(self, name: str) -> list[str]:
        out = []
        while name:
            name = self.parents.get(name, "")
            out.append(name)
        return out

    def regions(self) -> dict[str, int]:
        """``{region: recomputations}`` over the outermost modules that ran during backward.

        Such a module is its own region (diffusers checkpoints ``resnet.__call__``; a
        ``CheckpointWrapper`` its wrapped module), except when its parent ran in the forward
        and every child of the parent that ran was recomputed: then the parent is the region
        (transformers checkpoints a layer's ``forward``, so the layer's own hooks run outside
        the region and only its children run again).
        """
        recomputed = set(self.backward_calls)
        out: dict[str, int] = {}
        for name in sorted(recomputed):
            if any(a in recomputed for a in self._ancestors(name)):
                continue
            region = name
            parent = self.parents.get(name, "")
            if name and name not in self.wrapped and self.forward_calls.get(parent, 0) and parent not in self.wrapped:
                ran = [c for c, p in self.parents.items() if p == parent and c != parent and self.forward_calls.get(c, 0)]
                if ran and all(c in recomputed for c in ran):
                    region = parent
            out[region] = max(out.get(region, 0), self.backward_calls[name])
        return out


def _run(
    model: nn.Module,
    inputs: tuple,
    kwargs: dict[str, Any],
    loss_fn: Callable[[Any], torch.Tensor | None],
    start_rng: Any,
    watched: Any,
    start_globals: dict[str, Any],
    *,
    reraise: bool,
) -> tuple[_Step, dict[str, int]]:
    restore_rng(start_rng)
    watched.restore(start_globals)
    step = _Step()
    counter = _RecomputeCounter(model)
    args = clone_inputs(inputs)
    kw = clone_inputs(kwargs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = model(*args, **kw)
            step.outputs = [(n, _keep(v)) for n, v in flatten(out, "output")]
            loss = loss_fn(out)
            if loss is not None and loss.requires_grad:
                loss.backward()
        except Exception as exc:
            if reraise:
                raise
            step.error = exc
        finally:
            counter.remove()
    for w in caught:
        key = classify_warning(str(w.message))
        if key is not None and key not in step.warnings:
            step.warnings.append(key)
    _record_input_grads(step, args, kw)
    for name, p in model.named_parameters():
        if p.requires_grad:
            step.param_grads[f"grad of {unwrap_name(name)}"] = _keep(p.grad)
    for name, b in model.named_buffers():
        step.buffers[f"buffer {unwrap_name(name)}"] = _keep(b)
    step.attrs = _attributes(model)
    step.rng = capture_rng()
    step.python_state = watched.snapshot()
    step.input_state = _keep_tree(tuple(args), "input") + _keep_tree(kw, "kwargs")
    regions = counter.regions()
    step.calls = 1 + max(regions.values(), default=0)
    return step, regions


def _attributes(model: nn.Module) -> dict[str, Any]:
    """The plain attributes of ``model``'s modules, ``{"attribute <module>.<name>": value}``,
    named as in the plain model, without the library switches themselves."""
    attrs: dict[str, Any] = {}
    for sub_name, sub in model.named_modules():
        if hasattr(sub, "_checkpoint_wrapped_module"):
            continue  # the wrapper's own attributes (checkpoint_impl) exist only in one model
        where = unwrap_name(sub_name) or type(model).__name__
        for k, v in plain_attributes(sub).items():
            if k in ("gradient_checkpointing", "grad_checkpointing"):
                continue  # the switch itself
            attrs[f"attribute {where}.{k}"] = v
    return attrs


def _switched_attributes(plain: nn.Module, checkpointed: nn.Module) -> set[str]:
    """The attributes in which the two copies differ before any step: those ``enable`` set
    (a user's own flag such as ``model.use_checkpoint = True``); they are not compared."""
    missing = object()
    before, after = _attributes(plain), _attributes(checkpointed)
    switched = set()
    for key in before.keys() | after.keys():
        try:
            same = bool(before.get(key, missing) == after.get(key, missing))
        except Exception:  # noqa: BLE001 - values whose == is not a bool
            same = False
        if not same:
            switched.add(key)
    return switched


def _prepare(model: nn.Module, enable: Any, forward_kwargs: dict[str, Any]) -> tuple[nn.Module, nn.Module, str, dict[str, Any], list[str]]:
    if not isinstance(model, nn.Module):
        raise TypeError(f"expected an nn.Module, got {type(model).__name__}")
    enable_fn, label, _ = resolve_enable(model, enable)
    notes: list[str] = []
    plain = copy.deepcopy(model)
    if is_checkpointing_on(plain):
        turn_off(plain)
        notes.append("checkpointing was already on in the model passed; the reference copy has it turned off")
    checkpointed = copy.deepcopy(plain)
    returned = enable_fn(checkpointed)
    if isinstance(returned, nn.Module):
        checkpointed = returned
    kwargs = dict(forward_kwargs)
    offered = find_switch(model)
    if offered is not None and offered.library == "transformers" and "use_cache" not in kwargs:
        try:
            params = inspect.signature(model.forward).parameters
        except (TypeError, ValueError):
            params = {}
        if "use_cache" in params or any(p.kind is p.VAR_KEYWORD for p in params.values()):
            kwargs["use_cache"] = False
            notes.append(
                "use_cache=False was passed to both steps: transformers turns the cache off under "
                "checkpointing in training (utils/generic.py, 5.24), so only the plain step would return one"
            )
    return plain, checkpointed, label, kwargs, notes


def check_checkpointing_equivalent(
    model: nn.Module,
    *inputs: Any,
    enable: Any = "auto",
    loss_fn: Callable[[Any], torch.Tensor | None] | None = None,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    ignore_outputs: Iterable[str] = (),
    ignore_warnings: Iterable[str] = (),
    **forward_kwargs: Any,
) -> EquivalenceReport:
    """Like :func:`assert_checkpointing_equivalent` but return the report instead of raising."""
    plain, checkpointed, label, kwargs, notes = _prepare(model, enable, forward_kwargs)
    switched = _switched_attributes(plain, checkpointed)
    if switched:
        notes.append(
            "not compared, set by enable: "
            + ", ".join(sorted(k.removeprefix("attribute ") for k in switched))
        )
    options = _checkpoint_options(checkpointed)
    ignore = _ignore_matcher(ignore_outputs)
    loss = functools.partial(default_loss, ignore=ignore) if loss_fn is None else loss_fn
    ignored = set(ignore_warnings)
    watched = watch_state(model)
    start_globals = watched.snapshot()
    start_rng = capture_rng()
    try:
        try:
            ref, ref_regions = _run(plain, inputs, kwargs, loss, start_rng, watched, start_globals, reraise=True)
        except Exception as exc:
            raise RuntimeError(f"the reference step (checkpointing off) failed: {type(exc).__name__}: {exc}") from exc
        if ref_regions:
            raise ValueError(
                "the reference copy still recomputes " + ", ".join(ref_regions)
                + ": checkpointing could not be turned off; pass a model with checkpointing off"
            )
        ref_changes = watched.changes(start_globals)
        var, regions = _run(checkpointed, inputs, kwargs, loss, start_rng, watched, start_globals, reraise=False)
        var.calls = 1 + max(regions.values(), default=0)
        ref.calls = 1
        for key in switched:  # set by `enable` itself, not by the step
            ref.attrs.pop(key, None)
            var.attrs.pop(key, None)
        diffs = _compare(ref, var, rtol, atol, ignore)
        for key in var.warnings:
            if key not in ref.warnings and key not in ignored:
                diffs.append(Difference("warning", key, "torch.utils.checkpoint warned: " + _WARNING_TEXT[key]))
        full_label = label + (f" ({variant_label(options)})" if options else "")
        result = VariantResult(options, full_label, diffs, [], var.calls, ref.calls, var.warnings, [], var.error)
        result.recomputations = regions
        if diffs:
            rng_changed = [d.name for d in diffs if d.kind == "rng"]
            preserve = options.get("preserve_rng_state")
            audited = bool(preserve) if preserve is not None else True
            try:
                audit = audit_rng(plain, *inputs, kwargs=kwargs, preserve_rng_state=audited)
            except Exception:
                audit = []
            result.audit_preserve_rng_state = audited
            if preserve is None:
                # not readable from the switch: the CPU RNG ends elsewhere only when the
                # recomputation drew from it unrestored
                preserve = not ("torch CPU RNG" in rng_changed and any(r.source == "default generator" for r in audit))
            result.audit = audit
            evidence = Evidence(
                reentrant=options.get("use_reentrant", False) in (True, None),
                preserve_rng_state=bool(preserve),
                calls=var.calls,
                reference_calls=ref.calls,
                warnings=var.warnings,
                rng_changed=rng_changed,
                positional_grad_input=True,
                reference_state_changes=ref_changes,
                audit=audit,
                error=var.error,
            )
            result.suggestions = diagnose(diffs, evidence)
        notes += _vacuity_notes(
            isolated_modules=[plain], start_rng=start_rng, ref=ref, results=[result], recomputed=bool(regions)
        )
    finally:
        restore_rng(start_rng)
        watched.restore(start_globals)
    report = EquivalenceReport([result], rtol, atol, notes=notes)
    _warn_vacuous(report)
    return report


def assert_checkpointing_equivalent(
    model: nn.Module,
    *inputs: Any,
    enable: Any = "auto",
    loss_fn: Callable[[Any], torch.Tensor | None] | None = None,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    ignore_outputs: Iterable[str] = (),
    ignore_warnings: Iterable[str] = (),
    **forward_kwargs: Any,
) -> EquivalenceReport:
    """Assert that turning checkpointing on leaves one training step of ``model`` unchanged.

    Deep-copies ``model`` twice. On one copy checkpointing is off (if the model passed has it
    on -- a ``gradient_checkpointing``/``grad_checkpointing`` flag or a ``CheckpointWrapper`` --
    it is turned off there); on the other it is turned on with ``enable``:

    * ``"auto"``: the first switch the model offers, in the order of
      :data:`ckptlint.runtime.switches.SWITCHES`: transformers
      ``activation_checkpointing_enable()`` (5.x) / ``gradient_checkpointing_enable()``,
      diffusers ``enable_gradient_checkpointing()``, timm ``set_grad_checkpointing(True)``;
      ``ValueError`` when it offers none;
    * a callable taking the model (its return value replaces the model when it is a module),
      e.g. ``lambda m: m.gradient_checkpointing_enable(gradient_checkpointing_kwargs={...})``
      or ``lambda m: apply_activation_checkpointing(m, check_fn=...)``.

    Then ``loss_fn(model(*inputs, **forward_kwargs)).backward()`` runs on each copy from the
    same global RNG states, plain globals the model's ``forward`` names and fresh copies of
    the inputs, and the two steps are compared by value: flattened outputs, gradients of
    grad-requiring inputs, parameter gradients, buffers, plain module attributes, global RNG
    states after the step, inputs after the step, and warnings from torch.utils.checkpoint.
    Parameter, buffer and module names are compared without ``_checkpoint_wrapped_module.``.
    Forward pre-hooks count how often each region ran again while backward ran
    (``VariantResult.recomputations``, ``{region: count}``; a region is the parent of the
    outermost submodules that re-ran: a transformers decoder layer, a ``CheckpointWrapper``).

    For a transformers model, ``use_cache=False`` is passed to both steps unless given:
    transformers turns the cache off under checkpointing in training (see
    :mod:`ckptlint.runtime.switches`), so only the plain step would return one.

    Args:
        model: the ``nn.Module`` (never modified; put it in ``train()`` mode to test training).
        *inputs, **forward_kwargs: the model's inputs (tensors keep ``requires_grad``).
        enable: ``"auto"`` or a callable, see above.
        loss_fn: maps the output to a scalar; default :func:`ckptlint.runtime.default_loss`.
        rtol, atol: tolerances for floating-point tensors (``torch.allclose`` semantics).
        ignore_outputs: output names or ``fnmatch`` patterns not to compare.
        ignore_warnings: warning keys not to report.

    Returns:
        The :class:`EquivalenceReport` (one result, labelled with the switch and the checkpoint
        options read from it when they are a ``functools.partial``).

    Raises:
        CheckpointMismatch: (an ``AssertionError``) when the steps differ, with the likely
            cause and rule code (CKP101 ``preserve_rng_state=False`` with dropout, CKP203
            BatchNorm in a region ...).
        RuntimeError: the reference step fails.
        ValueError: ``enable="auto"`` and no known switch; the reference copy still recomputes.
        TypeError: ``model`` is not a module, or ``enable`` is neither "auto" nor callable.

    A passing check that proved little (eval mode, nothing recomputed) warns with
    :class:`ckptlint.runtime.CheckpointingWarning`; ``report.notes`` says why.
    """
    __tracebackhide__ = True
    report = check_checkpointing_equivalent(
        model, *inputs, enable=enable, loss_fn=loss_fn, rtol=rtol, atol=atol,
        ignore_outputs=ignore_outputs, ignore_warnings=ignore_warnings, **forward_kwargs,
    )
    if not report.ok:
        raise CheckpointMismatch(report)
    return report


def compare_checkpointing_memory(
    model: nn.Module,
    *inputs: Any,
    enable: Any = "auto",
    loss_fn: Callable[[Any], torch.Tensor | None] | None = None,
    device: str | torch.device | None = None,
    warmup: int = 1,
    iters: int = 5,
    **forward_kwargs: Any,
) -> MemoryReport:
    """:func:`ckptlint.runtime.compare_memory` for a model with checkpointing off and on.

    Copies the model as :func:`assert_checkpointing_equivalent` does (``enable`` the same) and
    measures ``loss_fn(model(*inputs, **forward_kwargs)).backward()`` on each copy (gradients
    set to None before every step). Inputs are used as given (move model and inputs to
    ``device`` first). Returns the :class:`MemoryReport`: saved-activation, op-peak and (CUDA)
    peak-memory figures in bytes, step times in seconds, and their ratios.
    """
    loss = default_loss if loss_fn is None else loss_fn
    plain, checkpointed, _, kwargs, _ = _prepare(model, enable, forward_kwargs)

    def step(m: nn.Module) -> Callable[[], None]:
        def run() -> None:
            m.zero_grad(set_to_none=True)
            value = loss(m(*inputs, **kwargs))
            if value is not None and value.requires_grad:
                value.backward()

        return run

    return compare_memory(step(plain), step(checkpointed), device=device, warmup=warmup, iters=iters)

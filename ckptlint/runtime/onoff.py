"""Is my model the same with checkpointing on and off? One training step of each, compared.

:func:`check_checkpointing_equivalent` deep-copies a model twice, turns checkpointing off on
one copy and on on the other (the library's own switch, see :mod:`ckptlint.runtime.switches`,
or any callable), runs one training step on both from identical RNG and module state and
compares by value, like :func:`ckptlint.runtime.check_checkpoint_equivalent` does for one
callable. It also counts, per checkpointed region, how often the region was recomputed.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from .call_options import LossTypeError, check_loss, forward_arguments
from .compare import Difference, compare_values, flatten
from .diagnosis import Evidence, diagnose
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
from .module_state import capture_module_state
from .parameter_values import _changed_parameters
from .process_state import ProcessState, watch_process
from .recompute import RecomputeCounter, call_differences, call_regions, record_checkpoint_calls
from .region_evidence import backward_random_ops, mutated_inputs, region_code_names
from .report import (
    CheckpointMismatch,
    EquivalenceReport,
    VariantResult,
    variant_label,
)
from .rng_audit import audit_rng
from .rounding import is_small_gap, rounding_note, to_float64
from .states import capture_rng
from .switches import (
    find_switch,
    is_checkpointing_on,
    resolve_enable,
    turn_off,
    unwrap_name,
)
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


@dataclass
class _Copies:
    """Fresh copies of the model, checkpointing off (``plain()``) or on (``checkpointed()``)."""

    original: nn.Module
    enable_fn: Callable[[nn.Module], Any]
    root: str
    float64: bool = False

    def plain(self) -> nn.Module:
        model = copy.deepcopy(self.original)
        if self.float64:
            model = model.to(torch.float64)
        if is_checkpointing_on(model):
            turn_off(model)
        return model

    def initial_parameters(self) -> dict[str, torch.Tensor]:
        """``{"parameter NAME": tensor}``: the caller's parameters, the values every step
        starts from (not copied: the caller's model is never run); none for float64 copies."""
        if self.float64:
            return {}
        return {f"parameter {unwrap_name(n)}": p for n, p in self.original.named_parameters()}

    def checkpointed(self) -> nn.Module:
        model = self.plain()
        returned = self.enable_fn(model)
        return returned if isinstance(returned, nn.Module) else model


def _run(
    model: nn.Module,
    copies: _Copies,
    inputs: tuple,
    kwargs: dict[str, Any],
    loss_fn: Callable[[Any], torch.Tensor | None],
    process: ProcessState,
    *,
    reraise: bool,
) -> tuple[_Step, dict[str, int]]:
    process.restore()
    root, initial = copies.root, copies.initial_parameters()
    step = _Step(param_initial=initial)
    counter = RecomputeCounter(model)
    args = clone_inputs(inputs)
    kw = clone_inputs(kwargs)
    with warnings.catch_warnings(record=True) as caught, record_checkpoint_calls(counter) as ckpt_calls:
        warnings.simplefilter("always")
        try:
            out = model(*args, **kw)
            step.outputs = [(n, _keep(v)) for n, v in flatten(out, "output")]
            step.output_type = type(out).__name__
            loss = loss_fn(out)
            check_loss(loss)
            if loss is not None and loss.requires_grad:
                loss.backward()
        except LossTypeError:
            raise
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
            # the copy is never run again: its gradients are kept without a clone (peak memory)
            step.param_grads[f"grad of {unwrap_name(name)}"] = None if p.grad is None else p.grad.detach()
    for name, b in model.named_buffers():
        step.buffers[f"buffer {unwrap_name(name)}"] = b.detach()
    step.attrs = capture_module_state(model, root)
    step.rng = capture_rng()
    step.python_state = process.capture()
    step.input_state = _keep_tree(tuple(args), "input") + _keep_tree(kw, "kwargs")
    step.param_values = _changed_parameters({"": model}, initial)
    regions = counter.regions()
    for name, times in call_regions(ckpt_calls).items():
        regions.setdefault(name, times)
    step.calls = 1 + max(regions.values(), default=0)
    step.checkpoint_calls = list(ckpt_calls)
    rng, autocast, attrs = call_differences(ckpt_calls)
    step.rng_not_restored = counter.rng_not_restored() + [n for n in rng if n not in counter.rng_not_restored()]
    step.autocast_lost = counter.autocast_changed() + [a for a in autocast if a not in counter.autocast_changed()]
    step.changed_attributes = counter.changed_attributes() + [a for a in attrs if a not in counter.changed_attributes()]
    return step, regions


def _switched_attributes(plain: nn.Module, checkpointed: nn.Module, root: str) -> set[str]:
    """The module state in which the two copies differ before any step: what ``enable`` set
    (a user's own flag such as ``model.use_checkpoint = True``); it is not compared."""
    before, after = capture_module_state(plain, root), capture_module_state(checkpointed, root)
    return {
        key
        for key in before.keys() | after.keys()
        if key not in before or key not in after or compare_values("module_attr", key, before[key], after[key], rtol=0, atol=0)
    }


def _prepare(model: nn.Module, enable: Any, forward_kwargs: dict[str, Any]) -> tuple[_Copies, str, dict[str, Any], list[str], str | None]:
    if not isinstance(model, nn.Module):
        raise TypeError(f"expected an nn.Module, got {type(model).__name__}")
    enable_fn, label, _ = resolve_enable(model, enable)
    notes: list[str] = []
    copies = _Copies(model, enable_fn, type(model).__name__)
    if is_checkpointing_on(model):
        notes.append("checkpointing was already on in the model passed; the reference copy has it turned off")
    kwargs = dict(forward_kwargs)
    offered = find_switch(model)
    if offered is not None and offered.library == "transformers" and "use_cache" not in kwargs:
        params: Mapping[str, inspect.Parameter]
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
    return copies, label, kwargs, notes, None if offered is None else offered.library


def _given(**options: Any) -> list[str]:
    """Names of the options whose value is not the default object (see call_options)."""
    return [k for k, v in options.items() if v is not _DEFAULTS[k]]


_DEFAULTS: dict[str, Any] = {"enable": "auto", "loss_fn": None, "rtol": None, "atol": None, "ignore_outputs": (), "ignore_warnings": ()}


def _one_run_only(ref: _Step, var: _Step, ignore: Callable[[str], bool] | None) -> dict[str, str]:
    """``{output name: "the reference" | "the checkpointed"}`` for outputs of one run only."""
    if var.error is not None:
        return {}
    if ref.output_type != var.output_type and len(ref.outputs) == len(var.outputs):
        return {}  # the same leaves in another container (a NamedTuple come back as a tuple): compared by position
    a, b = dict(ref.outputs), dict(var.outputs)
    out = {n: "the reference" for n in a if n not in b}
    out.update({n: "the checkpointed" for n in b if n not in a})
    # name the top-level entry (output['cache']), not each of its leaves
    top = {_top_level(n): w for n, w in out.items()}
    return {n: w for n, w in top.items() if ignore is None or not ignore(n)}


def _top_level(name: str) -> str:
    """The top-level entry a leaf name is under: ``output['cache']`` for
    ``output['cache'][0].key``, ``output`` for ``output`` itself."""
    found = re.match(r"output(\[[^\]]*\]|\.\w+)?", name)
    return found.group(0) if found is not None else name


def check_checkpointing_equivalent(
    model: nn.Module,
    *inputs: Any,
    enable: Any = _DEFAULTS["enable"],
    loss_fn: Callable[[Any], torch.Tensor | None] | None = _DEFAULTS["loss_fn"],
    rtol: float | None = _DEFAULTS["rtol"],
    atol: float | None = _DEFAULTS["atol"],
    ignore_outputs: Iterable[str] = _DEFAULTS["ignore_outputs"],
    ignore_warnings: Iterable[str] = _DEFAULTS["ignore_warnings"],
    forward_kwargs: dict[str, Any] | None = None,
    **kwargs: Any,
) -> EquivalenceReport:
    """Like :func:`assert_checkpointing_equivalent` but return the report instead of raising."""
    given = _given(enable=enable, loss_fn=loss_fn, rtol=rtol, atol=atol, ignore_outputs=ignore_outputs, ignore_warnings=ignore_warnings)
    merged = forward_arguments(model, forward_kwargs, kwargs, given)
    copies, label, fkw, notes, library = _prepare(model, enable, merged)
    root = copies.root
    plain, checkpointed = copies.plain(), copies.checkpointed()
    switched = _switched_attributes(plain, checkpointed, root)
    if switched:
        notes.append(
            "not compared, set by enable: "
            + ", ".join(sorted(k.removeprefix("attribute ") for k in switched))
        )
    options = _checkpoint_options(checkpointed)
    patterns = list(ignore_outputs)
    ignore = _ignore_matcher(patterns)
    loss = functools.partial(default_loss, ignore=ignore) if loss_fn is None else loss_fn
    ignored = set(ignore_warnings)
    process = watch_process([plain, checkpointed], [loss_fn])
    try:
        try:
            ref, ref_regions = _run(plain, copies, inputs, fkw, loss, process, reraise=True)
        except LossTypeError:
            raise
        except Exception as exc:
            raise RuntimeError(f"the reference step (checkpointing off) failed: {type(exc).__name__}: {exc}") from exc
        if ref_regions:
            raise ValueError(
                "the reference copy still recomputes " + ", ".join(ref_regions)
                + ": checkpointing could not be turned off; pass a model with checkpointing off"
            )
        var, regions = _run(checkpointed, copies, inputs, fkw, loss, process, reraise=False)
        only = _one_run_only(ref, var, ignore)
        if only:
            patterns += list(only)
            ignore = _ignore_matcher(patterns)
            notes.append(
                "left out of the default loss and not compared, present in one run only: "
                + ", ".join(f"{n} ({w} run)" for n, w in sorted(only.items()))
                + ("; transformers returns no cache under checkpointing in training" if library == "transformers" else "")
            )
            if loss_fn is None:  # the first two steps summed them into the loss: run both again
                loss = functools.partial(default_loss, ignore=ignore)
                ref, _ = _run(copies.plain(), copies, inputs, fkw, loss, process, reraise=True)
                var, regions = _run(copies.checkpointed(), copies, inputs, fkw, loss, process, reraise=False)
        for key in switched:  # set by `enable` itself, not by the step
            ref.attrs.pop(key, None)
            var.attrs.pop(key, None)
        diffs = _compare(ref, var, rtol, atol, ignore)
        for key in var.warnings:
            if key not in ref.warnings and key not in ignored:
                diffs.append(Difference("warning", key, "torch.utils.checkpoint warned: " + _WARNING_TEXT[key]))
        full_label = label + (f" ({variant_label(options)})" if options else "")
        if is_small_gap(diffs):
            gap = _float64_gap(copies, inputs, fkw, loss, process, ignore)
            if gap is not None:
                notes.append(rounding_note(diffs, gap))
                if not gap:
                    diffs = []
        result = VariantResult(options, full_label, diffs, [], var.calls, ref.calls, var.warnings, [], var.error)
        result.recomputations = regions
        recomputed = bool(regions)
        if diffs:
            again, _ = _run(copies.plain(), copies, inputs, fkw, loss, process, reraise=False)
            unstable = sorted({d.name for d in _compare(ref, again, rtol, atol, ignore)})
            result.suggestions, result.audit, recomputed = _diagnose(
                diffs, ref, var, regions, options, copies, inputs, fkw, process, unstable, checkpointed, loss
            )
            result.audit_preserve_rng_state = _preserve(options, var) is not False
        notes += _vacuity_notes(
            isolated_modules=[plain], start_rng=process.rng, ref=ref, results=[result], recomputed=recomputed,
            library=library,
        )
    finally:
        process.restore()
    report = EquivalenceReport([result], rtol, atol, notes=notes)
    _warn_vacuous(report)
    return report


def _float64_gap(
    copies: _Copies, inputs: tuple, fkw: dict[str, Any], loss: Callable[[Any], torch.Tensor | None],
    process: ProcessState, ignore: Callable[[str], bool] | None,
) -> list[Difference] | None:
    """The differences of the two steps rerun in float64 (model and floating inputs converted,
    float64 tolerances); None when the model cannot run in float64."""
    wide = dataclasses.replace(copies, float64=True)
    args, kw = to_float64(inputs), to_float64(fkw)
    try:
        ref, _ = _run(wide.plain(), wide, args, kw, loss, process, reraise=True)
    except LossTypeError:
        raise
    except Exception:  # noqa: BLE001 - a model that cannot run in float64 keeps the float32 verdict
        return None
    var, _ = _run(wide.checkpointed(), wide, args, kw, loss, process, reraise=False)
    return _compare(ref, var, None, None, ignore)


def _preserve(options: dict[str, Any], var: _Step) -> bool | None:
    """``preserve_rng_state`` of the checkpointed step: read from the switch's partial, else
    from the torch.utils.checkpoint calls seen; None when no torch checkpoint call was seen."""
    if "preserve_rng_state" in options:
        return bool(options["preserve_rng_state"])
    if var.checkpoint_calls:
        return all(c.preserve_rng_state for c in var.checkpoint_calls)
    return None


def _diagnose(
    diffs: list[Difference], ref: _Step, var: _Step, regions: dict[str, int], options: dict[str, Any],
    copies: _Copies, inputs: tuple, fkw: dict[str, Any], process: ProcessState, unstable: list[str],
    checkpointed: nn.Module, loss: Callable[[Any], torch.Tensor | None],
) -> tuple[list, list | None, bool]:
    """The likely causes of ``diffs``, the RNG audit to show (None when it would mislead) and
    whether something was recomputed (random ops in backward count)."""
    preserve = _preserve(options, var)
    rng_not_restored = list(var.rng_not_restored)
    recomputed = bool(regions)
    if not regions:  # a region without submodules re-run by a home-made recompute: random ops in backward
        model = copies.checkpointed()

        def step() -> None:
            out = model(*clone_inputs(inputs), **clone_inputs(fkw))
            value = loss(out)
            if value is not None and value.requires_grad:
                value.backward()

        process.restore()
        mode = backward_random_ops(step)
        process.restore()
        recomputed = bool(mode.backward)
        rng_not_restored += [f"a region without submodules ({op} re-ran in backward)" for op in mode.not_restored()]
    home_made = recomputed and not var.checkpoint_calls
    try:
        audit = audit_rng(copies.plain(), *inputs, kwargs=fkw, preserve_rng_state=preserve is not False)
    except Exception:  # noqa: BLE001 - the audit only explains
        audit = []
    finally:
        process.restore()
    if "use_reentrant" in options:
        reentrant = options["use_reentrant"] in (True, None)
    else:
        reentrant = any(c.reentrant for c in var.checkpoint_calls)
    initial = process.initial()
    changed = {
        k: (initial.get(k), v) for k, v in ref.python_state.items()
        if compare_values("python_state", k, initial.get(k), v, rtol=0, atol=0)
    }
    evidence = Evidence(
        reentrant=reentrant,
        preserve_rng_state=preserve is not False,
        calls=var.calls,
        reference_calls=ref.calls,
        warnings=var.warnings,
        rng_changed=[d.name for d in diffs if d.kind == "rng"],
        positional_grad_input=True,
        reference_state_changes=changed,
        audit=audit,
        error=var.error,
        recomputed=recomputed,
        unstable=unstable,
        home_made=home_made,
        rng_not_restored=rng_not_restored,
        autocast_lost=var.autocast_lost,
        grad_mode_branch=reentrant and "is_grad_enabled" in region_code_names(var.checkpoint_calls, checkpointed, regions),
        changed_attributes=var.changed_attributes,
        mutated_inputs=mutated_inputs(inputs, fkw, ref.input_state),
    )
    return diagnose(diffs, evidence), (None if home_made else audit), recomputed


def assert_checkpointing_equivalent(
    model: nn.Module,
    *inputs: Any,
    enable: Any = _DEFAULTS["enable"],
    loss_fn: Callable[[Any], torch.Tensor | None] | None = _DEFAULTS["loss_fn"],
    rtol: float | None = _DEFAULTS["rtol"],
    atol: float | None = _DEFAULTS["atol"],
    ignore_outputs: Iterable[str] = _DEFAULTS["ignore_outputs"],
    ignore_warnings: Iterable[str] = _DEFAULTS["ignore_warnings"],
    forward_kwargs: dict[str, Any] | None = None,
    **kwargs: Any,
) -> EquivalenceReport:
    """Assert that turning checkpointing on leaves one training step of ``model`` unchanged.

    Deep-copies ``model``. On the reference copy checkpointing is off (if the model passed has
    it on -- a ``gradient_checkpointing``/``grad_checkpointing`` flag or a ``CheckpointWrapper``
    -- it is turned off there); on the other it is turned on with ``enable``:

    * ``"auto"``: the first switch the model offers, in the order of
      :data:`ckptlint.runtime.switches.SWITCHES`: transformers
      ``activation_checkpointing_enable()`` (5.x) / ``gradient_checkpointing_enable()``,
      diffusers ``enable_gradient_checkpointing()``, timm ``set_grad_checkpointing(True)``;
      ``ValueError`` when it offers none;
    * a callable taking the model (its return value replaces the model when it is a module),
      e.g. ``lambda m: m.gradient_checkpointing_enable(gradient_checkpointing_kwargs={...})``
      or ``lambda m: apply_activation_checkpointing(m, check_fn=...)``.

    Then ``loss_fn(model(*inputs, **forward_kwargs)).backward()`` runs on each copy from the same
    state: every global RNG (torch CPU and devices, Python, NumPy), fresh copies of the inputs,
    and the globals and closure cells named by the ``forward`` of every submodule class, by
    every registered hook and by ``loss_fn`` that hold state (numbers, strings, tensors and
    containers of them; :mod:`ckptlint.runtime.process_state`), put back before each step and
    at the end. The steps are compared by value: flattened outputs, gradients of grad-requiring
    inputs, parameter gradients, buffers, the state of every submodule (attributes of every
    kind: numbers, lists, dicts, tensors that are not buffers; hook-held state;
    :mod:`ckptlint.runtime.module_state`), the watched globals and closure cells, global RNG
    states, inputs after the step, and warnings from torch.utils.checkpoint. Names are the
    plain model's (no ``_checkpoint_wrapped_module.``; the root is the model's class name).

    Forward pre-hooks count how often each region ran again while backward ran
    (``VariantResult.recomputations``, ``{region: count}``, per forward call of the module; a
    region is the outermost submodule that re-ran, or the layer whose children all re-ran: a
    transformers decoder layer). An output present in one run only (a transformers cache) is
    left out of the default loss and of the comparison, and named in ``report.notes``. When the
    steps differ, the reference runs a second time: what differs between two reference runs is
    reported as non-determinism or state the check does not isolate, and a difference when
    nothing was recomputed is not blamed on checkpointing.

    For a transformers model, ``use_cache=False`` is passed to both steps unless given:
    transformers turns the cache off under checkpointing in training (see
    :mod:`ckptlint.runtime.switches`), so only the plain step would return one.

    Args:
        model: the ``nn.Module`` (never modified; put it in ``train()`` mode to test training).
        *inputs: the model's positional inputs (tensors keep ``requires_grad``).
        enable: ``"auto"`` or a callable, see above.
        loss_fn: maps the output to a scalar tensor; default :func:`ckptlint.runtime.default_loss`.
        rtol, atol: tolerances for floating-point tensors (``torch.allclose`` semantics).
        ignore_outputs: output names (``"output['past_key_values']"`` or just
            ``"past_key_values"``) or ``fnmatch`` patterns not to compare (nor sum into the loss).
        ignore_warnings: warning keys not to report.
        forward_kwargs: keyword arguments for ``model.forward``; other keyword arguments are
            taken as forward arguments too.

    Returns:
        The :class:`EquivalenceReport` (one result, labelled with the switch and the checkpoint
        options read from it when they are a ``functools.partial``).

    Raises:
        CheckpointMismatch: (an ``AssertionError``) when the steps differ, with the likely
            cause and rule code (CKP101 ``preserve_rng_state=False`` with dropout, CKP104/CKP105
            a home-made recompute that restores no RNG / no autocast, CKP202 a side effect,
            CKP203 BatchNorm in a region ...).
        RuntimeError: the reference step fails.
        ValueError: ``enable="auto"`` and no known switch; the reference copy still recomputes.
        TypeError: ``model`` is not a module; ``enable`` is neither "auto" nor callable;
            ``loss_fn`` returns no tensor; a keyword argument is both an option given here and
            a parameter of ``model.forward`` (pass it in ``forward_kwargs``), or is given twice.

    A passing check that proved little (eval mode, nothing recomputed) warns with
    :class:`ckptlint.runtime.CheckpointingWarning`; ``report.notes`` says why.
    """
    __tracebackhide__ = True
    report = check_checkpointing_equivalent(
        model, *inputs, enable=enable, loss_fn=loss_fn, rtol=rtol, atol=atol,
        ignore_outputs=ignore_outputs, ignore_warnings=ignore_warnings, forward_kwargs=forward_kwargs, **kwargs,
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
    forward_kwargs: dict[str, Any] | None = None,
    **kwargs: Any,
) -> MemoryReport:
    """:func:`ckptlint.runtime.compare_memory` for a model with checkpointing off and on.

    Copies the model as :func:`assert_checkpointing_equivalent` does (``enable`` and
    ``forward_kwargs`` the same) and measures ``loss_fn(model(*inputs, **forward_kwargs)).backward()``
    on each copy (gradients set to None before every step). Inputs are used as given (move model
    and inputs to ``device`` first). Returns the :class:`MemoryReport`: saved-activation, op-peak
    and (CUDA) peak-memory figures in bytes, step times in seconds, and their ratios.
    """
    loss = default_loss if loss_fn is None else loss_fn
    merged = forward_arguments(model, forward_kwargs, kwargs, _given(enable=enable, loss_fn=loss_fn))
    copies, _, fkw, _, _ = _prepare(model, enable, merged)
    plain, checkpointed = copies.plain(), copies.checkpointed()

    def step(m: nn.Module) -> Callable[[], None]:
        def run() -> None:
            m.zero_grad(set_to_none=True)
            value = loss(m(*inputs, **fkw))
            check_loss(value)
            if value is not None and value.requires_grad:
                value.backward()

        return run

    return compare_memory(step(plain), step(checkpointed), device=device, warmup=warmup, iters=iters)

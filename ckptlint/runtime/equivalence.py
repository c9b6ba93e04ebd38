"""Prove that checkpointing a module or function does not change a training step."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from .call_options import LossTypeError, check_loss
from .compare import Difference, compare_tensors, compare_values, flatten, short_repr
from .diagnosis import Evidence, diagnose
from .inputs import clone_inputs
from .notes import _vacuity_notes, _warn_vacuous
from .outputs import _ignore_matcher, default_loss
from .parameter_values import _changed_parameters, _parameter_differences
from .process_state import ProcessState, watch_process
from .recompute import attribute_snapshot, in_backward, snapshot_changes
from .region_evidence import mutated_inputs
from .report import (
    CheckpointingWarning,
    CheckpointMismatch,
    EquivalenceReport,
    VariantResult,
    variant_label,
)
from .rng_audit import RngRecord, audit_rng
from .rounding import float64_copy, is_small_gap, rounding_note, to_float64
from .states import RngSnapshot, capture_rng, rng_differences
from .step_code import code_names, step_functions
from .switches import unwrap_name
from .targets import Isolated, find_modules, plain_attributes
from .warning_keys import classify_warning

__all__ = ["DEFAULT_VARIANTS", "assert_checkpoint_equivalent", "check_checkpoint_equivalent"]

#: why the reentrant variant cannot run a function with keyword arguments (torch 2.13
#: torch/utils/checkpoint.py, ``checkpoint``: ``if kwargs and use_reentrant: raise
#: ValueError("Unexpected keyword arguments: ...")``)
REENTRANT_KWARGS_REASON = (
    "not applicable to the reentrant variant: torch.utils.checkpoint's reentrant implementation "
    "passes no keyword arguments to the function (it raises ValueError 'Unexpected keyword "
    "arguments'); pass them positionally or through functools.partial to test it"
)

#: The variants checked when ``variants`` is None: both implementations, default options.
DEFAULT_VARIANTS: tuple[dict[str, Any], ...] = ({"use_reentrant": False}, {"use_reentrant": True})


@dataclass
class _Step:
    outputs: list[tuple[str, Any]] = field(default_factory=list)
    input_grads: dict[str, Any] = field(default_factory=dict)
    param_grads: dict[str, Any] = field(default_factory=dict)
    buffers: dict[str, torch.Tensor] = field(default_factory=dict)
    attrs: dict[str, Any] = field(default_factory=dict)
    rng: RngSnapshot | None = None
    python_state: dict[str, Any] = field(default_factory=dict)
    input_state: list[tuple[str, Any]] = field(default_factory=list)
    generators: dict[str, Any] = field(default_factory=dict)
    nested_output_tensors: list[str] = field(default_factory=list)
    output_type: str = ""
    unknown_leaves: list[tuple[int, ...]] = field(default_factory=list)
    calls: int = 0
    warnings: list[str] = field(default_factory=list)
    other_warnings: list[str] = field(default_factory=list)
    error: BaseException | None = None
    checkpoint_calls: list[Any] = field(default_factory=list)
    rng_not_restored: list[str] = field(default_factory=list)
    autocast_lost: list[str] = field(default_factory=list)
    changed_attributes: list[str] = field(default_factory=list)
    param_values: dict[str, torch.Tensor] = field(default_factory=dict)
    param_initial: dict[str, torch.Tensor] = field(default_factory=dict)


def _record_input_grads(step: _Step, args: Any, kw: dict[str, Any]) -> None:
    """Store the gradient of every input tensor that requires grad (positional arguments as
    ``input[...]``, keyword arguments as ``kwargs[...]``, nested containers flattened) on
    ``step.input_grads``, keyed ``"grad of NAME"``."""
    for prefix, tree in (("input", tuple(args)), ("kwargs", kw)):
        for name, leaf in flatten(tree, prefix):
            if isinstance(leaf, torch.Tensor) and leaf.requires_grad:
                step.input_grads[f"grad of {name}"] = _keep(leaf.grad)


def _keep(value: Any) -> Any:
    return value.detach().clone() if isinstance(value, torch.Tensor) else value


def _keep_tree(value: Any, prefix: str) -> list[tuple[str, Any]]:
    """Flattened copy of a value after a step: tensors cloned, generators' states taken."""
    out = []
    for name, leaf in flatten(value, prefix):
        if isinstance(leaf, torch.Generator):
            out.append((f"generator {name}", leaf.get_state()))
        else:
            out.append((name, _keep(leaf)))
    return out


def _nested_tensors(out: Any) -> list[str]:
    """Names of output tensors the reentrant autograd.Function cannot see.

    ``CheckpointFunction.apply`` (torch 2.13 torch/utils/checkpoint.py) returns what the function
    returns; autograd tracks only a tensor returned directly or the tensors that are items of a
    returned tuple (a NamedTuple counts: ``PyTuple_Check``). Tensors inside dicts, lists,
    dataclasses or nested deeper come back without gradient history.
    """
    if isinstance(out, torch.Tensor):
        return []
    items = list(enumerate(out)) if isinstance(out, tuple) else [(None, out)]
    names = []
    for i, item in items:
        if isinstance(item, torch.Tensor):
            continue
        prefix = "output" if i is None else f"output[{i}]"
        names += [name for name, leaf in flatten(item, prefix) if isinstance(leaf, torch.Tensor)]
    return names


def _graph_leaves(root: Any) -> list[torch.Tensor]:
    """Leaf tensors (``AccumulateGrad.variable``) the autograd graph of ``root`` reaches."""
    out, seen = [], set()
    stack = [root.grad_fn] if isinstance(root, torch.Tensor) and root.grad_fn is not None else []
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        var = getattr(fn, "variable", None)
        if isinstance(var, torch.Tensor):
            out.append(var)
        stack.extend(f for f, _ in getattr(fn, "next_functions", ()))
    return out


def _run_step(
    isolated: Isolated,
    inputs: tuple,
    kwargs: dict[str, Any],
    ckpt_options: dict[str, Any] | None,
    loss_fn: Callable[[Any], torch.Tensor | None],
    process: ProcessState,
    *,
    reraise: bool,
    initial: dict[str, torch.Tensor] | None = None,
) -> _Step:
    process.restore()
    target, modules = isolated.fresh()
    step = _Step(param_initial=initial or {})

    noted: dict[bool, dict[str, Any]] = {}

    def counted(*args: Any, **kw: Any) -> Any:
        step.calls += 1  # noqa: CKP202 - counting recomputations is the point
        if ckpt_options is not None and in_backward() not in noted:
            noted[in_backward()] = attribute_snapshot(modules)  # the state the forward / recomputation starts from
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
            step.output_type = type(out).__name__
            step.nested_output_tensors = _nested_tensors(out)
            loss = loss_fn(out)
            check_loss(loss)
            if loss is not None and loss.requires_grad:
                if ckpt_options is None:
                    known = {id(p) for m in modules.values() for p in m.parameters()}
                    known |= {id(t) for _, t in flatten((args, kw), "input") if isinstance(t, torch.Tensor)}
                    step.unknown_leaves = [
                        tuple(t.shape) for t in _graph_leaves(loss) if id(t) not in known
                    ]
                loss.backward()
        except LossTypeError:
            raise
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
    _record_input_grads(step, args, kw)
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
    step.python_state = process.capture()
    step.input_state = _keep_tree(tuple(args), "input") + _keep_tree(kw, "kwargs")
    step.generators = {f"generator {k}": g.get_state() for k, g in isolated.generators.items()}
    step.param_values = _changed_parameters(modules, step.param_initial)
    if False in noted and True in noted:
        step.changed_attributes = snapshot_changes(noted[False], noted[True])
    return step


def _compare(
    ref: _Step, var: _Step, rtol: float | None, atol: float | None, ignore: Callable[[str], bool] | None = None
) -> list[Difference]:
    """Every difference of the checkpointed step ``var`` from the reference step ``ref``: its
    error, outputs, gradients, buffers, inputs after the step, module attributes, Python
    state and RNG states, in that order."""
    diffs: list[Difference] = []
    if var.error is not None:
        first = str(var.error).strip().splitlines()[0] if str(var.error).strip() else ""
        diffs.append(Difference("error", type(var.error).__name__, first[:300]))
    if var.error is None or var.outputs:
        diffs += _output_differences(ref, var, rtol, atol, ignore)
    if var.error is None:
        diffs += _gradient_and_buffer_differences(ref, var, rtol, atol)
        diffs += _parameter_differences(ref, var, rtol, atol)
        diffs += _input_state_differences(ref, var, rtol, atol)
        for name in ref.generators:
            if not torch.equal(ref.generators[name], var.generators.get(name, ref.generators[name])):
                diffs.append(Difference("rng", name, "state after the step differs from the reference"))
    diffs += _state_differences(ref, var)
    assert ref.rng is not None and var.rng is not None
    for name in rng_differences(ref.rng, var.rng):
        diffs.append(Difference("rng", name, "state after the step differs from the reference"))
    return diffs


def _output_differences(
    ref: _Step, var: _Step, rtol: float | None, atol: float | None, ignore: Callable[[str], bool] | None
) -> list[Difference]:
    """Outputs of another type, present in one run only, or with other values."""
    diffs: list[Difference] = []
    ref_out, var_out = dict(ref.outputs), dict(var.outputs)
    if var.outputs and ref.output_type != var.output_type:
        diffs.append(
            Difference("output", "output", f"type {ref.output_type} in the reference run, {var.output_type} in the checkpointed run")
        )
        if len(ref.outputs) == len(var.outputs):  # same leaves under other names: compare by position
            var_out = {name: value for (name, _), (_, value) in zip(ref.outputs, var.outputs, strict=True)}
    for name in list(ref_out) + [k for k in var_out if k not in ref_out]:
        if ignore is not None and ignore(name):
            continue
        if name not in ref_out or name not in var_out:
            where = "the reference" if name in ref_out else "the checkpointed"
            diffs.append(Difference("output", name, f"present only in {where} run"))
            continue
        d = compare_tensors("output", name, ref_out[name], var_out[name], rtol=rtol, atol=atol)
        if d is not None:
            diffs.append(d)
    return diffs


def _gradient_and_buffer_differences(ref: _Step, var: _Step, rtol: float | None, atol: float | None) -> list[Difference]:
    """Input and parameter gradients, then buffers, that differ from the reference's."""
    diffs: list[Difference] = []
    for kind, a, b in (("input_grad", ref.input_grads, var.input_grads), ("param_grad", ref.param_grads, var.param_grads)):
        for name in a:
            d = compare_tensors(kind, name, a[name], b.get(name), rtol=rtol, atol=atol)
            if d is not None:
                diffs.append(d)
    for name in ref.buffers:
        d = compare_tensors("buffer", name, ref.buffers[name], var.buffers.get(name), rtol=rtol, atol=atol)
        if d is not None:
            diffs.append(d)
    return diffs


def _input_state_differences(ref: _Step, var: _Step, rtol: float | None, atol: float | None) -> list[Difference]:
    """Inputs (and generators passed in them) left in another state by the step."""
    diffs: list[Difference] = []
    ref_in, var_in = dict(ref.input_state), dict(var.input_state)
    for name in list(ref_in) + [k for k in var_in if k not in ref_in]:
        if name not in ref_in or name not in var_in:
            where = "the reference" if name in ref_in else "the checkpointed"
            diffs.append(Difference("input_state", name, f"present only in {where} run after the step"))
            continue
        if name.startswith("generator "):
            if not torch.equal(ref_in[name], var_in[name]):
                diffs.append(Difference("rng", name, "state after the step differs from the reference"))
            continue
        d = compare_tensors("input_state", name, ref_in[name], var_in[name], rtol=rtol, atol=atol)
        if d is not None:
            diffs.append(d)
    return diffs


def _state_differences(ref: _Step, var: _Step) -> list[Difference]:
    """Module attributes and Python state (globals, closures) that differ after the step."""
    diffs: list[Difference] = []
    for kind, a, b in (("module_attr", ref.attrs, var.attrs), ("python_state", ref.python_state, var.python_state)):
        for name in list(a) + [k for k in b if k not in a]:
            leaves = compare_values(kind, name, a.get(name), b.get(name), rtol=0, atol=0)
            if len(leaves) == 1 and leaves[0].name == name and leaves[0].max_abs is not None:
                diffs.append(leaves[0])  # one tensor: max abs / rel difference
            elif leaves:
                diffs.append(
                    Difference(
                        kind, name,
                        f"{short_repr(a.get(name))} after the reference step, {short_repr(b.get(name))} after the checkpointed step",
                    )
                )
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
    rtol: float | None = None,
    atol: float | None = None,
    kwargs: dict[str, Any] | None = None,
    loss_fn: Callable[[Any], torch.Tensor | None] | None = None,
    ignore_warnings: Iterable[str] = (),
    ignore_outputs: Iterable[str] = (),
    modules: dict[str, nn.Module] | None = None,
) -> EquivalenceReport:
    """Like :func:`assert_checkpoint_equivalent` but return the report instead of raising."""
    variant_list = _normalise_variants(variants)
    kwargs = dict(kwargs or {})
    ignored = set(ignore_warnings)
    ignore = _ignore_matcher(ignore_outputs)
    loss = functools.partial(default_loss, ignore=ignore) if loss_fn is None else loss_fn
    found = dict(modules or {}) or find_modules(module_or_fn)
    initial = {
        f"parameter {prefix + '.' if prefix else ''}{unwrap_name(name)}": p.detach().clone()
        for prefix, m in found.items() for name, p in m.named_parameters()
    }
    process = watch_process(list(found.values()), [module_or_fn, loss_fn])
    positional_grad = any(isinstance(a, torch.Tensor) and a.requires_grad for a in inputs)
    results: list[VariantResult] = []
    audit: list[RngRecord] | None = None
    unstable: list[str] = []
    notes: list[str] = []
    try:
        with Isolated(module_or_fn, modules=modules) as isolated:
            try:
                ref = _run_step(isolated, inputs, kwargs, None, loss, process, reraise=True, initial=initial)
            except LossTypeError:
                raise
            except Exception as exc:
                raise RuntimeError(
                    f"the reference step (no checkpoint) failed: {type(exc).__name__}: {exc}"
                ) from exc
            ref_changes = _changes(process.initial(), ref.python_state)
            if ref.unknown_leaves:
                shapes = ", ".join(str(s) for s in ref.unknown_leaves[:4])
                warnings.warn(
                    f"the function uses {len(ref.unknown_leaves)} grad-requiring tensor(s) (shapes {shapes}) "
                    "that the helper found neither in its arguments nor in the modules it reaches "
                    "(closure, globals, up to 3 levels of containers): their gradients and the modules' "
                    "buffers are not isolated or compared; pass modules={'name': module}",
                    CheckpointingWarning,
                    stacklevel=3,
                )
            for variant in variant_list:
                reentrant = variant.get("use_reentrant", None) in (True, None)
                if kwargs and reentrant:
                    results.append(
                        VariantResult(
                            variant, variant_label(variant), [], [], 0, ref.calls, [], [],
                            not_applicable=REENTRANT_KWARGS_REASON,
                        )
                    )
                    continue
                var = _run_step(isolated, inputs, kwargs, variant, loss, process, reraise=False, initial=initial)
                diffs = _compare(ref, var, rtol, atol, ignore)
                if is_small_gap(diffs) and isolated.copyable:
                    gap = _float64_gap(module_or_fn, inputs, kwargs, variant, loss, process, ignore)
                    if gap is not None:
                        notes.append(f"{variant_label(variant)}: " + rounding_note(diffs, gap))
                        if not gap:
                            diffs = []
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
                        except Exception:  # noqa: BLE001 - the audit only explains a difference found
                            audit = []
                        finally:
                            process.restore()
                        again = _run_step(isolated, inputs, kwargs, None, loss, process, reraise=False, initial=initial)
                        unstable = sorted({d.name for d in _compare(ref, again, rtol, atol, ignore)})
                    result.audit = audit
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
                        nested_outputs=var.nested_output_tensors,
                        recomputed=var.calls > ref.calls,
                        unstable=unstable,
                        grad_mode_branch=reentrant and "is_grad_enabled" in _names_used(found, module_or_fn),
                        mutated_inputs=mutated_inputs(inputs, kwargs, ref.input_state),
                        changed_attributes=var.changed_attributes,
                        output_none=ref.output_type == "NoneType",
                        api="function",
                    )
                    result.suggestions = diagnose(diffs, evidence)
                results.append(result)
            notes += _vacuity_notes(
                isolated_modules=list(find_modules(module_or_fn).values()) if isolated.copyable else list(isolated._shared.values()),
                start_rng=process.rng,
                ref=ref,
                results=results,
            )
    finally:
        process.restore()
    report = EquivalenceReport(results, rtol, atol, notes=notes)
    _warn_vacuous(report)
    return report


def _float64_gap(
    module_or_fn: Callable, inputs: tuple, kwargs: dict[str, Any], variant: dict[str, Any],
    loss: Callable[[Any], torch.Tensor | None], process: ProcessState, ignore: Callable[[str], bool] | None,
) -> list[Difference] | None:
    """The differences of the reference and ``variant`` steps rerun in float64 (a copy of the
    module converted, floating inputs too); None when that cannot run."""
    try:
        wide = float64_copy(module_or_fn)
        with Isolated(wide) as isolated:
            args, kw = to_float64(inputs), to_float64(kwargs)
            ref = _run_step(isolated, args, kw, None, loss, process, reraise=True)
            var = _run_step(isolated, args, kw, variant, loss, process, reraise=False)
    except LossTypeError:
        raise
    except Exception:  # noqa: BLE001 - a model that cannot run in float64 keeps the verdict of its dtype
        return None
    return _compare(ref, var, None, None, ignore)


def _changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """``{label: (before, after)}`` for the watched values a step changed."""
    return {
        k: (before.get(k), v) for k, v in after.items()
        if compare_values("python_state", k, before.get(k), v, rtol=0, atol=0)
    }


def _names_used(modules: dict[str, nn.Module], fn: Any) -> set[str]:
    """Names looked up by the code a step of ``fn`` and ``modules`` runs."""
    return {n for f in step_functions(list(modules.values()), [fn]) for n in code_names(f.__code__)}


_WARNING_TEXT = {
    "use_reentrant_omitted": "use_reentrant was not passed (torch then uses the reentrant variant)",
    "no_input_requires_grad": "None of the inputs have requires_grad=True (reentrant: gradients will be None)",
    "multiple_device_types": "tensor arguments on at least two device types; only one type's RNG is stashed",
}


def assert_checkpoint_equivalent(
    module_or_fn: Callable,
    *inputs: Any,
    variants: Iterable[dict[str, Any]] | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    kwargs: dict[str, Any] | None = None,
    loss_fn: Callable[[Any], torch.Tensor | None] | None = None,
    ignore_warnings: Iterable[str] = (),
    ignore_outputs: Iterable[str] = (),
    modules: dict[str, nn.Module] | None = None,
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
    * the inputs after the step (a list or cache object the function appends to), and the
      state of ``torch.Generator`` objects passed in or reached through closure and globals;
    * an exception raised by a checkpointed step (e.g. ``CheckpointError``, or ``ValueError``
      for options the variant does not accept) is reported as a difference.

    Outputs are flattened pytree-style (:func:`ckptlint.runtime.compare.flatten`: dicts,
    ``ModelOutput``, tuples, lists, NamedTuples, dataclasses, objects holding tensors) and
    compared leaf by leaf. With ``kwargs``, reentrant variants are reported as not applicable
    (torch's reentrant checkpoint accepts no keyword arguments), not as failures. A passing
    report whose ``notes`` say it proved little (eval mode; never recomputed) also warns with
    :class:`CheckpointingWarning`.

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
        ignore_outputs: output names (as in the report: ``"output['count']"``,
            ``"output.cache"``) or ``fnmatch`` patterns not to compare; a name also covers
            everything nested below it.
        modules: ``{name: module}`` for a plain function whose modules the helper cannot find
            (it looks at the closure, the globals the code names and three levels of lists,
            dicts and plain objects below them); they are reset before each run, compared and
            put back. A :class:`CheckpointingWarning` names grad-requiring tensors the function
            uses that belong to no found module.

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
        loss_fn=loss_fn, ignore_warnings=ignore_warnings, ignore_outputs=ignore_outputs, modules=modules,
    )
    if not report.ok:
        raise CheckpointMismatch(report)
    return report

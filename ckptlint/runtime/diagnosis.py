"""The likely cause of a failed check: the evidence gathered about a checkpointed run and the
rules that turn differences plus evidence into :class:`~ckptlint.runtime.report.Suggestion` s."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .compare import Difference
from .report import BN_BUFFERS, Suggestion, _times
from .rng_audit import RngRecord

__all__ = ["Evidence", "diagnose"]

@dataclass
class Evidence:
    """What was observed about one checkpointed run, beyond the value differences.

    Attributes:
        reentrant: the variant used the reentrant implementation (``use_reentrant`` True or
            omitted; torch 2.9-2.14 treat an omitted value as True after warning).
        preserve_rng_state: the variant's ``preserve_rng_state`` (default True).
        calls: how many times the function ran in the checkpointed step.
        reference_calls: how many times it ran in the reference step (normally 1).
        warnings: classified warning keys (see :mod:`ckptlint.runtime.warning_keys`).
        rng_changed: generators whose state after the step differs from the reference
            (``"torch CPU RNG"``, ``"torch cuda:0 RNG"``, ``"Python random"``, ``"NumPy global RNG"``).
        positional_grad_input: some top-level positional tensor input requires grad.
        reference_state_changes: plain globals/closure cells the reference step changed
            (``{label: (before, after)}``): the function writes state it may also read.
        audit: random ops seen by :func:`ckptlint.runtime.audit_rng` (with preserve_rng_state=True),
            or None when the audit was not run.
        error: the exception the checkpointed step raised, if any.
        nested_outputs: output tensors nested in containers (dict values, list items,
            dataclass fields), which a reentrant checkpoint returns without autograd history.
        recomputed: something ran again during backward; when False, no difference is blamed
            on checkpointing's recomputation.
        unstable: names that also differ between two reference runs (checkpointing off) from
            the same state: non-determinism or state the check does not isolate.
        home_made: regions were recomputed but no torch.utils.checkpoint call ran (a
            ``torch.autograd.Function`` of the user's that re-runs the forward in backward).
        rng_not_restored: recomputed modules whose recomputation started from another CPU RNG
            state than their forward.
        autocast_lost: recomputed modules that ran under autocast in the forward only.
        grad_mode_branch: the reentrant variant ran and the region's code reads
            ``torch.is_grad_enabled()``.
        changed_attributes: module attributes (``training`` included) with another value when
            the region was recomputed than in its forward, e.g. ``"attribute block.temperature
            (1.0 in the forward, 2.0 when recomputed)"``.
        mutated_inputs: inputs the reference step changed in place (``"input[1]"``).
        output_none: the checked function returned None.
        api: ``"model"`` (the on/off check, with ``enable``) or ``"function"`` (the check of one
            checkpointed callable, with ``variants``): the advice names only that API's options.
    """

    reentrant: bool
    preserve_rng_state: bool
    calls: int
    reference_calls: int
    warnings: list[str] = field(default_factory=list)
    rng_changed: list[str] = field(default_factory=list)
    positional_grad_input: bool = True
    reference_state_changes: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    audit: list[RngRecord] | None = None
    error: BaseException | None = None
    nested_outputs: list[str] = field(default_factory=list)
    recomputed: bool = True
    unstable: list[str] = field(default_factory=list)
    home_made: bool = False
    rng_not_restored: list[str] = field(default_factory=list)
    autocast_lost: list[str] = field(default_factory=list)
    grad_mode_branch: bool = False
    changed_attributes: list[str] = field(default_factory=list)
    mutated_inputs: list[str] = field(default_factory=list)
    output_none: bool = False
    api: str = "model"


def diagnose(differences: list[Difference], ev: Evidence) -> list[Suggestion]:
    """Return the likely causes of ``differences`` given the evidence, most specific first.

    Heuristics (each backed by torch.utils.checkpoint behaviour, torch 2.9.1 / 2.13):

    * a gradient that is None only in a reentrant run whose positional inputs do not require
      grad: ``check_backward_validity`` warns and the output does not require grad (lines 83-87);
    * reentrant variant and the output's type changed (a NamedTuple comes back as a plain
      tuple from ``CheckpointFunction.apply``; observed on torch 2.13), or gradients differ and
      output tensors sit inside containers that autograd.Function does not look into;
    * buffers named ``running_mean`` / ``running_var`` / ``num_batches_tracked`` differ:
      BatchNorm ran twice in train mode (CKP203); other buffers: a side effect (CKP202);
    * ``preserve_rng_state=False`` and torch random ops or a diverged torch RNG (CKP101);
    * a device RNG diverged, a random op on a device not stashed, or the "two types of
      devices" warning (CKP102);
    * Python ``random`` / NumPy state diverged or an explicit ``torch.Generator`` (CKP103);
    * a plain global, closure cell or module attribute ends differently: a side effect
      re-run by recomputation (CKP202); with value differences and no RNG explanation, the
      recomputation read the changed state (CKP201).
    """
    out: list[Suggestion] = []
    unstable = [d for d in differences if d.name in set(ev.unstable)]
    if unstable:
        out.append(
            Suggestion(
                None,
                "the step is not repeatable: two runs with checkpointing off, from the same state, also differ in "
                + ", ".join(d.name for d in unstable[:3])
                + ": non-determinism (a non-deterministic kernel, time, an unseeded generator) or state "
                "this check does not isolate (a global object that is not plain data, a file), not checkpointing",
                "make the step deterministic (torch.use_deterministic_algorithms(True), seeded generators) "
                "or pass the state in as an argument; ignore_outputs= leaves an output out",
            )
        )
        differences = [d for d in differences if d not in unstable]
    repeatable = bool(differences)
    values = [d for d in differences if d.kind in ("output", "input_grad", "param_grad")]
    rejected = ev.error is not None and ev.calls == 0
    wrong = bool(values) or (ev.error is not None and not rejected)
    audit = ev.audit or []
    if rejected:
        out.append(
            Suggestion(
                None,
                "torch.utils.checkpoint rejected this variant before running the function "
                f"({type(ev.error).__name__}: {str(ev.error).strip()[:200]})",
                "function keyword arguments, context_fn and debug need use_reentrant=False; "
                "check the option names of the variant",
            )
        )
    if "use_reentrant_omitted" in ev.warnings:
        out.append(
            Suggestion(
                None,
                "use_reentrant was not passed: torch warns and falls back to the reentrant "
                "variant (a future release may raise)",
                "pass use_reentrant=False (recommended) or use_reentrant=True explicitly",
            )
        )

    grad_none = [
        d for d in differences if d.kind in ("input_grad", "param_grad") and d.variant_none and not d.reference_none
    ]
    grad_diffs = [d for d in differences if d.kind in ("input_grad", "param_grad")]
    retyped = [d for d in differences if d.kind == "output" and d.name == "output" and d.detail.startswith("type ")]
    if ev.reentrant and retyped:
        out.append(
            Suggestion(
                None,
                "reentrant checkpoint changed the type of the output (" + retyped[0].detail + "): its "
                "autograd.Function (CheckpointFunction.apply) returns a plain tuple for any tuple, "
                "NamedTuples included",
                "use use_reentrant=False, or index the result instead of using field names",
            )
        )
    if grad_diffs and ev.reentrant and ev.nested_outputs:
        ran_once = " (the function ran once: nothing was recomputed)" if ev.calls <= 1 else ""
        out.append(
            Suggestion(
                None,
                "reentrant checkpoint drops the gradients of outputs nested in containers: its "
                "autograd.Function (CheckpointFunction) tracks only a returned tensor or the tensors "
                "of a returned tuple, so " + ", ".join(ev.nested_outputs[:3])
                + " carry no gradient history and their gradients never reach the region" + ran_once,
                "use use_reentrant=False, or return a tensor or a tuple of tensors from the "
                "checkpointed function",
            )
        )
    if grad_none and ev.reentrant and not ev.nested_outputs and (
        "no_input_requires_grad" in ev.warnings or not ev.positional_grad_input
    ):
        out.append(
            Suggestion(
                None,
                "reentrant checkpoint (use_reentrant=True) and no positional tensor input requires "
                "grad: torch warns 'None of the inputs have requires_grad=True', the output does "
                "not require grad and parameters inside the region get no gradient",
                "pass use_reentrant=False, or make a positional input require grad "
                "(e.g. model.enable_input_require_grads() for frozen embeddings)",
            )
        )

    buffers = [d for d in differences if d.kind == "buffer"]
    bn = [d for d in buffers if d.name.rsplit(".", 1)[-1] in BN_BUFFERS]
    if bn:
        out.append(
            Suggestion(
                "CKP203",
                "BatchNorm running statistics are updated twice: recomputation runs the layer in "
                "train mode again (" + ", ".join(d.name for d in bn[:3]) + ")",
                "keep BatchNorm out of the checkpointed region, or freeze its statistics "
                "during recomputation (momentum 1-sqrt(1-m), or eval-mode BN)",
            )
        )
    if len(bn) < len(buffers):
        out.append(
            Suggestion(
                "CKP202",
                "a buffer is modified inside the region, and recomputation modifies it again",
                "update buffers outside the checkpointed function",
            )
        )

    torch_rng = [n for n in ev.rng_changed if n.startswith("torch ")]
    aten_default = [r for r in audit if r.source == "default generator"]
    rng_explained = False
    if ev.home_made and (ev.rng_not_restored or (torch_rng and aten_default)):
        ops = ", ".join(sorted({f"{r.op} on {r.device}" for r in aten_default})) or "random ops"
        where = ", ".join(ev.rng_not_restored[:3]) or "the region"
        out.append(
            Suggestion(
                "CKP104",
                f"a home-made recompute (no torch.utils.checkpoint call ran) re-ran {where} from another "
                f"RNG state than the forward ({ops}): the recomputation draws other random numbers "
                "(another dropout mask)",
                "save the RNG state in forward and restore it around the re-run in backward "
                "(torch.random.fork_rng + torch.set_rng_state), or use torch.utils.checkpoint",
            )
        )
        rng_explained = True
    elif not ev.preserve_rng_state and (torch_rng or aten_default):
        ops = ", ".join(sorted({f"{r.op} on {r.device}" for r in aten_default})) or "random ops"
        out.append(
            Suggestion(
                "CKP101",
                f"preserve_rng_state=False with random ops in the region ({ops}): the "
                "recomputation draws other random numbers (another dropout mask) than the forward",
                "drop preserve_rng_state=False (the default restores the RNG), or move the random "
                "op out of the region",
            )
        )
        rng_explained = True
    device_rng = [n for n in torch_rng if n != "torch CPU RNG"]
    not_stashed = [r for r in audit if r.rule == "CKP102"]
    if not ev.home_made and ((ev.preserve_rng_state and (device_rng or not_stashed)) or "multiple_device_types" in ev.warnings):
        where = ", ".join(sorted({f"{r.op} on {r.device}" for r in not_stashed})) or ", ".join(device_rng)
        out.append(
            Suggestion(
                "CKP102",
                f"random op on a device whose RNG checkpoint does not stash ({where}): checkpoint "
                "stashes the CPU RNG and the device type of its positional tensor arguments only",
                "pass a tensor on that device as a positional argument (move it before the "
                "checkpoint call), or generate the randomness outside and pass it in",
            )
        )
        rng_explained = True
    py_rng = [n for n in ev.rng_changed if n in ("Python random", "NumPy global RNG") or n.startswith("generator ")]
    for r in audit:
        name = {"python random": "Python random", "numpy": "NumPy global RNG"}.get(r.source)
        if name and name not in py_rng:
            py_rng.append(name)
    explicit = [r for r in audit if r.source == "explicit generator"]
    if py_rng or explicit:
        what = ", ".join(py_rng + sorted({f"{r.op} with an explicit torch.Generator" for r in explicit}))
        out.append(
            Suggestion(
                "CKP103",
                f"randomness checkpoint never restores ({what}): the recomputation draws "
                "other numbers than the forward",
                "draw the random values outside the checkpointed function and pass them in, or "
                "use torch's default generator with preserve_rng_state=True",
            )
        )
        rng_explained = True

    if ev.autocast_lost:
        out.append(
            Suggestion(
                "CKP105",
                "the recomputation ran under another autocast than the forward: " + "; ".join(ev.autocast_lost[:3])
                + " (a home-made recompute in backward that does not re-enter the forward's autocast state): "
                "it computed in another dtype than the forward",
                "re-enter the forward's autocast state around the re-run (save torch.is_autocast_enabled() "
                "and torch.get_autocast_dtype() in forward), or use torch.utils.checkpoint",
            )
        )
        rng_explained = True
    if ev.reentrant and ev.grad_mode_branch and (values or ev.error is not None):
        out.append(
            Suggestion(
                None,
                "the reentrant variant runs the region's forward under no_grad and only the "
                "recomputation with grad enabled, and the region branches on torch.is_grad_enabled(): "
                "forward and recomputation take different paths",
                "use use_reentrant=False",
            )
        )
        rng_explained = True
    found = _state_causes(differences, ev, wrong, bool(grad_diffs))
    out += found
    rng_explained = rng_explained or bool(found)
    state = [d for d in differences if d.kind in ("python_state", "module_attr", "input_state")]
    if state and not (ev.mutated_inputs and all(d.kind == "input_state" for d in state)):
        out.append(
            Suggestion(
                "CKP202",
                "a side effect in the region runs again during recomputation ("
                + ", ".join(d.name for d in state[:3])
                + ")",
                "move the side effect (counter, log, cache append) outside the checkpointed function",
            )
        )
    if wrong and not rng_explained and (state or ev.reference_state_changes):
        names = [d.name for d in state] or list(ev.reference_state_changes)
        out.append(
            Suggestion(
                "CKP201",
                "the recomputation reads mutable state that the forward changed ("
                + ", ".join(names[:3])
                + "), so it computes other values",
                "pass the value in as an argument, or read it outside the checkpointed function",
            )
        )
    if wrong and not out:
        out.append(
            Suggestion(
                "CKP201",
                f"the recomputation (the function ran {_times(ev.calls)}, reference {_times(ev.reference_calls)}) "
                "computed other values than the forward: it likely reads mutable state changed "
                "during the forward (CKP201) or has a side effect (CKP202)",
                "make the checkpointed function depend only on its arguments",
            )
        )
    if ev.error is not None and type(ev.error).__name__ == "CheckpointError":
        out.append(
            Suggestion(
                None,
                "torch raised CheckpointError: the recomputation saved different tensors than "
                "the forward (it took another path)",
                "rerun that variant with debug=True for an op-by-op comparison",
            )
        )
    if not ev.recomputed and ev.error is None:
        # nothing ran again: keep the causes that need no recomputation (the reentrant traps)
        out = [s for s in out if s.code is None]
        general = ("use_reentrant was not passed", "the step is not repeatable")
        if repeatable and all(s.cause.startswith(general) for s in out):
            out.append(
                Suggestion(
                    None,
                    "nothing was recomputed (no checkpointed region ran again during backward), so "
                    "checkpointing's recomputation did not cause this: the checkpointed run differs in "
                    + ("something else (what enable changed, or state this check does not isolate)" if ev.api == "model"
                       else "something else (state this check does not isolate)"),
                    "check what enable changes besides turning checkpointing on" if ev.api == "model"
                    else "check that the loss depends on the function's output (loss_fn=) and that the variant's "
                    "options are the ones to test",
                )
            )
    seen: set[tuple[str | None, str]] = set()
    unique = []
    for s in out:
        if (s.code, s.cause) not in seen:
            seen.add((s.code, s.cause))
            unique.append(s)
    return unique


def _state_causes(differences: list[Difference], ev: Evidence, wrong: bool, grad_diffs: bool) -> list[Suggestion]:
    """Causes that name the state the recomputation read or wrote: a module attribute changed
    between forward and recomputation, an input or parameter written in place, a function that
    returned None under the reentrant variant."""
    out: list[Suggestion] = []
    if ev.changed_attributes and (wrong or ev.error is not None):
        out.append(
            Suggestion(
                "CKP201",
                "the recomputation read module state that changed after the forward: "
                + "; ".join(ev.changed_attributes[:3]) + ", so it computed other values than the forward",
                "pass the value in as an argument, or leave the attribute unchanged between the forward and backward",
            )
        )
    if ev.mutated_inputs:
        out.append(
            Suggestion(
                "CKP202",
                "the region modifies " + ", ".join(ev.mutated_inputs[:3]) + " in place: a side effect "
                "on the input, which the recomputation repeats (and then reads the modified input)",
                "clone the input before changing it (x = x.clone()), or change it outside the checkpointed function",
            )
        )
    params = [d for d in differences if d.kind == "param_value"]
    if params:
        out.append(
            Suggestion(
                "CKP202",
                "the region writes parameter " + ", ".join(d.name.removeprefix("parameter ") for d in params[:3])
                + " in place, and the recomputation writes it again",
                "update parameters outside the checkpointed function (in the optimizer step)",
            )
        )
    if ev.output_none and ev.reentrant and (grad_diffs or ev.error is not None):
        out.append(
            Suggestion(
                None,
                "the function returned None: the reentrant variant runs the forward under torch.no_grad() "
                "and gives gradient history only to the tensors it returns, so tensors the function leaves "
                "elsewhere (a list, an attribute) carry none and their gradients never reach the region",
                "return the tensors from the checkpointed function, or use use_reentrant=False",
            )
        )
    return out

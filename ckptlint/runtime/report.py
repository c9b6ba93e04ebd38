"""Results of the equivalence check, the likely cause of each failure, and the failure message."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .compare import Difference
from .rng_audit import RngRecord

__all__ = [
    "CheckpointingWarning",
    "CheckpointMismatch",
    "EquivalenceReport",
    "Suggestion",
    "VariantResult",
    "variant_label",
]

class CheckpointingWarning(UserWarning):
    """A runtime check could not test what it was asked to (eval mode, nothing recomputed,
    parameters it cannot isolate)."""


#: Buffer names that BatchNorm-style layers update in train mode (torch.nn.modules.batchnorm).
BN_BUFFERS = ("running_mean", "running_var", "num_batches_tracked")


@dataclass(frozen=True)
class Suggestion:
    """A likely cause of a difference.

    Attributes:
        code: the ckptlint rule code (``"CKP101"`` ...) or None when no rule covers it.
        cause: what probably happened.
        fix: what to change.
    """

    code: str | None
    cause: str
    fix: str

    def describe(self) -> str:
        head = f"{self.code}: " if self.code else ""
        return f"{head}{self.cause}\n      fix: {self.fix}"


def _times(n: int) -> str:
    return f"{n} time" if n == 1 else f"{n} times"


def variant_label(variant: dict[str, Any]) -> str:
    """``{"use_reentrant": False}`` -> ``"use_reentrant=False"``; ``{}`` -> ``"(no options)"``."""
    if not variant:
        return "(no options)"
    parts = []
    for k, v in variant.items():
        name = getattr(v, "__name__", None) or getattr(getattr(v, "func", None), "__name__", None)
        parts.append(f"{k}={name}" if callable(v) and name else f"{k}={v!r}")
    return ", ".join(parts)


@dataclass
class VariantResult:
    """The outcome of one checkpointed variant compared with the reference.

    Attributes:
        variant: the keyword arguments given to ``torch.utils.checkpoint.checkpoint`` (for
            :func:`~ckptlint.runtime.check_checkpointing_equivalent`: the options found on the
            model's checkpoint function, when it is a ``functools.partial``).
        label: a short text form of ``variant`` (or of the switch that enabled checkpointing).
        differences: what differs from the reference; empty when equivalent.
        suggestions: likely causes (empty when equivalent).
        calls: times the function ran in this step (a checkpointed step normally runs it twice:
            forward and recomputation; non-reentrant ``early_stop`` may stop the recomputation
            early but still enters the function). For a whole model: 1 plus the largest
            number of recomputations of one region.
        reference_calls: times it ran in the reference step.
        warnings: classified warning keys raised during the step.
        other_warnings: texts of unclassified warnings raised during the step.
        error: the exception raised by the step, or None.
        audit: random ops seen when the variant failed (see :func:`audit_rng`), else None.
        audit_preserve_rng_state: the ``preserve_rng_state`` the audit judged the ops for.
        not_applicable: why the variant was not run (e.g. keyword arguments and the reentrant
            variant), else None; such a variant counts as ok.
        recomputations: ``{region: times recomputed}`` for a whole model: each region is the
            parent of the outermost submodules that ran again during backward (a transformers
            decoder layer, a ``CheckpointWrapper``), named as in the plain model.
    """

    variant: dict[str, Any]
    label: str
    differences: list[Difference]
    suggestions: list[Suggestion]
    calls: int
    reference_calls: int
    warnings: list[str]
    other_warnings: list[str]
    error: BaseException | None = None
    audit: list[RngRecord] | None = None
    not_applicable: str | None = None
    recomputations: dict[str, int] | None = None
    audit_preserve_rng_state: bool = True

    @property
    def ok(self) -> bool:
        """True when nothing differs from the reference (or the variant is not applicable)."""
        return not self.differences

    def _ran(self) -> str:
        if self.recomputations is not None:
            if not self.recomputations:
                return "no region recomputed"
            items = list(self.recomputations.items())
            text = ", ".join(f"{k or '(model)'} x{v}" for k, v in items[:6])
            more = f" and {len(items) - 6} more" if len(items) > 6 else ""
            return f"regions recomputed: {text}{more}"
        return f"function ran {_times(self.calls)}, reference {_times(self.reference_calls)}"

    def describe(self, index: int, total: int) -> str:
        head = f"variant {index} of {total}: {self.label}"
        if self.not_applicable:
            return f"{head} -- {self.not_applicable}"
        if self.ok:
            return f"{head} -- ok ({self._ran()})"
        lines = [f"{head} -- FAILED", f"  {self._ran()}"]
        lines.append("  differences:")
        lines += [f"    - {line}" for line in group_differences(self.differences)]
        if self.audit:
            ops = sorted({f"{r.op} on {r.device} ({'preserved' if r.preserved else 'NOT preserved'})" for r in self.audit})
            shown = "; ".join(ops[:8]) + (f"; and {len(ops) - 8} more" if len(ops) > 8 else "")
            lines.append(f"  random ops seen (audit_rng, preserve_rng_state={self.audit_preserve_rng_state}): " + shown)
        if self.suggestions:
            lines.append("  likely cause:")
            lines += [f"    - {s.describe()}" for s in self.suggestions]
        return "\n".join(lines)


#: more differences of one kind than this are summarised in one line
GROUP_AFTER = 6

_KIND_WORDS = {
    "output": "outputs",
    "input_grad": "input gradients",
    "param_grad": "parameter gradients",
    "buffer": "buffers",
    "rng": "generator states",
    "python_state": "Python values",
    "module_attr": "module attributes",
    "input_state": "input values",
    "warning": "warnings",
    "error": "errors",
}


def _owner(d: Difference) -> str:
    name = d.name
    for prefix in ("grad of ", "buffer ", "attribute "):
        if name.startswith(prefix):
            name = name[len(prefix):]
    return name.rsplit(".", 1)[0] if "." in name else "(top level)"


def group_differences(differences: list[Difference]) -> list[str]:
    """One line per difference, or per kind when a kind has more than :data:`GROUP_AFTER`.

    A group reads e.g. ``54 BatchNorm buffers in 18 layers differ (running_mean, running_var,
    num_batches_tracked); largest: buffer 0.1.running_var: max abs diff 0.31``.
    """
    by_kind: dict[str, list[Difference]] = {}
    for d in differences:
        by_kind.setdefault(d.kind, []).append(d)
    lines: list[str] = []
    for kind, items in by_kind.items():
        if len(items) <= GROUP_AFTER:
            lines += [d.describe() for d in items]
            continue
        owners = {_owner(d) for d in items}
        leaves = sorted({d.name.rsplit(".", 1)[-1] for d in items})
        bn = kind == "buffer" and all(leaf in BN_BUFFERS for leaf in leaves)
        what = "BatchNorm buffers" if bn else _KIND_WORDS.get(kind, kind)
        where = f" in {len(owners)} layers" if bn else f" in {len(owners)} modules" if len(owners) > 1 else ""
        names = ", ".join(leaves[:5]) + (", ..." if len(leaves) > 5 else "")
        line = f"{len(items)} {what}{where} differ ({names})"
        sized = [d for d in items if d.max_abs is not None]
        if sized:
            top = max(sized, key=lambda d: d.max_abs or 0.0)
            line += f"; largest: {top.describe()}"
        else:
            line += f"; first: {items[0].describe()}"
        lines.append(line)
    return lines


@dataclass
class EquivalenceReport:
    """All variants checked by :func:`assert_checkpoint_equivalent`.

    Attributes:
        results: one :class:`VariantResult` per variant, in the given order.
        rtol, atol: the tolerances used for floating-point tensors; None: those of each
            tensor's dtype (:data:`ckptlint.runtime.compare.DTYPE_TOLERANCES`).
        notes: what the check could not prove, e.g. ``"eval mode: ..."``, ``"no random op
            ..."``, ``"the checkpointed step never recomputed ..."``; empty when nothing to say.
    """

    results: list[VariantResult]
    rtol: float | None
    atol: float | None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every variant matches the reference."""
        return all(r.ok for r in self.results)

    def __str__(self) -> str:
        failed = sum(not r.ok for r in self.results)
        n = len(self.results)
        head = (
            f"checkpoint changes the step in {failed} of {n} variants"
            if failed
            else f"checkpoint is equivalent to the plain step in all {n} variants"
        )
        head += f" (reference: the same step without checkpoint; {tolerance_text(self.rtol, self.atol)})"
        lines = [head] + [r.describe(i, n) for i, r in enumerate(self.results, 1)]
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def tolerance_text(rtol: float | None, atol: float | None) -> str:
    """``rtol=1e-05, atol=1e-06``; a tolerance left None reads "of each tensor's dtype"."""
    if rtol is not None and atol is not None:
        return f"rtol={rtol:g}, atol={atol:g}"
    given = ", ".join(f"{k}={v:g}" for k, v in (("rtol", rtol), ("atol", atol)) if v is not None)
    return "tolerances of each tensor's dtype as in torch.testing.assert_close (float32: rtol=1.3e-06, atol=1e-05)" + (
        f", {given}" if given else ""
    )


class CheckpointMismatch(AssertionError):
    """Raised by :func:`assert_checkpoint_equivalent` when a checkpointed step differs.

    Attributes:
        report: the full :class:`EquivalenceReport` (passing variants included).
        results: the failing :class:`VariantResult` objects.
        differences: every :class:`Difference` of the failing variants (each has ``.variant``
            set to the variant's label).
        rule_codes: the set of suggested rule codes, e.g. ``{"CKP203"}``.
    """

    def __init__(self, report: EquivalenceReport) -> None:
        self.report = report
        self.results = [r for r in report.results if not r.ok]
        self.notes = list(report.notes)
        self.differences = []
        for r in self.results:
            for d in r.differences:
                d.variant = r.label
                self.differences.append(d)
        self.suggestions = [s for r in self.results for s in r.suggestions]
        self.rule_codes = {s.code for s in self.suggestions if s.code}
        super().__init__(str(report))

"""Rule metadata as data: the one source of truth for every rule's code, name, summary,
severity, fix availability and default selection.

This module imports nothing beyond the standard library (no libcst), so selection, cached
runs, the output formats, ``--statistics``, ``--explain``/``--list-rules``, SARIF rule
descriptors and the language server read a rule's metadata without importing the rules (the
rule classes in :mod:`ckptlint.rules` take theirs from here). After ruff's ``codes.rs``.

Adding a rule: add its :class:`RuleInfo` to :data:`RULES`, write the class in
``ckptlint/rules/ckpNNN_<name>.py`` with ``code = "CKPNNN"`` (found there by
:mod:`ckptlint.rules.discovery`), and write ``rules/CKPNNN.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = [
    "IO_ERROR",
    "OFF_BY_DEFAULT",
    "REGION_RULES",
    "RULES",
    "RULE_CODES",
    "SYNTAX_ERROR",
    "UNUSED_NOQA",
    "FixAvailability",
    "RuleInfo",
    "Severity",
    "rule_info",
    "rule_name",
    "severity_of",
]


class Severity(str, Enum):
    """``error``: the code raises or computes wrong values; ``warning``: it works today but
    is fragile, slow or deprecated."""

    ERROR = "error"
    WARNING = "warning"


class FixAvailability(str, Enum):
    """Whether a rule's findings carry a fix: never, for some findings, or for every one
    (the rule's ``INVALID`` examples are checked against it)."""

    NONE = "none"
    SOMETIMES = "sometimes"
    ALWAYS = "always"


@dataclass(frozen=True)
class RuleInfo:
    """One rule's metadata.

    Attributes:
        code: ``CKPNNN``.
        name: kebab-case name (``checkpoint-without-use-reentrant``).
        summary: one line, Markdown code spans allowed.
        severity: see :class:`Severity`.
        fix_availability: see :class:`FixAvailability`.
        default_enabled: whether a default selection runs it (CKP901 is opt-in, like RUF100).
        region: whether it reports in code a checkpoint recomputes (the RNG and outer-state
            rules, and the home-made recompute implementations): one line of shared code can be
            reached by many sites, and the run reports it once (``engine.RunResult.diagnostics``).
    """

    code: str
    name: str
    summary: str
    severity: Severity = Severity.WARNING
    fix_availability: FixAvailability = FixAvailability.NONE
    default_enabled: bool = True
    region: bool = False


_E, _W = Severity.ERROR, Severity.WARNING
_NEVER, _SOMETIMES, _ALWAYS = FixAvailability.NONE, FixAvailability.SOMETIMES, FixAvailability.ALWAYS

_INFOS: tuple[RuleInfo, ...] = (
    RuleInfo(
        "CKP001",
        "checkpoint-without-use-reentrant",
        "Checkpoint call without `use_reentrant`: the legacy reentrant variant runs",
        _W,
        _SOMETIMES,
    ),
    RuleInfo(
        "CKP002",
        "reentrant-incompatible-argument",
        "Checkpoint argument that the variant in use rejects (raises) or silently ignores",
        _E,
        _SOMETIMES,
    ),
    RuleInfo(
        "CKP003",
        "misspelled-checkpoint-option",
        "Keyword that looks like a misspelled checkpoint option (`use_reentrent`, `preserve_rng`)",
        _W,
        _SOMETIMES,
    ),
    RuleInfo(
        "CKP004",
        "deprecated-checkpointing-alias",
        "transformers' deprecated `gradient_checkpointing*` names where the project's transformers has `activation_checkpointing*`",
        _W,
        _SOMETIMES,
    ),
    RuleInfo(
        "CKP005",
        "reentrant-checkpoint-not-needed",
        "Explicit `use_reentrant=True` where nothing in the recomputed region needs the legacy variant",
        _W,
        _ALWAYS,
        default_enabled=False,
    ),
    RuleInfo(
        "CKP101",
        "rng-state-not-preserved",
        "`preserve_rng_state=False` while the recomputed region draws random numbers",
        _E,
        _SOMETIMES,
        region=True,
    ),
    RuleInfo(
        "CKP102",
        "random-op-on-unpreserved-device",
        "Random op on a device whose RNG state the checkpoint does not stash",
        _E,
        region=True,
    ),
    RuleInfo(
        "CKP103",
        "unpreserved-random-source",
        "Python `random`, NumPy or an explicit `torch.Generator` in a recomputed region",
        _E,
        region=True,
    ),
    RuleInfo(
        "CKP104",
        "recompute-without-rng-restore",
        "Home-made recompute `autograd.Function` re-runs its callable without restoring the RNG state",
        _E,
        region=True,
    ),
    RuleInfo(
        "CKP105",
        "recompute-without-autocast-restore",
        "Home-made recompute `autograd.Function` re-runs its callable without the autocast state of forward",
        _W,
        region=True,
    ),
    RuleInfo(
        "CKP201",
        "recompute-reads-mutable-global",
        "Recomputed region reads module-level or closure state that changes",
        _E,
        region=True,
    ),
    RuleInfo(
        "CKP202",
        "side-effect-in-recompute",
        "Recomputed region writes outer state (globals, `self` attributes, caches, buffers)",
        _E,
        region=True,
    ),
    RuleInfo(
        "CKP203",
        "batchnorm-in-checkpoint",
        "BatchNorm-like layer in a checkpointed region: running statistics update twice",
        _E,
        region=True,
    ),
    RuleInfo(
        "CKP301",
        "checkpoint-used-as-save",
        "Activation checkpoint called to save training state: recomputation stores nothing",
        _E,
        _SOMETIMES,
    ),
    RuleInfo(
        "CKP302",
        "checkpoint-module-called",
        "The `torch.utils.checkpoint` module called like a function (TypeError)",
        _E,
        _SOMETIMES,
    ),
    RuleInfo(
        "CKP303",
        "distributed-checkpoint-misuse",
        "`torch.distributed.checkpoint` given a module or a positional path, or `load()`'s None used",
        _E,
    ),
    RuleInfo(
        "CKP304",
        "checkpoint-without-grad",
        "Checkpoint called under `torch.no_grad()`/`inference_mode()`: nothing to recompute",
        _W,
    ),
    RuleInfo(
        "CKP901",
        "unused-noqa",
        "A `# noqa: CKPxxx` directive that suppresses nothing",
        _W,
        _ALWAYS,
        default_enabled=False,
    ),
    RuleInfo(
        "CKP902",
        "io-error",
        "ckptlint could not read, decode, parse or write this file; it was not checked",
        _E,
    ),
    RuleInfo(
        "CKP999",
        "syntax-error",
        "The file does not parse (ckptlint cannot check it) or Python cannot compile it",
        _E,
    ),
)

#: Every rule's metadata by code, ordered by code.
RULES: dict[str, RuleInfo] = {info.code: info for info in sorted(_INFOS, key=lambda i: i.code)}

#: Every rule code, sorted.
RULE_CODES: tuple[str, ...] = tuple(RULES)

#: Rules a default selection leaves off (like ruff's RUF100, unused-noqa is opt-in).
OFF_BY_DEFAULT: frozenset[str] = frozenset(code for code, info in RULES.items() if not info.default_enabled)

#: Rules that report in code a checkpoint recomputes, merged per line by the run
#: (see :attr:`RuleInfo.region`).
REGION_RULES: frozenset[str] = frozenset(code for code, info in RULES.items() if info.region)

SYNTAX_ERROR = "CKP999"
IO_ERROR = "CKP902"
UNUSED_NOQA = "CKP901"


def rule_info(code: str) -> RuleInfo | None:
    """The metadata of ``code`` (case-insensitive), or ``None`` for an unknown code."""
    return RULES.get(code.upper())


def severity_of(code: str) -> str:
    """``"error"`` for a rule whose severity is ERROR (the code raises or computes wrong
    values), else ``"warning"`` (unknown codes too)."""
    info = RULES.get(code)
    return "error" if info is not None and info.severity is Severity.ERROR else "warning"


def rule_name(code: str) -> str:
    """The rule's kebab-case name, or ``code`` itself for an unknown code."""
    info = RULES.get(code)
    return info.name if info is not None else code

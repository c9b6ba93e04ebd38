"""The registry of rules, ordered by code.

Adding a rule: add its metadata to :mod:`ckptlint.registry`, write
``ckptlint/rules/ckpNNN_<name>.py`` with a :class:`~ckptlint.rules.base.Rule` subclass, list it
in ``_RULE_CLASSES`` and write ``rules/CKPNNN.md``; the tests check that every registered rule
has its page and that the README's table matches.
"""

from __future__ import annotations

from ckptlint.registry import IO_ERROR, RULE_CODES, SYNTAX_ERROR, UNUSED_NOQA
from ckptlint.rules.base import FixAvailability, Invalid, Rule, RuleContext, Severity
from ckptlint.rules.ckp001_use_reentrant import CheckpointWithoutUseReentrant
from ckptlint.rules.ckp002_reentrant_incompatible_argument import (
    ReentrantIncompatibleArgument,
)
from ckptlint.rules.ckp003_misspelled_checkpoint_option import (
    MisspelledCheckpointOption,
)
from ckptlint.rules.ckp004_deprecated_checkpointing_alias import DeprecatedCheckpointingAlias
from ckptlint.rules.ckp101_rng_state_not_preserved import RngStateNotPreserved
from ckptlint.rules.ckp102_random_op_on_unpreserved_device import (
    RandomOpOnUnpreservedDevice,
)
from ckptlint.rules.ckp103_unpreserved_random_source import UnpreservedRandomSource
from ckptlint.rules.ckp104_recompute_without_rng_restore import (
    RecomputeWithoutRngRestore,
)
from ckptlint.rules.ckp105_recompute_without_autocast_restore import (
    RecomputeWithoutAutocastRestore,
)
from ckptlint.rules.ckp201_recompute_reads_mutable_global import (
    RecomputeReadsMutableGlobal,
)
from ckptlint.rules.ckp202_side_effect_in_recompute import SideEffectInRecompute
from ckptlint.rules.ckp203_batchnorm_in_checkpoint import BatchNormInCheckpoint
from ckptlint.rules.ckp301_checkpoint_used_as_save import CheckpointUsedAsSave
from ckptlint.rules.ckp302_checkpoint_module_called import CheckpointModuleCalled
from ckptlint.rules.ckp303_distributed_checkpoint_misuse import (
    DistributedCheckpointMisuse,
)
from ckptlint.rules.ckp304_checkpoint_without_grad import CheckpointWithoutGrad
from ckptlint.rules.ckp901_unused_noqa import UnusedNoqa
from ckptlint.rules.ckp902_io_error import IoError
from ckptlint.rules.ckp999_syntax_error import SyntaxErrorRule

__all__ = [
    "ALL_RULES",
    "IO_ERROR",
    "SYNTAX_ERROR",
    "UNUSED_NOQA",
    "FixAvailability", 
    "Invalid",
    "Rule",
    "RuleContext",
    "Severity",
    "rule_by_code",
]

_RULE_CLASSES: tuple[type[Rule], ...] = (
    CheckpointWithoutUseReentrant,
    ReentrantIncompatibleArgument,
    MisspelledCheckpointOption,
    DeprecatedCheckpointingAlias,
    CheckpointUsedAsSave,
    CheckpointModuleCalled,
    DistributedCheckpointMisuse,
    CheckpointWithoutGrad,
    RngStateNotPreserved,
    RandomOpOnUnpreservedDevice,
    UnpreservedRandomSource,
    RecomputeWithoutRngRestore,
    RecomputeWithoutAutocastRestore,
    RecomputeReadsMutableGlobal,
    SideEffectInRecompute,
    BatchNormInCheckpoint,
    UnusedNoqa,
    IoError,
    SyntaxErrorRule,
)

ALL_RULES: dict[str, type[Rule]] = {cls.code: cls for cls in sorted(_RULE_CLASSES, key=lambda c: c.code)}

assert tuple(ALL_RULES) == RULE_CODES, "ckptlint/registry.py must list every registered rule"


def rule_by_code(code: str) -> type[Rule] | None:
    """The rule class for ``code`` (case-insensitive), or ``None``."""
    return ALL_RULES.get(code.upper())

"""Facts about home-made recompute implementations (``torch.autograd.Function`` subclasses)
that reading their code does not give: rows of the API table for implementations met in
projects, keyed by the class's qualified name, each with the source it was checked in."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["KNOWN_IMPLEMENTATIONS", "RNG_NAMES", "RNG_WORDS", "KnownImplementation", "known_implementation", "names_rng"]

#: Words in the name of a call that saves or restores RNG state in a home-made recompute
#: (``torch.get_rng_state``, ``torch.manual_seed``, ``np.random.get_state``'s ``random_state``)...
RNG_WORDS = ("rng", "seed", "random_state")
#: ...and whole names that do (an RNG tracker's ``get_states``/``set_states``/``fork``, Python's
#: ``random.getstate`` spelled ``get_state``).
RNG_NAMES = frozenset({"get_states", "set_states", "fork", "set_state", "get_state"})


def names_rng(name: str) -> bool:
    """Whether a called name (its last part) saves, restores or forks RNG state."""
    name = name.lower()
    return any(word in name for word in RNG_WORDS) or name in RNG_NAMES


@dataclass(frozen=True)
class KnownImplementation:
    """One home-made implementation of a project.

    Attributes:
        qualified_name: the class, as the linted tree names it.
        rng_restored: the RNG states its ``backward`` restores before the recompute (as
            :attr:`ckptlint.facts.apis.CheckpointApi.rng_restored`; ``"tracker"``: the
            model-parallel RNG tracker's states).
        source: where the facts were checked (file:line of the extract).
    """

    qualified_name: str
    rng_restored: tuple[str, ...]
    source: str


KNOWN_IMPLEMENTATIONS: tuple[KnownImplementation, ...] = (
    KnownImplementation(
        qualified_name="megatron.mpu.random.CheckpointFunction",
        rng_restored=("cpu", "cuda", "tracker"),
        source=(
            "Megatron-DeepSpeed megatron/mpu/random.py:250-324: forward saves the CPU, CUDA and "
            "get_cuda_rng_tracker().get_states() states (262-264), backward sets them before the "
            "recompute (299-301) and restores the backward-time states after it (309-311); "
            "checkpoint(function, *args) at 321-324 returns CheckpointFunction.apply, exported as "
            "megatron.mpu.checkpoint (megatron/mpu/__init__.py:58)"
        ),
    ),
)


def known_implementation(qualified_name: str) -> KnownImplementation | None:
    """The row of ``qualified_name`` (exact, or the same module path under a shorter or longer
    package prefix, as when the tree is linted from another root), or ``None``."""
    for row in KNOWN_IMPLEMENTATIONS:
        if qualified_name == row.qualified_name or qualified_name.endswith("." + row.qualified_name):
            return row
        if row.qualified_name.endswith("." + qualified_name) and qualified_name.count(".") >= 2:
            return row
    return None

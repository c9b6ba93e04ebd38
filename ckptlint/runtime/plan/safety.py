"""Why a block must not be checkpointed, decided while the model runs.

* **running statistics**: a BatchNorm-like layer (``_NormBase`` with ``track_running_stats``)
  in training mode updates ``running_mean``/``running_var`` in every forward; a checkpointed
  block runs its forward twice, so the statistics move twice per step (rule CKP203). Frozen
  (eval-mode) norms and ``track_running_stats=False`` are safe.
* **state writes**: the block's forward changed a buffer (``_version`` or the object) or a plain
  attribute of one of its modules; the recomputation writes it again.
* **random ops checkpoint does not replay**: the random draws the block made in the measured
  step, judged as :func:`ckptlint.runtime.audit_rng` judges them for the inputs the block
  received (explicit ``torch.Generator``, Python ``random``, NumPy, a device whose RNG is not
  stashed, rules CKP101-CKP103; see :mod:`ckptlint.runtime.plan.measure`).
* **never run**: the forward of the step did not call the block.
"""

from __future__ import annotations

from dataclasses import dataclass

from .measure import BlockMeasurement

__all__ = ["REMEDIES", "Verdict", "judge"]

#: what makes a block of each kind of reason safe
REMEDIES = {
    "running statistics": (
        "freeze the norms (put them in eval mode: module.eval() on each BatchNorm, or "
        "track_running_stats=False), or compensate the momentum for the second forward "
        "(momentum m -> 1 - sqrt(1 - m)), or replace BatchNorm with GroupNorm/LayerNorm"
    ),
    "state writes": "move the state update out of the block's forward, or make it idempotent",
    "random ops": (
        "draw from the default generator of the device the block's positional inputs live on "
        "(not an explicit torch.Generator, Python random or NumPy), with preserve_rng_state=True"
    ),
    "never run": "pass candidates= that the forward calls",
}


@dataclass(frozen=True)
class Verdict:
    """Whether a block may be checkpointed.

    Attributes:
        safe: True when nothing was found.
        kind: one of the keys of :data:`REMEDIES`, or ``""`` when safe.
        reason: the finding, in words (names the module, buffer, attribute or op).
    """

    safe: bool
    kind: str = ""
    reason: str = ""


def _rng_verdict(block: BlockMeasurement) -> Verdict | None:
    bad = [r for r in block.random_ops if not r.preserved]
    if not bad:
        return None
    first = bad[0]
    more = f" (+{len(bad) - 1} more)" if len(bad) > 1 else ""
    return Verdict(False, "random ops", f"{first.op} on {first.device}: {first.reason} [{first.rule}]{more}")


def judge(blocks: list[BlockMeasurement]) -> dict[str, Verdict]:
    """A :class:`Verdict` per block name, from what the measurement saw the block do."""
    out: dict[str, Verdict] = {}
    for b in blocks:
        if b.calls == 0:
            out[b.name] = Verdict(False, "never run", "the forward of the step never called it")
        elif b.training_norms:
            stats = [n for n in b.changed_buffers if n.rsplit(".", 1)[-1] in ("running_mean", "running_var", "num_batches_tracked")]
            seen = f"; changed {', '.join(stats[:3])}" if stats else ""
            out[b.name] = Verdict(
                False, "running statistics",
                f"{', '.join(b.training_norms[:3])} {'updates' if len(b.training_norms) == 1 else 'update'} "
                f"running statistics in training mode{seen} [CKP203]",
            )
        elif b.changed_buffers or b.changed_attributes:
            what = [f"buffer {n}" for n in b.changed_buffers] + [f"attribute {n}" for n in b.changed_attributes]
            out[b.name] = Verdict(False, "state writes", "its forward writes " + ", ".join(what[:4]) + " [CKP202]")
        elif (rng := _rng_verdict(b)) is not None:
            out[b.name] = rng
        else:
            out[b.name] = Verdict(True)
    return out

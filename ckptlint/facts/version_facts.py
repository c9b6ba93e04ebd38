"""Facts about libraries that hold in some versions only, as data rows.

Each row names the library, the range of versions it holds in (a PEP 440 specifier set), what
holds, and the source it was read from (file and lines at each version checked). A rule asks
:func:`ckptlint.facts.versions.decide` where the project's declared range lies against a
row's range: inside (every allowed version behaves so), partly (the finding names the
versions), outside, or undeclared (the rule keeps its behaviour without declarations).

Ranges end where checking ended: a row read in 5.0.0 and 5.24.0 says ``>=5.0`` (the releases
after 5.24.0 are assumed to keep the behaviour until a release is checked that does not).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from ckptlint.facts.versions import VersionRange, specifier_range

__all__ = [
    "CONDA_NAMES",
    "HF_ACTIVATION_CHECKPOINTING_API",
    "HF_CHECKPOINTING_KWARGS",
    "HF_DEFAULT_NON_REENTRANT",
    "HF_DEFAULT_REENTRANT",
    "PEFT_KBIT_EMPTY_KWARGS",
    "TIMM_CHECKPOINT_REENTRANT",
    "TRACKED_LIBRARIES",
    "VERSION_FACTS",
    "VersionFact",
]

#: The libraries whose declared versions are read (normalised names, PEP 503); conda's
#: package names that differ map to them in :data:`CONDA_NAMES`.
TRACKED_LIBRARIES = ("torch", "transformers", "diffusers", "accelerate", "peft", "trl", "deepspeed", "timm")

#: conda package names of the tracked libraries that differ from their PyPI names.
CONDA_NAMES = {"pytorch": "torch", "pytorch-gpu": "torch", "pytorch-cpu": "torch"}


@dataclass(frozen=True)
class VersionFact:
    """One version-dependent fact.

    Attributes:
        key: a short identifier (``"hf-default-reentrant"``).
        library: the library's normalised name.
        specifiers: the versions it holds in (PEP 440, ``packaging`` syntax).
        holds: what holds there, in words.
        source: the library's file and lines, per version checked.
    """

    key: str
    library: str
    specifiers: str
    holds: str
    source: str

    @cached_property
    def range(self) -> VersionRange:
        return specifier_range(self.specifiers)


HF_DEFAULT_REENTRANT = VersionFact(
    key="hf-default-reentrant",
    library="transformers",
    specifiers="<5.0",
    holds=(
        "`gradient_checkpointing_enable()` without `gradient_checkpointing_kwargs` (and `TrainingArguments("
        "gradient_checkpointing=True)`, which Trainer forwards to it) runs the legacy reentrant checkpoint"
    ),
    source=(
        "transformers modeling_utils.py PreTrainedModel.gradient_checkpointing_enable: 4.57.1 lines 3691-3692 "
        '(kwargs None -> {"use_reentrant": True}, since huggingface/transformers#28538, 4.37); 4.36.0 lines '
        "2015-2048 (no default: torch's omitted use_reentrant, reentrant); before 4.35 no kwargs (the model's "
        "own checkpoint calls); trainer.py 4.57.1 line 2447 forwards TrainingArguments' kwargs"
    ),
)

HF_DEFAULT_NON_REENTRANT = VersionFact(
    key="hf-default-non-reentrant",
    library="transformers",
    specifiers=">=5.0",
    holds=(
        "`gradient_checkpointing_enable()` / `activation_checkpointing_enable()` without kwargs (and "
        'TrainingArguments\' checkpointing switch) run `checkpoint(..., use_reentrant=False)`'
    ),
    source=(
        'transformers modeling_utils.py: 5.0.0 lines 3098-3099 (kwargs None -> {"use_reentrant": False}, '
        "huggingface/transformers#43203); 5.24.0 lines 3157-3158 (_activation_checkpointing_enable), "
        "trainer.py 5.24.0 lines 1503-1527 (activation_checkpointing_kwargs or None)"
    ),
)

HF_ACTIVATION_CHECKPOINTING_API = VersionFact(
    key="hf-activation-checkpointing-api",
    library="transformers",
    specifiers=">=5.24",
    holds=(
        "`activation_checkpointing_enable(activation_checkpointing_kwargs=None, every_n_layers=1, offload=False)` "
        "and `TrainingArguments(activation_checkpointing=..., activation_checkpointing_kwargs=...)` exist; "
        "`gradient_checkpointing_enable(gradient_checkpointing_kwargs=None, **kwargs)`, `gradient_checkpointing` "
        "and `gradient_checkpointing_kwargs` are their deprecated aliases (FutureWarning, removed in v6)"
    ),
    source=(
        "transformers 5.24.0 modeling_utils.py lines 3119-3149 (activation_checkpointing_enable), 3200-3216 "
        "(gradient_checkpointing_enable: FutureWarning, then activation_checkpointing_enable("
        "activation_checkpointing_kwargs=gradient_checkpointing_kwargs, **kwargs)); training_args.py lines "
        "908-937 (the fields), 1533-1545 (__post_init__: the old names used when the new one is unset, "
        "FutureWarning); 5.0.0 has gradient_checkpointing_enable only (the first release with the new name, "
        "between 5.0.0 and 5.24.0, was not pinned down, so the row starts at the release checked)"
    ),
)

HF_CHECKPOINTING_KWARGS = VersionFact(
    key="hf-gradient-checkpointing-kwargs",
    library="transformers",
    specifiers=">=4.35",
    holds=(
        "`gradient_checkpointing_enable(gradient_checkpointing_kwargs=None)` and `TrainingArguments("
        "gradient_checkpointing_kwargs=...)` exist; before 4.35 the method takes no argument (passing "
        "the keyword raises TypeError) and the models' own checkpoint calls choose the variant"
    ),
    source=(
        "transformers wheels from PyPI: 4.35.0 modeling_utils.py lines 1850-1872 (`def gradient_checkpointing_enable("
        "self, gradient_checkpointing_kwargs=None)`, `functools.partial(checkpoint, **gradient_checkpointing_kwargs)`), "
        "training_args.py line 1137 (`gradient_checkpointing_kwargs: dict = field(default=None, ...)`); 4.34.1 "
        "modeling_utils.py line 1819 (`def gradient_checkpointing_enable(self):`, then "
        "`self.apply(partial(self._set_gradient_checkpointing, value=True))`), no such field in training_args.py"
    ),
)

TIMM_CHECKPOINT_REENTRANT = VersionFact(
    key="timm-checkpoint-seq-reentrant",
    library="timm",
    specifiers="<1.0.13",
    holds=(
        "`timm.models.checkpoint_seq(functions, x, every=1, flatten=False, skip_last=False, "
        "preserve_rng_state=True)` calls torch's `checkpoint(..., preserve_rng_state=...)` without "
        "`use_reentrant` (torch warns and runs the reentrant variant) and takes no `use_reentrant` (passing it "
        "raises TypeError); `timm.models` has no `checkpoint` of its own (`timm.models._manipulate.checkpoint` is "
        "torch's, imported). From 1.0.13 both take `use_reentrant=None`, which reads "
        "`timm.layers.use_reentrant_ckpt()`: False unless `TIMM_REENTRANT_CKPT` is set or "
        "`set_reentrant_ckpt(True)` was called"
    ),
    source=(
        "huggingface/pytorch-image-models tags: v0.6.5 to v1.0.12 timm/models/_manipulate.py (helpers.py before "
        "0.9) line 10 `from torch.utils.checkpoint import checkpoint`, v1.0.12 lines 186-250 (`x = checkpoint("
        "run_function(start, end, functions), x, preserve_rng_state=preserve_rng_state)`); v1.0.13 (2025-01-09) "
        "lines 189-208 (`def checkpoint(function, *args, use_reentrant=None, **kwargs)`), 211-281 (`checkpoint_seq(..., "
        "use_reentrant=None)`, `torch.utils.checkpoint.checkpoint(..., use_reentrant=use_reentrant)`), "
        "timm/layers/config.py lines 38-41 and 159-165; unchanged to v1.0.28"
    ),
)

PEFT_KBIT_EMPTY_KWARGS = VersionFact(
    key="peft-kbit-empty-kwargs",
    library="peft",
    specifiers=">=0.6",
    holds=(
        "`prepare_model_for_kbit_training(model, use_gradient_checkpointing=True, gradient_checkpointing_kwargs=None)` "
        "turns kwargs None into `{}` and, for a quantized model, calls `model.gradient_checkpointing_enable("
        "gradient_checkpointing_kwargs={})` where the method takes the keyword (transformers 4.35 and later), so "
        "transformers' own default (None -> use_reentrant True before 5.0, False from 5.0) never applies and torch's "
        "checkpoint runs without `use_reentrant` (it warns and runs reentrant); before 0.6 the function takes no "
        "kwargs and calls `gradient_checkpointing_enable()` (transformers' default decides)"
    ),
    source=(
        "huggingface/peft tags: v0.6.0 src/peft/utils/other.py lines 66, 86-87 (`if gradient_checkpointing_kwargs is "
        "None: gradient_checkpointing_kwargs = {}`), 112-129 (`_supports_gc_kwargs` from the method's signature, "
        "`model.gradient_checkpointing_enable(**gc_enable_kwargs)`); unchanged to v0.20.0 lines 183-184, 235-251; "
        "v0.5.0 lines 81, 115 (`model.gradient_checkpointing_enable()`); transformers 5.24.0 modeling_utils.py "
        "_activation_checkpointing_enable (`if activation_checkpointing_kwargs is None:`, so `{}` is kept)"
    ),
)

VERSION_FACTS = (
    HF_DEFAULT_REENTRANT,
    HF_DEFAULT_NON_REENTRANT,
    HF_ACTIVATION_CHECKPOINTING_API,
    HF_CHECKPOINTING_KWARGS,
    TIMM_CHECKPOINT_REENTRANT,
    PEFT_KBIT_EMPTY_KWARGS,
)

"""CKP003 misspelled-checkpoint-option: the closeness tiers, fixes, and how it combines with
CKP001/CKP002 under ``--fix --unsafe-fixes``; a keyword the checkpointed module's ``forward``
accepts is no misspelling."""

from __future__ import annotations

import pytest

from ckptlint.api import fix_source, lint_source
from ckptlint.testing import findings, located
from ckptlint.text.diagnostics import Applicability

IMPORT = "from torch.utils.checkpoint import checkpoint\n"


@pytest.mark.parametrize(
    ("written", "value", "option"),
    [
        ("use_reentrent", "False", "use_reentrant"),  # ratio 0.92: any value
        ("use_reentrance", "flag", "use_reentrant"),
        ("reentrant", "False", "use_reentrant"),  # 0.82: needs a bool literal
        ("preserve_rng", "False", "preserve_rng_state"),  # 0.80
        ("preserve_rng_states", "keep", "preserve_rng_state"),  # 0.97
        ("preserve_rng_sate", "False", "preserve_rng_state"),
        ("determinism", "'none'", "determinism_check"),  # 0.79: needs "default"/"none"
        ("determinism_chek", "mode", "determinism_check"),
        ("early_stopping", "False", "early_stop"),  # 0.83: needs a bool literal
        ("earlystop", "False", "early_stop"),
        ("contextfn", "ctx", "context_fn"),  # 0.95
        ("context", "functools.partial(create_selective_checkpoint_contexts, policy)", "context_fn"),
        ("context", "lambda: (a, b)", "context_fn"),
        ("debg", "True", "debug"),
    ],
)
def test_misspellings_are_reported_with_an_unsafe_rename(written: str, value: str, option: str) -> None:
    src = "import functools\n" + IMPORT + f"y = checkpoint(f, x, use_reentrant=False, {written}={value})\n"
    if option == "use_reentrant":
        src = "import functools\n" + IMPORT + f"y = checkpoint(f, x, {written}={value})\n"
    (d,) = findings(src, "CKP003")
    column = src.splitlines()[2].index(written) + 1
    assert (d.start, d.end) == ((3, column), (3, column + len(written)))
    assert d.message.startswith(f"`{written}` looks like a misspelling of the checkpoint option `{option}`: ")
    assert d.message.endswith(f"; rename the keyword to `{option}`")
    assert d.fix is not None and d.fix.applicability is Applicability.UNSAFE
    assert fix_source(src, unsafe=True, select=["CKP003"]) == src.replace(f"{written}=", f"{option}=")


#: Real keyword/parameter names from the corpus repositories (diffusers, fairseq, timm,
#: DeepSpeed) whose difflib ratio to an option is >= 0.7, passed the way real code passes
#: function arguments (variables). None may be reported.
CORPUS_NAMES = [
    "eos_early_stop",  # 0.83, contains the option: another name
    "early_stopping",  # 0.83 with a variable value
    "context",  # 0.82 (cross-attention context in diffusion models)
    "context_name",
    "context_dim",
    "context_window",
    "context_length",
    "context_in_dim",
    "context_config",
    "deterministic",  # 0.73
    "prev_conv_state",
    "prev_attn_state",
    "context_mask",
    "content_feat",
    "context_latents",
    "context_encoder",
    "score_context_func",
    "early_stop_epsilon",
    "debug_log",
    "preserve_grad",
    "content",
    "ar_step",
    "early_exit",
    "collate_fn",
    "context_pre_only",
    "use_real",
    "rng_state",
    "use_cache",
    "output_attentions",
    "encoder_hidden_states",
]


@pytest.mark.parametrize("name", CORPUS_NAMES)
def test_real_argument_names_are_not_reported(name: str) -> None:
    assert findings(IMPORT + f"y = checkpoint(block, x, use_reentrant=False, {name}={name})\n", "CKP003") == []


def test_bool_values_do_not_make_every_near_name_a_misspelling() -> None:
    # below the weak tier even with a fitting value
    assert findings(IMPORT + "y = checkpoint(block, x, use_reentrant=False, deterministic=True)\n", "CKP003") == []
    assert findings(IMPORT + "y = checkpoint(block, x, use_reentrant=False, use_cache=False)\n", "CKP003") == []
    # a truncation whose value does not fit the option is someone's argument
    assert findings(IMPORT + "y = checkpoint(block, x, use_reentrant=False, determinism=True)\n", "CKP003") == []
    assert findings(IMPORT + "y = checkpoint(block, x, use_reentrant=False, context=ctx)\n", "CKP003") == []


def test_a_parameter_of_the_checkpointed_function_is_not_a_misspelling() -> None:
    src = IMPORT + (
        "class Block:\n"
        "    def _forward(self, x, preserve_rng=False):\n"
        "        return x\n"
        "    def forward(self, x):\n"
        "        return checkpoint(self._forward, x, use_reentrant=False, preserve_rng=True)\n"
    )
    assert findings(src, "CKP003") == []
    assert findings(IMPORT + "y = checkpoint(lambda x, reentrant: x, x, use_reentrant=False, reentrant=False)\n", "CKP003") == []


def test_option_passed_twice_gets_no_fix() -> None:
    src = IMPORT + "checkpoint(f, x, use_reentrant=True, use_reentrent=False)\n"
    (d,) = findings(src, "CKP003")
    assert d.message.endswith("; `use_reentrant` is passed as well, remove one of them")
    assert d.fix is None


def test_two_misspellings_of_one_option_get_no_fix() -> None:
    src = IMPORT + "checkpoint(f, x, use_reentrant=False, preserve_rng=False, preserve_rng_states=False)\n"
    assert [d.fix for d in findings(src, "CKP003")] == [None, None]


def test_consequence_depends_on_the_variant() -> None:
    (d,) = findings(IMPORT + "checkpoint(f, x, use_reentrant=False, preserve_rng=False)\n", "CKP003")
    assert "`preserve_rng_state` stays True, and the function gets an extra keyword" in d.message
    (d,) = findings(IMPORT + "checkpoint(f, x, use_reentrant=True, preserve_rng=False)\n", "CKP003")
    assert "the reentrant variant raises ValueError (Unexpected keyword arguments)" in d.message
    (d,) = findings(
        "import torch.utils.checkpoint as cp\ncp.checkpoint_sequential(m, 2, x, use_reentrant=False, preserve_rng=False)\n", "CKP003"
    )
    assert "it raises ValueError (Unexpected keyword arguments)" in d.message


def test_sequential_parameter_names_count_as_options() -> None:
    (d,) = findings("import torch.utils.checkpoint as cp\ncp.checkpoint_sequential(m, segment=2, input=x, use_reentrant=False)\n", "CKP003")
    assert d.message.startswith("`segment` looks like a misspelling of the checkpoint parameter `segments`")


def test_checkpoint_wrapper_options() -> None:
    src = (
        "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl, checkpoint_wrapper\n"
        "checkpoint_wrapper(block, checkpoint_implementation=CheckpointImpl.NO_REENTRANT)\n"
    )
    (d,) = findings(src, "CKP003")
    assert d.message.startswith("`checkpoint_implementation` looks like a misspelling of the checkpoint parameter `checkpoint_impl`")


def test_hf_gradient_checkpointing_kwargs_keys() -> None:
    src = 'model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrent": False})\n'
    (d,) = findings(src, "CKP003")
    column = src.index('"use_reentrent"') + 1
    assert (d.start, d.end) == ((1, column), (1, column + len('"use_reentrent"')))
    assert "transformers passes the key to torch.utils.checkpoint.checkpoint" in d.message
    assert d.message.endswith("; rename the key to `use_reentrant`")
    assert fix_source(src, unsafe=True, select=["CKP003"]) == src.replace("use_reentrent", "use_reentrant")


def test_misspelled_use_reentrant_with_ckp001_and_ckp002_gives_one_keyword() -> None:
    """CKP001 still reports (use_reentrant really is unset) but offers no fix; CKP002 does not
    count the misspelled keyword as a function keyword; CKP003's rename is the only edit."""
    src = IMPORT + "y = checkpoint(f, x, use_reentrent=False)\n"
    codes = {d.code: d for d in lint_source(src)}
    assert set(codes) == {"CKP001", "CKP003"}
    assert codes["CKP001"].fix is None
    assert "`use_reentrent` looks like a misspelling of it, see CKP003" in codes["CKP001"].message
    assert fix_source(src) == src  # the rename is unsafe: --fix alone changes nothing
    assert fix_source(src, unsafe=True) == IMPORT + "y = checkpoint(f, x, use_reentrant=False)\n"


def test_misspelled_other_option_with_ckp001_gives_both_edits() -> None:
    src = IMPORT + "y = checkpoint(f, x, preserve_rng=False)\n"
    assert fix_source(src, unsafe=True) == IMPORT + "y = checkpoint(f, x, preserve_rng_state=False, use_reentrant=False)\n"


def test_misspelled_use_reentrant_with_a_real_function_keyword() -> None:
    src = IMPORT + "y = checkpoint(f, x, mask=m, use_reentrent=False)\n"
    codes = sorted(d.code for d in lint_source(src))
    assert codes == ["CKP001", "CKP002", "CKP003"]
    assert all(d.fix is None for d in lint_source(src) if d.code != "CKP003")
    assert fix_source(src, unsafe=True) == IMPORT + "y = checkpoint(f, x, mask=m, use_reentrant=False)\n"


def test_local_checkpoint_function_is_not_judged() -> None:
    assert findings("def checkpoint(*a, **k):\n    pass\ncheckpoint(f, x, use_reentrent=False)\n", "CKP003") == []


def test_misspelled_key_in_hf_kwargs_with_ckp001_gives_one_key() -> None:
    for src in (
        'model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrent": False})\n',
        "from transformers import TrainingArguments\n"
        'args = TrainingArguments("out", gradient_checkpointing=True, gradient_checkpointing_kwargs={"use_reentrent": False})\n',
    ):
        codes = {d.code: d for d in lint_source(src)}
        assert set(codes) == {"CKP001", "CKP003"}
        assert codes["CKP001"].fix is None
        assert '"use_reentrent" looks like a misspelling of it, see CKP003' in codes["CKP001"].message
        assert fix_source(src, unsafe=True) == src.replace("use_reentrent", "use_reentrant")


def test_ckp003_keyword_that_the_module_forward_accepts() -> None:
    source = """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint


        class Block(nn.Module):
            def forward(self, x, preserve_rng_stat=False):
                return x


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()

            def forward(self, x):
                return checkpoint(self.block, x, use_reentrant=False, preserve_rng_stat=True)
        """
    assert located(source) == []
    # a forward that does not take it: still a misspelling
    assert located(source.replace("x, preserve_rng_stat=False", "x, **kwargs"), "CKP003") == [(16, "CKP003")]

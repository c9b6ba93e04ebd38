"""CKP001 for ``checkpoint_wrapper`` and the Hugging Face switches
(``gradient_checkpointing_enable``, ``TrainingArguments(gradient_checkpointing=True)``)."""

from __future__ import annotations

from textwrap import dedent

import pytest

from ckptlint.testing import findings, fix

WRAPPER_IMPORT = (
    "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl, checkpoint_wrapper\n"
    "import torch\n"
)
HF_NO_KWARGS = (
    "`gradient_checkpointing_enable()` without `gradient_checkpointing_kwargs`: transformers before 5.0 "
    'runs the legacy reentrant checkpoint; pass `gradient_checkpointing_kwargs={"use_reentrant": False}`'
)
HF_DICT = '{"use_reentrant": False}'
#: the parts of the messages that name the problem (the tests below are not about the advice)
HF_NO_KWARGS_PART = "`gradient_checkpointing_enable()` without `gradient_checkpointing_kwargs`"
HF_NO_KEY_PART = '`gradient_checkpointing_enable()`: `gradient_checkpointing_kwargs` has no "use_reentrant" key'
TA_NO_KWARGS_PART = "`TrainingArguments(gradient_checkpointing=True)` without `gradient_checkpointing_kwargs`"
TA_NO_KEY_PART = '`TrainingArguments(gradient_checkpointing=True)`: `gradient_checkpointing_kwargs` has no "use_reentrant" key'


# ---------------------------------------------------------------- checkpoint_wrapper
@pytest.mark.parametrize(
    "call",
    [
        "checkpoint_wrapper(block)",
        "checkpoint_wrapper(block, CheckpointImpl.NO_REENTRANT)",
        "checkpoint_wrapper(block, CheckpointImpl.REENTRANT)",
        "checkpoint_wrapper(block, checkpoint_impl=CheckpointImpl.REENTRANT)",
        "checkpoint_wrapper(block, checkpoint_fn=torch.utils.checkpoint.checkpoint, use_reentrant=False)",
        "checkpoint_wrapper(block, checkpoint_fn=torch.utils.checkpoint.checkpoint, use_reentrant=True)",
        "checkpoint_wrapper(block, checkpoint_fn=my_checkpoint)",
    ],
)
def test_checkpoint_wrapper_without_finding(call: str) -> None:
    assert findings(WRAPPER_IMPORT + call + "\n", "CKP001") == []


def test_checkpoint_wrapper_with_torch_checkpoint_fn_without_use_reentrant() -> None:
    source = WRAPPER_IMPORT + "wrapped = checkpoint_wrapper(block, checkpoint_fn=torch.utils.checkpoint.checkpoint)\n"
    (found,) = findings(source, "CKP001")
    assert found.start == (3, 11)
    assert found.message.startswith("`checkpoint_wrapper(checkpoint_fn=checkpoint)` without `use_reentrant`")
    assert found.fix is not None and found.fix.applicability.value == "unsafe"
    assert fix(source, "CKP001").splitlines()[2] == (
        "wrapped = checkpoint_wrapper(block, checkpoint_fn=torch.utils.checkpoint.checkpoint, use_reentrant=False)"
    )


def test_partial_of_checkpoint_wrapper_with_torch_checkpoint_fn() -> None:
    source = WRAPPER_IMPORT + dedent(
        """\
        import functools
        from torch.utils.checkpoint import checkpoint
        wrap = functools.partial(checkpoint_wrapper, checkpoint_fn=checkpoint)
        apply_activation_checkpointing(model, checkpoint_wrapper_fn=wrap)
        """
    )
    assert [d.start for d in findings(source, "CKP001")] == [(5, 8)]
    assert fix(source, "CKP001").splitlines()[4] == (
        "wrap = functools.partial(checkpoint_wrapper, checkpoint_fn=checkpoint, use_reentrant=False)"
    )


# ---------------------------------------------------------------- gradient_checkpointing_enable
def test_hf_enable_without_kwargs() -> None:
    source = "model.gradient_checkpointing_enable()\n"
    (found,) = findings(source, "CKP001")
    assert (found.start, found.end, found.message) == ((1, 1), (1, 38), HF_NO_KWARGS)
    assert found.fix is not None and found.fix.applicability.value == "unsafe"
    assert fix(source, "CKP001") == f"model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={HF_DICT})\n"


@pytest.mark.parametrize(
    ("kwargs", "after"),
    [
        ("{}", HF_DICT),
        ('{"preserve_rng_state": True}', '{"preserve_rng_state": True, "use_reentrant": False}'),
        ("dict()", None),
    ],
)
def test_hf_enable_with_dict_without_the_key(kwargs: str, after: str | None) -> None:
    source = f"model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={kwargs})\n"
    (found,) = findings(source, "CKP001")
    assert HF_NO_KEY_PART in found.message
    if after is None:
        assert found.fix is None
    else:
        assert fix(source, "CKP001") == f"model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={after})\n"


def test_hf_enable_with_none_is_the_default() -> None:
    source = "model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=None)\n"
    (found,) = findings(source, "CKP001")
    assert HF_NO_KWARGS_PART in found.message
    assert fix(source, "CKP001") == f"model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={HF_DICT})\n"


def test_hf_enable_positional_kwargs() -> None:
    source = "model.gradient_checkpointing_enable({})\nmodel.gradient_checkpointing_enable({'use_reentrant': True})\n"
    assert [d.start for d in findings(source, "CKP001")] == [(1, 1)]
    assert fix(source, "CKP001").splitlines()[0] == f"model.gradient_checkpointing_enable({HF_DICT})"


@pytest.mark.parametrize(
    "kwargs",
    ['{"use_reentrant": False}', '{"use_reentrant": True, "preserve_rng_state": False}', "kwargs", "cfg.kwargs"],
)
def test_hf_enable_not_reported(kwargs: str) -> None:
    assert findings(f"model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={kwargs})\n", "CKP001") == []


def test_hf_enable_kwargs_variable_bound_to_a_dict_literal() -> None:
    source = """\
        def setup(model):
            kwargs = {"preserve_rng_state": True}
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
        """
    (found,) = findings(source, "CKP001")
    assert HF_NO_KEY_PART in found.message
    assert found.fix is None  # the dict literal is elsewhere; not edited


# ---------------------------------------------------------------- TrainingArguments
TA = "from transformers import TrainingArguments\n"


def test_training_arguments_without_kwargs() -> None:
    source = TA + 'args = TrainingArguments("out", gradient_checkpointing=True)\n'
    (found,) = findings(source, "CKP001")
    assert found.start == (2, 8) and TA_NO_KWARGS_PART in found.message
    assert fix(source, "CKP001").splitlines()[1] == (
        f'args = TrainingArguments("out", gradient_checkpointing=True, gradient_checkpointing_kwargs={HF_DICT})'
    )


def test_training_arguments_with_kwargs_without_key() -> None:
    source = TA + 'args = TrainingArguments("out", gradient_checkpointing=True, gradient_checkpointing_kwargs={})\n'
    (found,) = findings(source, "CKP001")
    assert TA_NO_KEY_PART in found.message
    assert fix(source, "CKP001").splitlines()[1] == (
        f'args = TrainingArguments("out", gradient_checkpointing=True, gradient_checkpointing_kwargs={HF_DICT})'
    )


@pytest.mark.parametrize(
    "arguments",
    [
        '"out", gradient_checkpointing=True, gradient_checkpointing_kwargs={"use_reentrant": False}',
        '"out", gradient_checkpointing=False',
        '"out"',
        '"out", gradient_checkpointing=flag',
        """"out", gradient_checkpointing=True, gradient_checkpointing_kwargs='{"use_reentrant": false}'""",
    ],
    ids=["with-key", "disabled", "default", "dynamic", "json-with-key"],
)
def test_training_arguments_not_reported(arguments: str) -> None:
    assert findings(TA + f"args = TrainingArguments({arguments})\n", "CKP001") == []


def test_training_arguments_json_string_without_key() -> None:
    json_kwargs = """'{"preserve_rng_state": true}'"""
    source = (
        TA
        + f"args = TrainingArguments('out', gradient_checkpointing=True, gradient_checkpointing_kwargs={json_kwargs})\n"
    )
    (found,) = findings(source, "CKP001")
    assert TA_NO_KEY_PART in found.message
    assert found.fix is None


@pytest.mark.parametrize(
    "spelling",
    [
        "import transformers\nargs = transformers.TrainingArguments(",
        "from transformers import Seq2SeqTrainingArguments as S\nargs = S(",
        "from transformers.training_args import TrainingArguments\nargs = TrainingArguments(",
    ],
)
def test_training_arguments_spellings(spelling: str) -> None:
    assert len(findings(spelling + '"out", gradient_checkpointing=True)\n', "CKP001")) == 1


def test_training_arguments_multi_line() -> None:
    source = TA + dedent(
        """\
        args = TrainingArguments(
            output_dir="out",
            gradient_checkpointing=True,
        )
        """
    )
    (found,) = findings(source, "CKP001")
    assert (found.start, found.end) == ((2, 8), (5, 2))
    assert fix(source, "CKP001") == TA + dedent(
        f"""\
        args = TrainingArguments(
            output_dir="out",
            gradient_checkpointing=True,
            gradient_checkpointing_kwargs={HF_DICT},
        )
        """
    )

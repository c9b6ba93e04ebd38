"""CKP001 checkpoint-without-use-reentrant: every way ``torch.utils.checkpoint`` can be imported,
and the names that only look like it (a local ``def checkpoint``, ``torch.distributed.checkpoint``,
a method, a shadowing parameter, a dead import); ``functools.partial(checkpoint, ...)`` bindings
and ``**`` dictionaries; ``checkpoint_wrapper`` and the Hugging Face switches
(``gradient_checkpointing_enable``, ``TrainingArguments(gradient_checkpointing=True)``), with
what is and is not a Hugging Face model."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from textwrap import dedent

import pytest

from ckptlint.api import fix_source, lint_source
from ckptlint.testing import findings, fix, located

MESSAGE = (
    "`{name}()` without `use_reentrant`: PyTorch warns and silently runs the legacy reentrant "
    "variant; pass `use_reentrant=False` (recommended)"
)


def test_import_torch_fully_qualified_call() -> None:
    source = """\
        import torch
        y = torch.utils.checkpoint.checkpoint(f, x)
        """
    (d,) = findings(source, "CKP001")
    assert (d.start, d.end, d.message) == ((2, 5), (2, 44), MESSAGE.format(name="checkpoint"))
    assert fix(source, "CKP001") == dedent(
        """\
        import torch
        y = torch.utils.checkpoint.checkpoint(f, x, use_reentrant=False)
        """
    )


def test_import_torch_utils_checkpoint() -> None:
    source = """\
        import torch.utils.checkpoint
        torch.utils.checkpoint.checkpoint(f, x)
        """
    (d,) = findings(source, "CKP001")
    assert (d.start, d.end) == ((2, 1), (2, 40))
    assert "`checkpoint()` without `use_reentrant`" in d.message


def test_import_module_as_alias() -> None:
    source = """\
        import torch.utils.checkpoint as X
        X.checkpoint(f, x)
        """
    (d,) = findings(source, "CKP001")
    assert (d.start, d.end) == ((2, 1), (2, 19))
    assert "`checkpoint()` without `use_reentrant`" in d.message
    assert fix(source, "CKP001").endswith("X.checkpoint(f, x, use_reentrant=False)\n")


def test_from_import_function_as_alias() -> None:
    source = """\
        from torch.utils.checkpoint import checkpoint as Y
        out = Y(f, x)
        """
    (d,) = findings(source, "CKP001")
    assert (d.start, d.end) == ((2, 7), (2, 14))
    assert "`checkpoint()` without `use_reentrant`" in d.message
    assert fix(source, "CKP001").endswith("out = Y(f, x, use_reentrant=False)\n")


def test_from_torch_utils_import_checkpoint_module() -> None:
    source = """\
        from torch.utils import checkpoint
        checkpoint.checkpoint(f, x)
        checkpoint.checkpoint_sequential(layers, 2, x)
        """
    assert [(d.code, d.start, d.end, d.message) for d in findings(source, "CKP001")] == [
        ("CKP001", (2, 1), (2, 28), MESSAGE.format(name="checkpoint")),
        ("CKP001", (3, 1), (3, 47), MESSAGE.format(name="checkpoint_sequential")),
    ]


def test_checkpoint_sequential_positional_use_reentrant_counts_as_chosen() -> None:
    source = """\
        import torch.utils.checkpoint as cp
        cp.checkpoint_sequential(layers, 2, x)
        cp.checkpoint_sequential(layers, 2, x, False)
        cp.checkpoint_sequential(layers, 2, x, True)
        cp.checkpoint_sequential(layers, 2, x, use_reentrant=False)
        cp.checkpoint_sequential(layers, 2, *rest)
        """
    # Only the first call leaves use_reentrant unchosen; the last may pass it inside *rest.
    assert [d.start for d in findings(source, "CKP001")] == [(2, 1)]
    assert fix(source, "CKP001").splitlines()[1] == "cp.checkpoint_sequential(layers, 2, x, use_reentrant=False)"


def test_star_import() -> None:
    source = """\
        from torch.utils.checkpoint import *
        checkpoint(f, x)
        checkpoint_sequential(layers, 2, x)
        """
    assert [(d.start, d.message) for d in findings(source, "CKP001")] == [
        ((2, 1), MESSAGE.format(name="checkpoint")),
        ((3, 1), MESSAGE.format(name="checkpoint_sequential")),
    ]


def test_import_inside_a_function_applies_to_that_function_only() -> None:
    source = """\
        def inner(x):
            from torch.utils.checkpoint import checkpoint
            return checkpoint(f, x)


        def other(x):
            return checkpoint(f, x)
        """
    assert [d.start for d in findings(source, "CKP001")] == [(3, 12)]


def test_conditional_import_in_try_except_import_error() -> None:
    source = """\
        try:
            from torch.utils.checkpoint import checkpoint
        except ImportError:
            checkpoint = None


        def forward(x):
            return checkpoint(f, x)
        """
    assert [d.start for d in findings(source, "CKP001")] == [(8, 12)]


def test_alias_assignment_is_followed() -> None:
    source = """\
        import torch
        ck = torch.utils.checkpoint.checkpoint
        ck(f, x)
        """
    assert [d.start for d in findings(source, "CKP001")] == [(3, 1)]
    assert fix(source, "CKP001").endswith("ck(f, x, use_reentrant=False)\n")


def test_chosen_use_reentrant_is_not_reported() -> None:
    source = """\
        import torch
        from torch.utils.checkpoint import checkpoint
        checkpoint(f, x, use_reentrant=False)
        checkpoint(f, x, use_reentrant=True)
        torch.utils.checkpoint.checkpoint(f, x, use_reentrant=flag)
        """
    assert findings(source, "CKP001") == []


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(
            """\
            def checkpoint(step):
                save(step)
            checkpoint(3)
            """,
            id="local-def",
        ),
        pytest.param(
            """\
            import torch.utils.checkpoint


            def main():
                def checkpoint(step=None):
                    save(step)
                checkpoint(3)
            """,
            id="local-def-shadowing-in-function",
        ),
        pytest.param(
            """\
            import torch.distributed.checkpoint as dcp
            dcp.save(state, checkpoint_id="out")
            dcp.load(state, checkpoint_id="out")
            """,
            id="distributed-checkpoint-save",
        ),
        pytest.param(
            """\
            from torch.distributed import checkpoint
            checkpoint.save(state)
            """,
            id="distributed-checkpoint-module",
        ),
        pytest.param(
            """\
            from torch.utils.checkpoint import checkpoint


            class Model:
                def checkpoint(self, x):
                    return x

                def forward(self, x):
                    return self.checkpoint(x)
            """,
            id="method",
        ),
        pytest.param(
            """\
            import torch.utils.checkpoint
            from torch.utils.checkpoint import checkpoint as unused
            save(model)
            """,
            id="dead-import",
        ),
        pytest.param(
            """\
            from torch.utils.checkpoint import checkpoint


            def run(checkpoint, x):
                return checkpoint(f, x)
            """,
            id="parameter-shadows-import",
        ),
        pytest.param(
            """\
            from torch.utils.checkpoint import checkpoint
            run = lambda checkpoint: checkpoint(f, x)
            ys = [checkpoint(f, x) for checkpoint in savers]
            """,
            id="lambda-and-comprehension-shadow",
        ),
        pytest.param(
            """\
            import torch.utils.checkpoint


            def forward(x):
                torch = load_other()
                return torch.utils.checkpoint.checkpoint(f, x)
            """,
            id="module-name-rebound-locally",
        ),
    ],
)
def test_lookalikes_are_not_reported(source: str) -> None:
    assert findings(source, "CKP001") == []


def test_class_attribute_does_not_shadow_inside_methods() -> None:
    # A class body's names are not visible to its methods: `checkpoint` is the import.
    source = """\
        from torch.utils.checkpoint import checkpoint


        class Block:
            checkpoint = True

            def forward(self, x):
                return checkpoint(self.inner, x)
        """
    assert [d.start for d in findings(source, "CKP001")] == [(8, 16)]


CASES = Path(__file__).resolve().parents[1] / "cases"  # copies of the shared cases


PARTIAL_MESSAGE = (
    "`functools.partial(checkpoint, ...)` without `use_reentrant`: PyTorch warns and silently runs "
    "the legacy reentrant variant; pass `use_reentrant=False` (recommended)"
)


DICT_MESSAGE = (
    "`checkpoint()` without `use_reentrant` (its `**` dictionary has no `use_reentrant` key): PyTorch "
    "warns and silently runs the legacy reentrant variant; pass `use_reentrant=False` (recommended)"
)


@pytest.mark.parametrize(
    ("imports", "partial"),
    [
        ("import functools", "functools.partial"),
        ("from functools import partial", "partial"),
        ("from functools import partial as bind", "bind"),
        ("import functools as ft", "ft.partial"),
    ],
)
def test_partial_binding_reported_once_at_the_binding(imports: str, partial: str) -> None:
    source = f"""\
        {imports}
        from torch.utils.checkpoint import checkpoint
        ck = {partial}(checkpoint, preserve_rng_state=False)
        a = ck(f, x)
        b = ck(g, y)
        """
    found = findings(source, "CKP001")
    column = len("ck = ") + 1
    end = column + len(f"{partial}(checkpoint, preserve_rng_state=False)")
    assert [(d.start, d.end, d.message) for d in found] == [((3, column), (3, end), PARTIAL_MESSAGE)]
    assert found[0].fix is not None and found[0].fix.applicability.value == "unsafe"
    assert fix(source, "CKP001").splitlines()[2] == f"ck = {partial}(checkpoint, preserve_rng_state=False, use_reentrant=False)"


def test_partial_keywords_count() -> None:
    source = """\
        import functools
        import torch
        ck = functools.partial(torch.utils.checkpoint.checkpoint, use_reentrant=False)
        ck(f, x)
        ck2 = functools.partial(torch.utils.checkpoint.checkpoint, use_reentrant=True)
        ck2(f, x)
        """
    assert findings(source, "CKP001") == []


def test_partial_with_function_keyword_gets_a_safe_fix() -> None:
    source = """\
        import functools
        from torch.utils.checkpoint import checkpoint
        ck = functools.partial(checkpoint, block, mask=mask)
        ck(x)
        """
    (found,) = findings(source, "CKP001")
    assert found.fix is not None and found.fix.applicability.value == "safe"
    assert fix(source, "CKP001", unsafe=False).splitlines()[2] == (
        "ck = functools.partial(checkpoint, block, mask=mask, use_reentrant=False)"
    )


def test_splat_of_dict_literal_with_key_is_read() -> None:
    source = """\
        from torch.utils.checkpoint import checkpoint
        opts = {"use_reentrant": False, "preserve_rng_state": False}
        checkpoint(f, x, **opts)
        """
    assert findings(source, "CKP001") == []


def test_splat_of_dict_literal_without_key_is_reported_without_fix() -> None:
    source = """\
        from torch.utils.checkpoint import checkpoint
        opts = {"preserve_rng_state": False}
        checkpoint(f, x, **opts)
        """
    (found,) = findings(source, "CKP001")
    assert (found.start, found.end, found.message) == ((3, 1), (3, 25), DICT_MESSAGE)
    # Adding the keyword could pass it twice: no fix is offered.
    assert found.fix is None


def test_torch_version_comparison_idiom_is_read_for_the_judged_releases() -> None:
    # diffusers (and its copies: MuseV, AnimateDiff): `ckpt_kwargs = {"use_reentrant": False}
    # if is_torch_version(">=", "1.11.0") else {}`; on torch 2.9-2.13 the first branch
    source = """\
        from typing import Any, Dict
        from torch.utils.checkpoint import checkpoint
        from diffusers.utils import is_torch_version
        new: Dict[str, Any] = {"use_reentrant": False} if is_torch_version(">=", "1.11.0") else {}
        checkpoint(f, x, **new)
        old = {"use_reentrant": False} if is_torch_version("<", "1.11.0") else {}
        checkpoint(f, x, **old)
        either = {"use_reentrant": False} if is_torch_version(">=", "2.10") else {}
        checkpoint(f, x, **either)
        other = {"use_reentrant": False} if flag else {}
        checkpoint(f, x, **other)
        """
    # `old` is empty on every judged release; `either` differs between 2.9 and 2.13 and `other`
    # depends on a run-time flag: unknown, not reported
    assert [f.start for f in findings(source, "CKP001")] == [(7, 1)]


def test_call_in_a_branch_no_judged_torch_release_takes_is_no_site() -> None:
    # pattern of champ's and Pyramid-Flow's UNet blocks, which keep
    # diffusers' old `if is_torch_version(">=", "1.11.0"): ... use_reentrant=False ... else: ...`
    source = """\
        from torch.utils.checkpoint import checkpoint
        from diffusers.utils import is_torch_version
        if is_torch_version(">=", "1.11.0"):
            y = checkpoint(f, x, use_reentrant=False)
        else:
            y = checkpoint(f, x)
        if is_torch_version("<", "1.11.0") and flag:
            y = checkpoint(f, x)
        z = checkpoint(f, x) if is_torch_version(">=", "2.10") else None
        if flag:
            y = checkpoint(f, x)
        """
    # `>= 2.10` differs between 2.9 and 2.13, `flag` is a run-time value: both stay sites
    assert [f.start for f in findings(source, "CKP001")] == [(9, 5), (11, 9)]


def test_splat_of_dict_call() -> None:
    source = """\
        from torch.utils.checkpoint import checkpoint
        good = dict(use_reentrant=False)
        checkpoint(f, x, **good)
        bad = dict(preserve_rng_state=False)
        checkpoint(f, x, **bad)
        """
    assert [d.start for d in findings(source, "CKP001")] == [(5, 1)]
    assert "its `**` dictionary has no `use_reentrant` key" in findings(source, "CKP001")[0].message


@pytest.mark.parametrize(
    "mutation",
    [
        'opts["use_reentrant"] = False',
        'opts.setdefault("use_reentrant", False)',
        "opts.update(use_reentrant=False)",
    ],
)
def test_key_added_by_mutation_counts(mutation: str) -> None:
    source = f"""\
        from torch.utils.checkpoint import checkpoint


        def forward(f, x):
            opts = {{}}
            {mutation}
            return checkpoint(f, x, **opts)
        """
    assert findings(source, "CKP001") == []


def test_dict_in_another_scope_is_not_confused() -> None:
    source = """\
        from torch.utils.checkpoint import checkpoint
        opts = {"use_reentrant": False}


        def forward(f, x):
            opts = {}
            return checkpoint(f, x, **opts)
        """
    assert [d.start for d in findings(source, "CKP001")] == [(7, 12)]


@pytest.mark.parametrize(
    "source",
    [
        """\
        from torch.utils.checkpoint import checkpoint


        def forward(f, x, **kwargs):
            return checkpoint(f, x, **kwargs)
        """,
        """\
        from torch.utils.checkpoint import checkpoint


        def forward(f, x, opts):
            return checkpoint(f, x, **opts)
        """,
        """\
        from torch.utils.checkpoint import checkpoint
        checkpoint(f, x, **load_options())
        """,
        """\
        import functools
        from torch.utils.checkpoint import checkpoint
        ck = functools.partial(checkpoint, **unknown)
        ck(f, x)
        """,
        """\
        from torch.utils.checkpoint import checkpoint


        def forward(f, x):
            opts = {}
            opts[key] = False
            return checkpoint(f, x, **opts)
        """,
    ],
    ids=["kwargs-parameter", "plain-parameter", "call-result", "partial-unknown", "unknown-key"],
)
def test_splat_of_unknown_content_is_not_reported(source: str) -> None:
    assert findings(source, "CKP001") == []


def test_partial_with_splat_of_dict_literal() -> None:
    source = """\
        import functools
        from torch.utils.checkpoint import checkpoint
        kw = {"preserve_rng_state": True}
        ck = functools.partial(checkpoint, **kw)
        ck(f, x)
        """
    (found,) = findings(source, "CKP001")
    assert found.start == (4, 6)
    assert "its `**` dictionary has no `use_reentrant` key" in found.message
    assert found.fix is None


def test_shared_case_04_partial_with_provable_empty_default() -> None:
    text = (CASES / "case_04.py").read_text(encoding="utf-8")
    found = lint_source(text, select=["CKP001"])
    expected_row = next(i for i, line in enumerate(text.splitlines(), 1) if "# expect: CKP001" in line)
    assert [(d.code, d.start[0]) for d in found] == [("CKP001", expected_row)]
    assert "its `**` dictionary has no `use_reentrant` key" in found[0].message
    assert found[0].message.startswith("`functools.partial(checkpoint, ...)`")
    # The calls through the binding (blk._ckpt_fn(...)) are not reported separately, and no
    # fix is offered for options that come through `**`.
    assert found[0].fix is None
    assert fix_source(text, unsafe=True, select=["CKP001"]) == text


def test_binding_not_reported_when_every_call_through_it_chooses() -> None:
    from ckptlint.api import lint_source

    source = (
        "import functools, torch\n"
        "ck = functools.partial(torch.utils.checkpoint.checkpoint, preserve_rng_state=True)\n"
        "ck(f, x, use_reentrant=False)\n"
        "ck(g, y, use_reentrant=True)\n"
    )
    assert lint_source(source) == []
    found = lint_source(source + "ck(h, z)\n")
    assert [(d.code, d.start[0]) for d in found] == [("CKP001", 2)]


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


HF_RECEIVER = """\
    from torch import nn


    class Model(nn.Module):
        def gradient_checkpointing_enable(self{params}):
            self.checkpointing = True


    def build():
        model = Model()
        model.gradient_checkpointing_enable()
        return model
"""


def test_project_method_named_like_hugging_face_is_not_hugging_face() -> None:
    assert located(HF_RECEIVER.format(params="")) == []
    assert located(HF_RECEIVER.format(params=", enabled=True")) == []


def test_hugging_face_receivers_are_still_reported() -> None:
    assert located(HF_RECEIVER.format(params=", gradient_checkpointing_kwargs=None")) == [(11, "CKP001")]
    assert located(HF_RECEIVER.format(params=", **kwargs")) == [(11, "CKP001")]
    unknown = "from transformers import AutoModel\nm = AutoModel.from_pretrained('x')\nm.gradient_checkpointing_enable()\n"
    assert located(unknown) == [(3, "CKP001")]


OLD_FORMAT_MODEL = """\
    import torch
    from torch import nn
    from transformers.modeling_utils import PreTrainedModel


    class BeitEncoder(nn.Module):  # InternVideo ViCLIP models/backbones/beit/st_beit.py:828-889
        def __init__(self, layers):
            super().__init__()
            self.layer = nn.ModuleList(layers)
            self.gradient_checkpointing = False

        def forward(self, hidden_states):
            for layer_module in self.layer:
                if self.gradient_checkpointing and self.training:
                    hidden_states = torch.utils.checkpoint.checkpoint(layer_module, hidden_states, use_reentrant=False)
                else:
                    hidden_states = layer_module(hidden_states)
            return hidden_states


    class BeitPreTrainedModel(PreTrainedModel):
{setter}

    class BeitModel(BeitPreTrainedModel):
        def __init__(self, config):
            super().__init__(config)
            self.encoder = BeitEncoder([])


    def build_beit(config, checkpoint):  # models/backbones/beit/builder.py:37-69
        model_cls = BeitModel
        model = model_cls(config=config)
        if checkpoint:
            model.gradient_checkpointing_enable()
        return model
"""


def test_old_format_hugging_face_model_ignores_the_kwargs() -> None:
    # transformers >= 4.36 calls the override with value=True and ignores gradient_checkpointing_kwargs:
    # the encoder's own checkpoint call (use_reentrant=False) decides the variant
    old = (
        "        def _set_gradient_checkpointing(self, module, value=False):\n"
        "            if isinstance(module, BeitEncoder):\n"
        "                module.gradient_checkpointing = value\n"
    )
    assert located(OLD_FORMAT_MODEL.replace("{setter}", old)) == []
    # the new format (or no override at all) takes the kwargs: still reported
    new = (
        "        def _set_gradient_checkpointing(self, enable=True, gradient_checkpointing_func=None):\n"
        "            self.encoder.gradient_checkpointing = enable\n"
    )
    assert located(OLD_FORMAT_MODEL.replace("{setter}", new)) == [(36, "CKP001")]
    assert located(OLD_FORMAT_MODEL.replace("{setter}", "        pass\n")) == [(35, "CKP001")]


def test_module_methods_that_return_the_module_keep_its_class() -> None:
    # xtuner's LLaVA: `self.projector = ProjectorModel(cfg).to(dtype)`, an old-format model;
    # nn.Module.to/cuda/half/train/eval/requires_grad_ return the module itself (torch 2.13)
    source = """\
        from torch import nn
        from transformers import PreTrainedModel


        class ProjectorModel(PreTrainedModel):
            supports_gradient_checkpointing = True

            def _set_gradient_checkpointing(self, module, value=False):
                module.gradient_checkpointing = value


        class Mover(PreTrainedModel):
            def to(self, *args):
                return None


        class LLaVA(nn.Module):
            def __init__(self, cfg, dtype):
                super().__init__()
                self.projector = ProjectorModel(cfg).to(dtype).train()
                self.half_proj = ProjectorModel(cfg).cuda().half()
                self.mover = Mover(cfg).to(dtype)

            def enable(self):
                self.projector.gradient_checkpointing_enable()
                self.half_proj.gradient_checkpointing_enable()
                self.mover.gradient_checkpointing_enable()
    """
    # a class that defines `to` itself returns what its own `to` returns (here None): the
    # model is not known to be old-format, so its call stays reported
    assert located(source) == [(27, "CKP001")]


def test_hugging_face_class_constructors_return_an_instance_of_the_class() -> None:
    # pattern of a vendored T5: `self.lm = T5ForConditionalGeneration.from_pretrained(p)`, an
    # old-format model (transformers' from_pretrained / _from_config build `cls(config)`)
    source = """\
        from torch import nn
        from transformers import PreTrainedModel


        class OldT5(PreTrainedModel):
            def _set_gradient_checkpointing(self, module, value=False):
                module.gradient_checkpointing = value


        class Loader(PreTrainedModel):
            @classmethod
            def from_pretrained(cls, path):
                return load_anything(path)


        class Wrapper(nn.Module):
            def __init__(self, path, cfg):
                super().__init__()
                self.lm = OldT5.from_pretrained(path)
                self.lm2 = OldT5._from_config(cfg)
                self.other = Loader.from_pretrained(path)

            def enable(self):
                self.lm.gradient_checkpointing_enable()
                self.lm2.gradient_checkpointing_enable()
                self.other.gradient_checkpointing_enable()
    """
    # a class that defines from_pretrained itself returns what it returns: not known, reported
    assert located(source) == [(26, "CKP001")]


def _json(run_cli, *args: str) -> list[dict]:
    result = run_cli("--output-format", "json", "--isolated", "--exit-zero", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def _project(tmp_path: Path, files: dict[str, str]) -> None:
    for name, content in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(content), encoding="utf-8")


def test_project_method_of_a_class_in_another_file_is_not_hugging_face(tmp_path: Path, run_cli) -> None:
    _project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/model.py": """\
                from torch import nn


                class Model(nn.Module):
                    def gradient_checkpointing_enable(self):
                        self.checkpointing = True
            """,
            "pkg/train.py": """\
                from .model import Model

                model = Model()
                model.gradient_checkpointing_enable()
            """,
        },
    )
    assert _json(run_cli, "pkg/train.py") == []


def test_old_format_hugging_face_model_of_another_file_is_not_reported(tmp_path: Path, run_cli) -> None:
    # InternVideo ViCLIP: builder.py imports BeitModel inside the function, st_beit.py keeps
    # the pre-4.35 `_set_gradient_checkpointing(self, module, value=False)`
    _project(
        tmp_path,
        {
            "beit/__init__.py": "",
            "beit/st_beit.py": """\
                from transformers.modeling_utils import PreTrainedModel


                class BeitPreTrainedModel(PreTrainedModel):
                    def _set_gradient_checkpointing(self, module, value=False):
                        module.gradient_checkpointing = value


                class BeitModel(BeitPreTrainedModel):
                    pass
            """,
            "beit/builder.py": """\
                def build_beit(config, checkpoint):
                    from .st_beit import BeitModel as model_cls

                    aux_kwargs = {"add_pooling_layer": True}
                    model = model_cls(config=config, **aux_kwargs)
                    if checkpoint:
                        model.gradient_checkpointing_enable()
                    return model
            """,
        },
    )
    assert _json(run_cli, "beit/builder.py") == []
    (tmp_path / "beit" / "st_beit.py").write_text(
        (tmp_path / "beit" / "st_beit.py")
        .read_text()
        .replace("self, module, value=False", "self, enable=True, gradient_checkpointing_func=None"),
        encoding="utf-8",
    )
    assert [(r["code"], r["location"]["row"]) for r in _json(run_cli, "--no-cache", "beit/builder.py")] == [("CKP001", 7)]


# A checkpoint function rebound at module level (``checkpoint = functools.partial(checkpoint,
# use_reentrant=False)``, TinyCLIP's ``open_clip/model.py``): a function of the module that calls
# it runs after the module did, so it calls the last binding -- the partial and its options.

REBOUND = """\
import functools
import inspect

from torch.utils.checkpoint import checkpoint

GUARD
    checkpoint = functools.partial(checkpoint, use_reentrant=False)


def run(blocks, x):
    for block in blocks:
        x = checkpoint(block, x)
    return x
"""


def _unguarded() -> str:
    return REBOUND.replace("GUARD\n    ", "")


def test_a_function_calls_the_partial_that_rebinds_the_import() -> None:
    assert located(_unguarded(), "CKP001") == []


def test_a_rebinding_under_a_check_every_judged_torch_passes_counts_too() -> None:
    source = REBOUND.replace("GUARD", "if 'use_reentrant' in inspect.signature(checkpoint).parameters:")
    assert located(source, "CKP001") == []


def test_a_rebinding_under_an_undecided_test_leaves_both_bindings() -> None:
    source = REBOUND.replace("GUARD", "if FAST:")
    assert located(source, "CKP001") == [(12, "CKP001")]
    missing = REBOUND.replace("GUARD", "if 'use_reentrant' not in inspect.signature(checkpoint).parameters:")
    assert located(missing, "CKP001") == [(12, "CKP001")]


def test_a_module_level_call_before_the_rebinding_calls_the_import() -> None:
    source = _unguarded().replace(
        "checkpoint = functools.partial", "y = checkpoint(f, x)\ncheckpoint = functools.partial"
    )
    assert located(source, "CKP001") == [(6, "CKP001")]


def test_the_hf_fix_inside_a_double_quoted_f_string_uses_single_quotes() -> None:
    # before Python 3.12 an f-string's expressions cannot hold its own quote character
    source = 'model = load()\nprint(f"enabled: {model.gradient_checkpointing_enable()}")\n'
    fixed = fix_source(source, select=["CKP001"], unsafe=True)
    assert fixed == (
        "model = load()\n"
        "print(f\"enabled: {model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={'use_reentrant': False})}\")\n"
    )
    compile(fixed, "fixed.py", "exec")
    single = source.replace('f"enabled: ', "f'enabled: ").replace('()}")', "()}')")
    assert '{"use_reentrant": False}' in fix_source(single, select=["CKP001"], unsafe=True)


def test_message_states_the_switch_and_its_default() -> None:
    source = """\
        import torch.utils.checkpoint as cp
        from torch import nn
        class Block(nn.Module):
            def __init__(self, dim, with_cp=False):
                super().__init__()
                self.with_cp = with_cp
                self.fc = nn.Linear(dim, dim)
            def forward(self, x):
                if self.with_cp and x.requires_grad:
                    return cp.checkpoint(self.fc, x)
                return self.fc(x)
        """
    (d,) = findings(source, "CKP001")
    assert d.message.endswith(
        "pass `use_reentrant=False` (recommended); this code runs only when `self.with_cp` is true "
        "(it defaults to `False`) and `x.requires_grad`"
    )


def test_message_states_a_parameter_switch_and_an_else_but_no_loop_bound() -> None:
    source = """\
        from torch.utils.checkpoint import checkpoint
        def run(blocks, x, use_checkpoint=None):
            if use_checkpoint:
                x = checkpoint(blocks[0], x)
            while x.numel() > 4:
                x = checkpoint(blocks[1], x)
            if not fast:
                pass
            else:
                x = checkpoint(blocks[2], x)
            return x
        """
    conditions = [d.message.split("(recommended)")[1] for d in findings(source, "CKP001")]
    assert conditions == [
        "; this code runs only when `use_checkpoint` is true (it defaults to `None`)",
        "",  # a `while` test bounds a loop: no switch to state
        "; this code runs only when `fast`",
    ]


def test_a_rebound_parameter_is_no_switch_and_unguarded_calls_state_nothing() -> None:
    source = """\
        from torch.utils.checkpoint import checkpoint
        def run(block, x, use_checkpoint=False):
            use_checkpoint = use_checkpoint or FORCE
            if use_checkpoint:
                x = checkpoint(block, x)
            return checkpoint(block, x)
        """
    first, second = findings(source, "CKP001")
    assert first.message.endswith("; this code runs only when `use_checkpoint`")
    assert second.message.endswith("(recommended)")


def test_hugging_face_switch_states_its_condition() -> None:
    source = """\
        def train(model, args):
            if args.gradient_checkpointing:
                model.gradient_checkpointing_enable()
        """
    (d,) = findings(source, "CKP001")
    assert d.message.endswith('{"use_reentrant": False}`; this code runs only when `args.gradient_checkpointing`')


# ---------------------------------------------------------------- library versions


def _messages(source: str, versions: dict[str, str] | None) -> list[tuple[str, bool]]:
    from ckptlint.testing import lint

    return [(d.message, d.fix is not None) for d in lint(source, ["CKP001"], versions=versions) if d.code == "CKP001"]


@pytest.mark.parametrize(
    ("declared", "advice", "fixed"),
    [
        ("==4.30.0", "those releases have no `gradient_checkpointing_kwargs` (it came in 4.35", False),
        ("==4.33.3", "those releases have no `gradient_checkpointing_kwargs` (it came in 4.35", False),
        (">=4.30,<5", "the releases before 4.35 that the declared range also allows have no", False),
        (">=4.35", 'pass `gradient_checkpointing_kwargs={"use_reentrant": False}`', True),
    ],
)
def test_kwargs_advice_follows_the_declared_transformers(declared: str, advice: str, fixed: bool) -> None:
    ((message, has_fix),) = _messages("model.gradient_checkpointing_enable()\n", {"transformers": declared})
    assert advice in message and has_fix is fixed
    if not fixed:
        assert message.endswith('require transformers>=4.35, then pass `gradient_checkpointing_kwargs={"use_reentrant": False}`')


@pytest.mark.parametrize(("flag", "when"), [("True", ""), ("args.trust_remote_code", " when `args.trust_remote_code` is true")])
def test_trust_remote_code_receiver_is_stated_as_unknown(flag: str, when: str) -> None:
    source = f"""\
        from transformers import AutoModelForCausalLM
        def main(args):
            model = AutoModelForCausalLM.from_pretrained(args.path, trust_remote_code={flag})
            model.gradient_checkpointing_enable()
        """
    ((message, _),) = _messages(source, None)
    assert message.startswith(
        "`gradient_checkpointing_enable()` without `gradient_checkpointing_kwargs` on a model loaded with "
        f"`trust_remote_code` (line 3){when}: the model's own code, which ckptlint does not read, decides"
    )
    assert "transformers before 5.0 runs" not in message
    plain = source.replace(f", trust_remote_code={flag}", ", trust_remote_code=False")
    assert "transformers before 5.0 runs the legacy reentrant checkpoint" in _messages(plain, None)[0][0]


TIMM = """\
    from timm.models import checkpoint_seq
    from timm.models._manipulate import checkpoint
    class Net:
        def forward(self, x):
            if self.grad_checkpointing:
                x = checkpoint_seq(self.blocks, x)
            return checkpoint(self.head, x)
    """


def test_timm_before_1_0_13_runs_reentrant_and_is_reported_with_the_versions() -> None:
    (seq, plain) = _messages(TIMM, {"timm": ">=0.9.16"})
    assert seq[0].startswith(
        "`checkpoint_seq()` without `use_reentrant`: with timm >=0.9.16,<1.0.13, which `timm>=0.9.16` "
        "(target_versions) allows, timm calls torch's checkpoint without it"
    )
    assert "so require timm>=1.0.13 to choose the variant; this code runs only when `self.grad_checkpointing`" in seq[0]
    assert seq[1] is False  # checkpoint_seq takes no use_reentrant before 1.0.13: no fix
    assert "`timm.models._manipulate.checkpoint` is torch's" in plain[0] and plain[1] is True


@pytest.mark.parametrize("declared", [">=1.0.13", None])
def test_timm_from_1_0_13_or_undeclared_is_not_reported(declared: str | None) -> None:
    assert _messages(TIMM, {"timm": declared} if declared else None) == []


# peft's switch, as QLoRA fine-tuning scripts call it: a 4-bit model, then the preparation
PEFT = """\
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig
    def build(args):
        bnb = BitsAndBytesConfig(load_in_4bit=True)
        model = AutoModelForCausalLM.from_pretrained(args.model, quantization_config=bnb)
        model = prepare_model_for_kbit_training(model{extra})
        return get_peft_model(model, LoraConfig(r=8))
    """

_PEFT_EMPTY = (
    "`prepare_model_for_kbit_training()` without `gradient_checkpointing_kwargs`: peft hands "
    "`model.gradient_checkpointing_enable()` an empty `gradient_checkpointing_kwargs={}` (where it takes them: "
    "transformers 4.35 and later), so transformers' default does not apply and PyTorch warns and silently runs the "
    "legacy reentrant variant, with transformers 5 too"
)
_PEFT_QUANTIZED = "the model is quantized (8-bit or 4-bit, GPTQ, AQLM, EETQ, HQQ, torchao)"


@pytest.mark.parametrize(
    ("extra", "when"),
    [
        ("", "when `use_gradient_checkpointing` is true (it defaults to `True`) and "),
        (", use_gradient_checkpointing=args.gradient_checkpointing", "when `args.gradient_checkpointing` is true and "),
        (", True", "when "),
    ],
)
def test_peft_kbit_preparation_without_kwargs_runs_reentrant(extra: str, when: str) -> None:
    ((message, fixed),) = _messages(PEFT.format(extra=extra), None)
    assert message == (
        f'{_PEFT_EMPTY}; pass `gradient_checkpointing_kwargs={{"use_reentrant": False}}`; peft turns checkpointing '
        f"on only {when}{_PEFT_QUANTIZED}"
    )
    assert fixed
    # transformers 5's non-reentrant default does not help: peft never passes None
    assert _messages(PEFT.format(extra=extra), {"transformers": ">=5.0"}) == [(message, True)]


def test_peft_kbit_preparation_fix_passes_the_kwargs() -> None:
    source = dedent(PEFT.format(extra=""))
    fixed = fix(source, "CKP001", unsafe=True)
    assert 'prepare_model_for_kbit_training(model, gradient_checkpointing_kwargs={"use_reentrant": False})' in fixed


@pytest.mark.parametrize(
    "extra",
    [
        ", use_gradient_checkpointing=False",
        ', gradient_checkpointing_kwargs={"use_reentrant": False}',
        ', use_gradient_checkpointing=True, gradient_checkpointing_kwargs={"use_reentrant": True}',
    ],
)
def test_peft_kbit_preparation_that_chooses_is_not_reported(extra: str) -> None:
    assert _messages(PEFT.format(extra=extra), None) == []


def test_peft_kbit_preparation_with_a_dictionary_without_the_key() -> None:
    ((message, _),) = _messages(PEFT.format(extra=", gradient_checkpointing_kwargs={'preserve_rng_state': True}"), None)
    assert message.startswith(
        '`prepare_model_for_kbit_training()`: `gradient_checkpointing_kwargs` has no "use_reentrant" key, so torch'
    )
    switch = "`use_gradient_checkpointing` is true (it defaults to `True`)"
    assert message.endswith(f"peft turns checkpointing on only when {switch} and {_PEFT_QUANTIZED}")


@pytest.mark.parametrize(
    ("peft", "transformers", "start", "fixed"),
    [
        # peft 0.4/0.5 call gradient_checkpointing_enable() without kwargs: transformers' default decides
        ("==0.5.0", None, "`prepare_model_for_kbit_training()`: with `peft==0.5.0` (target_versions), peft calls", False),
        ("==0.5.0", ">=5.0", None, False),
        (">=0.4", None, _PEFT_EMPTY + "; the peft releases before 0.6 that the declared range also allows", False),
        # transformers before 4.35: peft calls the method without kwargs and ignores those it is given
        (
            ">=0.6",
            "==4.33.3",
            "`prepare_model_for_kbit_training()`: with `transformers==4.33.3` (target_versions), "
            "`model.gradient_checkpointing_enable()` takes no kwargs, so peft calls it without them",
            False,
        ),
        (">=0.6", ">=4.30", _PEFT_EMPTY + '; pass `gradient_checkpointing_kwargs={"use_reentrant": False}` (with the', True),
        (">=0.6", ">=4.35", _PEFT_EMPTY + '; pass `gradient_checkpointing_kwargs={"use_reentrant": False}`', True),
    ],
)
def test_peft_kbit_preparation_follows_the_declared_versions(
    peft: str, transformers: str | None, start: str | None, fixed: bool
) -> None:
    declared = {"peft": peft} | ({"transformers": transformers} if transformers else {})
    found = _messages(PEFT.format(extra=""), declared)
    if start is None:
        assert found == []
        return
    ((message, has_fix),) = found
    assert message.startswith(start), message
    assert has_fix is fixed

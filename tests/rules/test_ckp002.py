"""CKP002 reentrant-incompatible-argument: positions, messages, fixes, negatives, and no
opposite advice from CKP001 on the same call."""

from __future__ import annotations

import textwrap

from ckptlint.api import fix_source
from ckptlint.testing import findings, located
from ckptlint.text.diagnostics import Applicability

IMPORT = "from torch.utils.checkpoint import checkpoint\n"


def test_function_keyword_with_omitted_use_reentrant_is_an_error_with_a_safe_fix() -> None:
    src = IMPORT + "y = checkpoint(f, x, mask=m)\n"
    (d,) = findings(src, "CKP002")
    assert (d.start, d.end) == ((2, 5), (2, 29))
    assert d.message == (
        "`checkpoint()` leaves `use_reentrant` unset, so the legacy reentrant variant runs; it raises "
        "ValueError for keyword arguments meant for the checkpointed function (`mask=`); pass `use_reentrant=False`"
    )
    assert d.fix is not None and d.fix.applicability is Applicability.SAFE
    assert fix_source(src, select=["CKP002"]) == IMPORT + "y = checkpoint(f, x, mask=m, use_reentrant=False)\n"


def test_explicit_reentrant_lists_raising_and_ignored_arguments_without_fix() -> None:
    src = IMPORT + (
        "y = checkpoint(f, x, use_reentrant=True, context_fn=ctx, debug=None,\n"
        "               early_stop=True, determinism_check='default')\n"
    )
    (d,) = findings(src, "CKP002")
    assert (d.start, d.end) == ((2, 5), (3, 61))
    assert d.message == (
        "`checkpoint()` runs the reentrant variant (`use_reentrant=True`), which raises ValueError for "
        "`context_fn` and `debug` other than `False` and silently ignores `early_stop` and `determinism_check`; "
        "use the non-reentrant variant (`use_reentrant=False`) or drop these arguments"
    )
    assert d.fix is None


def test_debug_literal_false_is_accepted_but_zero_none_and_variables_are_not() -> None:
    assert findings(IMPORT + "checkpoint(f, x, use_reentrant=True, debug=False)\n", "CKP002") == []
    for value in ("0", "None", "True", "args.debug"):
        (d,) = findings(IMPORT + f"checkpoint(f, x, use_reentrant=True, debug={value})\n", "CKP002")
        assert "`debug` other than `False`" in d.message


def test_ignored_options_only_when_they_ask_for_something_reentrant_does_not_do() -> None:
    assert findings(IMPORT + "checkpoint(f, x, use_reentrant=True, early_stop=False)\n", "CKP002") == []
    assert findings(IMPORT + "checkpoint(f, x, use_reentrant=True, determinism_check='none')\n", "CKP002") == []
    (d,) = findings(IMPORT + "checkpoint(f, x, use_reentrant=True, determinism_check='default')\n", "CKP002")
    assert "silently ignores `determinism_check`" in d.message
    assert "raises" not in d.message


def test_ignored_option_with_omitted_use_reentrant_gets_an_unsafe_fix() -> None:
    src = IMPORT + "checkpoint(f, x, early_stop=True)\n"
    (d,) = findings(src, "CKP002")
    assert d.fix is not None and d.fix.applicability is Applicability.UNSAFE
    assert fix_source(src, select=["CKP002"]) == src  # not applied without --unsafe-fixes
    assert fix_source(src, unsafe=True, select=["CKP002"]) == IMPORT + "checkpoint(f, x, early_stop=True, use_reentrant=False)\n"


def test_default_context_fn_passed_explicitly_is_accepted() -> None:
    src = "import torch.utils.checkpoint as cp\ncp.checkpoint(f, x, use_reentrant=True, context_fn=cp.noop_context_fn)\n"
    assert findings(src, "CKP002") == []


def test_use_reentrant_none_is_replaced_not_passed_twice() -> None:
    src = IMPORT + "checkpoint(f, x, use_reentrant=None, context_fn=ctx)\n"
    (d,) = findings(src, "CKP002")
    assert d.fix is not None and d.fix.applicability is Applicability.SAFE
    fixed = IMPORT + "checkpoint(f, x, use_reentrant=False, context_fn=ctx)\n"
    assert fix_source(src, select=["CKP002"]) == fixed
    assert fix_source(src, unsafe=True) == fixed  # with CKP001 too: one keyword


def test_no_fix_when_options_come_through_double_star() -> None:
    src = IMPORT + "opts = {'preserve_rng_state': True}\ncheckpoint(f, x, mask=m, **opts)\n"
    (d,) = findings(src, "CKP002")
    assert d.fix is None
    # a `**` dictionary of unknown content may hold use_reentrant: not judged
    assert findings(IMPORT + "checkpoint(f, x, mask=m, **opts)\n", "CKP002") == []


def test_dynamic_or_non_reentrant_variant_is_not_judged() -> None:
    for options in ("use_reentrant=False", "use_reentrant=flag", "**kwargs"):
        assert findings(IMPORT + f"checkpoint(f, x, mask=m, context_fn=c, {options})\n", "CKP002") == []


def test_timm_style_wrapper_that_always_passes_use_reentrant_is_silent() -> None:
    src = (
        "import torch\nimport torch.utils.checkpoint\n"
        "def checkpoint(function, *args, use_reentrant=None, **kwargs):\n"
        "    if use_reentrant is None:\n"
        "        use_reentrant = use_reentrant_ckpt()\n"
        "    return torch.utils.checkpoint.checkpoint(function, *args, use_reentrant=use_reentrant, **kwargs)\n"
        "y = checkpoint(block, x, mask=m)\n"
    )
    assert findings(src, "CKP002") == []
    assert findings(src, "CKP001") == []


def test_partial_binding_is_reported_and_fixed_at_the_binding() -> None:
    src = (
        "import functools\n" + IMPORT + "ck = functools.partial(checkpoint, context_fn=ctx)\ny = ck(f, x)\n"
    )
    (d,) = findings(src, "CKP002")
    assert d.start == (3, 6)
    assert d.message.startswith("`functools.partial(checkpoint, ...)` leaves `use_reentrant` unset")
    assert fix_source(src, select=["CKP002"]) == (
        "import functools\n" + IMPORT + "ck = functools.partial(checkpoint, context_fn=ctx, use_reentrant=False)\ny = ck(f, x)\n"
    )


def test_call_through_partial_is_judged_on_what_it_adds() -> None:
    src = "import functools\n" + IMPORT + "ck = functools.partial(checkpoint, preserve_rng_state=True)\ny = ck(f, x, mask=m)\n"
    (d,) = findings(src, "CKP002")
    assert d.start == (4, 5)
    assert d.message.endswith("pass `use_reentrant=False` in the `functools.partial` at line 3")
    assert d.fix is None
    ok = "import functools\n" + IMPORT + "ck = functools.partial(checkpoint, use_reentrant=False)\ny = ck(f, x, mask=m)\n"
    assert findings(ok, "CKP002") == []


def test_checkpoint_sequential_second_input_binds_to_use_reentrant() -> None:
    src = "import torch.utils.checkpoint as cp\ny = cp.checkpoint_sequential(self.stages, 2, x, mask)\n"
    (d,) = findings(src, "CKP002")
    assert (d.start, d.end) == ((2, 5), (2, 54))
    assert d.message == (
        "`checkpoint_sequential()`: its 4th positional argument `mask` binds to `use_reentrant`, not to a "
        "second input (only one input flows between segments; a multi-element tensor there raises RuntimeError, "
        "anything else silently picks the variant by its truth value)"
    )
    assert d.fix is None


def test_checkpoint_sequential_positional_flags_that_say_reentrant_are_fine() -> None:
    for fourth in ("False", "True", "self.use_reentrant", "reentrant"):
        assert findings(f"import torch.utils.checkpoint as cp\ncp.checkpoint_sequential(m, 2, x, {fourth})\n", "CKP002") == []


def test_checkpoint_sequential_too_many_positionals_and_unknown_keywords() -> None:
    (d,) = findings("import torch.utils.checkpoint as cp\ncp.checkpoint_sequential(m, 2, x, False, True)\n", "CKP002")
    assert "it takes at most 4 positional arguments, 5 are given (TypeError)" in d.message
    (d,) = findings(
        "import torch.utils.checkpoint as cp\n"
        "cp.checkpoint_sequential(m, 2, x, use_reentrant=False, preserve_rng_state=True, early_stop=False)\n", "CKP002")
    assert d.message == (
        "`checkpoint_sequential()`: it accepts only `use_reentrant` and `preserve_rng_state` as options, "
        "so `early_stop=` raise ValueError (Unexpected keyword arguments)"
    )


def test_composable_checkpoint_rejects_reentrant_and_unknown_keywords() -> None:
    src = "from torch.distributed._composable import checkpoint\ncheckpoint(block, use_reentrant=True, foo=1)\n"
    (d,) = findings(src, "CKP002")
    assert d.message == (
        "composable `checkpoint()`: `use_reentrant=True` is not supported and raises NotImplementedError "
        "(it drives the non-reentrant variant only); drop it or use torch.utils.checkpoint.checkpoint; "
        "`foo=` raise ValueError (Unexpected keyword arguments)"
    )
    ok = "from torch.distributed._composable import checkpoint\ncheckpoint(block, use_reentrant=False, debug=True)\n"
    assert findings(ok, "CKP002") == []


def test_checkpoint_wrapper() -> None:
    wrapper = "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl, checkpoint_wrapper\n"
    # default NO_REENTRANT: context_fn is fine; no checkpoint_fn given
    assert findings(wrapper + "checkpoint_wrapper(block, context_fn=ctx)\n", "CKP002") == []
    (d,) = findings(wrapper + "checkpoint_wrapper(block, CheckpointImpl.REENTRANT, context_fn=ctx)\n", "CKP002")
    assert d.message.startswith("`checkpoint_wrapper(...)` uses `CheckpointImpl.REENTRANT`; the reentrant variant raises")
    assert d.fix is None
    src = wrapper + "import torch\ncheckpoint_wrapper(block, checkpoint_fn=torch.utils.checkpoint.checkpoint, debug=True)\n"
    (d,) = findings(src, "CKP002")
    assert fix_source(src, select=["CKP002"]).endswith("debug=True, use_reentrant=False)\n")


def test_save_misuse_and_misspellings_are_left_to_their_rules() -> None:
    assert findings(IMPORT + "checkpoint(model.state_dict(), 'm.pt', debug=True)\n", "CKP002") == []
    assert findings(IMPORT + "checkpoint(f, x, use_reentrent=False)\n", "CKP002") == []
    assert findings(IMPORT + "checkpoint(f, x, preserve_rng=False)\n", "CKP002") == []


def test_local_function_named_checkpoint_is_not_judged() -> None:
    assert findings("def checkpoint(fn, *a, **k):\n    return fn(*a)\ncheckpoint(f, x, mask=m)\n", "CKP002") == []


def test_safe_fix_together_with_ckp001_adds_one_keyword() -> None:
    src = IMPORT + "y = checkpoint(\n    f,\n    x,\n    mask=m,\n)\n"
    fixed = IMPORT + "y = checkpoint(\n    f,\n    x,\n    mask=m,\n    use_reentrant=False,\n)\n"
    assert fix_source(src) == fixed
    assert fix_source(src, unsafe=True) == fixed


def test_keyword_the_function_does_not_take_gets_no_fix() -> None:
    """Corpus pattern (sd-scripts finetune/blip/med.py:435, from BLIP): a factory-made
    ``custom_forward(*inputs)`` checkpointed with ``mode=mode``. Reentrant: ValueError; with
    use_reentrant=False: TypeError, so adding it is no fix."""
    src = "import torch\nimport torch.utils.checkpoint\n" + (
        "def forward(self, hidden, mask, mode='multimodal'):\n"
        "    for layer in self.layer:\n"
        "        def create_custom_forward(module):\n"
        "            def custom_forward(*inputs):\n"
        "                return module(*inputs, None, False)\n"
        "            return custom_forward\n"
        "        out = torch.utils.checkpoint.checkpoint(\n"
        "            create_custom_forward(layer),\n"
        "            hidden,\n"
        "            mask,\n"
        "            mode=mode,\n"
        "        )\n"
    )
    (d,) = findings(src, "CKP002")
    assert d.start == (9, 15)
    assert d.message == (
        "`checkpoint()` leaves `use_reentrant` unset, so the legacy reentrant variant runs; it raises ValueError "
        "for keyword arguments meant for the checkpointed function (`mode=`); and the checkpointed function does "
        "not take `mode=` either (TypeError even with `use_reentrant=False`): pass the value positionally or bind "
        "it inside the function"
    )
    assert d.fix is None
    accepting = src.replace("def custom_forward(*inputs):", "def custom_forward(*inputs, mode=None):")
    (d,) = findings(accepting, "CKP002")
    assert d.fix is not None


OPEN_DICTIONARY = IMPORT + """\


class FlashAttention:
    def forward(self, qkv, cu_seqlens, max_seqlen, **kwargs):
        kwargs = {"cu_seqlens": cu_seqlens, "max_seqlen": max_seqlen, **kwargs}
        return checkpoint(self.inner_attn, qkv, **kwargs)
"""


def test_keys_a_dictionary_surely_passes_raise_under_the_omitted_variant() -> None:
    # torch 2.13 checkpoint: `if kwargs and use_reentrant: raise ValueError("Unexpected keyword arguments: ...")`
    (d,) = findings(OPEN_DICTIONARY, "CKP002")
    assert d.start == (7, 16)
    assert d.message == (
        "`checkpoint()` passes `cu_seqlens`, `max_seqlen` through `**` without `use_reentrant`: unless the rest "
        "of that dictionary carries `use_reentrant=False`, the legacy reentrant variant runs and raises "
        "ValueError (Unexpected keyword arguments) for keyword arguments meant for the checkpointed function; "
        "pass `use_reentrant=False`"
    )
    assert d.fix is None  # the unknown rest may hold `use_reentrant`: adding it could pass it twice


def test_open_dictionaries_that_choose_the_variant_or_pass_only_options_are_not_reported() -> None:
    for source in (
        OPEN_DICTIONARY.replace("**kwargs)\n", "use_reentrant=False, **kwargs)\n"),
        OPEN_DICTIONARY.replace('"max_seqlen": max_seqlen, **kwargs}', '"max_seqlen": max_seqlen, "use_reentrant": False, **kwargs}'),
        OPEN_DICTIONARY.replace('{"cu_seqlens": cu_seqlens, "max_seqlen": max_seqlen, **kwargs}', '{"preserve_rng_state": True, **kwargs}'),
        OPEN_DICTIONARY.replace('{"cu_seqlens": cu_seqlens, "max_seqlen": max_seqlen, **kwargs}', "dict(kwargs)"),
    ):
        assert findings(source, "CKP002") == [], source


def test_a_keyword_call_of_dict_with_an_unknown_mapping_is_read_too() -> None:
    source = OPEN_DICTIONARY.replace('{"cu_seqlens": cu_seqlens, "max_seqlen": max_seqlen, **kwargs}', "dict(mask=m, **kwargs)")
    (d,) = findings(source, "CKP002")
    assert "passes `mask` through `**`" in d.message


def test_a_dictionary_assigned_only_on_one_branch_is_not_surely_passed() -> None:
    source = OPEN_DICTIONARY.replace(
        '        kwargs = {"cu_seqlens"', '        if cu_seqlens is not None:\n            kwargs = {"cu_seqlens"'
    )
    assert findings(source, "CKP002") == []


def test_each_branch_of_a_conditional_dictionary_passing_function_keywords_is_reported() -> None:
    # flash-attn modules/mha.py MHA.forward: the branch taken depends on `use_flash_attn`, and
    # both hand the function keywords to a checkpoint without `use_reentrant`
    source = OPEN_DICTIONARY.replace(
        '        kwargs = {"cu_seqlens": cu_seqlens, "max_seqlen": max_seqlen, **kwargs}\n',
        "        kwargs = (\n"
        '            {"cu_seqlens": cu_seqlens, "max_seqlen": max_seqlen, **kwargs}\n'
        "            if self.use_flash_attn\n"
        '            else {"key_padding_mask": key_padding_mask, **kwargs}\n'
        "        )\n",
    )
    (d,) = findings(source, "CKP002")
    assert d.message.startswith("`checkpoint()` passes `cu_seqlens`, `max_seqlen` or `key_padding_mask` through `**`")
    one_branch_empty = source.replace('{"key_padding_mask": key_padding_mask, **kwargs}', "kwargs")
    assert findings(one_branch_empty, "CKP002") == []


def test_ckp002_and_ckp001_do_not_give_opposite_advice() -> None:
    source = IMPORT + textwrap.dedent(
        """\
        def make(layer):
            def forward(*inputs):
                return layer(*inputs)
            return forward

        def run(layer, x, mask):
            return checkpoint(make(layer), x, mask=mask)
        """
    )
    assert located(source) == [(8, "CKP002")]
    # a function that takes the keyword: both say the same thing, both stay
    plain = IMPORT + "def f(x, mask=None):\n    return x\ncheckpoint(f, x, mask=m)\n"
    assert sorted(located(plain)) == [(4, "CKP001"), (4, "CKP002")]

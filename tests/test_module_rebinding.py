"""A checkpoint function rebound at module level (``checkpoint = functools.partial(checkpoint,
use_reentrant=False)``, TinyCLIP's ``open_clip/model.py``): a function of the module that calls
it runs after the module did, so it calls the last binding -- the partial and its options."""

from __future__ import annotations

from ckptlint.testing import located

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

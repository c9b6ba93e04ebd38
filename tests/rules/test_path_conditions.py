"""Conditions that live on the region's way to a finding or inside the helper a site calls,
each in the shape of real code: unilm's YOCO writes ``incremental_state`` in a public function
that the recomputed layer calls only ``if incremental_state is not None``; PixArt's
``auto_grad_checkpoint`` checkpoints only ``if getattr(module, 'grad_checkpointing', False)``.
A way to the finding that is not seen (past the depth followed, through a callback) makes the
way's condition unknown: nothing is stated then."""

from __future__ import annotations

from ckptlint.testing import findings

# A counter in a public function (its callers are never all known in its module), called by
# the recomputed block only under a test of its argument.
COUNTER = """\
    import torch.nn as nn
    from torch.utils.checkpoint import checkpoint


    def count(module, x):
        module.calls += 1
        return x


    {chain}


    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)
            self.calls = 0

        def forward(self, x, state=None, hook=None):
            if state is not None:
                x = {first}(self, x)
    {more}
            return self.proj(x)


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()

        def forward(self, x, state):
            return checkpoint(self.block, x, state, use_reentrant=False)
    """
# the region passes `state`: its default says nothing there
STATED = "; this code runs only when `state is not None`"


def _chain(levels: int) -> str:
    """``step1`` ... ``stepN``, each calling the next; the last calls ``count``."""
    steps = []
    for level in range(1, levels + 1):
        callee = f"step{level + 1}" if level < levels else "count"
        steps.append(f"def step{level}(module, x):\n        return {callee}(module, x)\n")
    return "\n\n    ".join(steps) or "pass"


def _program(first: str = "count", chain: int = 0, more: str = "") -> str:
    return COUNTER.format(first=first, chain=_chain(chain), more=more)


def _message(source: str) -> str:
    (d,) = findings(source, "CKP202")
    return d.message


def test_the_test_around_the_call_in_the_region_is_stated() -> None:
    assert _message(_program()).endswith(STATED)


def test_a_way_without_the_test_states_nothing() -> None:
    message = _message(_program(more="        x = count(self, x)"))
    assert "this code runs only when" not in message, message


def test_a_way_followed_past_the_usual_depth_is_read_whole() -> None:
    # a second way to count runs four calls below forward: the region is followed deeper
    guarded = _program(chain=3, more="            x = step1(self, x)")
    assert _message(guarded).endswith(STATED)
    message = _message(_program(chain=3, more="        x = step1(self, x)"))
    assert "this code runs only when" not in message, message


def test_a_way_too_deep_to_follow_makes_the_condition_unknown() -> None:
    guarded = _program(chain=8, more="            x = step1(self, x)")
    message = _message(guarded)
    assert "this code runs only when" not in message, message


def test_a_callback_that_may_call_back_makes_the_condition_unknown() -> None:
    source = _program(more="        x = hook(x)")
    message = _message(source)
    assert "this code runs only when" not in message, message


# PixArt-alpha diffusion/model/utils.py and nets/PixArt.py
PIXART = """\
    from collections.abc import Iterable

    import torch.nn as nn
    from torch.utils.checkpoint import checkpoint


    def auto_grad_checkpoint(module, *args, **kwargs):
        if getattr(module, 'grad_checkpointing', False):
            if not isinstance(module, Iterable):
                return checkpoint(module, *args, **kwargs)
        return module(*args, **kwargs)


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])

        def forward(self, x):
            for block in self.blocks:
                x = auto_grad_checkpoint(block, x)
            return x
    """


def test_the_tests_inside_a_helper_are_stated_at_its_call() -> None:
    (d,) = findings(PIXART, "CKP001")
    assert d.message.endswith(
        "; this code runs only when `getattr(module, 'grad_checkpointing', False)` (inside `auto_grad_checkpoint()`)"
        " and `not isinstance(module, Iterable)` (inside `auto_grad_checkpoint()`)"
    ), d.message


FLAGGED = """\
    import torch.nn as nn
    from torch.utils.checkpoint import checkpoint


    def run(block, x, use_cp=False, training=True, **kwargs):
        if use_cp and training:
            return checkpoint(block, x, **kwargs)
        return block(x)


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = nn.Linear(4, 4)

        def forward(self, x):
            return run(self.block, x, use_cp=True, training=self.training)
    """


def test_a_flag_the_call_passes_a_literal_for_is_not_repeated() -> None:
    (d,) = findings(FLAGGED, "CKP001")
    # `use_cp=True` chose the branch; `training=self.training` is the caller's condition
    assert d.message.endswith("; this code runs only when `self.training`"), d.message


# unsloth models/rl.py: a fallback defined only when TRL lacks the function
FALLBACK = """\
    from contextlib import contextmanager


    def patch(model):
        try:
            from trl.models.utils import unwrap_model_for_generation
        except ImportError:

            @contextmanager
            def unwrap_model_for_generation(model, accelerator):
                unwrapped = accelerator.unwrap_model(model)
                if unwrapped.is_gradient_checkpointing:
                    unwrapped.gradient_checkpointing_disable()
                yield unwrapped
                unwrapped.gradient_checkpointing_enable()

        return unwrap_model_for_generation
    """


def test_code_defined_in_an_except_handler_states_what_must_raise() -> None:
    (d,) = findings(FALLBACK, "CKP001")
    assert d.message.endswith(
        "; this code runs only when `from trl.models.utils import unwrap_model_for_generation` raises `ImportError`"
    ), d.message
    several = FALLBACK.replace(
        "            from trl.models.utils import unwrap_model_for_generation\n",
        "            import trl\n            from trl.models.utils import unwrap_model_for_generation\n",
    )
    (d,) = findings(several, "CKP001")
    assert d.message.endswith("; this code runs only when the `try` block at line 5 raises `ImportError`"), d.message


def test_a_function_defined_under_a_test_states_it() -> None:
    source = """\
        import torch.nn as nn
        from torch.utils.checkpoint import checkpoint

        USE_CHECKPOINT = False

        if USE_CHECKPOINT:
            def run(block, x):
                return checkpoint(block, x)
        """
    (d,) = findings(source, "CKP001")
    assert d.message.endswith("; this code runs only when `USE_CHECKPOINT`"), d.message


def test_a_function_defined_in_a_loop_states_no_test_of_its_def() -> None:
    # the function defined at `i == 0` is called again at `i == 1`
    source = """\
        import torch.nn as nn
        from torch.utils.checkpoint import checkpoint


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
                self.calls = 0

            def forward(self, x):
                for i, block in enumerate(self.blocks):
                    if i == 0:
                        def run(y, block=block):
                            self.calls += 1
                            return block(y)
                    x = checkpoint(run, x, use_reentrant=False)
                return x
        """
    (d,) = findings(source, "CKP202")
    assert "this code runs only when" not in d.message, d.message


def test_a_helper_flag_the_call_passes_as_an_expression_is_the_callers_condition() -> None:
    source = """\
        import torch.nn as nn
        from torch.utils.checkpoint import checkpoint


        def run(block, x, use_cp=False, **kwargs):
            if use_cp:
                return checkpoint(block, x, **kwargs)
            return block(x)


        class Net(nn.Module):
            def __init__(self, with_cp=True):
                super().__init__()
                self.block = nn.Linear(4, 4)
                self.with_cp = with_cp

            def forward(self, x):
                return run(self.block, x, use_cp=self.with_cp)
        """
    (d,) = findings(source, "CKP001")
    assert d.message.endswith("; this code runs only when `self.with_cp` is true (it defaults to `True`)"), d.message


def test_a_parameter_the_region_passes_names_no_default() -> None:
    source = """\
        import torch.nn as nn
        from torch.utils.checkpoint import checkpoint

        LOG = []


        def body(x, extra=False):
            if extra:
                LOG.append(x)
            return x


        class Net(nn.Module):
            def __init__(self, extra=True):
                super().__init__()
                self.extra = extra

            def forward(self, x):
                return checkpoint(body, x, self.extra, use_reentrant=False)
        """
    (d,) = findings(source, "CKP202")
    assert d.message.endswith("; this code runs only when `extra`"), d.message


def test_a_function_defined_in_a_loop_under_a_test_the_loop_leaves_alone_states_it() -> None:
    # diffusers models/unets/uvit_2d.py
    source = """\
        import torch
        import torch.nn as nn
        from torch.utils.checkpoint import checkpoint


        class UVit(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
                self.gradient_checkpointing = False

            def forward(self, x):
                for layer in self.layers:
                    if torch.is_grad_enabled() and self.gradient_checkpointing:

                        def layer_(*args):
                            return checkpoint(layer, *args)

                    else:
                        layer_ = layer
                    x = layer_(x)
                return x
        """
    (d,) = findings(source, "CKP001")
    assert d.message.endswith(
        "; this code runs only when `self.gradient_checkpointing` is true (it defaults to `False`) and `torch.is_grad_enabled()`"
    ), d.message


def test_a_handler_of_several_exceptions_names_each() -> None:
    source = FALLBACK.replace("except ImportError:", "except (ImportError, AttributeError):")
    (d,) = findings(source, "CKP001")
    assert d.message.endswith(
        "; this code runs only when `from trl.models.utils import unwrap_model_for_generation` raises `ImportError`"
        " or `AttributeError`"
    ), d.message

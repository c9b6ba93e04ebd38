"""CKP001 under every way ``torch.utils.checkpoint`` can be imported, and the names that only
look like it (a local ``def checkpoint``, ``torch.distributed.checkpoint``, a method, a
shadowing parameter, a dead import)."""

from __future__ import annotations

from textwrap import dedent

import pytest

from ckptlint.testing import findings, fix

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

"""CKP001's fix keeps the call's layout, is idempotent, and is safe or unsafe as documented;
the command line applies, diffs and summarises fixes as ruff does."""

from __future__ import annotations

import re
from textwrap import dedent

import pytest

from ckptlint.api import fix_source, lint_source
from ckptlint.testing import fix

IMPORT = "from torch.utils.checkpoint import checkpoint\n"


LAYOUTS = [
    pytest.param("y = checkpoint(f, x)\n", "y = checkpoint(f, x, use_reentrant=False)\n", id="one-line"),
    pytest.param(
        "y = checkpoint(f, x,)\n", "y = checkpoint(f, x, use_reentrant=False,)\n", id="one-line-trailing-comma"
    ),
    pytest.param(
        """\
        y = checkpoint(
            f, x, y
        )
        """,
        """\
        y = checkpoint(
            f, x, y, use_reentrant=False
        )
        """,
        id="multi-line-args-on-one-line",
    ),
    pytest.param(
        """\
        y = checkpoint(
            f,
            x,
            y
        )
        """,
        """\
        y = checkpoint(
            f,
            x,
            y,
            use_reentrant=False
        )
        """,
        id="one-per-line-no-trailing-comma",
    ),
    pytest.param(
        """\
        y = checkpoint(
            f,
            x,
            y,
        )
        """,
        """\
        y = checkpoint(
            f,
            x,
            y,
            use_reentrant=False,
        )
        """,
        id="one-per-line-trailing-comma",
    ),
    pytest.param(
        """\
        y = checkpoint(
            f,
            x  # the input
        )
        """,
        """\
        y = checkpoint(
            f,
            x,  # the input
            use_reentrant=False
        )
        """,
        id="comment-after-last-argument",
    ),
    pytest.param(
        """\
        y = checkpoint(
            f,
            x,  # the input
        )
        """,
        """\
        y = checkpoint(
            f,
            x,  # the input
            use_reentrant=False,
        )
        """,
        id="comment-after-trailing-comma",
    ),
    pytest.param(
        """\
        def forward(self, x):
            return checkpoint(
                self.block,
                x
                )
        """,
        """\
        def forward(self, x):
            return checkpoint(
                self.block,
                x,
                use_reentrant=False
                )
        """,
        id="indented-closing-paren",
    ),
    pytest.param(
        """\
        y = checkpoint(f,
                       x,
                       y)
        """,
        """\
        y = checkpoint(f,
                       x,
                       y, use_reentrant=False)
        """,
        id="hanging-indent-closing-on-last-line",
    ),
    pytest.param("y = checkpoint(f, *args)\n", "y = checkpoint(f, *args, use_reentrant=False)\n", id="star-args-last"),
    pytest.param(
        """\
        y = checkpoint(
            f,
            *args,
        )
        """,
        """\
        y = checkpoint(
            f,
            *args,
            use_reentrant=False,
        )
        """,
        id="star-args-one-per-line",
    ),
]


@pytest.mark.parametrize(("before", "after"), LAYOUTS)
def test_fix_keeps_layout(before: str, after: str) -> None:
    assert fix(IMPORT + dedent(before), "CKP001") == IMPORT + dedent(after)


@pytest.mark.parametrize(("before", "after"), LAYOUTS)
def test_fix_is_idempotent(before: str, after: str) -> None:
    once = fix(IMPORT + dedent(before), "CKP001")
    assert fix(IMPORT + dedent(once[len(IMPORT) :]), "CKP001") == once
    assert lint_source(once, select=["CKP001"]) == []


def test_kwargs_splat_last_gets_no_fix() -> None:
    # the options may come through **kwargs: adding the keyword could pass it twice
    assert fix(IMPORT + dedent("def g(**kwargs):\n    return checkpoint(f, x, **kwargs)\n"), "CKP001") == IMPORT + (
        "def g(**kwargs):\n    return checkpoint(f, x, **kwargs)\n"
    )


def test_call_without_arguments_hf() -> None:
    assert fix_source("model.gradient_checkpointing_enable()\n", unsafe=True) == (
        'model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})\n'
    )


def test_call_without_arguments_multi_line_hf() -> None:
    source = "model.gradient_checkpointing_enable(\n)\n"
    assert fix_source(source, unsafe=True) == (
        'model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False}\n)\n'
    )


def test_nested_calls_both_fixed_in_one_run() -> None:
    assert fix(IMPORT + dedent("y = checkpoint(f, checkpoint(g, x))\n"), "CKP001") == IMPORT + (
        "y = checkpoint(f, checkpoint(g, x, use_reentrant=False), use_reentrant=False)\n"
    )
    before = """\
        y = checkpoint(
            f,
            checkpoint(
                g,
                x,
            ),
        )
        """
    after = """\
        y = checkpoint(
            f,
            checkpoint(
                g,
                x,
                use_reentrant=False,
            ),
            use_reentrant=False,
        )
        """
    assert fix(IMPORT + dedent(before), "CKP001") == IMPORT + dedent(after)


def test_nested_calls_without_trailing_commas() -> None:
    before = """\
        y = checkpoint(
            f,
            checkpoint(
                g,
                x
            )
        )
        """
    after = """\
        y = checkpoint(
            f,
            checkpoint(
                g,
                x,
                use_reentrant=False
            ),
            use_reentrant=False
        )
        """
    assert fix(IMPORT + dedent(before), "CKP001") == IMPORT + dedent(after)


def test_use_reentrant_none_is_replaced_not_repeated() -> None:
    # use_reentrant=None is the default: it warns and runs reentrant. The fix must not add
    # a second use_reentrant keyword (a SyntaxError) but replace the value.
    source = "y = checkpoint(f, x, use_reentrant=None)\n"
    assert [d.code for d in lint_source(IMPORT + source, select=["CKP001"])] == ["CKP001"]
    assert fix(IMPORT + dedent(source), "CKP001") == IMPORT + "y = checkpoint(f, x, use_reentrant=False)\n"


def test_checkpoint_sequential_positional_none_is_replaced() -> None:
    source = "import torch.utils.checkpoint as cp\ncp.checkpoint_sequential(layers, 2, x, None)\n"
    assert fix_source(source, unsafe=True, select=["CKP001"]) == (
        "import torch.utils.checkpoint as cp\ncp.checkpoint_sequential(layers, 2, x, False)\n"
    )


def test_use_reentrant_none_with_kwargs_splat_is_replaced() -> None:
    source = "def g(**kw):\n    return checkpoint(f, x, use_reentrant=None, **kw)\n"
    assert fix(IMPORT + dedent(source), "CKP001") == IMPORT + "def g(**kw):\n    return checkpoint(f, x, use_reentrant=False, **kw)\n"


def test_hf_use_reentrant_none_in_dict_is_replaced() -> None:
    source = 'model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": None})\n'
    (found,) = lint_source(source)
    assert found.message == (
        '`gradient_checkpointing_enable()`: `gradient_checkpointing_kwargs` sets "use_reentrant" to None, so '
        'the legacy reentrant checkpoint runs; use `"use_reentrant": False`'
    )
    assert fix_source(source, unsafe=True) == source.replace("None", "False")


@pytest.mark.parametrize(
    ("call", "safe"),
    [
        ("checkpoint(f, x)", False),
        ("checkpoint(f, x, preserve_rng_state=False)", False),
        ("checkpoint(f, x, debug=False)", False),
        ("checkpoint(f, x, mask=m)", True),
        ("checkpoint(f, x, context_fn=make_contexts)", True),
        ("checkpoint(f, x, debug=True)", True),
        ("checkpoint(f, x, debug=flag)", True),
    ],
)
def test_applicability(call: str, safe: bool) -> None:
    """``use_reentrant=False`` is the only fix: safe where the reentrant variant raises,
    unsafe (hidden from ``--fix``) elsewhere; no fix ever writes ``use_reentrant=True``."""
    (found,) = lint_source(IMPORT + call + "\n", select=["CKP001"])
    assert found.fix is not None
    assert found.fix.applicability.value == ("safe" if safe else "unsafe")
    assert found.fix.fallback is None
    after = IMPORT + call[:-1] + ", use_reentrant=False)\n"
    assert fix(IMPORT + dedent(call + "\n"), "CKP001", unsafe=False) == (after if safe else IMPORT + call + "\n")
    assert fix(IMPORT + dedent(call + "\n"), "CKP001", unsafe=True) == after


@pytest.mark.parametrize(
    "source",
    [
        "import torch\nwith torch.no_grad():\n    y = checkpoint(f, x)\n",
        "import torch\n@torch.inference_mode()\ndef g(x):\n    return checkpoint(f, x)\n",
        "import torch\nwith torch.set_grad_enabled(False):\n    y = checkpoint(f, x)\n",
    ],
)
def test_fix_is_safe_where_grad_is_off(source: str) -> None:
    """Under ``no_grad`` neither variant records anything: ``use_reentrant=False`` is safe."""
    (found,) = lint_source(IMPORT + source, select=["CKP001"])
    assert found.fix is not None and found.fix.applicability.value == "safe"
    assert fix(IMPORT + source, "CKP001", unsafe=False) == IMPORT + source.replace("(f, x)", "(f, x, use_reentrant=False)")


def test_fix_is_unsafe_where_grad_mode_is_unknown_or_bound_elsewhere() -> None:
    sources = [
        "import torch\nwith torch.set_grad_enabled(train):\n    y = checkpoint(f, x)\n",
        "import torch, functools\nwith torch.no_grad():\n    ck = functools.partial(checkpoint, preserve_rng_state=True)\n",
        "import torch\nwith torch.no_grad():\n    def g(x):\n        return checkpoint(f, x)\n",
    ]
    for source in sources:
        (found,) = lint_source(IMPORT + source, select=["CKP001"])
        assert found.fix is not None and found.fix.applicability.value == "unsafe", source


def test_no_fix_writes_use_reentrant_true() -> None:
    """Whatever the mode, ``--fix`` never locks in the legacy variant."""
    for call in ("checkpoint(f, x)", "checkpoint(f, x, use_reentrant=None)", "checkpoint(f, x, preserve_rng_state=False)"):
        for unsafe in (False, True):
            assert "use_reentrant=True" not in fix_source(IMPORT + call + "\n", unsafe=unsafe)


MIXED = IMPORT + "a = checkpoint(f, x)\nb = checkpoint(f, x, mask=m)\n"


MESSAGE = (
    "CKP001{marker} `checkpoint()` without `use_reentrant`: PyTorch warns and silently runs the legacy "
    "reentrant variant; pass `use_reentrant=False` (recommended)"
)


def test_concise_output_marks_fixable_and_summarises(run_cli, write) -> None:
    write("m.py", MIXED)
    result = run_cli("--select", "CKP001", "m.py")
    assert result.exit_code == 1
    assert result.stdout == (
        f"m.py:2:5: {MESSAGE.format(marker='')}\n"  # use_reentrant=False, unsafe: hidden
        f"m.py:3:5: {MESSAGE.format(marker=' [*]')}\n"  # the reentrant variant raises: safe
        "Found 2 errors.\n"
        "[*] 1 fixable with the `--fix` option (1 hidden fix can be enabled with the `--unsafe-fixes` option).\n"
    )
    result = run_cli("--unsafe-fixes", "--select", "CKP001", "m.py")
    assert result.stdout.splitlines()[-2:] == ["Found 2 errors.", "[*] 2 fixable with the `--fix` option."]
    assert result.stdout.count("[*] `checkpoint()`") == 2


def test_plain_fix_applies_safe_fixes_only(run_cli, write) -> None:
    path = write("m.py", MIXED + "model.gradient_checkpointing_enable()\n")  # the last: an unsafe fix only
    result = run_cli("--fix", "m.py")
    assert result.exit_code == 1
    assert path.read_text() == (
        IMPORT
        + "a = checkpoint(f, x)\nb = checkpoint(f, x, mask=m, use_reentrant=False)\n"
        + "model.gradient_checkpointing_enable()\n"
    )
    assert result.stdout.startswith("m.py:2:5: CKP001 `checkpoint()` without")
    assert result.stdout.endswith(
        "Found 3 errors (1 fixed, 2 remaining).\n"
        "No fixes available (2 hidden fixes can be enabled with the `--unsafe-fixes` option).\n"
    )


def test_unsafe_fixes_then_second_fix_changes_nothing(run_cli, write) -> None:
    path = write("m.py", MIXED)
    result = run_cli("--fix", "--unsafe-fixes", "m.py")
    assert result.exit_code == 0
    assert result.stdout == "Found 2 errors (2 fixed, 0 remaining).\n"
    after = path.read_bytes()
    assert (
        after
        == (
            IMPORT + "a = checkpoint(f, x, use_reentrant=False)\nb = checkpoint(f, x, mask=m, use_reentrant=False)\n"
        ).encode()
    )
    result = run_cli("--fix", "--unsafe-fixes", "m.py")
    assert (result.exit_code, result.stdout) == (0, "All checks passed!\n")
    assert path.read_bytes() == after


def test_fix_and_diff_agree_on_multi_line_files(run_cli, write) -> None:
    body = IMPORT + dedent(
        """\
        y = checkpoint(
            f,
            x
        )
        """
    )
    path = write("m.py", body)
    diff = run_cli("--diff", "--unsafe-fixes", "m.py")
    assert diff.exit_code == 1
    assert diff.stdout == (
        "--- a/m.py\n+++ b/m.py\n@@ -1,5 +1,6 @@\n"
        " from torch.utils.checkpoint import checkpoint\n"
        " y = checkpoint(\n     f,\n-    x\n+    x,\n+    use_reentrant=False\n )\n"
    )
    assert path.read_text() == body
    assert run_cli("--fix", "--unsafe-fixes", "m.py").exit_code == 0
    assert path.read_text() == IMPORT + "y = checkpoint(\n    f,\n    x,\n    use_reentrant=False\n)\n"


def test_engine_refuses_a_fix_that_does_not_compile(monkeypatch) -> None:
    # A rule bug that repeats a keyword (valid for libcst's parser, a SyntaxError for
    # CPython's compiler) must leave the file unchanged and be reported.
    from ckptlint.rules import ckp001_use_reentrant

    monkeypatch.setattr(ckp001_use_reentrant, "_passed_none", lambda site: None)
    message = (
        "internal error: the fix for CKP001 produced code that does not compile "
        "(keyword argument repeated: use_reentrant, line 2); file left unchanged"
    )
    with pytest.raises(RuntimeError, match=re.escape(message)):
        fix(IMPORT + dedent("y = checkpoint(f, x, use_reentrant=None)\n"), "CKP001")


def test_no_fix_when_the_function_refuses_the_keyword_too() -> None:
    # sd-scripts finetune/blip/med.py: custom_forward(*inputs) gets mode=...
    from ckptlint.api import lint_source

    source = (
        "import torch\n"
        "def create_custom_forward(module):\n"
        "    def custom_forward(*inputs):\n"
        "        return module(*inputs)\n"
        "    return custom_forward\n"
        "def run(layer, x, mode):\n"
        "    return torch.utils.checkpoint.checkpoint(create_custom_forward(layer), x, mode=mode)\n"
    )
    found = {d.code: d for d in lint_source(source, select=["CKP001", "CKP002"])}
    # one finding: CKP002 (TypeError even with use_reentrant=False); CKP001's advice to pass
    # use_reentrant=False would be the opposite
    assert set(found) == {"CKP002"}
    assert found["CKP002"].fix is None
    assert "pass the value positionally or bind it inside the function" in found["CKP002"].message


def test_fix_with_a_fallback_round_trips_through_the_cache_record() -> None:
    from dataclasses import replace

    from ckptlint.text.diagnostics import Diagnostic

    (found,) = lint_source(IMPORT + "checkpoint(f, x)\n", select=["CKP001"])
    assert found.fix is not None
    found = replace(found, fix=replace(found.fix, fallback=replace(found.fix, message="other")))
    again = Diagnostic.from_dict(found.to_dict())
    assert again == found and again.fix is not None and again.fix.fallback == found.fix.fallback  # type: ignore[union-attr]


def test_ckp001_replaces_an_explicit_none_with_false_only() -> None:
    source = IMPORT.replace("checkpoint\n", "checkpoint_sequential\n") + "checkpoint_sequential(m, 2, x, None)\n"
    assert fix(source, "CKP001", unsafe=False) == source
    assert fix(source, "CKP001", unsafe=True) == source.replace("None)", "False)")


def test_extend_unsafe_fixes_demotes_a_safe_fix(run_cli, write) -> None:
    path = write("m.py", IMPORT + "y = checkpoint(f, x, mask=m)\n")
    write("pyproject.toml", '[tool.ckptlint]\nextend-unsafe-fixes = ["CKP001"]\n')
    result = run_cli("--fix", "--select", "CKP001", "m.py")
    assert result.exit_code == 1 and path.read_text() == IMPORT + "y = checkpoint(f, x, mask=m)\n"


def test_fix_of_a_sole_generator_argument_adds_parentheses() -> None:
    fixed = fix_source(IMPORT + "x = checkpoint(t for t in y)\n", unsafe=True)
    assert fixed == IMPORT + "x = checkpoint((t for t in y), use_reentrant=False)\n"
    compile(fixed, "<fixed>", "exec")

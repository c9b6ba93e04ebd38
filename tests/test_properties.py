"""Property tests: for random programs with checkpoint calls in every import form and
argument layout, linting never fails, every fix output compiles, fixing is idempotent and
every fixed finding is gone. Derandomized with a bounded budget, so CI is deterministic and
fast (the module takes ~11 s on 2 cores)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ckptlint.api import settings_for
from ckptlint.lint.linter import FileLinter
from ckptlint.lint.results import FixMode

BUDGET = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

ALIASES = st.sampled_from(["cp", "ckpt", "C", "_torch_cp"])

# (import lines, expression naming torch.utils.checkpoint.checkpoint); {a} is an alias
IMPORT_FORMS = [
    ("import torch\n", "torch.utils.checkpoint.checkpoint"),
    ("import torch.utils.checkpoint\n", "torch.utils.checkpoint.checkpoint"),
    ("import torch.utils.checkpoint as {a}\n", "{a}.checkpoint"),
    ("from torch.utils.checkpoint import checkpoint as {a}\n", "{a}"),
    ("from torch.utils.checkpoint import checkpoint\n", "checkpoint"),
    ("from torch.utils import checkpoint\n", "checkpoint.checkpoint"),
    ("from torch.utils import checkpoint as {a}\n", "{a}.checkpoint"),
]

ATOMS = ["f", "x", "self.layer", "lambda t: t * 2", "inputs[0]", "g(x, y)", "(x, y)", "[x, y]", "{'a': x}", "x + 1"]
STARRED = ["*args", "*inputs"]
KEYWORDS = {
    "use_reentrant": ["False", "True", "None", "flag"],
    "preserve_rng_state": ["False", "True", "keep"],
    "determinism_check": ["'default'", "'none'"],
    "debug": ["False", "True"],
    "context_fn": ["ctx", "noop_context_fn"],
    "mask": ["m", "None"],  # a keyword for the checkpointed function
    "use_reentrent": ["False"],  # misspelled options (CKP003)
    "preserve_rng": ["False", "True"],
}
DOUBLE_STARRED = ["**kwargs", "**{'preserve_rng_state': False}", "**{'use_reentrant': False}", "**dict(debug=False)"]


@st.composite
def arguments(draw, callee: str, depth: int) -> list[str]:
    """Arguments of one checkpoint call: the function, positional inputs (maybe a nested
    checkpoint call, maybe starred), keywords and ``**`` mappings, in a valid order."""
    args = [draw(st.sampled_from(["f", "self.block", "lambda t: t", "layer.forward"]))]
    for _ in range(draw(st.integers(0, 3))):
        if depth < 2 and draw(st.integers(0, 5)) == 0:
            args.append(draw(call(callee, depth + 1)))
        else:
            args.append(draw(st.sampled_from(ATOMS + STARRED)))
    names = draw(st.lists(st.sampled_from(sorted(KEYWORDS)), unique=True, max_size=3))
    tail = [f"{name}={draw(st.sampled_from(KEYWORDS[name]))}" for name in names]
    if draw(st.booleans()) and draw(st.integers(0, 3)) == 0:
        tail.insert(draw(st.integers(0, len(tail))), draw(st.sampled_from(DOUBLE_STARRED)))
    return args + tail


def layout(draw, head: str, args: list[str], indent: str) -> str:
    """``head(args)`` on one line, one argument per line (trailing comma or not, comments,
    closing parenthesis on its own line or not), or hanging after the first argument."""
    style = draw(st.sampled_from(["one-line", "per-line", "hanging", "empty-first-line"]))
    if style == "one-line" or not args:
        return f"{head}({', '.join(args)})"
    inner = indent + "    "
    parts = []
    for i, arg in enumerate(args):
        last = i == len(args) - 1
        comma = "," if not last or draw(st.booleans()) else ""
        comment = "  # note" if draw(st.integers(0, 4)) == 0 else ""
        parts.append(f"{arg}{comma}{comment}")
    if style == "hanging":
        first, *rest = parts
        if "#" in first:
            first = first.split("  #")[0]
        pad = " " * (len(head) + 1)
        body = first + "".join(f"\n{indent}{pad}{p}" for p in rest)
        close = "\n" + indent + ")" if "#" in (rest[-1] if rest else "") or draw(st.booleans()) else ")"
        return f"{head}({body}{close}"
    body = "".join(f"\n{inner}{p}" for p in parts)
    if "#" in parts[-1] or draw(st.booleans()):
        return f"{head}({body}\n{indent})"
    return f"{head}({body})"


@st.composite
def call(draw, callee: str, depth: int = 0, indent: str = "") -> str:
    kind = draw(
        st.sampled_from(["checkpoint", "checkpoint", "sequential"] if callee.endswith("checkpoint") else ["checkpoint"])
    )
    if kind == "sequential":
        head = callee[: -len("checkpoint")] + "checkpoint_sequential"
        args = ["model", "2", "x"] + draw(
            st.lists(st.sampled_from(["False", "use_reentrant=False", "preserve_rng_state=False"]), max_size=1)
        )
        return layout(draw, head, args, indent)
    return layout(draw, callee, draw(arguments(callee, depth)), indent)


@st.composite
def statement(draw, callee: str, indent: str) -> str:
    """One statement holding checkpoint calls, partials, wrappers or HF switches."""
    kinds = ["assign", "assign", "noqa", "return-like", "in-list", "partial", "wrapper", "hf-enable", "hf-args", "save"]
    kind = draw(st.sampled_from(kinds + (["module-called"] * 2 if callee.endswith(".checkpoint") else [])))
    if kind == "assign":
        return f"{indent}y = {draw(call(callee, 0, indent))}\n"
    if kind == "noqa":
        codes = draw(st.sampled_from(["", ": CKP001", ": CKP003", ": CKP001, CKP002", ": E501, CKP101"]))
        return f"{indent}y = {draw(call(callee, 0, indent))}  # noqa{codes}\n"
    if kind == "module-called":  # the module itself called (CKP302)
        return f"{indent}y = {layout(draw, callee[: -len('.checkpoint')], draw(arguments(callee, 1)), indent)}\n"
    if kind == "save":  # checkpoint() mistaken for torch.save (CKP301)
        return f"{indent}{callee}(model.state_dict(), 'model.pt')\n"
    if kind == "return-like":
        return f"{indent}out = torch.cat([{draw(call(callee, 0, indent))}, x], dim=1)\n"
    if kind == "in-list":
        return f"{indent}outs = [{draw(call(callee, 0, indent))} for x in xs]\n"
    if kind == "partial":
        names = draw(
            st.lists(st.sampled_from(["preserve_rng_state", "use_reentrant", "debug"]), unique=True, max_size=2)
        )
        opts = [callee] + [f"{n}={draw(st.sampled_from(KEYWORDS[n]))}" for n in names]
        partial = layout(draw, "functools.partial", opts, indent)
        return f"{indent}ck = {partial}\n{indent}z = ck(f, x)\n"
    if kind == "wrapper":
        opts = ["module"] + draw(
            st.lists(
                st.sampled_from(
                    [
                        "checkpoint_impl=CheckpointImpl.REENTRANT",
                        "checkpoint_impl=CheckpointImpl.NO_REENTRANT",
                        f"checkpoint_fn={callee}",
                        "preserve_rng_state=False",
                    ]
                ),
                unique=True,
                max_size=2,
            )
        )
        return f"{indent}wrapped = {layout(draw, 'checkpoint_wrapper', opts, indent)}\n"
    if kind == "hf-enable":
        opts = draw(
            st.sampled_from(
                [
                    [],
                    ["gradient_checkpointing_kwargs=None"],
                    ["gradient_checkpointing_kwargs={}"],
                    ["gradient_checkpointing_kwargs={'use_reentrant': False}"],
                    ["gradient_checkpointing_kwargs={'preserve_rng_state': True}"],
                    ["**opts"],
                ]
            )
        )
        return f"{indent}{layout(draw, 'model.gradient_checkpointing_enable', opts, indent)}\n"
    opts = ["'out'", "gradient_checkpointing=True"] + draw(
        st.sampled_from(
            [
                [],
                ["gradient_checkpointing_kwargs={}"],
                ["gradient_checkpointing_kwargs=None"],
                ["gradient_checkpointing_kwargs={'use_reentrant': True}"],
            ]
        )
    )
    return f"{indent}args = {layout(draw, 'TrainingArguments', opts, indent)}\n"


@st.composite
def programs(draw) -> str:
    imports, callee = draw(st.sampled_from(IMPORT_FORMS))
    alias = draw(ALIASES)
    imports, callee = imports.format(a=alias), callee.format(a=alias)
    header = (
        "import functools\nimport torch\n"
        + imports
        + "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper, CheckpointImpl\n"
        + "from transformers import TrainingArguments\n"
        + "def f(x):\n    return torch.nn.functional.dropout(x, p=0.1)\n"
    )
    body = []
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(["top", "function", "method", "block"]))
        if where == "top":
            body.append(draw(statement(callee, "")))
        elif where == "function":
            body.append(
                "def forward(x, *args, **kwargs):\n"
                + draw(statement(callee, "    "))
                + "    return y if False else x\n"
            )
        elif where == "method":
            body.append(
                "class Block(torch.nn.Module):\n    def forward(self, x, *inputs, **kwargs):\n"
                + draw(statement(callee, "        "))
            )
        else:
            body.append("if flag:\n" + draw(statement(callee, "    ")))
    text = header + "\n".join(body)
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    if draw(st.booleans()):
        text = text.rstrip("\r\n")
    return text


def _lint(text: str, fix: bool = False, unsafe: bool = False):
    mode = FixMode.APPLY if fix else FixMode.NONE
    result = FileLinter().lint("m.py", text.encode(), settings_for(["ALL"]), fix=mode, unsafe=unsafe, gate=False)
    assert result.problems == [], [p.line() for p in result.problems]
    return result


def _fixable(diagnostics, unsafe: bool) -> list:
    return [d for d in diagnostics if d.fix is not None and d.fix.applies(unsafe)]


def _check_fix_properties(text: str, unsafe: bool) -> None:
    found = _lint(text).diagnostics
    before = Counter(d.code for d in found)
    fixed = _lint(text, fix=True, unsafe=unsafe)
    out = fixed.fixed_text if fixed.fixed_text is not None else text
    compile(out, "<fixed>", "exec", dont_inherit=True)  # every fix output compiles
    again = _lint(out, fix=True, unsafe=unsafe)
    assert again.fixed_text in (None, out) and again.fixed == 0  # idempotent
    after = _lint(out).diagnostics
    # every fixed finding is gone: nothing fixable is left (a finding that came back after its
    # fix would be fixable again), and when one rule's fixes ran alone its count fell by them
    assert not _fixable(after, unsafe), [(d.code, d.start) for d in _fixable(after, unsafe)]
    if len(fixed.fixed_codes) == 1:
        [(code, count)] = fixed.fixed_codes.items()
        assert Counter(d.code for d in after)[code] <= before[code] - count


@BUDGET
@given(programs())
def test_random_checkpoint_programs(text: str) -> None:
    compile(text, "<generated>", "exec", dont_inherit=True)  # the generator makes valid code
    _check_fix_properties(text, unsafe=True)
    _check_fix_properties(text, unsafe=False)


hypothesmith = pytest.importorskip("hypothesmith")


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(hypothesmith.from_grammar(auto_target=False), st.sampled_from(IMPORT_FORMS))
def test_arbitrary_python_around_a_checkpoint_call(code: str, form: tuple[str, str]) -> None:
    """Any valid Python (hypothesmith, from the grammar) before a checkpoint call: linting and
    fixing never fail, and the fixed file compiles."""
    imports, callee = (part.format(a="cp") for part in form)
    text = imports + code + ("\n" if code and not code.endswith("\n") else "") + f"y = {callee}(f, x)\n"
    try:
        compile(text, "<generated>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return  # e.g. code ending in a backslash continuation: not a program
    _lint(text)
    fixed = _lint(text, fix=True, unsafe=True)
    if fixed.fixed_text is not None:
        compile(fixed.fixed_text, "<fixed>", "exec", dont_inherit=True)

"""The byte-level gate is fast and precise: rule codes, not CHECKPOINT constants; spacing in
attribute paths; dead imports."""

from __future__ import annotations

import pytest

from ckptlint.lint.gate import may_have_findings

PASS = [
    "from torch.utils.checkpoint import checkpoint\ny = checkpoint(f, x)\n",
    "from torch.utils.checkpoint import checkpoint as ck\ny = ck(f, x)\n",
    "from torch.utils.checkpoint import (\n    checkpoint,\n    checkpoint_sequential,\n)\ncheckpoint_sequential(m, 2, x)\n",
    "import torch\ny = torch.utils.checkpoint.checkpoint(f, x)\n",
    "import torch\ny = torch.utils . checkpoint\t.checkpoint(f, x)\n",
    "import torch.utils.checkpoint as cp\ncp.checkpoint(f, x)\n",
    "from torch.utils import checkpoint\ncheckpoint.checkpoint(f, x)\n",
    "from torch.utils.checkpoint import *\n",
    "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper as cw\nm = cw(m)\n",
    "model.gradient_checkpointing_enable()\n",
    "args = TrainingArguments('o', gradient_checkpointing=True)  # checkpoint\n",
    "x = 1  # noqa: CKP001\n",
    "import torch  # checkpoint\nfrom torch.distributed._composable import checkpoint\n",
]

SKIP = [
    "import torch\nx = torch.ones(1)\n",
    "import torch.utils.checkpoint\n\nclass M:\n    pass\n",  # a dead import
    "from torch.utils.checkpoint import checkpoint\n# gradient checkpointing is set elsewhere\n",
    "def load_checkpoint(path):\n    return torch.load(path)\n",
    "CHECKPOINT_KEY_NAMES = ['a']\n",  # spells C-K-P without being a rule code
    "import torch\nUNIVERSAL_CHECKPOINT_INFO = 'x'\nsave_checkpoint(m)\n",
    "from torch.utils.checkpoint import checkpoint\nmy.checkpoint(f, x)\n",  # an attribute of something else
]


@pytest.mark.parametrize("source", PASS)
def test_files_that_can_have_findings_pass(source: str) -> None:
    assert may_have_findings(source.encode())


@pytest.mark.parametrize("source", SKIP)
def test_files_that_cannot_have_findings_are_skipped(source: str) -> None:
    assert not may_have_findings(source.encode())


# --------------------------------------------------------------------------------------------
# The literal-first searches answer exactly what the gate's regular expressions (kept in
# ckptlint.lint.gate as their specification) answer.

import re  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ckptlint.lint import gate  # noqa: E402
from ckptlint.lint.literal_search import (  # noqa: E402
    AliasLineSearch,
    KeywordSearch,
    OwnerCallSearch,
    WordSearch,
)

_PAIRS = [
    ("words", gate._WORDS, gate._words),
    ("owner call", gate._OWNER_CALL, gate._owner_call),
    ("alias assignment", gate._ALIAS_ASSIGNMENT, gate._alias_assignment),
    ("gradient_checkpointing=", gate._GC_KEYWORD, gate._gc_keyword),
]
_OTHER_WORDS = re.compile(
    rb"\b(?:" + b"|".join(re.escape(w.encode()) for w in sorted(gate._TABLE_WORDS) if "checkpoint" not in w) + rb")\b"
)

# Pieces the patterns are made of, and their near misses, glued in any order.
_FRAGMENTS = sorted(gate._TABLE_WORDS | gate._TABLE_OWNERS) + [
    "checkpoint", "apply", "gradient_checkpointing", ".checkpoint", "Checkpoint", "Config", "x",
    "_", "0", "é", ".", " ", "\t", "\n", "\r", "\r\n", "\x0b", "\x0c", "(", ")", "=", "==", "#",
    "# c", "a.b", "ckpt", "self", "torch", "utils", "import ", "from ", ",", "\\\n",
]


@st.composite
def _texts(draw) -> bytes:
    pieces = draw(st.lists(st.sampled_from(_FRAGMENTS) | st.text(max_size=3), max_size=14))
    return "".join(pieces).encode("utf-8", "surrogatepass")


@settings(max_examples=800, deadline=None, derandomize=True)
@given(_texts())
def test_literal_searches_answer_what_their_regular_expressions_answer(raw: bytes) -> None:
    for name, pattern, search in _PAIRS:
        assert search(raw) == (pattern.search(raw) is not None), (name, raw)
    assert gate._other_words(raw) == (_OTHER_WORDS.search(raw) is not None), raw


@pytest.mark.parametrize(
    "raw",
    [
        b"", b"checkpoint_seq", b"xcheckpoint_seq", b"checkpoint_seqx", b"a.checkpoint_seq(", b"SFTConfig",
        b"_SFTConfig", b"utils.checkpoint(", b"utils . \n checkpoint\t(", b"myutils.checkpoint(",
        b"utils.checkpointing(", b"mpu.apply(", b"x.mpu.apply (", b".checkpoint(", b"utils.checkpoint",
        b"ckpt = utils.checkpoint", b"ckpt = utils.checkpoint  # alias\n", b"  ckpt=a.b.checkpoint\r\n",
        b"ckpt = utils.checkpoint(f)", b"x\nckpt = utils.checkpoint\ny = 1", b"gradient_checkpointing=True",
        b"gradient_checkpointing \t = x", b"args.gradient_checkpointing == 1", b"no_gradient_checkpointing=1",
        b"gradient_checkpointing\n= 1", b"gradient_checkpointing",
    ],
)
def test_literal_searches_on_edge_cases(raw: bytes) -> None:
    for name, pattern, search in _PAIRS:
        assert search(raw) == (pattern.search(raw) is not None), (name, raw)


def test_the_searches_refuse_what_they_cannot_answer_exactly() -> None:
    with pytest.raises(ValueError):
        WordSearch(["a.b"])
    with pytest.raises(ValueError):
        OwnerCallSearch(["a b"])
    with pytest.raises(ValueError):
        KeywordSearch("")
    assert AliasLineSearch().search(b"a = b.checkpoint") is True


def test_every_test_program_gets_the_same_answers(pytestconfig) -> None:
    root = pytestconfig.rootpath
    checked = 0
    for path in sorted((root / "tests").rglob("*.py")) + sorted((root / "ckptlint").rglob("*.py")):
        raw = path.read_bytes()
        for name, pattern, search in _PAIRS:
            assert search(raw) == (pattern.search(raw) is not None), (name, path)
        checked += 1
    assert checked > 100

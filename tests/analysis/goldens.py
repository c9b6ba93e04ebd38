"""Golden answers of the ``ast`` analyses, recorded while they still equalled their libcst
originals (the comparisons they replace): the inputs those tests compared on and a compact,
deterministic text of an answer.

* :func:`render` writes an answer as text: one line per item of a top-level list or tuple,
  sets sorted, enums by name, dataclasses as their name and fields; a syntax node is refused
  (the tests give positions: 1-based ``(row, col)``).
* :func:`example_params` and :func:`case_params` are the rule examples and the test cases
  (``tests/cases``, and the shared cases next to the project as they were when recorded: one
  absent or changed since is skipped), as ``pytest.param`` with stable ids.
* :func:`check_suite` compares the answers on the programs of the test suite (which change
  with the suite) with ``__digests__/<name>.json``: per program (by the digest of its text) the
  digest of its answers; ``--snapshot-update`` rewrites the file.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import hashlib
import json
import re
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from ckptlint.rules import ALL_RULES, Invalid

__all__ = ["case_params", "check_suite", "digest", "example_params", "parses", "read_case", "render", "rule_examples", "suite_programs"]

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "cases"
SHARED_CASES = ROOT.parent / "shared" / "cases"
GOLDENS = Path(__file__).resolve().parent / "__digests__"
_BLOCK = re.compile(r"^```python (?:bad|good|fixed)\n(.*?)^```", re.MULTILINE | re.DOTALL)

#: The shared cases as recorded: file name and the digest of its text.
SHARED_RECORDED = {
    "case_01.fixed.py": "a313800f5d74952b",
    "case_01.py": "edc0d8b2b7f31c4d",
    "case_02.py": "8cf54dc983109ed8",
    "case_04.py": "dc38424fd77b09c9",
    "case_07.fixed.py": "875e22b82781f9d3",
    "case_07.py": "33523733e1b8c66e",
    "case_09.py": "17f4cc0ae775441e",
    "case_10.fixed.py": "a9aec0346d7a7a7e",
    "case_10.py": "3ee245fae6e817f5",
    "case_12.py": "3de9624da0080636",
    "case_15.py": "4e44d8075c19c0d8",
    "case_16.py": "195254c85b5e60f9",
    "case_17.py": "96fcae44b4f9671a",
    "case_19.py": "66e059679188d854",
    "case_21.py": "b21d568b8791bd57",
    "case_23.py": "f4abbb7afaed421c",
    "case_24.py": "3132dec7f0d14854",
    "case_26.py": "bf678d146c431157",
    "case_27.py": "d143eaedcf721a16",
    "case_28.py": "0f3e825f66b75a82",
    "case_29.py": "bab6bb940fbb6679",
    "case_30.py": "5f0dc06e9371f3e1",
    "case_31.py": "54edaceaf81304bb",
    "case_32.py": "649248ca66156177",
    "case_33.py": "d851276b9dffd510",
}


def digest(text: str) -> str:
    """The first 16 hex digits of the SHA-256 of ``text`` (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def parses(text: str) -> bool:
    """Whether CPython parses ``text``."""
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def rule_examples() -> list[tuple[str, str]]:
    """``(label, text)`` of every rule's ``VALID``/``INVALID`` program and ``rules/CKPxxx.md``
    code block, dedented, that parses."""
    found = []
    for code, rule in sorted(ALL_RULES.items()):
        for kind in ("VALID", "INVALID"):
            for index, example in enumerate(getattr(rule, kind)):
                text = example.code if isinstance(example, Invalid) else example
                found.append((f"{code}-{kind.lower()}-{index}", textwrap.dedent(text)))
        page = ROOT / "rules" / f"{code}.md"
        if page.exists():
            for index, block in enumerate(_BLOCK.findall(page.read_text(encoding="utf-8"))):
                found.append((f"{code}-page-{index}", block))
    return [(label, text) for label, text in found if parses(text)]


def example_params() -> list:
    """:func:`rule_examples` as ``pytest.param(label, text, id=label)``."""
    return [pytest.param(label, text, id=label) for label, text in rule_examples()]


def case_params() -> list:
    """``pytest.param(path, id=...)`` of every test case that parses (id ``cases/<name>``)
    and of every recorded shared case (id ``shared/<name>``; see :func:`read_case`)."""
    params = [
        pytest.param(p, id=f"cases/{p.name}") for p in sorted(CASES.rglob("*.py")) if parses(p.read_text(encoding="utf-8"))
    ]
    params += [pytest.param(SHARED_CASES / name, id=f"shared/{name}") for name in sorted(SHARED_RECORDED)]
    return params


def read_case(path: Path) -> str:
    """The text of a case of :func:`case_params`; skips the test when a shared case is absent
    or changed since it was recorded."""
    if path.parent == SHARED_CASES:
        if not path.is_file():
            pytest.skip("no shared case next to the project")
        text = path.read_text(encoding="utf-8")
        if digest(text) != SHARED_RECORDED[path.name]:
            pytest.skip("the shared case changed since its answers were recorded")
        return text
    return path.read_text(encoding="utf-8")


def suite_programs(exclude: str = "") -> list[str]:
    """The programs of the test suite: every string of a test module (but ``exclude``, a file
    name) that defines a class or a function and holds an ``if`` or a ``self.`` read,
    dedented, when it parses (once each, in the order of the files)."""
    texts: dict[str, None] = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path.name == exclude:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            if ("class " in node.value or "def " in node.value) and ("if " in node.value or "self." in node.value):
                text = textwrap.dedent(node.value)
                if parses(text):
                    texts.setdefault(text)
    return list(texts)


def _plain(value: object) -> object:
    if isinstance(value, ast.AST):
        raise TypeError(f"a syntax node in a golden answer: {value!r}")
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = ", ".join(f"{f.name}={_plain(getattr(value, f.name))!r}" for f in dataclasses.fields(value))
        return f"{type(value).__name__}({fields})"
    if isinstance(value, (set, frozenset)):
        return sorted((_plain(v) for v in value), key=repr)
    if isinstance(value, dict):
        return {repr(_plain(k)): _plain(v) for k, v in sorted(value.items(), key=lambda kv: repr(_plain(kv[0])))}
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"no golden form for {type(value).__name__}: {value!r}")


def render(value: object) -> str:
    """``value`` as deterministic text: one line per item of a top-level list or tuple (or
    ``key: value`` of a dict), each the ``repr`` of its plain form (see the module).
    Raises ``TypeError`` for a value without a plain form."""
    plain = _plain(value)
    if isinstance(plain, dict):
        return "\n".join(f"{k}: {v!r}" for k, v in plain.items())
    if isinstance(plain, (list, tuple)):
        return "\n".join(repr(item) for item in plain)
    return repr(plain)


def check_suite(request: pytest.FixtureRequest, name: str, programs: Iterable[str], answers: Callable[[str], object]) -> int:
    """Compares ``render(answers(program))`` of every program recorded in
    ``__digests__/<name>.json`` (by digest) with the recorded digest; programs not recorded are not
    compared. Fails when fewer than half the recorded programs are still there. With
    ``--snapshot-update`` writes the file anew from ``programs``. Answers the number compared."""
    path = GOLDENS / f"{name}.json"
    if request.config.getoption("--snapshot-update", default=False):
        found = {digest(text): digest(render(answers(text))) for text in dict.fromkeys(programs)}
        GOLDENS.mkdir(exist_ok=True)
        path.write_text(json.dumps(dict(sorted(found.items())), indent=0) + "\n", encoding="utf-8")
        return len(found)
    recorded: dict[str, str] = json.loads(path.read_text(encoding="utf-8"))
    texts = {digest(text): text for text in programs}
    common = [key for key in recorded if key in texts]
    assert len(common) * 2 >= len(recorded), f"{len(common)} of {len(recorded)} recorded programs left"
    differ = [key for key in common if digest(render(answers(texts[key]))) != recorded[key]]
    assert differ == []
    return len(common)

"""What the language server keeps between two lints (ckptlint.server.buffers): the ``ast``
analyses of the modules regions reach and the facts computed from them. Every lint must
find what a lint from scratch finds on the same texts (the command line's ``--no-cache``):
after a reached module changes on disk, in another open document's buffer, when a document
opens or closes, when a module appears, when other documents were linted in between."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from ckptlint.api import settings_for
from ckptlint.lint.linter import FileLinter
from ckptlint.semantic.project import Project
from ckptlint.server.buffers import BufferProject
from ckptlint.server.documents import lint_buffer

SETTINGS = settings_for(["ALL"])

MODEL = (
    "from torch.utils.checkpoint import checkpoint\n\nfrom pkg.blocks import Block\n\n\n"
    "def forward(x):\n    return checkpoint(Block(), x, use_reentrant=False)\n"
)
BLOCKS = (
    "import torch\n\nfrom pkg.util import noise\n\n\nclass Block(torch.nn.Module):\n"
    "    def forward(self, x):\n        return noise(x) * 2\n"
)
QUIET = "def noise(x):\n    return x\n"
NOISY = "import random\n\n\ndef noise(x):\n    return x * random.random()\n"
NOISY_BLOCKS = BLOCKS.replace("import torch\n", "import random\n\nimport torch\n").replace("noise(x) * 2", "noise(x) * random.random()")
NOISY_TOO = "import random\n\n\ndef noise(x):\n    return random.random() * x\n"  # same size as NOISY


class Editor:
    """Open documents and a server-like project that lints them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.buffers: dict[Path, str] = {}
        self.project = BufferProject(lambda path: self.buffers.get(Path(os.path.abspath(path))))

    def write(self, name: str, text: str | None) -> None:
        path = self.root / name
        if text is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)

    def lint(self, name: str) -> list[tuple[str, str, tuple[int, int], str]]:
        """Lint the open document ``name`` as the server does (it forgets the document's
        analysis first)."""
        path = self.root / name
        self.project.forget(path)
        return _found(lint_buffer(FileLinter(self.project), str(path), self.buffers[path], SETTINGS))

    def from_scratch(self, name: str) -> list[tuple[str, str, tuple[int, int], str]]:
        """What a new server finds (nothing kept)."""
        fresh = Editor(self.root)
        fresh.buffers = dict(self.buffers)
        return fresh.lint(name)


def _found(result) -> list[tuple[str, str, tuple[int, int], str]]:
    assert [p for p in result.problems if p.kind.value != "warning"] == []
    return [(d.code, Path(d.path).name, d.start, d.message) for d in result.diagnostics]


def _cli(path: Path) -> list[tuple[str, str, tuple[int, int], str]]:
    return _found(FileLinter(Project()).lint(str(path), path.read_bytes(), SETTINGS))


def _facts(analysis) -> set[str]:
    return {*analysis.derived, *analysis.model.memo}


@pytest.fixture
def editor(tmp_path: Path) -> Editor:
    editor = Editor(tmp_path)
    editor.write("pkg/__init__.py", "")
    editor.write("pkg/model.py", MODEL)
    editor.write("pkg/blocks.py", BLOCKS)
    editor.write("pkg/util.py", QUIET)
    editor.buffers[tmp_path / "pkg" / "model.py"] = MODEL
    return editor


def test_a_reached_module_changed_on_disk_is_read_again(editor: Editor) -> None:
    assert editor.lint("pkg/model.py") == [] == _cli(editor.root / "pkg" / "model.py")
    editor.write("pkg/util.py", NOISY)  # two modules away: blocks.py, parsed before, is unchanged
    found = editor.lint("pkg/model.py")
    assert [(code, name, start) for code, name, start, _ in found] == [("CKP103", "util.py", (5, 16))]
    assert found == _cli(editor.root / "pkg" / "model.py")
    editor.write("pkg/util.py", NOISY_TOO)  # same size, within the same clock tick
    changed = editor.lint("pkg/model.py")
    assert changed != found and changed == _cli(editor.root / "pkg" / "model.py")
    editor.write("pkg/util.py", QUIET)
    assert editor.lint("pkg/model.py") == []


def test_a_reached_module_changed_in_another_open_buffer_is_read_again(editor: Editor) -> None:
    blocks = editor.root / "pkg" / "blocks.py"
    editor.buffers[blocks] = BLOCKS
    assert editor.lint("pkg/model.py") == []
    # the buffer changes (unsaved): the server lints that document, then this one again
    editor.buffers[blocks] = NOISY_BLOCKS
    editor.lint("pkg/blocks.py")
    found = editor.lint("pkg/model.py")
    assert [(code, name) for code, name, _, _ in found] == [("CKP103", "blocks.py")]
    assert found == editor.from_scratch("pkg/model.py")
    # changed again without a lint of its own (the project compares the buffer's text)
    editor.buffers[blocks] = BLOCKS
    assert editor.lint("pkg/model.py") == []
    # closed: the file on disk again, which reaches util.py, noisy on disk now
    editor.write("pkg/util.py", NOISY)
    del editor.buffers[blocks]
    editor.project.close(blocks)
    assert [name for _, name, _, _ in editor.lint("pkg/model.py")] == ["util.py"]


def test_a_module_kept_from_an_earlier_lint_is_read_again_after_it_changed(editor: Editor) -> None:
    """blocks.py is kept from the first lint of model.py; lints of another document in between
    read other files only, then blocks.py changes on disk: the next lint of model.py reads it again."""
    other = editor.root / "pkg" / "other.py"
    editor.buffers[other] = MODEL.replace("from pkg.blocks import Block", "from torch.nn import Linear as Block")
    assert editor.lint("pkg/model.py") == []
    editor.write("pkg/util.py", NOISY)  # a file model.py's lint read: the facts kept are dropped
    editor.lint("pkg/other.py")
    editor.write("pkg/blocks.py", NOISY_BLOCKS)
    found = editor.lint("pkg/model.py")
    assert sorted({name for _, name, _, _ in found}) == ["blocks.py", "util.py"]
    assert found == editor.from_scratch("pkg/model.py") == _cli(editor.root / "pkg" / "model.py")


def test_a_module_that_appears_is_reached(editor: Editor) -> None:
    editor.write("pkg/util.py", None)
    assert editor.lint("pkg/model.py") == []
    editor.write("pkg/util.py", NOISY)
    assert [name for _, name, _, _ in editor.lint("pkg/model.py")] == ["util.py"]


def test_facts_of_kept_modules_are_dropped_only_when_a_file_they_read_changed(editor: Editor) -> None:
    model = editor.root / "pkg" / "model.py"
    blocks = editor.root / "pkg" / "blocks.py"
    kept_modules = editor.project.ast_project
    editor.lint("pkg/model.py")
    kept = kept_modules.cached(blocks)
    facts = _facts(kept) if kept is not None else set()
    assert "class_summaries" in facts  # computed while linting model.py
    editor.buffers[model] = MODEL + "\n"  # an edit of the linted document, which nothing reached
    editor.lint("pkg/model.py")
    assert kept_modules.cached(blocks) is kept and _facts(kept) == facts
    editor.write("pkg/util.py", NOISY)
    editor.project.track()
    assert kept_modules.cached(blocks) is kept and _facts(kept) == set()  # kept parse, facts dropped
    assert kept_modules.cached(editor.root / "pkg" / "util.py") is None  # read again when reached


def test_random_edits_find_what_a_lint_from_scratch_finds(editor: Editor) -> None:
    rng = random.Random(3)
    seen: set[str] = set()
    model, blocks = editor.root / "pkg" / "model.py", editor.root / "pkg" / "blocks.py"
    editor.buffers[editor.root / "pkg" / "other.py"] = "import torch\n"
    for step in range(60):
        action = rng.choice(["util", "blocks disk", "blocks buffer", "close blocks", "model", "other"])
        if action == "util":
            editor.write("pkg/util.py", rng.choice([QUIET, NOISY, NOISY_TOO, None]))
        elif action == "blocks disk":
            editor.write("pkg/blocks.py", rng.choice([BLOCKS, NOISY_BLOCKS]))
        elif action == "blocks buffer":
            editor.buffers[blocks] = rng.choice([BLOCKS, NOISY_BLOCKS, BLOCKS.replace("noise(x)", "x")])
            if rng.random() < 0.5:
                editor.lint("pkg/blocks.py")
        elif action == "close blocks" and blocks in editor.buffers:
            del editor.buffers[blocks]
            editor.project.close(blocks)
        elif action == "other":  # a lint that reads none of model.py's modules
            editor.lint("pkg/other.py")
        else:
            editor.buffers[model] = rng.choice(
                [MODEL, MODEL + "\n", MODEL.replace("=False", "=True"), MODEL.replace("(x):", "(x:"), MODEL + "\n\nreturn 1\n"]
            )
        if action == "other" or rng.random() < 0.3:
            continue  # more changes before model.py is linted again
        found = editor.lint("pkg/model.py")
        assert found == editor.from_scratch("pkg/model.py"), (step, action)
        seen.update(code for code, _, _, _ in found)
    assert seen >= {"CKP103", "CKP999"}  # the random edits made each kind of finding

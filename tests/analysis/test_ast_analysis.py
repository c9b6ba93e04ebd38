"""The ``ast`` reading of a module and the loader of other modules (``semantic/ast_analysis.py``)."""

from __future__ import annotations

import ast
from pathlib import Path

from ckptlint.semantic.ast_analysis import parse_ast
from ckptlint.semantic.project import AstProject, Project
from ckptlint.text.source import SourceFile

TEXT = 'label = "naïve"; x = label\nif x:\n    y = f(\n        "é", x)\n'


def test_positions_are_characters() -> None:
    source = SourceFile("m.py", TEXT)
    analysis = parse_ast(source)
    assert analysis is not None
    node = analysis.tree.body[1]
    call = analysis.tree.body[2].body[0].value  # type: ignore[attr-defined]
    assert analysis.range(node) == ((1, 18), (1, 27))
    assert analysis.text_of(node) == "x = label"
    assert analysis.text_of(call) == 'f(\n        "é", x)'
    assert analysis.range(call) == ((3, 9), (4, 16))


def test_a_text_cpython_refuses_has_no_analysis() -> None:
    assert parse_ast(SourceFile("m.py", "def f(:\n")) is None
    assert parse_ast(SourceFile("m.py", "x = 1\0\n")) is None


def _tree(tmp_path: Path) -> Path:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from .b import run\n", encoding="utf-8")
    (package / "b.py").write_text("def run(f, x):\n    return f(x)\n", encoding="utf-8")
    return tmp_path


def test_other_modules_are_read_once_and_recorded(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    project = Project()
    project.track(root)
    loader = AstProject(project)
    first = loader.ast_analysis_for_module("pkg.b")
    assert first is not None and first.project is loader
    assert (first.module_name, first.is_package) == ("pkg.b", False)
    assert isinstance(first.model.lookup("run", first.model.module_scope)[0].node, ast.FunctionDef)
    assert loader.ast_analysis_for_module("pkg.b") is first
    package = loader.ast_analysis_for_module("pkg")
    assert package is not None and package.is_package
    assert loader.ast_analysis_for_module("pkg.absent") is None
    read = {p.relative_to(root).as_posix() for p in project.accessed()}
    assert {"pkg/__init__.py", "pkg/b.py"} <= read  # absent candidates are recorded too


def test_an_unsaved_buffer_is_read_before_the_file(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    buffers = {str(root / "pkg" / "b.py"): "def run(f, x):\n    return None\n"}

    class Buffers(Project):
        def unsaved_text(self, path: Path) -> str | None:
            return buffers.get(str(path))

    project = Buffers()
    project.track(root)
    loader = AstProject(project)
    first = loader.ast_analysis_for_module("pkg.b")
    assert first is not None and "None" in first.source.text
    buffers[str(root / "pkg" / "b.py")] = "def run(f, x):\n    return 1\n"
    second = loader.ast_analysis_for_module("pkg.b")
    assert second is not first and second is not None and "1" in second.source.text


def test_the_cache_is_bounded_by_characters(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    project = Project()
    project.track(root)
    loader = AstProject(project, max_chars=10)
    assert loader.ast_analysis_for_module("pkg.b") is not None
    assert loader.ast_analysis_for_module("pkg") is not None
    loader.evict()
    assert list(loader._analyses) == [root / "pkg" / "__init__.py"]


def test_tracking_another_project_leaves_its_modules(tmp_path: Path) -> None:
    for name in ("one", "two"):  # each its own project folder
        (tmp_path / name).mkdir()
        (tmp_path / name / "pyproject.toml").write_text("[project]\nname = 'p'\n", encoding="utf-8")
    first_root, second_root = _tree(tmp_path / "one"), _tree(tmp_path / "two")
    project = Project()
    loader = AstProject(project)
    loader.track(first_root)
    assert loader.ast_analysis_for_module("pkg.b") is not None
    loader.track(first_root)  # the same project: kept
    assert list(loader._analyses) == [first_root / "pkg" / "b.py"]
    assert project.accessed() == []  # recording started again by the project's own track
    loader.track(second_root)
    assert list(loader._analyses) == []
    assert loader.ast_analysis_for_module("pkg.b") is not None
    assert list(loader._analyses) == [second_root / "pkg" / "b.py"]


def test_a_module_is_parsed_without_printing_its_own_warnings() -> None:
    """An invalid escape sequence is the read code's business: reading a module (the linted
    file or one its regions reach) raises no warning even where warnings are errors."""
    import warnings

    source = SourceFile("layers.py", 'PATTERN = "\\d+"\n')
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        analysis = parse_ast(source)
    assert analysis is not None and analysis.text_of(analysis.tree.body[0].value) == '"\\d+"'  # type: ignore[attr-defined]

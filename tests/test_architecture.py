"""The package's shape: imports point one way, between layers and between
modules, and no module is long enough to hold several jobs.

Imports are read with CPython's ``ast`` from the sources, counting every form: top-level,
inside functions, and under ``if TYPE_CHECKING:`` (a cycle through a type annotation is still a
cycle a reader has to untangle).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "ckptlint"

#: The layers, bottom first: a module may import its own layer and the ones below it only.
#: ``registry`` is the rule metadata as data (no libcst), ``perf`` the work counters; ``runtime`` (the test-time helper,
#: imports torch) and ``pytest_plugin`` stand apart from the linter.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"registry", "rule_codes", "docs", "perf"}),
    frozenset({"text"}),
    frozenset({"facts"}),
    frozenset({"semantic"}),
    frozenset({"checkpoint"}),
    frozenset({"rules"}),
    frozenset({"config"}),
    frozenset({"lint"}),
    frozenset({"output"}),
    frozenset({"cli", "server", "api", "testing", "__main__"}),
)
STANDALONE = frozenset({"runtime", "pytest_plugin"})
MAX_LINES = 600


def _modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        found[".".join(parts)] = (path, is_package)
    return found


def import_graph() -> dict[str, set[str]]:
    """``module -> ckptlint modules it imports`` (every import statement of its source)."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, (path, is_package) in modules.items():
        here = name.split(".") if is_package else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(here[: len(here) - node.level + 1] + [node.module or ""]) if node.level else node.module or ""
                base = base.rstrip(".")
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "ckptlint"


def _rank(layer: str) -> int | None:
    return next((i for i, members in enumerate(LAYERS) if layer in members), None)


def test_no_import_cycle() -> None:
    assert cycles(import_graph()) == []


def test_the_checker_sees_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_layer_is_known() -> None:
    layers = {_layer(m) for m in import_graph()} - {"ckptlint"}
    unknown = sorted(layer for layer in layers if _rank(layer) is None and layer not in STANDALONE)
    assert unknown == []


def test_imports_point_down_the_layers() -> None:
    upward = []
    for module, imported in import_graph().items():
        mine = _rank(_layer(module))
        for other in imported:
            theirs = _rank(_layer(other))
            if mine is not None and theirs is not None and theirs > mine:
                upward.append(f"{module} -> {other}")
            if _layer(other) in STANDALONE and _layer(module) not in STANDALONE:
                upward.append(f"{module} -> {other} (the linter never imports the runtime helper)")
    assert sorted(upward) == []


#: The parts of ``checkpoint/``, bottom first: sites (which calls checkpoint what, with which
#: options), the evaluator (what an expression denotes, what a site recomputes), the analyses
#: rules ask of a region. Each imports its own part and those below it.
CHECKPOINT_PARTS = ("sites", "evaluator", "analyses")


def test_checkpoint_parts_import_downwards() -> None:
    upward = []
    for module, imported in import_graph().items():
        parts = module.split(".")
        if parts[:2] != ["ckptlint", "checkpoint"] or len(parts) < 4:
            continue
        mine = CHECKPOINT_PARTS.index(parts[2])
        for other in imported:
            theirs = other.split(".")
            if theirs[:2] == ["ckptlint", "checkpoint"] and len(theirs) >= 4 and CHECKPOINT_PARTS.index(theirs[2]) > mine:
                upward.append(f"{module} -> {other}")
    assert sorted(upward) == []
    on_disk = sorted(p.name for p in (PACKAGE / "checkpoint").iterdir() if p.is_dir() and p.name != "__pycache__")
    assert on_disk == sorted(CHECKPOINT_PARTS)
    assert sorted(p.name for p in (PACKAGE / "checkpoint").glob("*.py")) == ["__init__.py"]


def test_no_module_holds_several_jobs() -> None:
    long = {
        str(path.relative_to(PACKAGE.parent)): n
        for path, _ in _modules().values()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


@pytest.mark.slow
@pytest.mark.parametrize(
    "module", ["ckptlint.registry", "ckptlint.rule_codes", "ckptlint.docs", "ckptlint.config.settings", "ckptlint.cli.app"]
)
def test_light_modules_import_without_libcst(module: str) -> None:
    code = f"import sys, {module}; print(sorted(m for m in sys.modules if m == 'libcst' or m.startswith('libcst.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_analysis_never_imports_libcst() -> None:
    """libcst builds fixes only: no module of ``semantic/`` or ``checkpoint/`` imports it, at
    module level or inside a function (its imports live in the fix writers, ``rules/edits.py``
    and ``text/``)."""
    importers = []
    for name, (path, _) in _modules().items():
        if name.split(".")[1:2] not in (["semantic"], ["checkpoint"]):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n == "libcst" or n.startswith("libcst.") for n in names):
                importers.append(name)
    assert importers == []


def test_output_formats_agree_with_the_settings() -> None:
    from ckptlint.config.settings import OUTPUT_FORMATS
    from ckptlint.output import FORMATS

    assert sorted(OUTPUT_FORMATS) == sorted(FORMATS)

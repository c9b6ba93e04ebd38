"""Whether a home-made recompute implementation is used anywhere in its code base.

CKP104 and CKP105 judge the implementation itself (the ``autograd.Function`` that re-runs a
stored callable in ``backward``). Copies of the ldm ``CheckpointFunction`` that nothing calls
are common (judge 8: 11 of 35 region findings on 29 repositories were such dead copies in
Latte, SEINE, LaVie, EasyAnimate and Lumina-T2X), so they are reported only when the
implementation is used: its class or a helper around it (``checkpoint(func, inputs, params,
flag)``) is referenced in its own module outside their definitions, or imported by name from
that module and read by another ``.py`` file of its code base (:func:`~ckptlint.checkpoint.autocast_reach.code_base`;
without a project root, the folder above it),
or read as an attribute of that module in a file that imports the module.

Other files are filtered by bytes (the names must occur) and then read with CPython's ``ast``;
each code base is scanned once per run and names (per :class:`Project`), and every file
examined is recorded (:meth:`Project.record_read`) so that the cache sees a new import. When
it cannot be told (no file on disk, a file ``ast`` refuses, more than
:data:`~ckptlint.checkpoint.autocast_reach.MAX_FILES` files) the implementation counts as used.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from ckptlint.checkpoint.autocast_reach import MAX_FILES, code_base, code_base_files
from ckptlint.semantic.project import PROJECT_MARKERS, Project

if TYPE_CHECKING:
    from ckptlint.checkpoint.homemade import HomeMade, Implementation
    from ckptlint.semantic.analysis import ModuleAnalysis

__all__ = ["implementation_used"]

#: per project (one run): (module path, names) -> (used, files examined)
_SCANNED: WeakKeyDictionary[Project, dict[tuple[Path, frozenset[str]], tuple[bool, list[Path]]]] = WeakKeyDictionary()


def implementation_used(analysis: ModuleAnalysis, project: Project | None, found: HomeMade, implementation: Implementation) -> bool:
    """Whether ``implementation`` (of the module of ``analysis``, ``found`` its module's
    home-made code) is used (see the module's description)."""
    helpers = [h.node for h in found.helpers.values() if h.implementation is implementation]
    names = frozenset({implementation.node.name.value, *(h.name.value for h in helpers)})
    spans = [analysis.range(node) for node in (implementation.node, *helpers)]
    lines = [(start[0], end[0]) for start, end in spans]
    try:
        own = ast.parse(analysis.source.text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    if any(_referenced(node, names) and not any(a <= node.lineno <= b for a, b in lines) for node in ast.walk(own)):
        return True
    path = Path(os.path.abspath(analysis.source.path))
    if not path.is_file():
        return True  # source given on stdin or in memory: its code base is not known
    memo = _SCANNED.setdefault(project, {}) if project is not None and project.files_stable else {}
    key = (path, names)
    if key not in memo:
        memo[key] = _scan(path, names)
    used, files = memo[key]
    if project is not None:
        for file_path in files:
            project.record_read(file_path)
    return used


def _referenced(node: ast.AST, names: frozenset[str]) -> bool:
    return (isinstance(node, ast.Name) and node.id in names) or (isinstance(node, ast.Attribute) and node.attr in names)


def _scan(path: Path, names: frozenset[str]) -> tuple[bool, list[Path]]:
    stem = path.parent.name if path.stem == "__init__" else path.stem
    folder, recursive = code_base(path)
    if not any((folder / marker).exists() for marker in PROJECT_MARKERS):
        # no project root found: one folder higher, so that a namespace import of the module
        # (ALPRO's `import src.utils.grad_ckpt`, `utils/` without `__init__.py`) is seen
        folder, recursive = folder.parent, True
    encoded = [name.encode() for name in names]
    files: list[Path] = []
    for file_path in code_base_files(folder, recursive):
        if file_path is None or len(files) >= MAX_FILES:
            return True, files
        files.append(file_path)
        if file_path == path:
            continue
        try:
            raw = file_path.read_bytes()
        except OSError:
            continue
        if not any(name in raw for name in encoded):
            continue
        try:
            tree = ast.parse(raw)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return True, files
        if _imports_use(tree, stem, names):
            return True, files
    return False, files


def _imports_use(tree: ast.AST, stem: str, names: frozenset[str]) -> bool:
    """Whether ``tree`` imports one of ``names`` from a module named ``stem`` (or all of it,
    ``*``) and reads it, or imports that module and reads one of ``names`` as an attribute. An
    import that nothing reads is no use (GLIGEN's grounding nets import ldm's ``checkpoint``
    and call torch's)."""
    module_imported = False
    local: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if (node.module or "").rsplit(".", 1)[-1] == stem:
                local |= {a.asname or a.name for a in node.names if a.name in names}
                local |= names if any(a.name == "*" for a in node.names) else set()
            module_imported |= any(a.name == stem for a in node.names)
        elif isinstance(node, ast.Import):
            module_imported |= any(a.name.rsplit(".", 1)[-1] == stem for a in node.names)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in local:
            return True
        if module_imported and isinstance(node, ast.Attribute) and node.attr in names:
            return True
    return False

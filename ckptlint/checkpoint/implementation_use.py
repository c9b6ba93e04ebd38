"""Whether a home-made recompute implementation is used anywhere in its code base.

CKP104 and CKP105 judge the implementation itself (the ``autograd.Function`` that re-runs a
stored callable in ``backward``). Copies of the ldm ``CheckpointFunction`` that nothing calls
are common (judge 8: 11 of 35 region findings on 29 repositories were such dead copies in
Latte, SEINE, LaVie, EasyAnimate and Lumina-T2X), so they are reported only when the
implementation is used: its class or a helper around it (``checkpoint(func, inputs, params,
flag)``) is referenced in its own module outside their definitions, or imported by name from
that module and read by another ``.py`` file of its code base (:func:`~ckptlint.checkpoint.autocast_reach.code_base`;
without a project root, the folder above it),
or read as an attribute of that module (or of its package, when the package's ``__init__.py``
imports it) in a file that imports the module.

Modules are read through their ``ast`` index (:func:`~ckptlint.semantic.index.index_for`, cached by
content: what each top-level statement imports, looks up and spells), other files only when
their bytes hold one of the names;
each code base is scanned once per run and names (per :class:`Project`), and every file
examined is recorded (:meth:`Project.record_read`) so that the cache sees a new import. When
it cannot be told (no file on disk, a file the index refuses, more than
:data:`~ckptlint.checkpoint.autocast_reach.MAX_FILES` files) the implementation counts as used.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from ckptlint.checkpoint.autocast_reach import MAX_FILES, code_base, code_base_files
from ckptlint.checkpoint.definition_use import module_parts, spells_path
from ckptlint.semantic.index import ModuleIndex, index_for
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
    own = index_for(analysis.source.text, analysis.source.path)
    if own is None:
        return True
    if any(s.mentions & names and not any(s.start <= b and a <= s.end for a, b in lines) for s in own.statements):
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


def _scan(path: Path, names: frozenset[str]) -> tuple[bool, list[Path]]:
    stem = path.parent.name if path.stem == "__init__" else path.stem
    folder, recursive = code_base(path)
    if not any((folder / marker).exists() for marker in PROJECT_MARKERS):
        # no project root found: one folder higher, so that a namespace import of the module
        # (ALPRO's `import src.utils.grad_ckpt`, `utils/` without `__init__.py`) is seen
        folder, recursive = folder.parent, True
    stems = {stem: module_parts(path)}
    if _reexported_as(path, stem, names):
        stems[path.parent.name] = list(path.parent.parts)
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
        index = index_for(raw.decode("utf-8", "surrogateescape"), str(file_path))
        if index is None or _imports_use(index, stems, names):
            return True, files
    return False, files


def _reexported_as(path: Path, stem: str, names: frozenset[str]) -> set[str]:
    """The name of the package of ``path`` when its ``__init__.py`` imports one of ``names``
    from the module (Megatron's ``mpu/__init__.py``: ``from .random import checkpoint``, called
    as ``mpu.checkpoint(...)``); else nothing."""
    init = path.parent / "__init__.py"
    if path.name == "__init__.py" or not init.is_file():
        return set()
    try:
        index = index_for(init.read_text(encoding="utf-8", errors="surrogateescape"), str(init))
    except OSError:
        return set()
    if index is None:
        return set()
    imported = (full for statement in index.statements for _, full in statement.imported)
    return {path.parent.name} if any(_names_module(full, {stem}, names) for full in imported) else set()


def _names_module(full: str, stems: dict[str, list[str]] | set[str], names: frozenset[str]) -> bool:
    """Whether the imported dotted name ``full`` is one of ``names`` (or ``*``) of a module
    named one of ``stems`` (``.utils.checkpoint``, ``models.utils.*``); with ``stems`` a mapping
    to the module's path parts, an absolute import must also spell the end of that path
    (``torch.utils.checkpoint.checkpoint`` is not a name of ``pointcept/models/utils/checkpoint.py``)."""
    parts = full.rsplit(".", 2)
    if len(parts) < 2 or parts[-2] not in stems or not (parts[-1] in names or parts[-1] == "*"):
        return False
    return not isinstance(stems, dict) or spells_path(full.rsplit(".", 1)[0], stems[parts[-2]])


def _imports_use(index: ModuleIndex, stems: dict[str, list[str]], names: frozenset[str]) -> bool:
    """Whether the module of ``index`` imports one of ``names`` from a module named one of
    ``stems`` (or all of it, ``*``) and looks it up, or imports that module and spells one of
    ``names`` where it looks the module up. An import that nothing reads is no use (GLIGEN's grounding
    nets import ldm's ``checkpoint`` and call torch's)."""
    local: set[str] = set()
    modules: set[str] = set()
    for statement in index.statements:
        for bound, full in statement.imported:
            parts = full.rsplit(".", 2)
            if parts[-1] in stems and spells_path(full, stems[parts[-1]]):
                modules.add(bound)  # the module itself (`from . import utils`, `import a.utils`)
            elif "." in full and bound == full.split(".")[0]:
                continue  # `import torch.utils.checkpoint` binds `torch`, not a name of `utils`
            elif _names_module(full, stems, names):
                local |= names if parts[-1] == "*" else {bound}
    return any(
        statement.mentions & local or (statement.mentions & modules and statement.identifiers & names)
        for statement in index.statements
        if statement.kind != "import"
    )

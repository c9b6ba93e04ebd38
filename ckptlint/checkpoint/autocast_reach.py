"""Whether a module's code base can run its forward under autocast (CKP105's question).

The answer is looked for in the module itself and in the package it belongs to: the top-level
package of the linted tree that holds it (``fairseq`` for ``fairseq/modules/
checkpoint_activations.py``), or the module's own folder when it is in no package. A marker of
:data:`~ckptlint.facts.amp.AUTOCAST_MARKERS` in any ``.py`` file there (``torch.cuda.amp.autocast``
in fairseq's ``train_step``) says yes. The files are read as bytes, not parsed, each package once
per run (per :class:`Project`); each is recorded as read (``Project.file_for_module``) so that the cache sees a
change to it. A file added to the package later is not seen until the module itself changes or
the cache is cleared.

Past :data:`MAX_FILES` files the answer is yes (not known: the rule reports as before).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from ckptlint.facts.amp import AUTOCAST_MARKERS
from ckptlint.semantic.project import Project, module_name_for

if TYPE_CHECKING:
    from ckptlint.semantic.analysis import ModuleAnalysis

__all__ = ["MAX_FILES", "autocast_may_run"]

#: Files of one package read at most (fairseq has about 1,000 ``.py`` files, DeepSpeed about 900).
MAX_FILES = 5_000

#: per project (one run): package folder -> (whether a marker was found, the files read with
#: their dotted names)
_SCANNED: WeakKeyDictionary[Project, dict[Path, tuple[bool, list[tuple[str, Path]]]]] = WeakKeyDictionary()


def _has_marker(raw: bytes) -> bool:
    return any(marker in raw for marker in AUTOCAST_MARKERS)


def autocast_may_run(analysis: ModuleAnalysis, project: Project | None) -> bool:
    """Whether the module of ``analysis`` or its package mentions autocast (see the module's
    description); ``True`` when it cannot be told (no file on disk, too many files)."""
    if _has_marker(analysis.source.text.encode("utf-8", "replace")):
        return True
    path = Path(os.path.abspath(analysis.source.path))
    if not path.is_file():
        return True  # source given on stdin or in memory: its package is not known
    name, is_package, root = module_name_for(path)
    if is_package or "." in name:
        folder, prefix = root / name.split(".")[0], name.split(".")[0]
    else:
        folder, prefix = path.parent, ""
    memo = _SCANNED.setdefault(project, {}) if project is not None and project.files_stable else {}
    found = memo.get(folder)
    if found is None:
        found = memo[folder] = _scan(folder, prefix)
    uses, files = found
    if project is not None:
        for dotted, _ in files:
            project.file_for_module(dotted)  # recorded as read, for cache invalidation
    return uses


def _scan(folder: Path, prefix: str) -> tuple[bool, list[tuple[str, Path]]]:
    files: list[tuple[str, Path]] = []
    walk = os.walk(folder) if prefix else [(str(folder), [], sorted(os.listdir(folder)))]
    for directory, subdirectories, names in walk:
        subdirectories.sort()
        for file_name in sorted(names):
            if not file_name.endswith(".py"):
                continue
            if len(files) >= MAX_FILES:
                return True, files
            file_path = Path(directory) / file_name
            relative = file_path.relative_to(folder).with_suffix("").parts
            dotted = ".".join(part for part in (prefix, *relative) if part)
            if dotted.endswith(".__init__"):
                dotted = dotted[: -len(".__init__")]
            files.append((dotted, file_path))
            try:
                raw = file_path.read_bytes()
            except OSError:
                continue
            if _has_marker(raw):
                return True, files
    return False, files

"""Whether a module's code base can run its forward under autocast (CKP105's question).

The answer is looked for in the module itself, then in the ``.py`` files of its code base: the
nearest folder above it (at most :data:`MAX_LEVELS` up) that holds ``setup.py``, ``setup.cfg``,
``pyproject.toml`` or ``.git`` (a project's root: CompVis stable-diffusion's ``ldm`` is a
namespace package, and its Lightning training script is ``main.py`` beside it), or, without
such a folder, the top-level package that holds the module (its own folder when it is in no
package). A marker of :data:`~ckptlint.facts.amp.AUTOCAST_MARKERS` outside a comment in any of them
(``torch.cuda.amp.autocast`` in fairseq's ``train_step``, a Lightning or Hugging Face trainer
whose precision flag turns autocast on) says yes. Folders whose name starts with a dot and
installed packages (``site-packages``, ``node_modules``) are skipped.

The files are read as bytes, not parsed, each code base once per run (per :class:`Project`);
each file read is recorded (:meth:`Project.record_read`) so that the cache sees a change to it.
A file added to the code base later is not seen until the module itself changes or the cache
is cleared. Past :data:`MAX_FILES` files the answer is yes (not known: reported as before).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from ckptlint.facts.amp import AUTOCAST_MARKERS
from ckptlint.semantic.project import PROJECT_MARKERS, Project, module_name_for

if TYPE_CHECKING:
    from ckptlint.semantic.analysis import ModuleAnalysis

__all__ = ["MAX_FILES", "MAX_LEVELS", "autocast_may_run", "code_base", "code_base_files"]

#: Files of one code base read at most (OFA has 841 ``.py`` files, InternVideo 2,352).
MAX_FILES = 5_000

#: Folders climbed at most from the module's own to find its project's root.
MAX_LEVELS = 8

_SKIPPED = frozenset({"site-packages", "node_modules", "__pycache__"})

#: per project (one run): folder -> (whether a marker was found, the files read)
_SCANNED: WeakKeyDictionary[Project, dict[Path, tuple[bool, list[Path]]]] = WeakKeyDictionary()


def _has_marker(raw: bytes) -> bool:
    """Whether a marker occurs in ``raw`` outside a comment (Latte's ``# @torch.cuda.amp.autocast()``
    left in a model file does not run); a ``#`` earlier on the line counts as a comment."""
    for marker in AUTOCAST_MARKERS:
        at = raw.find(marker)
        while at >= 0:
            if b"#" not in raw[raw.rfind(b"\n", 0, at) + 1 : at]:
                return True
            at = raw.find(marker, at + len(marker))
    return False


def code_base(path: Path) -> tuple[Path, bool]:
    """The folder searched for ``path``'s module and whether to search its subfolders."""
    folder = path.parent
    for _ in range(MAX_LEVELS):
        if any((folder / marker).exists() for marker in PROJECT_MARKERS):
            return folder, True
        if folder.parent == folder:
            break
        folder = folder.parent
    name, is_package, root = module_name_for(path)
    if is_package or "." in name:
        return root / name.split(".")[0], True
    return path.parent, False


def autocast_may_run(analysis: ModuleAnalysis, project: Project | None) -> bool:
    """Whether the module of ``analysis`` or its code base mentions autocast (see the
    module's description); ``True`` when it cannot be told (no file on disk, too many files)."""
    if _has_marker(analysis.source.text.encode("utf-8", "replace")):
        return True
    path = Path(os.path.abspath(analysis.source.path))
    if not path.is_file():
        return True  # source given on stdin or in memory: its code base is not known
    folder, recursive = code_base(path)
    memo = _SCANNED.setdefault(project, {}) if project is not None and project.files_stable else {}
    found = memo.get(folder)
    if found is None:
        found = memo[folder] = _scan(folder, recursive)
    uses, files = found
    if project is not None:
        for file_path in files:
            project.record_read(file_path)
    return uses


def _scan(folder: Path, recursive: bool) -> tuple[bool, list[Path]]:
    files: list[Path] = []
    for file_path in code_base_files(folder, recursive):
        if file_path is None or len(files) >= MAX_FILES:
            return True, files
        files.append(file_path)
        try:
            raw = file_path.read_bytes()
        except OSError:
            continue
        if _has_marker(raw):
            return True, files
    return False, files


def code_base_files(folder: Path, recursive: bool, suffixes: tuple[str, ...] = (".py",)) -> Iterator[Path | None]:
    """The files of a code base (:func:`code_base`) whose names end with one of ``suffixes``
    (default ``.py``), in a stable order, skipping folders whose name starts with a dot and
    installed packages; ``None`` once when the folder cannot be listed."""
    if recursive:
        walk = os.walk(folder)
    else:
        try:
            walk = iter([(str(folder), [], os.listdir(folder))])
        except OSError:
            yield None
            return
    for directory, subdirectories, names in walk:
        subdirectories[:] = sorted(d for d in subdirectories if not d.startswith(".") and d not in _SKIPPED)
        for file_name in sorted(names):
            if file_name.endswith(suffixes):
                yield Path(directory) / file_name

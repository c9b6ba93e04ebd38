"""The project root of a linted file when no ckptlint configuration applies to it: the folder of
the closest ``pyproject.toml`` at or above the file (the project whose declared library versions
are read, :mod:`ckptlint.config.declarations`), or ``None`` when there is none.

The cache lives there (``.ckptlint_cache``), as ruff keeps ``.ruff_cache`` at the project root:
running ckptlint from ``src/`` or ``tests/`` of a project reuses one cache instead of making one
in each folder it runs from. A file with a configuration (``[tool.ckptlint]``,
``.ckptlint.toml``) keeps its cache next to that file (:class:`~ckptlint.config.files.SettingsResolver`).
"""

from __future__ import annotations

import os
from pathlib import Path

from ckptlint.text.reading import is_file_here

__all__ = ["PROJECT_FILE", "ProjectRoots"]

PROJECT_FILE = "pyproject.toml"


class ProjectRoots:
    """The project root of each folder, looked up once per folder (a loop up the parents,
    however deep the folder is)."""

    def __init__(self) -> None:
        self._of_dir: dict[Path, Path | None] = {}

    def for_folder(self, directory: Path) -> Path | None:
        """The closest folder at or above ``directory`` (absolute) holding a ``pyproject.toml``
        file, or ``None``."""
        walked: list[Path] = []
        found: Path | None = None
        current = Path(os.path.abspath(directory))
        while True:
            if current in self._of_dir:
                found = self._of_dir[current]
                break
            walked.append(current)
            if is_file_here(current / PROJECT_FILE):
                found = current
                break
            if current.parent == current:
                break
            current = current.parent
        for folder in walked:
            self._of_dir[folder] = found
        return found

"""The library versions a linted file's project declares (its target versions).

For each tracked library (:data:`ckptlint.facts.version_facts.TRACKED_LIBRARIES`) the nearest
folder above the linted file whose declaration files name the library wins, as the nearest
configuration file does. A folder's declaration files are ``pyproject.toml`` (``[project]``
dependencies and optional dependencies, ``[dependency-groups]``, Poetry's tables),
``requirements*.txt`` and ``requirements/*.txt`` (with ``-r``/``-c`` includes), ``setup.cfg``
``install_requires``/``extras_require``, literal ``install_requires`` in ``setup.py`` and
conda's ``environment.yml``. Requirements installed together are intersected; separate lists
(another requirements file, a Poetry alternative) are alternatives, so the project allows their
union (:class:`~ckptlint.facts.versions.TargetVersion`). An extra or dependency group installs on
top of its file's main dependencies, so it narrows nothing and widens nothing for a library those
name; for one they do not name, its range is an alternative.

Overrides (``[tool.ckptlint] target-versions``, ``--target-version``) replace what is declared
for their library; ``--isolated`` reads no declaration. A declaration file that cannot be read
gives one ``warning:`` line (on stderr) and declares nothing; a requirement of a tracked library
that gives no version range (a URL, an editable checkout, a marker no environment torch installs
in meets, a line pip's parser refuses) gives a ``warning:`` line saying so, and the rest of the
file is read.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from ckptlint.facts.version_facts import TRACKED_LIBRARIES
from ckptlint.facts.versions import TargetVersion
from ckptlint.text.reading import is_file_here

if TYPE_CHECKING:
    from ckptlint.config.requirement_files import RequirementList, Skipped

# ``packaging.requirements`` and ``packaging.utils`` (with the markers, tags and logging they
# import) and the declaration file readers are imported when a requirement or a declaration
# file is read: a run that reads none imports 22 modules fewer.

__all__ = [
    "DeclaredVersions",
    "InvalidTargetVersion",
    "parse_target_version",
    "parse_target_version_option",
    "skipped_notes",
    "stderr_warning",
]

#: How many skipped requirements of one reason one file shows before it counts the rest.
SHOWN_SKIPPED = 3

_FIXED_NAMES = ("pyproject.toml", "setup.cfg", "setup.py", "environment.yml", "environment.yaml")


class InvalidTargetVersion(ValueError):
    """A ``target-versions`` value or ``--target-version`` that is not a tracked library with
    a version or specifier set."""


def parse_target_version(library: str, value: str, source: str) -> TargetVersion:
    """An override: ``value`` is a version (``"5.5"``: every ``5.5.*`` release) or a PEP 440
    specifier set (``">=5.4,<6"``).

    Raises:
        InvalidTargetVersion: an untracked library or a value ``packaging`` refuses.
    """
    from packaging.utils import canonicalize_name

    name = canonicalize_name(library)
    if name not in TRACKED_LIBRARIES:
        known = ", ".join(TRACKED_LIBRARIES)
        raise InvalidTargetVersion(f"{source}: `{library}` is not a library ckptlint reads versions of ({known})")
    text = value.strip()
    try:
        Version(text)
        specifier = f"=={text}" if text.count(".") >= 2 else f"=={text}.*"
    except InvalidVersion:
        specifier = text
    try:
        SpecifierSet(specifier)
    except InvalidSpecifier:
        raise InvalidTargetVersion(f"{source}: `{value}` is neither a version nor a specifier set") from None
    return TargetVersion(name, (str(SpecifierSet(specifier)),), source)


def parse_target_version_option(text: str) -> TargetVersion:
    """``--target-version transformers=5.5`` or ``--target-version "transformers>=5.4"``.

    Raises:
        InvalidTargetVersion: as :func:`parse_target_version`, or text that is neither form.
    """
    from packaging.requirements import InvalidRequirement, Requirement

    match = re.match(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*=(?![=])\s*(.+)$", text)
    if match:
        return parse_target_version(match.group(1), match.group(2), "--target-version")
    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        raise InvalidTargetVersion(f"--target-version: `{text}` is not `LIBRARY=VERSION` or a requirement") from None
    return parse_target_version(requirement.name, str(requirement.specifier), "--target-version")


def stderr_warning(message: str) -> None:
    """Print ``warning: message`` on stderr."""
    sys.stderr.write(f"warning: {message}\n")


class DeclaredVersions:
    """Target versions per linted file, read from declaration files (cached per folder; each
    unreadable file is warned about once)."""

    def __init__(self, warn: Callable[[str], None] = stderr_warning) -> None:
        self.warn = warn
        self._folders: dict[Path, dict[str, TargetVersion]] = {}
        self._nearest: dict[Path, tuple[TargetVersion, ...]] = {}

    def for_path(self, path: Path) -> tuple[TargetVersion, ...]:
        """The declared versions that apply to ``path`` (a file or folder), sorted by library."""
        directory = Path(os.path.abspath(path if path.is_dir() else path.parent))
        climbed: list[Path] = []  # folders not yet known, deepest first (a loop: any depth)
        folder = directory
        while folder not in self._nearest:
            climbed.append(folder)
            if folder.parent == folder:
                break
            folder = folder.parent
        above = self._nearest.get(folder, ())
        for folder in reversed(climbed):
            merged = {t.library: t for t in above} | self.in_folder(folder)
            above = self._nearest[folder] = tuple(sorted(merged.values(), key=lambda t: t.library))
        return self._nearest[directory]

    def in_folder(self, folder: Path) -> dict[str, TargetVersion]:
        """The libraries the declaration files of ``folder`` itself name."""
        found = self._folders.get(folder)
        if found is None:
            found = self._folders[folder] = _combined(self._lists(folder))
        return found

    def _lists(self, folder: Path) -> list[RequirementList]:
        lists: list[RequirementList] = []
        files = _declaration_files(folder)
        if not files:
            return lists
        from ckptlint.config.requirement_files import DeclarationError, read_declarations

        for path in files:
            try:
                read = read_declarations(path)
            except DeclarationError as exc:
                self.warn(f"{exc}; its declared library versions are ignored")
                continue
            except (RecursionError, MemoryError, UnicodeError, ValueError) as exc:
                self.warn(f"{path}: cannot read declared library versions ({type(exc).__name__}); ignored")
                continue
            for note in skipped_notes(path, [skip for found in read for skip in found.skipped]):
                self.warn(note)
            lists += read
        return lists


def skipped_notes(path: Path, skipped: list[Skipped]) -> list[str]:
    """One warning for each skipped requirement of the file ``path`` (its includes' too), in order; where more than
    :data:`SHOWN_SKIPPED` share a reason (unsloth's pyproject.toml pins torch by 94 wheel URLs
    and markers), the first ones of that reason and one line that counts the rest."""
    by_kind: dict[str, list[Skipped]] = {}
    for skip in skipped:
        by_kind.setdefault(skip.kind, []).append(skip)
    notes: list[str] = []
    for kind, group in by_kind.items():
        if len(group) <= SHOWN_SKIPPED:
            notes += [str(skip) for skip in group]
            continue
        notes += [str(skip) for skip in group[: SHOWN_SKIPPED - 1]]
        rest = len(group) - (SHOWN_SKIPPED - 1)
        notes.append(f"{path}: {rest} more requirements of tracked libraries are not read as declared versions: {kind}")
    return notes


def _declaration_files(folder: Path) -> list[Path]:
    try:
        names = set(os.listdir(folder))
    except OSError:
        return []
    files = [folder / name for name in _FIXED_NAMES if name in names]
    files += [folder / name for name in sorted(names) if re.fullmatch(r"requirements.*\.(?:txt|in)", name)]
    if "requirements" in names and (folder / "requirements").is_dir():
        try:
            inner = sorted(os.listdir(folder / "requirements"))
        except OSError:
            inner = []
        files += [folder / "requirements" / name for name in inner if name.endswith((".txt", ".in"))]
    return [path for path in files if is_file_here(path)]


def _combined(lists: Iterable[RequirementList]) -> dict[str, TargetVersion]:
    """Per library, the union of the lists that name it (their specifier sets as alternatives);
    an extra or dependency group counts only for a library its file's main list leaves out."""
    lists = list(lists)
    in_main = {(found.path, library) for found in lists if not found.additive for library in found.ranges()}
    alternatives: dict[str, list[str]] = {}
    sources: dict[str, list[str]] = {}
    lines: dict[str, int] = {}
    for found in lists:
        for library, specifiers in found.ranges().items():
            if not specifiers:
                continue
            if found.additive and (found.path, library) in in_main:
                continue  # an extra or group installs on top of the main list: within its range
            for specifier in specifiers:
                text = str(specifier)
                if text not in alternatives.setdefault(library, []):
                    alternatives[library].append(text)
            if str(found.path) not in sources.setdefault(library, []):
                sources[library].append(str(found.path))
            lines.setdefault(library, found.lines.get(library, 0))
    return {
        library: TargetVersion(library, tuple(specs), "; ".join(sources[library]), lines[library])
        for library, specs in alternatives.items()
    }

"""Finding the Python files to lint.

Walks each given folder for ``*.py``, ``*.pyi`` and ``*.ipynb`` files (notebooks unless
``notebooks = false``), skipping what the settings exclude
(ruff's default excludes, ``exclude``, ``extend-exclude``; gitignore-style patterns relative
to the configuration's folder) and what ``.gitignore`` files ignore (pathspec's
``GitIgnoreSpec``; the files of the walked tree and of its parents up to the repository
root, plus ``.git/info/exclude``), except files git tracks, which git itself never ignores
(:mod:`ckptlint.config.git_tracked`); :attr:`DiscoveryResult.gitignored` counts the Python
files so skipped. Files named explicitly are linted even when excluded,
unless ``force-exclude`` is set. While walking, a symbolic link to a folder is never followed
(as ruff's walker does not): a link such as ``vendor -> ../other`` or ``up -> ..`` would lead
outside the tree. A link named on the command line is linted (a linked folder is walked, with
the same rule below it). A symbolic link to a Python file is linted; broken links and link
loops named ``*.py`` are reported (CKP902), not fatal. :attr:`DiscoveryResult.roots` holds the
resolved paths given: fixes are written only to files that resolve below one of them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ckptlint.config.files import SettingsResolver
from ckptlint.config.git_tracked import TrackedFiles
from ckptlint.config.patterns import exclude_matcher
from ckptlint.config.settings import Settings
from ckptlint.text.reading import is_file_here

if TYPE_CHECKING:
    import pathspec

__all__ = ["DiscoveryResult", "PathNotFound", "discover", "is_excluded"]

PYTHON_SUFFIXES = (".py", ".pyi")
NOTEBOOK_SUFFIX = ".ipynb"


class PathNotFound(Exception):
    """A path given on the command line does not exist (exit code 2)."""


@dataclass
class DiscoveryResult:
    """Files to lint (sorted, unique) and one-line problems met on the way."""

    files: list[Path] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # paths given that do not exist (CKP902)
    roots: list[Path] = field(default_factory=list)  # the paths given, resolved (where writes may go)
    linked: list[Path] = field(default_factory=list)  # files reached through a symbolic link
    #: Python files (and notebooks) skipped because ``.gitignore`` ignores them and git does not
    #: track them; ``gitignored_at_least``: the count stopped at the counting budget.
    gitignored: int = 0
    gitignored_at_least: bool = False

    def may_write(self, path: Path | str) -> bool:
        """Whether ``path`` resolves (symbolic links followed) to a file at or below one of
        :attr:`roots`: ckptlint never writes outside the paths it was given."""
        target = Path(os.path.realpath(path))
        return any(target == root or root in target.parents for root in self.roots)


def _relative(path: Path, root: Path) -> str | None:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return None


def is_excluded(path: Path, settings: Settings, is_dir: bool = False) -> bool:
    """Whether ``path`` (absolute) is excluded by the settings' exclude patterns."""
    relative = _relative(path, settings.root)
    if relative is None or relative == ".":
        relative = path.name
    if is_dir:
        relative += "/"
    return exclude_matcher(settings.all_excludes)(relative)


def _ignore_lines(path: Path) -> list[str]:
    """The lines of an ignore file, ``[]`` when there is none or it cannot be read (in a folder
    that can be listed but not entered, :func:`~ckptlint.text.reading.is_file_here`)."""
    if not is_file_here(path):
        return []
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


#: Folder entries the count of Python files in ``.gitignore``-d folders may look at, in all.
_COUNT_BUDGET = 20_000


class _GitIgnores:
    """The ``.gitignore`` specs that apply below a folder, deepest deciding; files git tracks
    are never ignored. Counts the Python files it made the walk skip."""

    def __init__(self) -> None:
        self._specs: dict[Path, pathspec.GitIgnoreSpec | None] = {}
        self._prefilters: dict[Path, re.Pattern[str] | None] = {}
        self._tracked = TrackedFiles()
        self._is_repository: dict[Path, bool] = {}
        self.skipped = 0
        self._budget = _COUNT_BUDGET

    def spec_for(self, directory: Path) -> pathspec.GitIgnoreSpec | None:
        if directory not in self._specs:
            lines: list[str] = []
            for candidate in (directory / ".gitignore", directory / ".git" / "info" / "exclude"):
                lines += _ignore_lines(candidate)
            if lines:
                import pathspec

                spec = pathspec.GitIgnoreSpec.from_lines(lines)
            else:
                spec = None
            self._specs[directory] = spec
            self._prefilters[directory] = _any_pattern_regex(spec) if spec is not None else None
        return self._specs[directory]

    def ignored(self, path: Path, is_dir: bool, chain: list[Path]) -> bool:
        """``chain``: folders from the repository root (or walk start) down to the parent."""
        for base in reversed(chain):
            spec = self.spec_for(base)
            if spec is None:
                continue
            relative = _relative(path, base)
            if relative is None:
                continue
            relative += "/" if is_dir else ""
            prefilter = self._prefilters.get(base)
            if prefilter is not None and prefilter.search(relative) is None:
                continue  # no pattern matches: the same answer as check_file, ~100x sooner
            result = spec.check_file(relative)
            if result.include is not None:
                return bool(result.include) and not self._git_tracks(path, is_dir, chain[0])
        return False

    def _git_tracks(self, path: Path, is_dir: bool, top: Path) -> bool:
        """Whether git tracks ``path`` (a folder: a file below it) in the repository ``top``."""
        if top not in self._is_repository:
            self._is_repository[top] = os.path.lexists(top / ".git")
        relative = _relative(path, top)
        if not self._is_repository[top] or relative is None:
            return False
        return self._tracked.is_tracked(top, relative, is_dir)

    def count_skipped(self, path: Path, is_dir: bool, settings: Settings) -> None:
        """Count the Python files ``path`` (ignored) held back from the run: itself, or those
        below the folder that the walk would have linted (links not followed, excludes
        applied), within the budget of folder entries (:data:`_COUNT_BUDGET`)."""
        if not is_dir:
            self.skipped += 1
            return
        folders = [path]
        while folders and self._budget > 0:
            try:
                entries = list(os.scandir(folders.pop()))
            except OSError:
                continue
            for entry in entries:
                self._budget -= 1
                try:
                    if entry.is_symlink():
                        continue
                    if entry.is_dir():
                        if not is_excluded(Path(entry.path), settings, is_dir=True):
                            folders.append(Path(entry.path))
                    elif _is_python_name(entry.name, settings) and not is_excluded(Path(entry.path), settings):
                        self.skipped += 1
                except OSError:
                    continue

    @property
    def counted_all(self) -> bool:
        return self._budget > 0


def _is_python_name(name: str, settings: Settings) -> bool:
    return name.endswith(PYTHON_SUFFIXES) or (settings.notebooks and name.endswith(NOTEBOOK_SUFFIX))


def _any_pattern_regex(spec: pathspec.GitIgnoreSpec) -> re.Pattern[str] | None:
    """One regular expression that finds a match exactly when one of ``spec``'s patterns
    does (pathspec tries them one by one in Python: ~150 patterns in a real .gitignore cost
    0.2 s over 2,500 files), or ``None`` when the patterns cannot be combined."""
    regexes = [p.regex for p in spec.patterns if getattr(p, "include", None) is not None]
    if not regexes:
        return re.compile(r"(?!)")  # nothing can match
    compiled = [r for r in regexes if isinstance(r, re.Pattern) and isinstance(r.pattern, str)]
    if len(compiled) < len(regexes):
        return None
    if len({r.flags for r in compiled}) != 1:
        return None
    parts = [_NAMED_GROUP.sub("(?:", r.pattern) for r in compiled]
    try:
        return re.compile("|".join(f"(?:{part})" for part in parts), compiled[0].flags)
    except re.error:
        return None


_NAMED_GROUP = re.compile(r"\(\?P<\w+>")


def _repository_chain(start: Path) -> list[Path]:
    """Folders from the enclosing git repository's root down to ``start`` (just ``[start]``
    outside a repository)."""
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            chain = [candidate]
            for part in start.relative_to(candidate).parts:
                chain.append(chain[-1] / part)
            return chain
    return [start]


def discover(paths: list[Path], resolver: SettingsResolver, force_exclude: bool = False) -> DiscoveryResult:
    """Collect the files to lint below ``paths``.

    A path that does not exist is listed in ``missing`` (the others are still collected, as
    ruff does; the run ends with exit code 2). Raises :class:`~ckptlint.config.files.ConfigError`
    for a bad configuration file.
    """
    result = DiscoveryResult()
    seen: set[Path] = set()
    gitignores = _GitIgnores()
    for given in paths:
        absolute = Path(os.path.abspath(given))
        if not os.path.lexists(absolute):
            result.missing.append(str(given))
            continue
        result.roots.append(Path(os.path.realpath(absolute)))
        if absolute.is_symlink():
            try:
                os.stat(absolute)
            except OSError as exc:  # broken, or a loop
                result.problems.append((str(given), os_reason(exc)))
                continue
        settings = resolver.for_path(absolute)
        if absolute.suffix == NOTEBOOK_SUFFIX and not settings.notebooks:
            if not (force_exclude or settings.force_exclude):
                result.problems.append((str(given), "Jupyter notebooks are turned off (`notebooks = false`); skipped"))
            continue
        if absolute.is_dir():
            chain = _repository_chain(absolute)
            _walk(absolute, resolver, gitignores, chain, result, seen)
            continue
        if force_exclude or settings.force_exclude:
            chain = _repository_chain(absolute.parent)
            if _excluded_anywhere(absolute, settings) or (
                settings.respect_gitignore and gitignores.ignored(absolute, False, chain)
            ):
                continue
        try:
            os.stat(absolute)
        except OSError as exc:
            result.problems.append((str(given), os_reason(exc)))
            continue
        if absolute not in seen:
            seen.add(absolute)
            result.files.append(absolute)
            result.linked.append(absolute)  # named: it may be another name of a walked file
    result.gitignored, result.gitignored_at_least = gitignores.skipped, not gitignores.counted_all
    result.files.sort()
    if _may_overlap(paths, result.roots):
        result.files = _once_each(result.files)  # a folder reached under two names: every file
    elif result.linked:
        result.files = _once_each(result.files, result.linked)
    return result


def _may_overlap(paths: list[Path], roots: list[Path]) -> bool:
    """Whether two of the folders given may hold one file under two names: a given path that
    is (or lies below) a symbolic link, or two given paths resolving one inside the other."""
    if any(os.path.realpath(os.path.abspath(p)) != os.path.abspath(p) for p in paths):
        return True
    return any(a == b or a in b.parents for i, a in enumerate(roots) for j, b in enumerate(roots) if i != j)


def _once_each(files: list[Path], candidates: list[Path] | None = None) -> list[Path]:
    """``files`` (sorted) with each real file once: a symbolic link to another file of the run,
    or a file named twice, would be linted (and fixed) twice, and the second fix would find the
    file changed. The file's own path is kept when it is among them, else the first name.
    ``candidates``: the only files that can be another name of one (the links, the files named
    on the command line); the others are their own real path (resolving 20,000 paths costs
    about a second)."""
    if candidates is not None:
        listed = set(files)
        doubles: set[Path] = set()
        first: dict[str, Path] = {}
        for path in sorted(set(candidates)):
            real = os.path.realpath(path)
            if real != str(path) and Path(real) in listed:
                doubles.add(path)  # the file itself is linted
            elif real in first:
                doubles.add(path)  # two links to one file outside the list: keep the first
            else:
                first[real] = path
        return [path for path in files if path not in doubles] if doubles else files
    by_real: dict[str, Path] = {}
    for path in files:
        real = os.path.realpath(path)
        kept = by_real.get(real)
        if kept is None or (str(path) == real and str(kept) != real):
            by_real[real] = path
    if len(by_real) == len(files):
        return files
    chosen = set(by_real.values())
    return [path for path in files if path in chosen]


def _excluded_anywhere(path: Path, settings: Settings) -> bool:
    if is_excluded(path, settings):
        return True
    return any(is_excluded(parent, settings, is_dir=True) for parent in path.parents if parent != parent.parent)


def _walk(
    top: Path,
    resolver: SettingsResolver,
    gitignores: _GitIgnores,
    chain: list[Path],
    result: DiscoveryResult,
    seen: set[Path],
) -> None:
    """Collect the files below ``top`` into ``result``: a walk with a stack of its own, not
    recursion, so that a tree of any depth is walked (a folder 1,000 levels down would
    exceed Python's recursion limit; past the system's path length its ``ENAMETOOLONG`` is
    one problem of the run, CKP902)."""
    visited: set[tuple[int, int]] = set()
    pending: list[tuple[Path, list[Path]]] = [(top, chain)]
    while pending:
        directory, chain = pending.pop()
        folders = _walk_folder(directory, resolver, gitignores, chain, result, seen, visited)
        pending.extend((folder, chain + [folder]) for folder in reversed(folders))


def _walk_folder(
    directory: Path,
    resolver: SettingsResolver,
    gitignores: _GitIgnores,
    chain: list[Path],
    result: DiscoveryResult,
    seen: set[Path],
    visited: set[tuple[int, int]],
) -> list[Path]:
    """Collect the files of ``directory`` itself; return its folders still to walk (sorted)."""
    try:
        stat = os.stat(directory)
    except OSError as exc:
        result.problems.append((str(directory), os_reason(exc)))
        return []
    key = (stat.st_dev, stat.st_ino)
    if key in visited:
        return []  # a symbolic link loop: each folder is walked once
    visited.add(key)
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as exc:
        result.problems.append((str(directory), os_reason(exc)))
        return []
    settings = resolver.for_path(directory)
    folders: list[Path] = []
    for entry in entries:
        path = Path(entry.path)
        try:
            link = entry.is_symlink()
            if link and not entry.name.endswith(PYTHON_SUFFIXES):
                continue  # a link to a folder is never followed while walking (ruff); name it to lint it
            is_dir = entry.is_dir()
            is_file = not is_dir and entry.is_file()
        except OSError as exc:
            result.problems.append((entry.path, os_reason(exc)))
            continue
        if is_dir and link:
            continue
        if is_dir:
            if is_excluded(path, settings, is_dir=True):
                continue
            if settings.respect_gitignore and gitignores.ignored(path, True, chain):
                gitignores.count_skipped(path, True, settings)
                continue
            folders.append(path)
            continue
        if not entry.name.endswith(PYTHON_SUFFIXES) and not (
            settings.notebooks and entry.name.endswith(NOTEBOOK_SUFFIX)
        ):
            continue
        if not is_file:
            if entry.is_symlink():
                try:
                    os.stat(path)
                    reason = "not a regular file"
                except OSError as exc:
                    reason = os_reason(exc)
                result.problems.append((entry.path, reason))
            continue
        if is_excluded(path, settings):
            continue
        if settings.respect_gitignore and gitignores.ignored(path, False, chain):
            gitignores.count_skipped(path, False, settings)
            continue
        if path not in seen:
            seen.add(path)
            result.files.append(path)
            if link:
                result.linked.append(path)
    return folders


def os_reason(exc: OSError, missing: str = "broken symbolic link") -> str:
    """A one-line reason for an ``OSError`` met on a path (``missing``: what ``ENOENT`` means
    where it happened: a broken link while walking, a vanished file while reading)."""
    import errno

    reasons = {
        errno.ELOOP: "symbolic link loop (too many levels of symbolic links)",
        errno.ENOENT: missing,
        errno.EACCES: "permission denied",
        errno.EISDIR: "is a directory",
        errno.ENAMETOOLONG: "path too long for the system (ENAMETOOLONG)",
    }
    return reasons.get(exc.errno, exc.strerror or str(exc))  # type: ignore[arg-type]

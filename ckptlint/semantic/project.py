"""The linted tree as a whole: module names of files and lazy loading of other modules.

Region rules follow imports into other files of the tree (``from .layers import Block``).
A :class:`Project` maps dotted module names to files and records what the linted file's
result depends on; its :class:`AstProject` parses a file with CPython's ``ast`` only when a
site or a region reaches it, keeping the analysis (per worker process). The cache is bounded
(least recently used analyses are dropped between files), so memory does not grow with the
size of the tree.
"""

from __future__ import annotations

import bisect
import os
from collections import OrderedDict
from functools import cached_property
from pathlib import Path

from ckptlint.semantic.ast_analysis import AstAnalysis, parse_ast
from ckptlint.text.source import SourceFile

__all__ = ["AstProject", "PROJECT_MARKERS", "Project", "module_name_for", "project_folder", "read_source"]

def module_name_for(path: Path) -> tuple[str, bool, Path]:
    """``(dotted name, is_package, import root)`` of the file at ``path``.

    The name climbs parent folders while they hold an ``__init__.py``
    (``src/pkg/sub/mod.py`` -> ``pkg.sub.mod`` with root ``src``), and through a folder
    without one whose parent holds one (a namespace subpackage of a regular package:
    ``pkg/pipelines/run.py`` -> ``pkg.pipelines.run``, whose ``from ..core import x`` then
    resolves); a file outside any package is named by its stem with its own folder as root.
    """
    path = Path(os.path.abspath(path))
    is_package = path.stem == "__init__"
    parts: list[str] = [] if is_package else [path.stem]
    folder = path.parent
    while _is_package(folder) or (folder.name.isidentifier() and _is_package(folder.parent)):
        parts.append(folder.name)
        if folder.parent == folder:
            break
        folder = folder.parent
    parts.reverse()
    return ".".join(parts), is_package, folder


def _is_package(folder: Path) -> bool:
    return (folder / "__init__.py").is_file() or (folder / "__init__.pyi").is_file()


#: Files or folders that mark a project's root folder (a repository, a package's build files).
PROJECT_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg")
_PROJECT_FOLDERS: dict[Path, Path] = {}


def project_folder(root: Path) -> Path:
    """The project an import root belongs to: the nearest folder at or above ``root`` that
    holds a repository or a package's build files (``.git``, ``pyproject.toml``,
    ``setup.py``, ``setup.cfg``), or the file system's root when none does. The import roots
    of one project are searched for each other's imports (``tests/`` importing the package
    under ``src/``); those of another project linted in the same run are not."""
    root = Path(os.path.abspath(root))
    known = _PROJECT_FOLDERS.get(root)
    if known is None:
        known = Path(root.anchor)
        for folder in (root, *root.parents):
            if any(os.path.exists(os.path.join(folder, marker)) for marker in PROJECT_MARKERS):
                known = folder
                break
        if len(_PROJECT_FOLDERS) > 4096:
            _PROJECT_FOLDERS.clear()
        _PROJECT_FOLDERS[root] = known
    return known


class Project:
    """Module lookup and read recording for one run (or one language server).

    Maps dotted module names to files of the linted trees (:meth:`file_for_module`), records
    which files the linted file's result depends on (:meth:`track`, :meth:`record_read`,
    :meth:`accessed`) and keeps the modules read on CPython's ``ast``
    (:attr:`ast_project`, bounded by modules and characters of source).

    Args:
        roots: folders searched for absolute imports (the import roots of the
            linted files are added as files are linted).
        files_stable: whether files may be taken not to appear or vanish between two
            linted files (a command run); the language server, whose files change while it
            runs, says ``False``.
    """

    def __init__(self, roots: list[Path] | None = None, *, files_stable: bool = True) -> None:
        #: import roots by project folder (:func:`project_folder`), each list sorted
        self._roots: dict[Path, list[Path]] = {}
        for root in roots or []:
            self.add_root(root)
        self.files_stable = files_stable
        self._accessed: set[Path] | None = None
        self._module_files: dict[tuple[str, Path | None, int], tuple[Path | None, list[Path]]] = {}
        self._home: Path | None = None  # the import root of the file being linted

    @cached_property
    def ast_project(self) -> AstProject:
        """The modules of this project read on CPython's ``ast``, kept between linted files
        (see :class:`AstProject`)."""
        return AstProject(self)

    def track(self, home: Path | None = None) -> None:
        """Start recording which other files are read (for cache invalidation), for a file
        whose import root is ``home`` (searched first by :meth:`file_for_module`)."""
        self._home = home
        if home is not None:
            self.add_root(home)
        self._accessed = set()
        if not self.files_stable:
            self._module_files.clear()  # files may appear or vanish between files linted

    def accessed(self) -> list[Path]:
        """Files read since :meth:`track`, sorted; stops recording."""
        found = sorted(self._accessed or (), key=str)
        self._accessed = None
        return found

    @property
    def roots(self) -> list[Path]:
        """Every import root known, sorted."""
        return sorted(r for roots in self._roots.values() for r in roots)

    def record_read(self, path: Path) -> None:
        """Record that the linted file's result depends on the bytes of ``path``, a module it
        imports that was read without being parsed (the search for a helper's definition),
        for cache invalidation."""
        if self._accessed is not None:
            self._accessed.add(path if path.is_absolute() else Path(os.path.abspath(path)))

    def unsaved_text(self, path: Path) -> str | None:
        """The text of ``path`` when it is read from elsewhere than the file on disk (an
        editor's unsaved buffer, see :class:`ckptlint.server.buffers.BufferProject`); ``None``
        here: read the file."""
        return None

    def add_root(self, root: Path) -> None:
        """Search ``root`` for absolute imports of the files of its project (the roots of
        a project are kept sorted, so the order of a lookup does not depend on the order in
        which files were linted)."""
        roots = self._roots.setdefault(project_folder(root), [])
        if root not in roots:
            bisect.insort(roots, root)

    def file_for_module(self, module: str) -> Path | None:
        """The file of dotted ``module`` below one of the roots, or ``None`` (looked up once
        per module name and set of roots: for the whole run, or while one file is linted
        when files are not :attr:`files_stable`; the candidates checked are recorded as
        accessed on every call, for cache invalidation)."""
        if not module or not all(part.isidentifier() for part in module.split(".")):
            return None  # not a module name: a name known only at run time (getattr(pkg, self.x))
        key = (module, self._home, len(self._scope()))
        found = self._module_files.get(key)
        if found is None:
            found = self._find_module_file(module)
            self._module_files[key] = found
        if self._accessed is not None:
            self._accessed.update(found[1])  # their appearance matters too
        return found[0]

    def _find_module_file(self, module: str) -> tuple[Path | None, list[Path]]:
        """The file of ``module`` and the paths whose appearance would change the answer:
        the linted file's own import root is searched first, then the other roots of its
        project (:func:`project_folder`) in order (as Python searches the script's folder
        before the rest of ``sys.path``; another project linted in the same run, another
        repository, is what an installed package would be: not searched). The paths
        recorded are the file found and the candidates that are absent in the file's own
        root; a module appearing in another root later is not tracked (with dozens of roots
        in a run, a module found nowhere, numpy or logging, would otherwise record two paths
        per root for every file that imports it: 1.2 million paths, 117 MB of cache, on the
        41-repository corpus)."""
        relative = os.path.join(*module.split("."))
        checked: list[Path] = []
        isfile = os.path.isfile
        home = self._home
        scope = self._scope()
        order = scope if home is None else [home, *(r for r in scope if r != home)]
        for position, root in enumerate(order):
            base = os.path.join(os.fspath(root), relative)
            for candidate in (base + ".py", os.path.join(base, "__init__.py")):
                if isfile(candidate):
                    checked.append(Path(os.path.abspath(candidate)))
                    return Path(candidate), checked
                if position == 0:
                    checked.append(Path(os.path.abspath(candidate)))
        return None, checked

    def _scope(self) -> list[Path]:
        """The import roots searched for the file being linted: those of its project, or every
        root when no file is being linted."""
        if self._home is None:
            return self.roots
        return self._roots.get(project_folder(self._home), [])


def read_source(path: Path) -> SourceFile | None:
    """The decoded text of the file at ``path``; ``None`` when it cannot be read or decoded."""
    from ckptlint.text.source import SourceDecodeError, decode_source

    try:
        return decode_source(path.read_bytes(), str(path))
    except (OSError, SourceDecodeError, ValueError):
        return None


class AstProject:
    """Reads the other modules of ``project``'s tree on ``ast`` (see the module docstring).

    Args:
        project: the module lookup, cache-dependency recording and unsaved buffers.
        max_modules, max_chars: bounds of the cache (entries, characters of source text);
            least recently used entries beyond them are dropped by :meth:`evict`, which a
            run calls between two linted files (:meth:`track`), never while one is linted.
            An ``ast`` tree with its model kept takes about 48 bytes of resident memory per
            source character (measured on the 120 first files of timm's ``models``, 3.4 M
            characters, growth of the peak RSS), so 3,000,000 characters are about 145 MB; at
            that bound a ``--jobs 1`` run of diffusers, whose models all reach
            ``modeling_utils.py`` and ``attention_processor.py``, parses few modules twice.
    """

    def __init__(self, project: Project, *, max_modules: int = 256, max_chars: int = 3_000_000) -> None:
        self.project = project
        self.max_modules = max_modules
        self.max_chars = max_chars
        self._analyses: OrderedDict[Path, AstAnalysis | None] = OrderedDict()
        self._folder: Path | None = None  # the project folder of the file being linted

    def track(self, home: Path | None = None) -> None:
        """Start the next linted file, whose import root is ``home``: the project starts
        recording its reads (:meth:`Project.track`); when ``home`` is in another project folder
        than the last file's, the analyses of files outside it are dropped (a file's imports
        are searched in its own project's roots only, so nothing of another project can be
        reached from it until the run comes back to it: 41 repositories in one run,
        ``--jobs 2``, peaked at 398 MB a worker before this); then the least recently used
        analyses beyond the bounds are dropped (:meth:`evict`)."""
        self.project.track(home)
        if home is not None:
            folder = project_folder(home)
            if folder != self._folder:
                self._folder = folder
                for path in [p for p in self._analyses if not p.is_relative_to(folder)]:
                    dropped = self._analyses.pop(path)
                    if dropped is not None:
                        dropped.release()
        self.evict()

    def file_for_module(self, module: str) -> Path | None:
        return self.project.file_for_module(module)

    def add_root(self, root: Path) -> None:
        self.project.add_root(root)

    def record_read(self, path: Path) -> None:
        self.project.record_read(path)

    def unsaved_text(self, path: Path) -> str | None:
        return self.project.unsaved_text(path)

    def ast_analysis_for_module(self, module: str) -> AstAnalysis | None:
        """The analysis of dotted ``module`` of the tree; ``None`` when no file of the tree
        holds it or it cannot be read, decoded or parsed."""
        path = self.file_for_module(module)
        return self.ast_analysis_for_file(path) if path is not None else None

    def ast_analysis_for_file(self, path: Path) -> AstAnalysis | None:
        """The analysis of ``path`` (read once per text: an unsaved buffer that changed is
        read again); the read is recorded as a cache dependency."""
        path = Path(os.path.abspath(path))
        self.record_read(path)
        unsaved = self.unsaved_text(path)
        if path in self._analyses:
            cached = self._analyses[path]
            if cached is None or unsaved is None or cached.source.text == unsaved:
                self._analyses.move_to_end(path)
                return cached
        name, is_package, root = module_name_for(path)
        self.add_root(root)
        source = SourceFile(str(path), unsaved) if unsaved is not None else read_source(path)
        analysis = parse_ast(source, name, is_package) if source is not None else None
        if analysis is not None:
            analysis.project = self
        old = self._analyses.pop(path, None)
        if old is not None:
            old.release()
        self._analyses[path] = analysis
        return analysis

    def remember(self, path: Path, analysis: AstAnalysis) -> None:
        """Keep ``analysis`` as the reading of ``path`` (the linted file's text, which may be
        a fixed text, a notebook's code or an editor's buffer rather than what is on disk);
        the analysis it replaces is released."""
        path = Path(os.path.abspath(path))
        analysis.project = self
        old = self._analyses.pop(path, None)
        if old is not None and old is not analysis:
            old.release()
        self._analyses[path] = analysis

    def cached(self, path: Path) -> AstAnalysis | None:
        """The analysis of ``path`` kept now, or ``None`` (nothing is read)."""
        return self._analyses.get(Path(os.path.abspath(path)))

    def forget(self, path: Path) -> None:
        """Drop the analysis of ``path`` (its file changed)."""
        old = self._analyses.pop(Path(os.path.abspath(path)), None)
        if old is not None:
            old.release()

    def forget_derived(self) -> None:
        """Drop the facts computed from every analysis kept (a file they may depend on changed)."""
        for analysis in self._analyses.values():
            if analysis is not None:
                analysis.forget_derived()

    def evict(self) -> None:
        """Drop the least recently used analyses beyond the bounds."""
        analyses = self._analyses
        total = sum(a.chars for a in analyses.values() if a is not None)
        while len(analyses) > 1 and (len(analyses) > self.max_modules or total > self.max_chars):
            _, dropped = analyses.popitem(last=False)
            if dropped is not None:
                total -= dropped.chars
                dropped.release()

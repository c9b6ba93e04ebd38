"""The linted tree as a whole: module names of files and lazy loading of other modules.

Region rules follow imports into other files of the tree (``from .layers import Block``).
A :class:`Project` maps dotted module names to files and parses a file only when a region
reaches it, caching the analysis (per worker process). The cache is bounded (least recently
used analyses are dropped between files), so memory does not grow with the size of the tree.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ckptlint.semantic.analysis import ModuleAnalysis

__all__ = ["Project", "module_name_for"]


def module_name_for(path: Path) -> tuple[str, bool, Path]:
    """``(dotted name, is_package, import root)`` of the file at ``path``.

    The name climbs parent folders while they hold an ``__init__.py``
    (``src/pkg/sub/mod.py`` -> ``pkg.sub.mod`` with root ``src``); a file outside any
    package is named by its stem with its own folder as root.
    """
    path = Path(os.path.abspath(path))
    is_package = path.stem == "__init__"
    parts: list[str] = [] if is_package else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file() or (folder / "__init__.pyi").is_file():
        parts.append(folder.name)
        if folder.parent == folder:
            break
        folder = folder.parent
    parts.reverse()
    return ".".join(parts), is_package, folder


class Project:
    """Module lookup and a per-process cache of analysed modules.

    Args:
        roots: folders searched for absolute imports, in order (the import roots of the
            linted files are added as files are linted).
        max_modules, max_chars: bounds of the analysis cache (entries, and characters of
            source text as a proxy for memory: a libcst tree with its semantic model takes
            about 60 bytes per source character, measured with tracemalloc; 1,500,000
            characters are about 40,000 lines and 90-130 MB). Least recently used entries beyond them
            are dropped when :meth:`track` starts the next file, never while one is linted.
            The bounds were 32 modules and 300,000 characters until the wider gate let
            timm's model files in: one of them (``vision_transformer.py``, 212,000
            characters) then evicted the shared ``timm.layers`` modules that the next file
            reaches again, and 62 of the 165 parses of a ``--jobs 1`` run of timm were re-parses.
    """

    def __init__(self, roots: list[Path] | None = None, *, max_modules: int = 256, max_chars: int = 1_500_000) -> None:
        self.roots: list[Path] = list(roots or [])
        self._analyses: OrderedDict[Path, ModuleAnalysis | None] = OrderedDict()
        self._accessed: set[Path] | None = None
        self.max_modules = max_modules
        self.max_chars = max_chars
        self._module_files: dict[tuple[str, int], tuple[Path | None, list[Path]]] = {}

    def track(self) -> None:
        """Start recording which other files are read (for cache invalidation); first drop
        the least recently used analyses beyond the cache bounds."""
        self._evict()
        self._accessed = set()
        self._module_files.clear()  # files may appear or vanish between files linted

    def _evict(self) -> None:
        analyses = self._analyses
        total = sum(len(a.source.text) for a in analyses.values() if a is not None)
        while len(analyses) > 1 and (len(analyses) > self.max_modules or total > self.max_chars):
            _, dropped = analyses.popitem(last=False)
            if dropped is not None:
                total -= len(dropped.source.text)

    def accessed(self) -> list[Path]:
        """Files read since :meth:`track`, sorted; stops recording."""
        found = sorted(self._accessed or ())
        self._accessed = None
        return found

    def add_root(self, root: Path) -> None:
        if root not in self.roots:
            self.roots.append(root)

    def file_for_module(self, module: str) -> Path | None:
        """The file of dotted ``module`` below one of the roots, or ``None`` (looked up once
        per module name and set of roots while one file is linted, see :meth:`track`; the
        candidates checked are recorded as accessed on every call, for cache invalidation)."""
        if not module:
            return None
        key = (module, len(self.roots))
        found = self._module_files.get(key)
        if found is None:
            found = self._find_module_file(module)
            self._module_files[key] = found
        if self._accessed is not None:
            self._accessed.update(found[1])  # their appearance matters too
        return found[0]

    def _find_module_file(self, module: str) -> tuple[Path | None, list[Path]]:
        relative = Path(*module.split("."))
        checked: list[Path] = []
        for root in self.roots:
            for candidate in (root / relative.with_suffix(".py"), root / relative / "__init__.py"):
                checked.append(Path(os.path.abspath(candidate)))
                if candidate.is_file():
                    return candidate, checked
        return None, checked

    def remember(self, path: Path, analysis: ModuleAnalysis) -> None:
        path = Path(os.path.abspath(path))
        self._analyses[path] = analysis
        self._analyses.move_to_end(path)

    def analysis_for_file(self, path: Path) -> ModuleAnalysis | None:
        """Parse (once) and return the analysis of ``path``; ``None`` when it cannot be read,
        decoded or parsed."""
        from ckptlint.semantic.analysis import parse_source
        from ckptlint.text.source import SourceDecodeError, decode_source

        path = Path(os.path.abspath(path))
        if self._accessed is not None:
            self._accessed.add(path)
        if path not in self._analyses:
            analysis = None
            try:
                raw = path.read_bytes()
                name, is_package, root = module_name_for(path)
                self.add_root(root)
                analysis = parse_source(decode_source(raw, str(path)), name, is_package)
                analysis.project = self
            except (OSError, SourceDecodeError, RecursionError, MemoryError, ValueError):
                analysis = None
            except Exception:  # noqa: BLE001 - libcst.ParserSyntaxError and friends
                analysis = None
            self._analyses[path] = analysis
        else:
            self._analyses.move_to_end(path)
        return self._analyses[path]

    def analysis_for_module(self, module: str) -> ModuleAnalysis | None:
        path = self.file_for_module(module)
        return self.analysis_for_file(path) if path is not None else None

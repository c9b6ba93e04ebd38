"""The linted tree as a whole: module names of files and lazy loading of other modules.

Region rules follow imports into other files of the tree (``from .layers import Block``).
A :class:`Project` maps dotted module names to files and parses a file only when a region
reaches it, caching the analysis (per worker process). The cache is bounded (least recently
used analyses are dropped between files), so memory does not grow with the size of the tree.

Partial parsing. A region asks for names of a module (:meth:`Project.analysis_for_names`):
the module's :class:`~ckptlint.semantic.index.ModuleIndex` (CPython's ``ast``, cached by content)
selects the top-level statements those names need, and libcst parses only them (positions
stay those of the real file; see :mod:`ckptlint.semantic.index`). A later question for a name the
selection does not cover parses a larger selection, which replaces the cached one. A file
whose rules were handed an analysis that got replaced while they ran is checked again
(:meth:`Project.begin_pass`/:meth:`Project.end_pass`), so nodes of two parses of one module
never meet in one result. Setting ``CKPTLINT_WHOLE_PARSE=1`` (or ``partial=False``) parses
every module whole: the tests compare both.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ckptlint.semantic.analysis import ModuleAnalysis
    from ckptlint.text.source import SourceFile

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

    def __init__(
        self,
        roots: list[Path] | None = None,
        *,
        max_modules: int = 256,
        max_chars: int = 1_500_000,
        partial: bool | None = None,
        files_stable: bool = True,
    ) -> None:
        self.roots: list[Path] = list(roots or [])
        #: whether files may be taken not to appear or vanish between two linted files (a
        #: command run: the analyses cached here assume the same of their files); the
        #: language server, whose files change while it runs, says ``False``
        self.files_stable = files_stable
        #: parse only the statements a region needs (see the module docstring)
        self.partial = os.environ.get("CKPTLINT_WHOLE_PARSE", "") in ("", "0") if partial is None else partial
        self._force_whole = False
        self._handed: set[int] = set()
        self._replaced_handed = False
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
        if not self.files_stable:
            self._module_files.clear()  # files may appear or vanish between files linted

    def _evict(self) -> None:
        analyses = self._analyses
        total = sum(a.parsed_chars for a in analyses.values() if a is not None)
        while len(analyses) > 1 and (len(analyses) > self.max_modules or total > self.max_chars):
            _, dropped = analyses.popitem(last=False)
            if dropped is not None:
                total -= dropped.parsed_chars

    def accessed(self) -> list[Path]:
        """Files read since :meth:`track`, sorted; stops recording."""
        found = sorted(self._accessed or ())
        self._accessed = None
        return found

    def record_read(self, path: Path) -> None:
        """Record that the linted file's result depends on the bytes of ``path``, read without
        this project (CKP105's search of the code base for autocast), for cache invalidation."""
        if self._accessed is not None:
            self._accessed.add(Path(os.path.abspath(path)))

    def add_root(self, root: Path) -> None:
        if root not in self.roots:
            self.roots.append(root)

    def file_for_module(self, module: str) -> Path | None:
        """The file of dotted ``module`` below one of the roots, or ``None`` (looked up once
        per module name and set of roots: for the whole run, or while one file is linted
        when files are not :attr:`files_stable`; the candidates checked are recorded as
        accessed on every call, for cache invalidation)."""
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
        relative = os.path.join(*module.split("."))
        checked: list[Path] = []
        isfile = os.path.isfile
        for root in self.roots:
            base = os.path.join(os.fspath(root), relative)
            for candidate in (base + ".py", os.path.join(base, "__init__.py")):
                checked.append(Path(os.path.abspath(candidate)))
                if isfile(candidate):
                    return Path(candidate), checked
        return None, checked

    def remember(self, path: Path, analysis: ModuleAnalysis) -> None:
        self._store(Path(os.path.abspath(path)), analysis)

    def _store(self, path: Path, analysis: ModuleAnalysis | None) -> None:
        old = self._analyses.get(path)
        if old is not None and old is not analysis and id(old) in self._handed:
            self._replaced_handed = True
        self._analyses[path] = analysis
        self._analyses.move_to_end(path)

    def _hand(self, analysis: ModuleAnalysis | None) -> ModuleAnalysis | None:
        if analysis is not None:
            self._handed.add(id(analysis))
        return analysis

    def begin_pass(self, *, whole: bool = False) -> None:
        """Rules start (again) on the linted file: forget the analyses handed out so far;
        with ``whole``, parse every module reached whole from now on (until :meth:`end_pass`)."""
        self._handed.clear()
        self._replaced_handed = False
        self._force_whole = whole

    def end_pass(self) -> bool:
        """Whether an analysis handed out since :meth:`begin_pass` was replaced by a larger
        parse of its module (then the rules must run again)."""
        again = self._replaced_handed
        self._handed.clear()
        self._replaced_handed = False
        self._force_whole = False
        return again

    def analysis_for_file(self, path: Path) -> ModuleAnalysis | None:
        """Parse (once) and return the analysis of the whole of ``path``; ``None`` when it
        cannot be read, decoded or parsed."""
        path = Path(os.path.abspath(path))
        if self._accessed is not None:
            self._accessed.add(path)
        cached = self._analyses.get(path, _MISSING)
        if cached is _MISSING or (cached is not None and cached.covered is not None):
            self._store(path, self._parse_whole(path))
        else:
            self._analyses.move_to_end(path)
        return self._hand(self._analyses[path])

    def _parse_whole(self, path: Path) -> ModuleAnalysis | None:
        from ckptlint.semantic.parse import parse_source
        from ckptlint.text.source import SourceDecodeError, decode_source

        try:
            raw = path.read_bytes()
            name, is_package, root = module_name_for(path)
            self.add_root(root)
            analysis = parse_source(decode_source(raw, str(path)), name, is_package)
            analysis.project = self
        except (OSError, SourceDecodeError, RecursionError, MemoryError, ValueError):
            return None
        except Exception:  # noqa: BLE001 - libcst.ParserSyntaxError and friends
            return None
        return analysis

    def analysis_for_module(self, module: str) -> ModuleAnalysis | None:
        """The whole analysis of dotted ``module`` (see :meth:`analysis_for_file`)."""
        path = self.file_for_module(module)
        return self.analysis_for_file(path) if path is not None else None

    def source_for_file(self, path: Path) -> SourceFile:
        """The text of ``path`` as its cached analysis (whole or partial) read it, else as a
        whole parse reads it (an empty text when it cannot be read)."""
        from ckptlint.text.source import SourceFile

        if self._accessed is not None:
            self._accessed.add(Path(os.path.abspath(path)))
        cached = self._analyses.get(Path(os.path.abspath(path)))
        if cached is None:
            cached = self.analysis_for_file(path)
        return cached.source if cached is not None else SourceFile(str(path), "")

    # ------------------------------------------------------------ partial parsing
    def analysis_for_names(self, module: str, names: Iterable[str]) -> ModuleAnalysis | None:
        """An analysis of dotted ``module`` in which ``names`` (and everything they need)
        are parsed: a partial parse, or the whole one when cached or when partial parsing
        is off; ``None`` when there is no such file or it cannot be parsed."""
        path = self.file_for_module(module)
        return self.analysis_for_file_names(path, names) if path is not None else None

    def analysis_for_file_names(self, path: Path, names: Iterable[str]) -> ModuleAnalysis | None:
        if not self.partial or self._force_whole:
            return self.analysis_for_file(path)
        path = Path(os.path.abspath(path))
        if self._accessed is not None:
            self._accessed.add(path)
        wanted = frozenset(names)
        cached = self._analyses.get(path, _MISSING)
        if cached is not _MISSING and (cached is None or cached.covered is None or wanted <= cached.covered):
            self._analyses.move_to_end(path)
            return self._hand(cached)  # type: ignore[arg-type]
        if cached is not _MISSING:
            wanted |= cached.covered  # type: ignore[union-attr]
        analysis = self._parse_partial(path, wanted, cached if cached is not _MISSING else None)  # type: ignore[arg-type]
        self._store(path, analysis)
        return self._hand(analysis)

    def module_parses(self, module: str) -> bool:
        """Whether dotted ``module`` is a file of the tree that parses (what
        ``analysis_for_module(module) is not None`` says, decided with the index when the
        module is not parsed yet)."""
        path = self.file_for_module(module)
        if path is None:
            return False
        if not self.partial or self._force_whole:
            return self.analysis_for_file(path) is not None
        from ckptlint.semantic.index import index_for
        from ckptlint.semantic.nesting import MAX_NESTING

        path = Path(os.path.abspath(path))
        if self._accessed is not None:
            self._accessed.add(path)
        cached = self._analyses.get(path, _MISSING)
        if cached is not _MISSING:
            return cached is not None
        source = self._read(path)
        if source is None:
            self._store(path, None)
            return False
        index = index_for(source.text, str(path))
        if index is not None:
            return index.depth <= MAX_NESTING
        return self.analysis_for_file(path) is not None

    def _read(self, path: Path) -> SourceFile | None:
        from ckptlint.text.source import SourceDecodeError, decode_source

        try:
            return decode_source(path.read_bytes(), str(path))
        except (OSError, SourceDecodeError, ValueError):
            return None

    def _parse_partial(
        self, path: Path, names: frozenset[str], previous: ModuleAnalysis | None = None
    ) -> ModuleAnalysis | None:
        """Parse the statements of ``path`` that ``names`` need (the whole file when all
        are needed, when it cannot be indexed, or when libcst refuses the selection);
        ``previous``, a partial parse of the same file that selected the same statements,
        is kept (covering ``names`` from now on) instead of parsing again."""
        from ckptlint import perf
        from ckptlint.semantic.analysis import ModuleAnalysis
        from ckptlint.semantic.index import index_for
        from ckptlint.semantic.nesting import MAX_NESTING
        from ckptlint.semantic.parse import parse_module_unvalidated

        source = self._read(path)
        if source is None:
            return None
        name, is_package, root = module_name_for(path)
        self.add_root(root)
        index = index_for(source.text, str(path))
        if index is None:
            return self._parse_whole(path)
        if index.depth > MAX_NESTING:
            return None  # what parse_source refuses (TooDeeplyNested)
        chosen, covered = index.select(names)
        if previous is not None and previous.chosen == chosen and previous.source.text == source.text:
            previous.covered = covered
            return previous
        if len(chosen) == len(index.statements):
            return self._parse_whole(path)
        text, count = index.padded(source.text, chosen)
        try:
            module = parse_module_unvalidated(text)
        except Exception:  # noqa: BLE001 - libcst refuses what CPython took: decide as a whole parse does
            return self._parse_whole(path)
        perf.add("files_parsed_partial")
        perf.add("statements_parsed", count)
        analysis = ModuleAnalysis(source, module, name, is_package)
        analysis.depth = index.depth
        analysis.covered = covered
        analysis.chosen = chosen
        analysis.parsed_text = text
        analysis.parsed_chars = sum(_span_chars(source, index.statements[i].start, index.statements[i].end) for i in chosen)
        analysis.unparsed_attribute_writes = index.attribute_writes_outside(chosen)
        analysis.project = self
        return analysis


def _span_chars(source: SourceFile, start: int, end: int) -> int:
    """Characters of lines ``start``..``end`` (1-based, inclusive) of ``source``."""
    starts = source.line_starts
    stop = starts[end] if end < len(starts) else len(source.text)
    return max(0, stop - starts[min(start, len(starts)) - 1])


_MISSING = object()

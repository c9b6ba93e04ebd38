"""One module read on CPython's ``ast``, and the loader that reads the other modules of the
linted tree that way: the ``ast`` counterparts of :class:`ckptlint.semantic.analysis.ModuleAnalysis`
and :class:`ckptlint.semantic.project.Project`'s module cache.

:class:`AstAnalysis` holds a module's decoded text, its ``ast`` tree, its
:class:`~ckptlint.semantic.ast_model.AstModel` (built on first use) and a memo of facts other
layers compute from it (``derived``), and converts ``ast`` positions (1-based lines, 0-based
UTF-8 byte columns) to the 1-based character positions and 0-based character offsets every
output uses.

:class:`AstProject` loads the other modules a site or a region reaches for one
:class:`~ckptlint.semantic.project.Project`: it finds their files with the project's lookup
(``file_for_module``, so the same import roots and the same absent candidates are recorded),
reads an editor's unsaved buffer before the file (``unsaved_text``), records every file it reads
as a cache dependency of the linted file (``record_read``) and keeps the analyses it parsed, by
path and text, bounded by characters of source (see ``max_chars``). Between two linted files,
:meth:`AstProject.track` starts the project's recording, leaves the modules of another project
and drops the least recently used analyses beyond the bounds.

Nothing on the linter's path uses this module yet (the port to ``ast`` is in progress).
"""

from __future__ import annotations

import ast
import os
from collections import OrderedDict
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ckptlint.semantic.ast_model import AstModel
from ckptlint.text.source import Position, SourceFile

if TYPE_CHECKING:
    from ckptlint.semantic.project import Project

__all__ = ["AstAnalysis", "AstModuleLoader", "AstProject", "parse_ast"]


class AstModuleLoader(Protocol):
    """What an ``ast`` analysis needs of the linted tree to follow names into other modules
    (:class:`AstProject` is one)."""

    def ast_analysis_for_module(self, module: str) -> AstAnalysis | None: ...

    def ast_analysis_for_file(self, path: Path) -> AstAnalysis | None: ...

    def file_for_module(self, module: str) -> Path | None: ...

    def add_root(self, root: Path) -> None: ...

    def record_read(self, path: Path) -> None: ...

    def unsaved_text(self, path: Path) -> str | None: ...


class AstAnalysis:
    """The ``ast`` reading of one module.

    Attributes:
        source: the decoded file.
        tree: its ``ast.Module`` (parsed once, ``type_comments`` off).
        module_name: dotted module name (``"pkg.model"``), ``""`` when unknown.
        is_package: whether the file is a package's ``__init__.py``.
        project: the loader of the other modules of the linted tree, ``None`` for a module
            read alone.
        derived: facts other layers compute from this module, kept with it.
    """

    def __init__(self, source: SourceFile, tree: ast.Module, module_name: str = "", is_package: bool = False) -> None:
        self.source = source
        self.tree = tree
        self.module_name = module_name
        self.is_package = is_package
        self.project: AstModuleLoader | None = None
        self.derived: dict[str, object] = {}

    @cached_property
    def model(self) -> AstModel:
        return AstModel.build(self.tree, self.module_name, self.is_package, self.source.text)

    @property
    def chars(self) -> int:
        """Characters of source text (the loader's cache is bounded by their sum)."""
        return len(self.source.text)

    def release(self) -> None:
        """Drop the model and the derived facts, breaking their reference cycles: for an
        analysis no one will use again."""
        self.derived.clear()
        model = self.__dict__.pop("model", None)
        if model is not None:
            model.release()

    def forget_derived(self) -> None:
        """Drop the facts computed from this module that may depend on other modules
        (:attr:`derived` and the model's ``memo``: sites, helper and class summaries), keeping
        the tree and the model, which depend on its text alone: a module those facts may
        have read changed (the language server, between two lints)."""
        self.derived.clear()
        model = self.__dict__.get("model")
        if model is not None:
            model.memo.clear()

    def start(self, node: ast.AST) -> Position:
        """The 1-based ``(row, column)`` where ``node`` starts (a node with a position:
        ``ast.expr``, ``ast.stmt``, ``ast.arg``, ``ast.keyword``, ``ast.alias``, ...)."""
        return self.source.ast_position(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> Position:
        """The 1-based ``(row, column)`` just past ``node``'s last character."""
        return self.source.ast_position(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def range(self, node: ast.AST) -> tuple[Position, Position]:
        """The 1-based ``(start, end)`` positions of ``node``; ``end`` is exclusive."""
        return self.start(node), self.end(node)

    def offsets(self, node: ast.AST) -> tuple[int, int]:
        """0-based character offsets ``[start, end)`` of ``node`` in the source text."""
        return self.source.offset(self.start(node)), self.source.offset(self.end(node))

    def text_of(self, node: ast.AST) -> str:
        """The source text of ``node`` exactly as written (what ``ast.get_source_segment``
        gives, without splitting the text into lines again for each node)."""
        start, end = self.offsets(node)
        return self.source.text[start:end]


def parse_ast(source: SourceFile, module_name: str = "", is_package: bool = False) -> AstAnalysis | None:
    """The ``ast`` analysis of ``source``; ``None`` when CPython's parser refuses it
    (``SyntaxError``, or ``RecursionError``/``MemoryError``/``ValueError`` on pathological
    input such as a null byte or nesting beyond its limits)."""
    from ckptlint import perf

    perf.add("ast_parses")
    perf.add("ast_chars_parsed", len(source.text))
    try:
        tree = ast.parse(source.text, source.path)
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return None
    return AstAnalysis(source, tree, module_name, is_package)


class AstProject:
    """Reads the other modules of ``project``'s tree on ``ast`` (see the module docstring).

    Args:
        project: the module lookup, cache-dependency recording and unsaved buffers.
        max_modules, max_chars: bounds of the cache (entries, characters of source text);
            least recently used entries beyond them are dropped by :meth:`evict`, which a
            run calls between two linted files (:meth:`track`), never while one is linted.
            The same bounds as :class:`~ckptlint.semantic.project.Project`'s: an ``ast`` tree
            with its model kept takes about 48 bytes of resident memory per source character
            (libcst's about 72; both measured on the 120 first files of timm's ``models``,
            3.4 M characters, growth of the peak RSS), so 3,000,000 characters are about 145 MB.
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
        than the last file's, the analyses of files outside it are dropped (nothing of another
        project can be reached from it, as :meth:`Project.track` decides for libcst's); then
        the least recently used analyses beyond the bounds are dropped (:meth:`evict`)."""
        from ckptlint.semantic.project import project_folder

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
        from ckptlint.semantic.project import module_name_for, read_source

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

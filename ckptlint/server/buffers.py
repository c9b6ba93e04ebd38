"""The language server's project (no pygls import): open documents' buffers before the files
on disk, and what it keeps from one lint to the next.

Between two lints of a document the server keeps (:class:`BufferProject`):

- the parses of the other modules that regions reached (libcst tree and semantic model), each
  until the file changes: its size, modification time, inode or change time on disk (and its
  bytes, for a file changed in the last two seconds), or its text when it is an open document
  (:meth:`BufferProject.signature`), checked at the start of every lint;
- the facts computed from those modules that may read other modules (checkpoint sites, helper
  and class summaries: :meth:`~ckptlint.semantic.analysis.ModuleAnalysis.forget_derived`),
  until any file that a lint since they were computed read changes, the edited document
  included when a region reached it, and files whose absence was noted (a module that
  appears);
- the statements of the previous parse of each document that an edit left alone, and
  whether CPython compiles them (:class:`~ckptlint.semantic.reparse.Reparser`).

So a lint's findings are those of ``ckptlint --no-cache`` on the same texts.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ckptlint.semantic.project import Project, module_name_for
from ckptlint.semantic.reparse import Reparser
from ckptlint.text.source import SourceFile

if TYPE_CHECKING:
    from ckptlint.semantic.analysis import ModuleAnalysis

__all__ = ["BufferProject"]

#: What a file was when it was read: ``("buffer", text)`` of an open document,
#: ``("disk", size, mtime_ns, inode, ctime_ns)`` (and a digest of its bytes when it changed
#: lately), or ``None`` for no such file.
Signature = tuple[object, ...] | None

#: Nanoseconds after a file's last change during which its times alone do not tell a later
#: change from it (:meth:`BufferProject.signature`).
RACY_NS = 2_000_000_000


class BufferProject(Project):
    """A :class:`~ckptlint.semantic.project.Project` that reads open documents from the
    editor's buffers (unsaved text) before the files on disk, and keeps analyses and facts
    between lints while the files they were read from stay the same (see the module docs)."""

    def __init__(self, buffer_text: Callable[[Path], str | None]) -> None:
        super().__init__(partial=False, files_stable=False)  # open buffers are read whole, by analysis_for_file
        self._buffer_text = buffer_text
        #: the linted documents' previous parses
        self.reparser = Reparser()
        #: the signature of each file whose analysis is cached, taken before it was read
        self._read_at: dict[Path, Signature] = {}
        #: the signature of each file lints read since the facts kept with analyses were computed
        self._facts_from: dict[Path, Signature] = {}

    def signature(self, path: Path) -> Signature:
        """What ``path`` is now (see :data:`Signature`). A file changed less than
        :data:`RACY_NS` ago also has the digest of its bytes: file times advance by clock
        ticks (milliseconds), so a second write of the same size within one tick would keep
        the same times (git's "racily clean" entries)."""
        text = self._buffer_text(path)
        if text is not None:
            return ("buffer", text)
        try:
            stat = os.stat(path)
            found: tuple[object, ...] = ("disk", stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_ctime_ns)
            if time.time_ns() - max(stat.st_mtime_ns, stat.st_ctime_ns) < RACY_NS:
                with open(path, "rb") as file:
                    found += (hashlib.blake2b(file.read(), digest_size=16).digest(),)
        except (OSError, ValueError):
            return None
        return found

    # ------------------------------------------------------------------ keeping
    def track(self, home: Path | None = None) -> None:
        """Before a file is linted: drop the analyses of files that changed since they were
        read and, when a file that lints read changed, the facts computed from them."""
        self.refresh()
        super().track(home)

    def refresh(self) -> None:
        """Drop what changed since the last lint (see :meth:`track`)."""
        now: dict[Path, Signature] = {}

        def current(path: Path) -> Signature:
            if path not in now:
                now[path] = self.signature(path)
            return now[path]

        for path, seen in list(self._read_at.items()):
            if current(path) != seen:
                self._drop(path)
        changed = [path for path, seen in self._facts_from.items() if current(path) != seen]
        if changed:
            for analysis in self._analyses.values():
                if analysis is not None:
                    analysis.forget_derived()
            for path in changed:
                self.ast_project.forget(path)
            self.ast_project.forget_derived()
            self._facts_from.clear()

    def accessed(self) -> list[Path]:
        found = super().accessed()
        for path in found:
            if path not in self._facts_from:
                self._facts_from[path] = self._read_at[path] if path in self._read_at else self.signature(path)
        return found

    def remember(self, path: Path, analysis: ModuleAnalysis) -> None:
        path = Path(os.path.abspath(path))
        super().remember(path, analysis)
        self._read_at[path] = ("buffer", analysis.source.text)  # dropped unless the buffer still holds it

    def _drop(self, path: Path) -> None:
        self._read_at.pop(path, None)
        self.ast_project.forget(path)
        dropped = self._analyses.pop(path, None)
        if dropped is not None:
            self._retired.append(dropped)  # released at the next track, unless still kept

    def forget(self, path: Path) -> None:
        """Drop the analysis of ``path`` (its buffer changed, or closed)."""
        self._drop(Path(os.path.abspath(path)))

    def close(self, path: Path) -> None:
        """``path``'s document closed: drop its analysis and its previous parse."""
        self.forget(path)
        self.reparser.forget(os.path.abspath(path))

    # ------------------------------------------------------------------ reading
    def unsaved_text(self, path: Path) -> str | None:
        return self._buffer_text(Path(os.path.abspath(path)))

    def parse(self, source: SourceFile, module_name: str = "", is_package: bool = False) -> ModuleAnalysis:
        if not os.path.isabs(source.path):
            return super().parse(source, module_name, is_package)
        return self.reparser.parse(source, module_name, is_package)

    def compiles(self, source: SourceFile) -> bool:
        return os.path.isabs(source.path) and self.reparser.compiles(source.path, source.text)

    def analysis_for_file(self, path: Path) -> ModuleAnalysis | None:
        path = Path(os.path.abspath(path))
        text = self._buffer_text(path)
        if text is None:
            if path not in self._analyses:
                self._read_at[path] = self.signature(path)
            return super().analysis_for_file(path)
        if self._accessed is not None:
            self._accessed.add(path)
        if path not in self._analyses:
            from ckptlint.semantic.parse import parse_source

            self._read_at[path] = ("buffer", text)
            name, is_package, root = module_name_for(path)
            self.add_root(root)
            try:
                analysis: ModuleAnalysis | None = parse_source(SourceFile(str(path), text), name, is_package)
            except Exception:  # noqa: BLE001 - a buffer that does not parse: nothing to reach
                analysis = None
            if analysis is not None:
                analysis.project = self  # as for a module read from disk: its sites follow its imports
            self._analyses[path] = analysis
        else:
            self._analyses.move_to_end(path)
        return self._analyses[path]

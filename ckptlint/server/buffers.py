"""The language server's project (no pygls import): open documents' buffers before the files
on disk, and what it keeps from one lint to the next.

Between two lints of a document the server keeps (:class:`BufferProject`, its modules read on
CPython's ``ast``: :class:`BufferModules`):

- the analyses of the other modules that regions reached (``ast`` tree and model), each until
  its file changes: its size, modification time, inode or change time on disk (and its bytes,
  for a file changed in the last two seconds), or its text when it is an open document
  (:meth:`BufferProject.signature`, taken before the file is read), checked at the start of
  every lint;
- the facts computed from those modules that may read other modules (checkpoint sites, helper
  and class summaries: :meth:`~ckptlint.semantic.ast_analysis.AstAnalysis.forget_derived`),
  until any file that a lint since they were computed read changes, the edited document
  included when a region reached it, and files whose absence was noted (a module that
  appears).

The edited document itself is parsed whole at every lint (``ast.parse`` and the compiler's
check of a 1,000-line file take milliseconds). So a lint's findings are those of
``ckptlint --no-cache`` on the same texts.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from ckptlint.semantic.project import AstProject, Project

if TYPE_CHECKING:
    from ckptlint.semantic.ast_analysis import AstAnalysis

__all__ = ["BufferModules", "BufferProject"]

#: What a file was when it was read: ``("buffer", text)`` of an open document,
#: ``("disk", size, mtime_ns, inode, ctime_ns)`` (and a digest of its bytes when it changed
#: lately), or ``None`` for no such file.
Signature = tuple[object, ...] | None

#: Nanoseconds after a file's last change during which its times alone do not tell a later
#: change from it (:meth:`BufferProject.signature`).
RACY_NS = 2_000_000_000


class BufferModules(AstProject):
    """The server's :class:`~ckptlint.semantic.project.AstProject`: it notes what each
    file it keeps an analysis of was before it was read (``read_at``), for
    :meth:`BufferProject.refresh` to drop the analyses whose files changed."""

    def __init__(self, project: BufferProject) -> None:
        super().__init__(project)
        self.buffers = project
        #: the signature of each file whose analysis may be kept, taken before it was read
        self.read_at: dict[Path, Signature] = {}

    def holds(self, path: Path) -> bool:
        """Whether an analysis of ``path`` (absolute) is kept, ``None`` for an unreadable file included."""
        return path in self._analyses

    def record_read(self, path: Path) -> None:
        """Before ``path`` is read (:meth:`ast_analysis_for_file` records every read first): its
        signature, unless the analysis kept was read before (whose signature stays)."""
        path = Path(os.path.abspath(path))
        if path not in self._analyses:
            self.read_at[path] = self.buffers.signature(path)
        super().record_read(path)

    def remember(self, path: Path, analysis: AstAnalysis) -> None:
        """Keep the linted document's analysis while its buffer holds the same text (a fixed
        text, which no buffer holds, is dropped at the next lint)."""
        path = Path(os.path.abspath(path))
        super().remember(path, analysis)
        self.read_at[path] = ("buffer", analysis.source.text)

    def forget(self, path: Path) -> None:
        path = Path(os.path.abspath(path))
        self.read_at.pop(path, None)
        super().forget(path)


class BufferProject(Project):
    """A :class:`~ckptlint.semantic.project.Project` that reads open documents from the
    editor's buffers (unsaved text) before the files on disk, and keeps analyses and facts
    between lints while the files they were read from stay the same (see the module docs)."""

    def __init__(self, buffer_text: Callable[[Path], str | None]) -> None:
        super().__init__(files_stable=False)
        self._buffer_text = buffer_text
        #: the signature of each file lints read since the facts kept with analyses were computed
        self._facts_from: dict[Path, Signature] = {}

    @cached_property
    def ast_project(self) -> BufferModules:
        """The modules read on ``ast``, kept between lints (:class:`BufferModules`)."""
        return BufferModules(self)

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
        modules = self.ast_project
        now: dict[Path, Signature] = {}

        def current(path: Path) -> Signature:
            if path not in now:
                now[path] = self.signature(path)
            return now[path]

        for path, seen in list(modules.read_at.items()):
            if not modules.holds(path):
                del modules.read_at[path]  # evicted, or a file read without being parsed
            elif current(path) != seen:
                modules.forget(path)
        changed = [path for path, seen in self._facts_from.items() if current(path) != seen]
        if changed:
            for path in changed:
                modules.forget(path)
            modules.forget_derived()
            self._facts_from.clear()

    def accessed(self) -> list[Path]:
        found = super().accessed()
        read_at = self.ast_project.read_at
        for path in found:
            if path not in self._facts_from:
                self._facts_from[path] = read_at[path] if path in read_at else self.signature(path)
        return found

    def forget(self, path: Path) -> None:
        """Drop the analysis of ``path`` (its buffer changed, or closed)."""
        self.ast_project.forget(path)

    def close(self, path: Path) -> None:
        """``path``'s document closed: drop its analysis."""
        self.forget(path)

    # ------------------------------------------------------------------ reading
    def unsaved_text(self, path: Path) -> str | None:
        return self._buffer_text(Path(os.path.abspath(path)))

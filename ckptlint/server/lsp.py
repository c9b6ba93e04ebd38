"""The language server: diagnostics and quick fixes for open Python files (pygls 2.x,
lsprotocol 2025.x; LSP 3.17).

- ``textDocument/didOpen``, ``didChange`` (full or incremental sync) and ``didSave`` lint the
  document's current text and publish its diagnostics: the rule code, severity (``Error``
  for rules of severity ERROR, else ``Warning``), source ``ckptlint`` and the rule page as
  ``codeDescription.href``. A finding another document's checkpoint makes in this one
  (a region reaching a function defined here) is published here too.
- ``textDocument/codeAction`` offers, for each finding in the requested range, its fix
  (``quickfix``; unsafe fixes only when the file's configuration sets
  ``unsafe-fixes = true``, as ruff's server does; display-only fixes never; a safe fix is the
  preferred action), a fix's fallback where it has one, and
  "Disable CODE for this line" (adds or extends ``# noqa: CODE``), plus
  ``source.fixAll.ckptlint``: every applicable fix at once.
- A document that could not be checked (over the size limit, too deeply nested, a lone
  surrogate in its text) gets the command line's CKP902 diagnostic, never a silent empty list.
- Files the configuration excludes (``exclude``, ``extend-exclude``) get no diagnostics.
- Configuration comes from the closest ``.ckptlint.toml``/``ckptlint.toml``/``pyproject.toml``
  of each file, read again at every lint: saving one (``didSave``) or a change the client's
  file watcher reports (``workspace/didChangeWatchedFiles``; the server asks for a watcher of
  those names when the client can register one dynamically) lints the open documents again.
- ``shutdown`` then ``exit`` ends the server with status 0; ``exit`` alone, or the end of
  input without ``shutdown``, with status 1 (LSP 3.17, "exit").
- Regions that reach other modules read them from the open documents first (unsaved
  buffers take precedence over the files on disk), else from disk.

Positions: ckptlint counts columns in characters (code points); LSP columns count code
units of the position encoding pygls negotiated with the client (``utf-16`` by default,
``utf-8`` or ``utf-32`` when the client prefers them), converted per line here. Lines end
at ``\\n``, ``\\r\\n`` and ``\\r`` only (LSP's rule, and Python's), also in the documents
pygls keeps and edits incrementally (pygls 2.1's ``TextDocument.lines`` uses
``str.splitlines``, which also ends a line at a form feed or U+2028).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import TextDocument, Workspace

from ckptlint import __version__
from ckptlint.config.settings import Settings
from ckptlint.server.buffers import BufferProject
from ckptlint.server.lsp_positions import units
from ckptlint.text.diagnostics import Applicability, Diagnostic
from ckptlint.text.source import SourceFile, split_lines

__all__ = ["CkptlintLanguageServer", "create_server"]

PYTHON_SUFFIXES = (".py", ".pyi")
FIX_ALL = "source.fixAll.ckptlint"
CONFIG_NAMES = (".ckptlint.toml", "ckptlint.toml", "pyproject.toml")
#: Seconds without a further edit of a document before the other open documents that read it
#: are linted again (:meth:`CkptlintLanguageServer.schedule_dependents`).
DEPENDENTS_DELAY = 0.3


@dataclass
class Linted:
    """The last lint of one document: its version and text, settings and findings, and the
    other files (absolute paths) it read."""

    version: int | None
    text: str
    settings: Settings
    diagnostics: list[Diagnostic]
    reads: frozenset[str] = frozenset()


_units = units


def _excluded(path: Path, settings: Settings) -> bool:
    from ckptlint.config.discovery import _excluded_anywhere

    return _excluded_anywhere(path, settings)


class LineRulesDocument(TextDocument):
    """pygls's document with LSP's line rules (see the module docs): incremental changes
    land where the client meant them."""

    @property
    def lines(self) -> list[str]:
        return split_lines(self.source, keepends=True)


class LineRulesWorkspace(Workspace):
    """pygls's workspace whose documents are :class:`LineRulesDocument`."""

    def _create_text_document(
        self, doc_uri: str, source: str | None = None, version: int | None = None, language_id: str | None = None
    ) -> LineRulesDocument:
        return LineRulesDocument(
            doc_uri,
            source=source,
            version=version,
            language_id=language_id,
            sync_kind=self._sync_kind,  # as pygls 2.1's own Workspace._create_text_document
            position_codec=self.position_codec,
        )


class _Lines:
    def __init__(self, text: str, encoding: str = "utf-16") -> None:
        self.lines = split_lines(text) or [""]
        self.encoding = encoding

    def position(self, position: tuple[int, int]) -> lsp.Position:
        row, column = position
        line = self.lines[row - 1] if 0 < row <= len(self.lines) else ""
        return lsp.Position(line=max(0, row - 1), character=_units(line, column, self.encoding))

    def range(self, start: tuple[int, int], end: tuple[int, int]) -> lsp.Range:
        return lsp.Range(start=self.position(start), end=self.position(end))


class CkptlintLanguageServer(LanguageServer):
    """The server; :func:`create_server` registers its features."""

    def __init__(self) -> None:
        super().__init__("ckptlint", __version__)
        self.project = BufferProject(self._buffer_text)
        self.linted: dict[str, Linted] = {}
        #: uri of a linted document -> uri of a document -> findings the first puts there
        self.placed: dict[str, dict[str, list[lsp.Diagnostic]]] = {}
        #: uri of an edited document -> the pending lint of the documents that read it
        self.dependents_due: dict[str, asyncio.TimerHandle] = {}
        #: whether the client sent ``shutdown``; the process's exit status follows from it
        self.shut_down = False
        #: whether to ask the client for a watcher of configuration files (after ``initialized``)
        self.watch_configuration = False
        #: open documents not linted because their configuration could not be read: linted
        #: with the others once a configuration file is saved or changes
        self.unconfigured: set[str] = set()

    # -------------------------------------------------------------- documents
    def _lines(self, text: str) -> _Lines:
        encoding = getattr(self.workspace, "position_encoding", None) or "utf-16"
        return _Lines(text, str(getattr(encoding, "value", encoding)))

    def open_document(self, uri: str) -> TextDocument | None:
        """The open document ``uri``, however its characters are escaped (pygls 2.1 keeps
        documents under the unescaped URI: ``my%20project`` is ``my project``)."""
        return self.workspace.text_documents.get(unquote(uri))

    def _buffer_text(self, path: Path) -> str | None:
        document = self.open_document(from_fs_path(str(path)) or "")
        return document.source if document is not None else None

    def settings_for(self, path: Path) -> Settings:
        """The file's settings from its closest configuration file (read afresh)."""
        from ckptlint.config.files import CliOverrides, SettingsResolver

        root = Path(self.workspace.root_path) if self.workspace.root_path else path.parent
        return SettingsResolver(CliOverrides(), cwd=root).for_path(path)

    def lint(self, uri: str) -> Linted | None:
        """Lint the open document ``uri`` and publish what it finds; ``None`` for a
        document that is not a Python file on disk's namespace (``untitled:``) or whose
        configuration is broken (shown as a message). The garbage collector pauses until the
        diagnostics are out, then collects what the lint left (a full collection walks every
        kept analysis: 100 ms and more with diffusers' modules, not while the client waits;
        see :mod:`ckptlint.lint.collection`)."""
        from ckptlint.lint.collection import collected_after

        with collected_after():
            return self._lint(uri)

    def _lint(self, uri: str) -> Linted | None:
        from ckptlint.lint.linter import FileLinter
        from ckptlint.server.documents import lint_buffer

        path_text = to_fs_path(uri)
        if not path_text or not path_text.endswith(PYTHON_SUFFIXES) or "\x00" in path_text:
            return None
        document = self.open_document(uri)
        if document is None:
            return None  # not open: the server lints the editor's buffers only
        path = Path(os.path.abspath(path_text))
        try:
            settings = self.settings_for(path)
        except Exception as exc:  # noqa: BLE001 - a configuration that cannot be read (ConfigError, not UTF-8...)
            self.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Error, message=f"ckptlint: {exc}"))
            self.unconfigured.add(uri)
            return None
        self.unconfigured.discard(uri)
        self.project.forget(path)
        if _excluded(path, settings):  # as the command line skips it in a folder (ruff's server too)
            from ckptlint.lint.results import FileResult

            result = FileResult(str(path))
        else:
            result = lint_buffer(FileLinter(self.project), str(path), document.source, settings)
        linted = Linted(document.version, document.source, settings, result.diagnostics, frozenset(result.dependencies))
        self.linted[uri] = linted
        placed: dict[str, list[lsp.Diagnostic]] = {uri: []}
        for d in result.diagnostics:
            target = uri if d.path == str(path) else from_fs_path(d.path)
            if target is None:
                continue
            text = document.source if target == uri else self._text_of(Path(d.path))
            placed.setdefault(target, []).append(self.to_lsp(d, self._lines(text)))
        touched = set(placed) | set(self.placed.get(uri, {}))
        self.placed[uri] = placed
        for target in sorted(touched, key=lambda t: (t != uri, t)):  # this document first
            self.publish(target)
        return linted

    def schedule_dependents(self, uri: str) -> None:
        """Lint the documents that read ``uri``'s file (:meth:`lint_dependents`) once it has
        not changed for :data:`DEPENDENTS_DELAY` seconds: typing in a module that many open
        documents reach does not lint them all at every keystroke."""
        pending = self.dependents_due.pop(uri, None)
        if pending is not None:
            pending.cancel()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # called outside the server's loop
            self.lint_dependents(uri)
            return
        self.dependents_due[uri] = loop.call_later(DEPENDENTS_DELAY, self._dependents_now, uri)

    def _dependents_now(self, uri: str) -> None:
        self.dependents_due.pop(uri, None)
        self.lint_dependents(uri)

    def lint_dependents(self, uri: str) -> None:
        """Lint again the other open documents whose last lint read the file of ``uri``:
        opening it, an unsaved edit of it or closing it (its file on disk is read again)
        changes what their regions reach."""
        path = to_fs_path(uri)
        if not path:
            return
        path = os.path.abspath(path)
        for other in [u for u, linted in self.linted.items() if u != uri and path in linted.reads]:
            self.lint(other)

    def lint_open_documents(self) -> None:
        """Lint every open document again (a configuration file or a module they may reach
        changed), those a broken configuration kept from being linted included; a pending
        lint of an edited document's readers is then done too."""
        self.cancel_dependents()
        for uri in [*self.linted, *sorted(self.unconfigured - set(self.linted))]:
            self.lint(uri)

    def cancel_dependents(self) -> None:
        """Drop every pending lint of edited documents' readers."""
        for pending in self.dependents_due.values():
            pending.cancel()
        self.dependents_due.clear()

    def register_configuration_watcher(self) -> None:
        """Ask the client to report changes of configuration files and Python modules
        (``workspace/didChangeWatchedFiles``, registered dynamically)."""
        watchers = [lsp.FileSystemWatcher(glob_pattern=f"**/{name}") for name in CONFIG_NAMES]
        watchers.append(lsp.FileSystemWatcher(glob_pattern="**/*.py"))
        registration = lsp.Registration(
            id="ckptlint-watched-files",
            method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=lsp.DidChangeWatchedFilesRegistrationOptions(watchers=watchers),
        )
        self.client_register_capability(lsp.RegistrationParams(registrations=[registration]))

    def _text_of(self, path: Path) -> str:
        text = self._buffer_text(path)
        if text is not None:
            return text
        from ckptlint.text.reading import load_source
        from ckptlint.text.source import SourceDecodeError

        try:
            return load_source(path.read_bytes(), str(path)).text
        except (OSError, SourceDecodeError):
            return ""

    def publish(self, uri: str) -> None:
        found = [d for placed in self.placed.values() for d in placed.get(uri, [])]
        unique = {(d.code, d.range.start.line, d.range.start.character, d.message): d for d in found}
        linted = self.linted.get(uri)
        version = linted.version if linted is not None else None
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=list(unique.values()), version=version)
        )

    def close(self, uri: str) -> None:
        touched = set(self.placed.pop(uri, {}))
        self.linted.pop(uri, None)
        self.unconfigured.discard(uri)
        path = to_fs_path(uri)
        if path:
            self.project.close(Path(path))
        for target in touched | {uri}:
            self.publish(target)
        self.schedule_dependents(uri)  # they read its buffer; now they read the file

    # ------------------------------------------------------------ conversion
    @staticmethod
    def to_lsp(d: Diagnostic, lines: _Lines) -> lsp.Diagnostic:
        from ckptlint.docs import rule_url
        from ckptlint.output.base import severity_of

        severity = lsp.DiagnosticSeverity.Error if severity_of(d.code) == "error" else lsp.DiagnosticSeverity.Warning
        return lsp.Diagnostic(
            range=lines.range(d.start, d.end),
            message=d.message,
            severity=severity,
            code=d.code,
            code_description=lsp.CodeDescription(href=rule_url(d.code)),
            source="ckptlint",
            data={"fixable": d.fix is not None, "applicability": d.fix.applicability.value if d.fix else None},
        )

    # ---------------------------------------------------------- code actions
    def code_actions(self, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        uri = params.text_document.uri
        document = self.open_document(uri)
        if document is None:
            return []  # never opened (or closed): nothing linted, nothing to offer
        linted = self.linted.get(uri)
        if linted is None or linted.version != document.version or linted.text != document.source:
            linted = self.lint(uri)
        if linted is None:
            return []
        only = params.context.only
        wants_quickfix = not only or any(k.startswith("quickfix") for k in only)
        wants_fix_all = not only or any(FIX_ALL.startswith(k) for k in only)
        path = to_fs_path(uri)
        lines = self._lines(linted.text)
        first, last = params.range.start.line + 1, params.range.end.line + 1
        actions: list[lsp.CodeAction] = []
        unsafe = bool(linted.settings.unsafe_fixes)
        for d in linted.diagnostics:
            if not wants_quickfix or d.path != os.path.abspath(path or "") or not (d.start[0] <= last and d.end[0] >= first):
                continue
            lsp_diagnostic = self.to_lsp(d, lines)
            # the fix and its fallback, where it has one
            for fix in d.fix.alternatives() if d.fix is not None else ():
                if not fix.applies(unsafe) or fix.refused:  # (edits built here, when asked; none where libcst refuses the code)
                    continue
                title = f"{fix.message} ({d.code})"
                if fix.applicability is Applicability.UNSAFE:
                    title += " (unsafe fix)"
                edits = [lsp.TextEdit(range=lines.range(e.start, e.end), new_text=e.content) for e in fix.edits]
                actions.append(
                    lsp.CodeAction(
                        title=title,
                        kind=lsp.CodeActionKind.QuickFix,
                        diagnostics=[lsp_diagnostic],
                        edit=lsp.WorkspaceEdit(changes={uri: edits}),
                        is_preferred=fix.applicability is Applicability.SAFE,
                    )
                )
            noqa = self._noqa_edit(d, linted.text, lines)
            if noqa is not None:
                actions.append(
                    lsp.CodeAction(
                        title=f"Disable {d.code} for this line",
                        kind=lsp.CodeActionKind.QuickFix,
                        diagnostics=[lsp_diagnostic],
                        edit=lsp.WorkspaceEdit(changes={uri: [noqa]}),
                    )
                )
        if wants_fix_all:
            fix_all = self._fix_all(uri, linted)
            if fix_all is not None:
                actions.append(fix_all)
        return actions

    @staticmethod
    def _noqa_edit(d: Diagnostic, text: str, lines: _Lines) -> lsp.TextEdit | None:
        """Replace the noqa row's line by the line with ``# noqa: CODE`` added (or merged)."""
        from ckptlint.text.add_noqa import add_noqa

        edit = add_noqa(SourceFile(d.path, text), [d])
        if not edit.added:
            return None
        new_lines = split_lines(edit.text)
        # the row add_noqa wrote: the finding's noqa row, or where the triple-quoted string
        # or backslash continuation that row ends in ends (ruff's noqa line mapping)
        changed = [i + 1 for i, (a, b) in enumerate(zip(lines.lines, new_lines, strict=False)) if a != b]
        if len(new_lines) != len(lines.lines) or len(changed) != 1:
            return None
        row = changed[0]
        old = lines.lines[row - 1]
        return lsp.TextEdit(range=lines.range((row, 1), (row, len(old) + 1)), new_text=new_lines[row - 1])

    def _fix_all(self, uri: str, linted: Linted) -> lsp.CodeAction | None:
        from ckptlint.lint.linter import FileLinter
        from ckptlint.lint.results import FixMode

        path = os.path.abspath(to_fs_path(uri) or "")
        try:
            raw = linted.text.encode("utf-8")
        except UnicodeEncodeError:
            return None  # not linted (a lone surrogate): nothing to fix
        result = FileLinter(self.project).lint(
            path, raw, linted.settings, fix=FixMode.APPLY, unsafe=bool(linted.settings.unsafe_fixes)
        )
        self.project.forget(Path(path))  # the fixed text is no buffer
        if not result.changed or result.fixed_text is None:
            return None
        lines = self._lines(linted.text)
        if linted.text.endswith(("\n", "\r")):
            end = lsp.Position(line=len(lines.lines), character=0)
        else:
            end = lines.position((len(lines.lines), len(lines.lines[-1]) + 1))
        whole = lsp.Range(start=lsp.Position(line=0, character=0), end=end)
        return lsp.CodeAction(
            title="ckptlint: fix all auto-fixable problems",
            kind=FIX_ALL,
            edit=lsp.WorkspaceEdit(changes={uri: [lsp.TextEdit(range=whole, new_text=result.fixed_text)]}),
        )


def _is_config(uri: str) -> bool:
    return (to_fs_path(uri) or "").endswith(CONFIG_NAMES)


def _is_python(uri: str) -> bool:
    return (to_fs_path(uri) or "").endswith(PYTHON_SUFFIXES)


def _can_register_watchers(capabilities: lsp.ClientCapabilities) -> bool:
    workspace = capabilities.workspace
    watched = workspace.did_change_watched_files if workspace is not None else None
    return bool(watched is not None and watched.dynamic_registration)


def create_server() -> CkptlintLanguageServer:
    """A server with its features registered (not started: call ``start_io()``)."""
    server = CkptlintLanguageServer()

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: CkptlintLanguageServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.lint(params.text_document.uri)
        ls.schedule_dependents(params.text_document.uri)  # its buffer may differ from the file they read

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: CkptlintLanguageServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.lint(params.text_document.uri)
        ls.schedule_dependents(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: CkptlintLanguageServer, params: lsp.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.lint_open_documents()  # other documents may reach the saved one; a configuration applies to all
        if uri not in ls.linted:
            ls.lint(uri)

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls: CkptlintLanguageServer, params: lsp.DidChangeWatchedFilesParams) -> None:
        if any(_is_config(change.uri) or _is_python(change.uri) for change in params.changes):
            ls.lint_open_documents()

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: CkptlintLanguageServer, params: lsp.InitializeParams) -> None:
        ls.protocol.workspace.__class__ = LineRulesWorkspace  # pygls built it; no document yet
        ls.watch_configuration = _can_register_watchers(params.capabilities)

    @server.feature(lsp.INITIALIZED)
    def initialized(ls: CkptlintLanguageServer, params: lsp.InitializedParams) -> None:
        if ls.watch_configuration:
            ls.register_configuration_watcher()

    @server.feature(lsp.SHUTDOWN)
    def shutdown(ls: CkptlintLanguageServer, params: None) -> None:
        ls.shut_down = True
        ls.cancel_dependents()  # nothing is published after shutdown

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: CkptlintLanguageServer, params: lsp.DidCloseTextDocumentParams) -> None:
        ls.close(params.text_document.uri)

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=False),
    )
    def code_action(ls: CkptlintLanguageServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        return ls.code_actions(params)

    return server

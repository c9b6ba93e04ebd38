"""The first moments of ``ckptlint server``, before pygls is imported.

Importing pygls's protocol types (``lsprotocol.types``, about a thousand attrs classes)
takes longer than a whole ``ckptlint FILE`` run on a small file. So the server answers the
``initialize`` request and lints the first opened document itself, with plain JSON-RPC
framing (``Content-Length`` headers, JSON bodies; LSP 3.17 "Base Protocol"), and only then
imports pygls and hands it the connection: the messages read so far are replayed to it
(its answer to the replayed ``initialize`` is dropped, the client already has one), and
everything after comes from stdin as usual. The first diagnostics thus arrive about when
the command line would print them; pygls then publishes the same diagnostics again.

The capabilities announced here are those pygls announces for the features
:func:`ckptlint.server.lsp.create_server` registers (checked by a test), with the position
encoding pygls would choose (the client's first of utf-8/utf-16/utf-32, else utf-16).
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import unquote, urlparse

from ckptlint import __version__
from ckptlint.server.framing import PARSE_ERROR, Connection, error_response, parse_message, read_frame, valid_id
from ckptlint.text.source import split_lines

if TYPE_CHECKING:
    from ckptlint.text.diagnostics import Diagnostic

__all__ = ["FastStart", "ReplayReader", "DropResponse", "capabilities"]

SUPPORTED_ENCODINGS = ("utf-8", "utf-16", "utf-32")


def capabilities(position_encoding: str) -> dict[str, Any]:
    """The server capabilities pygls announces for ckptlint's features."""
    return {
        "positionEncoding": position_encoding,
        "textDocumentSync": {"openClose": True, "change": 2, "save": True},
        "codeActionProvider": {"codeActionKinds": ["quickfix", "source.fixAll.ckptlint"], "resolveProvider": False},
        "executeCommandProvider": {"commands": []},
        "workspace": {
            "workspaceFolders": {"supported": True, "changeNotifications": True},
            "fileOperations": {},
        },
    }


def _choose_encoding(params: dict[str, Any]) -> str:
    general = (params.get("capabilities") or {}).get("general") or {}
    for encoding in general.get("positionEncodings") or ():
        if encoding in SUPPORTED_ENCODINGS:
            return encoding
    return "utf-16"


def _path_of(uri: Any) -> str | None:
    if not isinstance(uri, str):
        return None
    try:
        parsed = urlparse(uri)
        path = unquote(parsed.path, errors="strict")
    except ValueError:  # an invalid IPv6 host, bytes that are not UTF-8...
        return None
    if parsed.scheme != "file" or "\x00" in path:
        return None
    return os.path.abspath(path)


class FastStart:
    """Serve ``initialize`` and the first ``didOpen`` without pygls (see the module docs).

    A message that cannot be read (no valid ``Content-Length``, a body that is not one JSON
    object) is answered with its JSON-RPC error here and not handed on; anything this
    class does not serve itself (a request, ``exit``, a ``didOpen`` whose fields have the
    wrong types) ends the fast start, and pygls answers it."""

    def __init__(self, stdin: BinaryIO, stdout: BinaryIO | Connection) -> None:
        self.stdin = stdin
        self.stdout = stdout if isinstance(stdout, Connection) else Connection(stdout)
        self.recorded: list[bytes] = []
        self.initialize_id: Any = None
        self.root: str | None = None
        self.encoding = "utf-16"

    def run(self) -> None:
        """Read until the first document is linted, or anything else needs pygls."""
        message = self._next()
        if message is None or message.get("method") != "initialize" or not valid_id(message.get("id")):
            return  # not the usual start: pygls answers it
        params = message.get("params")
        if not isinstance(params, dict) or not _initialize_params_valid(params):
            return  # pygls answers with its error
        self.initialize_id = message["id"]
        self.encoding = _choose_encoding(params)
        root = params.get("rootUri")
        self.root = _path_of(root) if root else params.get("rootPath")
        self.stdout.send(
            {
                "jsonrpc": "2.0",
                "id": self.initialize_id,
                "result": {"capabilities": capabilities(self.encoding), "serverInfo": {"name": "ckptlint", "version": __version__}},
            },
        )
        while True:
            message = self._next()
            if message is None or "id" in message or message.get("method") == "exit":
                return  # a request, exit (or the end): pygls answers
            if message.get("method") == "textDocument/didOpen":
                self._lint_and_publish(message.get("params"))
                return

    def fallback_initialize(self) -> dict[str, Any] | None:
        """When ``initialize`` was answered here: the ``initialize`` params pygls gets instead
        of the client's if those do not pass its checks (the position encoding and root
        answered here; pygls must be initialized, and its answer is dropped); else ``None``."""
        if self.initialize_id is None:
            return None
        root = Path(self.root).as_uri() if self.root and os.path.isabs(self.root) else None
        return {
            "processId": None,
            "rootUri": root,
            "capabilities": {"general": {"positionEncodings": [self.encoding]}},
        }

    def _next(self) -> dict[str, Any] | None:
        """The next message that reads as one JSON-RPC object (recorded for pygls); those that
        do not are answered here."""
        while True:
            frame = read_frame(self.stdin)
            if frame is None:
                return None
            if frame.body is None:
                self.stdout.send(error_response(None, PARSE_ERROR, f"Parse error: {frame.error}"))
                continue
            message, error = parse_message(frame.body)
            if error is not None:
                self.stdout.send(error)
                continue
            self.recorded.append(frame.raw)
            return message

    def _lint_and_publish(self, params: Any) -> None:
        document = params.get("textDocument") if isinstance(params, dict) else None
        if not isinstance(document, dict):
            return
        uri, text, version = document.get("uri"), document.get("text"), document.get("version")
        path = _path_of(uri)
        if path is None or not isinstance(text, str) or not valid_id(version) or isinstance(version, str):
            return  # pygls refuses it, or publishes nothing
        if not path.endswith((".py", ".pyi")):
            return
        from ckptlint.config.files import CliOverrides, SettingsResolver
        from ckptlint.lint.linter import FileLinter
        from ckptlint.server.documents import lint_buffer

        try:
            settings = SettingsResolver(CliOverrides(), cwd=Path(self.root or os.path.dirname(path))).for_path(Path(path))
        except Exception:  # noqa: BLE001 - a configuration that cannot be read: pygls shows the message
            return
        from ckptlint.config.discovery import _excluded_anywhere

        if _excluded_anywhere(Path(path), settings):
            return  # pygls publishes the empty list
        result = lint_buffer(FileLinter(), path, text, settings)
        lines = split_lines(text) or [""]
        found = [_diagnostic(d, lines, self.encoding) for d in result.diagnostics if d.path == path]
        published = {"uri": uri, "diagnostics": found, "version": version}
        self.stdout.send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": published})


def _initialize_params_valid(params: dict[str, Any]) -> bool:
    """Whether the ``initialize`` fields read here have their LSP types."""
    capabilities = params.get("capabilities")
    if not isinstance(capabilities, dict):
        return False
    general = capabilities.get("general")
    if general is not None and not isinstance(general, dict):
        return False
    encodings = (general or {}).get("positionEncodings")
    if encodings is not None and not (isinstance(encodings, list) and all(isinstance(e, str) for e in encodings)):
        return False
    root_uri, root_path = params.get("rootUri"), params.get("rootPath")
    if root_uri is not None and _path_of(root_uri) is None:
        return False
    return root_path is None or (isinstance(root_path, str) and "\x00" not in root_path)


def _diagnostic(d: Diagnostic, lines: list[str], encoding: str) -> dict[str, Any]:
    from ckptlint.docs import rule_url
    from ckptlint.output.base import severity_of
    from ckptlint.server.lsp_positions import units

    def position(where: tuple[int, int]) -> dict[str, int]:
        row, column = where
        line = lines[row - 1] if 0 < row <= len(lines) else ""
        return {"line": max(0, row - 1), "character": units(line, column, encoding)}

    return {
        "range": {"start": position(d.start), "end": position(d.end)},
        "message": d.message,
        "severity": 1 if severity_of(d.code) == "error" else 2,
        "code": d.code,
        "codeDescription": {"href": rule_url(d.code)},
        "source": "ckptlint",
        "data": {"fixable": d.fix is not None, "applicability": d.fix.applicability.value if d.fix else None},
    }


class ReplayReader:
    """Gives pygls the recorded messages first, then the rest of ``stream``."""

    def __init__(self, recorded: list[bytes], stream: BinaryIO) -> None:
        self._head = io.BytesIO(b"".join(recorded))
        self._stream = stream

    def readline(self) -> bytes:
        line = self._head.readline()
        return line if line else self._stream.readline()

    def read(self, size: int = -1) -> bytes:
        data = self._head.read(size)
        if size is None or size < 0:
            return data + self._stream.read()
        if len(data) < size:
            data += self._stream.read(size - len(data))
        return data


class DropResponse:
    """Writes to ``stream``, dropping pygls's response to the replayed ``initialize``."""

    def __init__(self, stream: BinaryIO | Connection, response_id: Any) -> None:
        self._stream = stream
        self._id = response_id

    def write(self, data: bytes) -> int:
        if self._id is not None:
            _, _, body = data.partition(b"\r\n\r\n")
            try:
                message = json.loads(body)
            except ValueError:
                message = None
            if isinstance(message, dict) and message.get("id") == self._id and "method" not in message:
                self._id = None
                return len(data)
        return self._stream.write(data)

    def flush(self) -> None:
        self._stream.flush()

    def close(self) -> None:
        self._stream.close()

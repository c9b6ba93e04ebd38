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
from typing import Any, BinaryIO
from urllib.parse import unquote, urlparse

from ckptlint import __version__

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


def _read_message(stream: BinaryIO) -> tuple[bytes, dict[str, Any]] | None:
    """One framed message: (its raw bytes, the decoded body), or ``None`` at end of input."""
    raw = b""
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        raw += line
        if line in (b"\r\n", b"\n"):
            if length is not None:
                break
            continue
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    body = stream.read(length)
    return raw + body, json.loads(body)


def _write(stream: BinaryIO, message: dict[str, Any]) -> None:
    body = json.dumps(message).encode("utf-8")
    stream.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stream.flush()


def _path_of(uri: str) -> str | None:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return os.path.abspath(unquote(parsed.path))


class FastStart:
    """Serve ``initialize`` and the first ``didOpen`` without pygls (see the module docs)."""

    def __init__(self, stdin: BinaryIO, stdout: BinaryIO) -> None:
        self.stdin = stdin
        self.stdout = stdout
        self.recorded: list[bytes] = []
        self.initialize_id: Any = None
        self.root: str | None = None
        self.encoding = "utf-16"

    def run(self) -> None:
        """Read until the first document is linted, or anything else needs pygls."""
        message = self._next()
        if message is None or message.get("method") != "initialize" or "id" not in message:
            return  # not the usual start: pygls answers it
        params = message.get("params") or {}
        self.initialize_id = message["id"]
        self.encoding = _choose_encoding(params)
        root = params.get("rootUri")
        self.root = _path_of(root) if root else params.get("rootPath")
        _write(
            self.stdout,
            {
                "jsonrpc": "2.0",
                "id": self.initialize_id,
                "result": {"capabilities": capabilities(self.encoding), "serverInfo": {"name": "ckptlint", "version": __version__}},
            },
        )
        while True:
            message = self._next()
            if message is None or "id" in message:  # a request (or the end): pygls answers
                return
            if message.get("method") == "textDocument/didOpen":
                self._lint_and_publish(message.get("params") or {})
                return

    def _next(self) -> dict[str, Any] | None:
        read = _read_message(self.stdin)
        if read is None:
            return None
        raw, message = read
        self.recorded.append(raw)
        return message

    def _lint_and_publish(self, params: dict[str, Any]) -> None:
        from ckptlint.config.files import ConfigError

        document = params.get("textDocument") or {}
        uri, text = document.get("uri", ""), document.get("text", "")
        path = _path_of(uri)
        if path is None or not path.endswith((".py", ".pyi")):
            return
        from ckptlint.config.files import CliOverrides, SettingsResolver
        from ckptlint.lint.linter import FileLinter

        try:
            settings = SettingsResolver(CliOverrides(), cwd=Path(self.root or os.path.dirname(path))).for_path(Path(path))
        except ConfigError:
            return  # pygls shows the message
        from ckptlint.config.discovery import _excluded_anywhere

        if _excluded_anywhere(Path(path), settings):
            return  # pygls publishes the empty list
        result = FileLinter().lint(path, text.encode("utf-8"), settings)
        lines = text.splitlines() or [""]
        found = [_diagnostic(d, lines, self.encoding) for d in result.diagnostics if d.path == path]
        published = {"uri": uri, "diagnostics": found}
        if isinstance(document.get("version"), int):
            published["version"] = document["version"]
        _write(self.stdout, {"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": published})


def _diagnostic(d, lines: list[str], encoding: str) -> dict[str, Any]:  # noqa: ANN001 - a Diagnostic
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

    def __init__(self, stream: BinaryIO, response_id: Any) -> None:
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

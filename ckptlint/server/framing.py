"""JSON-RPC over stdio, as the Language Server Protocol frames it (LSP 3.17, "Base Protocol"):
a header block (``Content-Length: N``, optionally ``Content-Type``, each line ended by
``\\r\\n``, the block by an empty line) and a body of N bytes of UTF-8 JSON. No pygls import.

What a client sends is read defensively: a header block without a valid ``Content-Length``
(``Content-Length: abc``, none at all), a body that is not JSON, and JSON that is not one
request or notification object are answered with a JSON-RPC 2.0 error (section 5.1: -32700
parse error, -32600 invalid request, ``id`` null when it cannot be read) and skipped; the
reader then looks for the next header (a ``Content-Length:`` even in the middle of a line, as
when a body without a length runs into the next header), so one bad message costs that
message only.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from typing import Any, BinaryIO, Protocol

__all__ = [
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "MAX_BODY_BYTES",
    "PARSE_ERROR",
    "SERVER_NOT_INITIALIZED",
    "ByteReader",
    "Connection",
    "Frame",
    "encode_message",
    "error_response",
    "parse_message",
    "read_frame",
    "valid_id",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
SERVER_NOT_INITIALIZED = -32002  # LSP 3.17, ErrorCodes.ServerNotInitialized

MAX_BODY_BYTES = 1 << 30
"""The longest body accepted (bytes); a larger ``Content-Length`` is refused rather than
allocated."""

_HEADER = re.compile(rb"^([A-Za-z0-9!#$%&'*+.^_`|~-]+)[ \t]*:[ \t]*(.*?)[ \t]*\r?\n?$")
_LENGTH_ANYWHERE = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)


@dataclass(frozen=True)
class Frame:
    """One message read from the stream: ``raw`` (every byte read for it, headers included),
    and either ``body`` (exactly ``Content-Length`` bytes) or ``error`` (why the header block
    gave no body; the bytes after it are read as the start of the next message)."""

    raw: bytes
    body: bytes | None = None
    error: str | None = None


def _content_length(value: bytes) -> int | str:
    """The length of a ``Content-Length`` value, or why it is not one."""
    text = value.strip()
    if not text.isdigit() or not text.isascii():
        return f"invalid Content-Length header {text[:40]!r}"
    length = int(text)
    if length > MAX_BODY_BYTES:
        return f"Content-Length {length} exceeds the limit of {MAX_BODY_BYTES} bytes"
    return length


class ByteReader(Protocol):
    """What messages are read from: standard input's bytes, or a reader in front of them."""

    def readline(self) -> bytes: ...

    def read(self, size: int = -1, /) -> bytes: ...


def read_frame(stream: ByteReader) -> Frame | None:
    """The next message of ``stream``; ``None`` at the end of input (also in the middle of a
    header block or a body, which the peer can no longer complete)."""
    raw = b""
    length: int | str | None = None
    in_headers = False
    while True:
        line = stream.readline()
        if not line:
            return None
        raw += line
        if line in (b"\r\n", b"\n"):
            if not in_headers:
                continue  # blank lines between messages
            break
        if not in_headers:
            found = _LENGTH_ANYWHERE.search(line)
            if found is None and _HEADER.match(line) is None:
                continue  # the rest of a body that had no length: skipped
            if found is not None and found.start() > 0:
                line = line[found.start() :]
        match = _HEADER.match(line)
        if match is None:
            length = length if length is not None else f"malformed header line {line[:40]!r}"
            in_headers = True
            continue
        in_headers = True
        if match.group(1).lower() == b"content-length":
            length = _content_length(match.group(2))
    if not isinstance(length, int):
        return Frame(raw, error=length or "missing Content-Length header")
    body = stream.read(length) if length else b""
    if len(body) < length:
        return None
    return Frame(raw + body, body=body)


def error_response(message_id: Any, code: int, message: str) -> dict[str, Any]:
    """A JSON-RPC 2.0 error response (``message_id`` ``None`` when it is unknown)."""
    return {"jsonrpc": "2.0", "id": message_id, "error": {"code": code, "message": message}}


def valid_id(value: Any) -> bool:
    """Whether ``value`` can be a request id (LSP: ``integer | string``)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def parse_message(body: bytes) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """``(message, None)`` for a body that is one JSON-RPC 2.0 request, notification or
    response object, else ``(None, error response)`` to send back."""
    try:
        message = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return None, error_response(None, PARSE_ERROR, f"Parse error: {exc}"[:200])
    if not isinstance(message, dict):
        return None, error_response(None, INVALID_REQUEST, "Invalid Request: a message must be a JSON object")
    message_id = message.get("id")
    answerable = message_id if valid_id(message_id) else None
    if message.get("jsonrpc") != "2.0":
        return None, error_response(answerable, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
    if "id" in message and message_id is not None and not valid_id(message_id):
        return None, error_response(None, INVALID_REQUEST, 'Invalid Request: "id" must be an integer or a string')
    if "method" in message:
        if not isinstance(message["method"], str):
            return None, error_response(answerable, INVALID_REQUEST, 'Invalid Request: "method" must be a string')
        if message.get("params", ...) is None:  # `"params": null` (void params: shutdown, exit): as omitted
            message = {k: v for k, v in message.items() if k != "params"}
        if "params" in message and not isinstance(message["params"], (dict, list)):
            return None, error_response(answerable, INVALID_PARAMS, 'Invalid params: "params" must be an object or an array')
    elif "id" not in message or ("result" not in message and "error" not in message):
        return None, error_response(answerable, INVALID_REQUEST, 'Invalid Request: no "method"')
    return message, None


def encode_message(message: dict[str, Any]) -> bytes:
    """``message`` framed: its header and its UTF-8 JSON body."""
    body = json.dumps(message).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class Connection:
    """The server's side of standard output: one whole message per ``write`` (a lock keeps
    messages written from the reading thread and from the server whole), and a ``close``
    that flushes but leaves the process's standard output open (what the process flushes at
    its end must not fail)."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self.closed = False

    def write(self, data: bytes) -> int:
        """Write ``data`` and flush; nothing once closed. Returns the bytes taken."""
        with self._lock:
            if self.closed:
                return len(data)
            written = self._stream.write(data)
            self._stream.flush()
            return written if written is not None else len(data)

    def send(self, message: dict[str, Any]) -> None:
        """Write one message."""
        self.write(encode_message(message))

    def flush(self) -> None:
        """Flush standard output (nothing once closed)."""
        with self._lock:
            if not self.closed:
                self._stream.flush()

    def close(self) -> None:
        """Flush; later writes are dropped."""
        with self._lock:
            if not self.closed:
                self.closed = True
                try:
                    self._stream.flush()
                except (OSError, ValueError):
                    pass

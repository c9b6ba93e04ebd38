"""The reader pygls reads the client through: only messages that read as what they claim
reach pygls; the others get their JSON-RPC 2.0 error here (pygls 2.1 logs a body it cannot
parse and answers nothing, so a client waiting for that request would wait forever, and it
turns ``"text": null`` into the text ``"None"``).

Each message is framed and parsed (:mod:`ckptlint.server.framing`), then structured into its
lsprotocol type (``lsprotocol.types.METHOD_TO_TYPES``) by pygls's converter with strict
primitive types: a string field holding a number, ``null`` where a value is required, a
``bool`` for an integer are refused, where the lenient converter would coerce them. A
refused request is answered -32602 (invalid params) with its id; a refused notification
is dropped (JSON-RPC answers no notification) and logged to standard error. Responses from
the client go to pygls unchecked. What passes is handed to pygls re-framed, with only a
``Content-Length`` header (the form pygls 2.1's reader expects).

The lifecycle of LSP 3.17 ("Server lifecycle") is kept here too, where pygls 2.1 does not:
before ``initialize`` a request is answered -32002 (ServerNotInitialized; pygls ran the
handler and answered -32603 with a traceback) and a notification dropped, ``exit`` excepted;
a second ``initialize`` is answered -32600 (InvalidRequest; pygls initialized again); after
``shutdown`` a request is answered -32600 (pygls answered nothing, so the client waited
forever) and a notification other than ``exit`` dropped.
"""

from __future__ import annotations

import io
import json
import sys
from typing import Any, Optional, Union

from lsprotocol import types as lsp
from pygls.protocol import default_converter

from ckptlint.server.framing import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    SERVER_NOT_INITIALIZED,
    ByteReader,
    Connection,
    error_response,
    parse_message,
    read_frame,
)

__all__ = ["CheckedReader", "strict_converter"]


def _strict(kind: type) -> Any:
    def structure(value: Any, _type: Any) -> Any:
        if type(value) is kind or (kind is float and type(value) is int):
            return value
        raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")

    return structure


#: lsprotocol's open string enumerations: its hooks for ``Union[KIND, str]`` pass any number or
#: ``bool`` through unchanged (lsprotocol 2025.0 ``_code_action_kind_hook``), so a
#: ``"only": [5]`` reached the server's handlers as the number 5.
_OPEN_STRING_KINDS = (lsp.CodeActionKind, lsp.FoldingRangeKind, lsp.LanguageKind, lsp.PositionEncodingKind)


def _string_kind(value: Any, _type: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"expected a string, got {type(value).__name__}")


def strict_converter() -> Any:
    """pygls's cattrs converter (lsprotocol's hooks) with ``str``, ``int``, ``bool`` and
    ``float`` taken only as themselves, and open string enumerations (``CodeActionKind``...)
    only as strings."""
    converter = default_converter()
    for kind in (str, int, bool, float):
        # exactly these classes: a hook for `int` would also take IntEnum fields (singledispatch)
        converter.register_structure_hook_func(lambda cls, kind=kind: cls is kind, _strict(kind))
    for open_kind in _OPEN_STRING_KINDS:
        for union in (Union[open_kind, str], Optional[Union[open_kind, str]]):  # noqa: UP007, UP045 - typing forms: the keys lsprotocol registers
            converter.register_structure_hook(union, _string_kind)
    return converter


class CheckedReader:
    """``readline``/``read`` over the messages of ``stream`` that pass the checks (see the
    module docs); errors are written to ``connection``."""

    def __init__(self, stream: ByteReader, connection: Connection, initialize_fallback: dict[str, Any] | None = None) -> None:
        self._stream = stream
        self._connection = connection
        #: ``initialize`` params to use when the client's fail the checks but the fast start
        #: answered it already (:meth:`~ckptlint.server.fast_start.FastStart.fallback_initialize`)
        self._initialize_fallback = initialize_fallback
        self._converter = strict_converter()
        self._pending = io.BytesIO()
        #: the lifecycle as the client's messages led it: "new", "running", "shut down"
        self.state = "new"

    def readline(self) -> bytes:
        line = self._pending.readline()
        if line:
            return line
        if not self._refill():
            return b""
        return self._pending.readline()

    def read(self, size: int = -1) -> bytes:
        data = self._pending.read(size)
        if size is not None and 0 <= size and len(data) < size and self._refill():
            data += self._pending.read(size - len(data))
        return data

    def _refill(self) -> bool:
        """Read up to the next message that passes; ``False`` at the end of input."""
        while True:
            frame = read_frame(self._stream)
            if frame is None:
                return False
            if frame.body is None:
                self._connection.send(error_response(None, PARSE_ERROR, f"Parse error: {frame.error}"))
                continue
            message, error = parse_message(frame.body)
            if message is None:  # not one JSON-RPC object: answered, with its id when it has one
                if error is not None:
                    self._connection.send(error)
                    _log(error)
                continue
            body = frame.body
            if b'"params"' in body and "params" not in message:  # `"params": null`, dropped when parsed
                body = json.dumps(message).encode("utf-8")
            if self._out_of_turn(message):
                continue
            error = self._check(message)
            if error is not None and message.get("method") == "initialize" and self._initialize_fallback is not None:
                body = json.dumps({**message, "params": self._initialize_fallback}).encode("utf-8")
                error = None
            if message.get("method") == "initialize":
                self._initialize_fallback = None  # one initialize only
            if error is not None:
                if "id" in message:  # a request; a notification gets no answer
                    self._connection.send(error)
                _log(error)
                continue
            method = message.get("method")
            if method == "initialize":
                self.state = "running"
            elif method == "shutdown" and "id" in message:
                self.state = "shut down"
            self._pending = io.BytesIO(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            return True

    def _out_of_turn(self, message: dict[str, Any]) -> bool:
        """Whether ``message`` comes where the lifecycle does not allow it (see the module
        docs): a request is then answered here, a notification dropped."""
        method = message.get("method")
        if method is None or method == "exit":
            return False  # a response to the server's request; exit is always heard
        if self.state == "new" and method != "initialize":
            code, reason = SERVER_NOT_INITIALIZED, f"Server not initialized: `{method}` before `initialize`"
        elif self.state == "running" and method == "initialize":
            code, reason = INVALID_REQUEST, "Invalid request: the server is initialized already"
        elif self.state == "shut down":
            code, reason = INVALID_REQUEST, f"Invalid request: `{method}` after `shutdown`"
        else:
            return False
        if "id" in message:  # a request; a notification is dropped without an answer
            self._connection.send(error_response(message.get("id"), code, reason))
        return True

    def _check(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """The error response for a request or notification whose fields do not have their
        LSP types, else ``None``."""
        method = message.get("method")
        if method is None:
            return None  # a response to a request of the server
        types = lsp.METHOD_TO_TYPES.get(method)
        if types is None:
            return None  # pygls answers "method not found" (or ignores a `$/` notification)
        try:
            self._converter.structure(message, types[0])
        except Exception as exc:  # noqa: BLE001 - cattrs raises several kinds
            return error_response(message.get("id"), INVALID_PARAMS, f"Invalid params for {method}: {_reason(exc)}")
        return None


def _reason(exc: BaseException) -> str:
    """The innermost message of a cattrs validation error."""
    while True:
        inner = getattr(exc, "exceptions", None)
        if not inner:
            return f"{type(exc).__name__}: {exc}"[:200]
        exc = inner[0]


def _log(error: dict[str, Any]) -> None:
    try:
        sys.stderr.write(f"ckptlint server: refused a message: {error['error']['message']}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass

"""``ckptlint server`` at the level of bytes: malformed messages are answered with JSON-RPC
errors and never end the server (in the default fast-start mode and without it), exit
statuses follow LSP 3.17, and a seeded fuzz run of 10,000 messages leaves it answering."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pygls")

SOURCE = "from torch.utils.checkpoint import checkpoint\n\n\ndef forward(block, x):\n    return checkpoint(block, x)\n"


def frame(message: Any = None, raw: bytes | None = None) -> bytes:
    body = raw if raw is not None else json.dumps(message).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def request(message_id: Any, method: str, params: Any = None) -> bytes:
    message = {"jsonrpc": "2.0", "id": message_id, "method": method}
    if params is not None:
        message["params"] = params
    return frame(message)


def notify(method: str, params: Any = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return frame(message)


def initialize(root: Path) -> bytes:
    return request(1, "initialize", {"processId": None, "rootUri": root.as_uri(), "capabilities": {}})


def did_open(path: Path, text: Any, uri: Any = None) -> bytes:
    document = {"uri": path.as_uri() if uri is None else uri, "languageId": "python", "version": 1, "text": text}
    return notify("textDocument/didOpen", {"textDocument": document})


def code_action(message_id: int, uri: str) -> bytes:
    """Actions for the first ten lines of ``uri``."""
    span = {"start": {"line": 0, "character": 0}, "end": {"line": 10, "character": 0}}
    params = {"textDocument": {"uri": uri}, "range": span, "context": {"diagnostics": []}}
    return request(message_id, "textDocument/codeAction", params)


SHUTDOWN_EXIT = request(99, "shutdown") + notify("exit")


def messages(out: bytes) -> list[dict[str, Any]]:
    """The messages the server wrote."""
    found = []
    while out:
        head, _, rest = out.partition(b"\r\n\r\n")
        length = int(next(line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")).split(b":")[1])
        found.append(json.loads(rest[:length]))
        out = rest[length:]
    return found


def serve(data: bytes, cwd: Path, fast: bool = True, timeout: float = 60) -> tuple[int, list[dict[str, Any]], str]:
    """Run the server on ``data`` (then end of input): exit status, messages, stderr."""
    env = dict(os.environ, CKPTLINT_SERVER_FAST_START="1" if fast else "0")
    done = subprocess.run(
        [sys.executable, "-m", "ckptlint", "server"], input=data, capture_output=True, cwd=cwd, env=env, timeout=timeout
    )
    return done.returncode, messages(done.stdout), done.stderr.decode("utf-8", "replace")


def answer(found: list[dict[str, Any]], message_id: Any) -> dict[str, Any]:
    (one,) = [m for m in found if m.get("id") == message_id and "method" not in m]
    return one


def errors(found: list[dict[str, Any]]) -> list[int]:
    return [m["error"]["code"] for m in found if "error" in m]


MALFORMED = {
    "bad JSON": (frame(raw=b"{not json"), [-32700]),
    "Content-Length: abc": (b"Content-Length: abc\r\n\r\n{}", [-32700]),
    "no Content-Length": (b"Content-Type: application/vscode-jsonrpc\r\n\r\n{}", [-32700]),
    "a JSON array": (frame([1, 2]), [-32600]),
    "not UTF-8": (frame(raw=b'{"jsonrpc": "2.0", "method": "\xff"}'), [-32700]),
    "a number as method": (frame({"jsonrpc": "2.0", "id": 7, "method": 5}), [-32600]),
}


@pytest.mark.slow
@pytest.mark.parametrize("fast", [True, False], ids=["fast-start", "pygls"])
@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_first_message_is_answered_and_the_server_goes_on(tmp_path: Path, case: str, fast: bool) -> None:
    bad, codes = MALFORMED[case]
    status, found, stderr = serve(bad + initialize(tmp_path) + notify("initialized", {}) + SHUTDOWN_EXIT, tmp_path, fast)
    assert "Traceback" not in stderr
    assert errors(found) == codes
    assert "capabilities" in answer(found, 1)["result"]
    assert answer(found, 99)["result"] is None
    assert status == 0


WRONG_DOCUMENTS = {
    "text: null": lambda path: did_open(path, None),
    "uri: 5": lambda path: did_open(path, "x = 1\n", uri=5),
    "version: '1'": lambda path: notify(
        "textDocument/didOpen", {"textDocument": {"uri": path.as_uri(), "languageId": "python", "version": "1", "text": "x"}}
    ),
    "params: null": lambda path: (
        notify("textDocument/didOpen", None) + frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": None})
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("fast", [True, False], ids=["fast-start", "pygls"])
@pytest.mark.parametrize("case", sorted(WRONG_DOCUMENTS))
def test_a_document_with_fields_of_the_wrong_type_is_refused_not_linted(tmp_path: Path, case: str, fast: bool) -> None:
    path = tmp_path / "m.py"
    path.write_text(SOURCE)
    data = initialize(tmp_path) + notify("initialized", {}) + WRONG_DOCUMENTS[case](path) + did_open(path, SOURCE)
    status, found, stderr = serve(data + code_action(5, path.as_uri()) + SHUTDOWN_EXIT, tmp_path, fast)
    assert "Traceback" not in stderr
    published = [m["params"] for m in found if m.get("method") == "textDocument/publishDiagnostics"]
    assert published and all(p["uri"] == path.as_uri() for p in published)  # never a document named "None" or "5"
    assert [d["code"] for d in published[-1]["diagnostics"]] == ["CKP001"]
    assert "result" in answer(found, 5)
    assert status == 0


@pytest.mark.slow
@pytest.mark.parametrize("fast", [True, False], ids=["fast-start", "pygls"])
def test_a_lone_surrogate_is_reported_as_not_linted(tmp_path: Path, fast: bool) -> None:
    path = tmp_path / "m.py"
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "method": "textDocument/didOpen",
            "params": {"textDocument": {"uri": path.as_uri(), "languageId": "python", "version": 1, "text": "x = 1\ny = '\ud800'\n"}},
        }
    ).encode("ascii")
    status, found, stderr = serve(initialize(tmp_path) + frame(raw=body) + SHUTDOWN_EXIT, tmp_path, fast)
    assert "Traceback" not in stderr and status == 0
    published = [m["params"] for m in found if m.get("method") == "textDocument/publishDiagnostics"]
    (d,) = published[-1]["diagnostics"]
    assert d["code"] == "CKP902" and "lone surrogate (U+D800) at 2:6" in d["message"]


@pytest.mark.slow
@pytest.mark.parametrize("fast", [True, False], ids=["fast-start", "pygls"])
def test_a_pyproject_that_is_not_utf8_is_shown_not_fatal(tmp_path: Path, fast: bool) -> None:
    (tmp_path / "pyproject.toml").write_bytes(b"[tool.ckptlint]\n# caf\xe9\n")
    path = tmp_path / "m.py"
    path.write_text(SOURCE)
    data = initialize(tmp_path) + notify("initialized", {}) + did_open(path, SOURCE) + code_action(5, path.as_uri())
    status, found, stderr = serve(data + SHUTDOWN_EXIT, tmp_path, fast)
    assert "Traceback" not in stderr
    shown = [m["params"]["message"] for m in found if m.get("method") == "window/showMessage"]
    assert shown and shown[0].startswith("ckptlint: ")
    assert answer(found, 5)["result"] == [] and status == 0  # nothing linted under a broken configuration


@pytest.mark.slow
@pytest.mark.parametrize("fast", [True, False], ids=["fast-start", "pygls"])
def test_exit_statuses(tmp_path: Path, fast: bool) -> None:
    start = initialize(tmp_path) + notify("initialized", {})
    assert serve(start + SHUTDOWN_EXIT, tmp_path, fast)[0] == 0  # not 120: stdout is not flushed once closed
    env = dict(os.environ, CKPTLINT_SERVER_FAST_START="1" if fast else "0")
    server = subprocess.Popen(
        [sys.executable, "-m", "ckptlint", "server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=tmp_path, env=env
    )
    try:
        assert server.stdin is not None
        server.stdin.write(start + notify("exit"))  # exit without shutdown; input stays open
        server.stdin.flush()
        assert server.wait(timeout=30) == 1
    finally:
        server.kill()
        server.wait()


@pytest.mark.slow
@pytest.mark.parametrize("fast", [True, False], ids=["fast-start", "pygls"])
def test_shutdown_and_exit_with_null_params(tmp_path: Path, fast: bool) -> None:
    # some clients send `"params": null` for the methods whose params are void
    null_params = frame({"jsonrpc": "2.0", "id": 99, "method": "shutdown", "params": None}) + frame(
        {"jsonrpc": "2.0", "method": "exit", "params": None}
    )
    status, found, _ = serve(initialize(tmp_path) + notify("initialized", {}) + null_params, tmp_path, fast)
    assert answer(found, 99) == {"id": 99, "jsonrpc": "2.0", "result": None}
    assert status == 0


@pytest.mark.slow
def test_code_action_on_a_document_never_opened(tmp_path: Path) -> None:
    missing = (tmp_path / "never.py").as_uri()
    status, found, stderr = serve(initialize(tmp_path) + code_action(5, missing) + SHUTDOWN_EXIT, tmp_path)
    assert answer(found, 5) == {"id": 5, "jsonrpc": "2.0", "result": []}
    assert "Traceback" not in stderr and status == 0


# ------------------------------------------------------------------------------ fuzzing
def _valid_messages(tmp_path: Path, rng: random.Random) -> list[dict[str, Any]]:
    """Messages of every kind the server handles, with valid fields (mutated by the fuzzer)."""
    uri = (tmp_path / f"m{rng.randrange(3)}.py").as_uri()
    text = SOURCE if rng.random() < 0.02 else f"x = {rng.randrange(100)}\n\x0cy = 2\n"
    position = {"line": rng.randrange(4), "character": rng.randrange(6)}
    span = {"start": position, "end": position}
    return [
        {
            "jsonrpc": "2.0",
            "method": "textDocument/didOpen",
            "params": {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
        },
        {
            "jsonrpc": "2.0",
            "method": "textDocument/didChange",
            "params": {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"range": span, "text": "z"}, {"text": text}]},
        },
        {"jsonrpc": "2.0", "method": "textDocument/didSave", "params": {"textDocument": {"uri": uri}}},
        {"jsonrpc": "2.0", "method": "textDocument/didClose", "params": {"textDocument": {"uri": uri}}},
        {
            "jsonrpc": "2.0",
            "id": rng.randrange(1000, 10**6),
            "method": "textDocument/codeAction",
            "params": {
                "textDocument": {"uri": uri},
                "range": span,
                "context": {"diagnostics": [{"range": span, "message": "m", "code": "CKP001"}], "only": ["quickfix"]},
            },
        },
        {
            "jsonrpc": "2.0",
            "method": "workspace/didChangeWatchedFiles",
            "params": {"changes": [{"uri": (tmp_path / "pyproject.toml").as_uri(), "type": 2}]},
        },
        {
            "jsonrpc": "2.0",
            "id": rng.randrange(1000, 10**6),
            "method": "initialize",
            "params": {"capabilities": {}, "rootUri": tmp_path.as_uri()},
        },
    ]


_WRONG = [None, 5, -1, 2**40, 1.5, True, "", "\ud800", "x" * 50, [], {}, [1, "a"], {"a": None}]


def _mutate(value: Any, rng: random.Random) -> Any:
    """``value`` with one field (at any depth) replaced by a value of another type, or removed."""
    if isinstance(value, dict) and value and rng.random() < 0.8:
        key = rng.choice(sorted(value))
        copy = dict(value)
        if rng.random() < 0.15:
            del copy[key]
        else:
            copy[key] = _mutate(value[key], rng)
        return copy
    if isinstance(value, list) and value and rng.random() < 0.8:
        copy = list(value)
        i = rng.randrange(len(copy))
        copy[i] = _mutate(copy[i], rng)
        return copy
    return rng.choice(_WRONG)


def _fuzz_bytes(tmp_path: Path, rng: random.Random) -> bytes:
    kind = rng.random()
    message = rng.choice(_valid_messages(tmp_path, rng))
    if kind < 0.15:  # random bytes
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 80)))
    if kind < 0.25:  # a truncated frame: the header promises more than comes (then the next message)
        whole = frame(message)
        return whole[: rng.randrange(1, len(whole))]
    if kind < 0.3:  # a header block without a usable length
        return rng.choice([b"Content-Length: -3\r\n\r\n", b"Content-Length: 1e3\r\n\r\n{}", b"X: y\r\n\r\n{}", b"\r\n\r\n"])
    if kind < 0.4:  # valid JSON, not one request object
        return frame(rng.choice([[], [message], 5, "s", None, {"jsonrpc": "1.0", "method": "x"}, {"jsonrpc": "2.0"}]))
    if kind < 0.55:  # a valid message
        return frame(message)
    return frame(_mutate(message, rng))  # a field of the wrong type


@pytest.mark.slow
@pytest.mark.parametrize("fast", [True, False], ids=["fast-start", "pygls"])
def test_fuzzed_server_survives_10000_messages_and_still_answers(tmp_path: Path, fast: bool) -> None:
    rng = random.Random(20251202 + fast)
    (tmp_path / "pyproject.toml").write_text("[tool.ckptlint]\n")
    parts = [initialize(tmp_path), notify("initialized", {})]
    parts += [_fuzz_bytes(tmp_path, rng) for _ in range(10_000)]
    # a truncated frame may still wait for its body: blank lines end any body the fuzz left open
    parts.append(b"\r\n" * 2048)
    path = tmp_path / "last.py"
    parts += [did_open(path, SOURCE), code_action(424242, path.as_uri()), SHUTDOWN_EXIT]
    status, found, stderr = serve(b"".join(parts), tmp_path, fast, timeout=300)
    assert "Traceback" not in stderr, stderr[-3000:]
    last = answer(found, 424242)
    assert "Disable CKP001 for this line" in [a["title"] for a in last["result"]]
    assert answer(found, 99)["result"] is None
    assert status == 0


@pytest.mark.slow
@pytest.mark.parametrize("fast", [True, False], ids=["fast-start", "pygls"])
def test_the_lifecycle_before_initialize_twice_and_after_shutdown(tmp_path: Path, fast: bool) -> None:
    """LSP 3.17: a request before ``initialize`` is answered ServerNotInitialized (-32002) and
    a notification dropped; a second ``initialize`` and a request after ``shutdown`` are
    answered InvalidRequest (-32600); ``exit`` still ends the server."""
    path = tmp_path / "m.py"
    path.write_text(SOURCE)
    data = (
        code_action(5, path.as_uri())
        + did_open(path, SOURCE)  # dropped: nothing is published for it
        + initialize(tmp_path)
        + notify("initialized", {})
        + request(6, "initialize", {"processId": None, "capabilities": {}})
        + request(99, "shutdown")
        + code_action(7, path.as_uri())
        + did_open(path, SOURCE)  # dropped
        + request(8, "shutdown")
        + notify("exit")
    )
    status, found, stderr = serve(data, tmp_path, fast)
    assert "Traceback" not in stderr
    assert [(m.get("id"), m["error"]["code"]) for m in found if "error" in m] == [(5, -32002), (6, -32600), (7, -32600), (8, -32600)]
    assert "capabilities" in answer(found, 1)["result"] and answer(found, 99)["result"] is None
    assert not [m for m in found if m.get("method") == "textDocument/publishDiagnostics"]
    assert status == 0


def test_an_open_string_kind_that_is_not_a_string_is_refused() -> None:
    """lsprotocol passes a number through where a ``CodeActionKind`` (an open set of strings)
    belongs; the gate's converter refuses it, so ``"only": [5]`` is -32602, not a crash."""
    from lsprotocol import types as lsp

    from ckptlint.server.gate import strict_converter

    converter = strict_converter()
    span = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
    params: dict[str, Any] = {"textDocument": {"uri": "file:///m.py"}, "range": span, "context": {"diagnostics": []}}
    for only in (["quickfix", "source.fixAll.ckptlint"], None):
        params["context"]["only"] = only
        assert converter.structure(params, lsp.CodeActionParams).context.only == (tuple(only) if only else None)
    for wrong in ([5], [True], [1.5]):
        params["context"]["only"] = wrong
        with pytest.raises(Exception, match="CodeActionParams"):
            converter.structure(params, lsp.CodeActionParams)

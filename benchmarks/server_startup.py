"""Start-up of ``ckptlint server`` against the command line, on one file.

Measures, for ``FILE`` (default: a generated module with a checkpoint finding), the median
of ``--runs`` runs of:

- ``cli``: wall time of ``ckptlint --no-cache --isolated FILE`` (start, lint, exit);
- ``server_initialize``: from spawning ``ckptlint server`` to the ``initialize`` response;
- ``server_first_diagnostics``: from spawning it to the ``publishDiagnostics`` of FILE
  (initialize, initialized, didOpen);
- ``server_first_change``: the first ``didChange`` to its ``publishDiagnostics`` (this
  waits for the hand-over to pygls, see :mod:`ckptlint.server.fast_start`);
- ``server_relint``: a second ``didChange`` to its ``publishDiagnostics`` (warm).

``CKPTLINT_SERVER_FAST_START=0`` in the environment measures the server without the fast start.

The issue's bound: ``server_first_diagnostics`` <= ``cli`` (the CLI's start-up plus the time
to lint the file). The client is a few lines of JSON-RPC over pipes (no library), so its own
cost is negligible. Usage: ``python benchmarks/server_startup.py [FILE] [--runs N]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SAMPLE = "from torch.utils.checkpoint import checkpoint\n\n\ndef forward(block, x):\n    return checkpoint(block, x)\n"


def _send(proc: subprocess.Popen, message: dict) -> None:
    body = json.dumps(message).encode()
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()


def _read(proc: subprocess.Popen) -> dict:
    length = 0
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("server exited")
        if line in (b"\r\n", b"\n"):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(proc.stdout.read(length))


def _wait(proc: subprocess.Popen, method: str | None = None, request_id: int | None = None) -> dict:
    while True:
        message = _read(proc)
        if method is not None and message.get("method") == method:
            return message
        if request_id is not None and message.get("id") == request_id and "method" not in message:
            return message


def server_times(path: Path) -> tuple[float, float, float, float, int]:
    """(to initialize, to first diagnostics, first change, warm change, diagnostics count)."""
    uri = path.resolve().as_uri()
    text = path.read_text(encoding="utf-8")
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "ckptlint", "server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        params = {"processId": None, "rootUri": path.parent.resolve().as_uri(), "capabilities": {}}
        _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        _wait(proc, request_id=1)
        initialized = time.perf_counter() - start
        _send(proc, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
        document = {"uri": uri, "languageId": "python", "version": 1, "text": text}
        _send(proc, {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": document}})
        published = _wait(proc, method="textDocument/publishDiagnostics")
        first = time.perf_counter() - start
        changes = []
        for version in (2, 3):
            t = time.perf_counter()
            params = {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text + "\n" * version}]}
            _send(proc, {"jsonrpc": "2.0", "method": "textDocument/didChange", "params": params})
            while _wait(proc, method="textDocument/publishDiagnostics")["params"].get("version") != version:
                pass  # the diagnostics pygls publishes again for the opened version
            changes.append(time.perf_counter() - t)
        _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
        _wait(proc, request_id=2)
        _send(proc, {"jsonrpc": "2.0", "method": "exit"})
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    return initialized, first, changes[0], changes[1], len(published["params"]["diagnostics"])


def cli_time(path: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ckptlint", "--no-cache", "--isolated", str(path)], capture_output=True, check=False)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("file", nargs="?")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(args.file) if args.file else Path(folder) / "model.py"
        if not args.file:
            path.write_text(SAMPLE)
        cli, server = [], []
        for _ in range(args.runs):  # alternated, so that a change in the machine's load hits both
            cli.append(cli_time(path))
            server.append(server_times(path))
    result = {
        "file": str(path) if args.file else "generated model.py",
        "runs": args.runs,
        "cli_s": round(statistics.median(cli), 3),
        "server_initialize_s": round(statistics.median(s[0] for s in server), 3),
        "server_first_diagnostics_s": round(statistics.median(s[1] for s in server), 3),
        "server_first_change_s": round(statistics.median(s[2] for s in server), 3),
        "server_relint_s": round(statistics.median(s[3] for s in server), 3),
        "diagnostics": server[0][4],
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

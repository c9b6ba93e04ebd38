"""``ckptlint server``: a Language Server Protocol server over stdio (ruff's ``ruff server``).

``CKPTLINT_SERVER_FAST_START=0`` turns off the fast start (:mod:`ckptlint.server.fast_start`).

It needs the ``server`` extra (``pip install "ckptlint[server]"``, which brings pygls); the
command says so and exits with code 2 when it is missing. See :mod:`ckptlint.server.lsp`.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ckptlint.server.fast_start import DropResponse
    from ckptlint.server.framing import ByteReader, Connection

__all__ = ["main"]

MISSING = (
    "error: `ckptlint server` needs the `server` extra (pygls), which is not installed; "
    'install it with: pip install "ckptlint[server]"'
)


USAGE = """Usage: ckptlint server [--stdio]

  The ckptlint language server (Language Server Protocol over stdin/stdout) for editors:
  diagnostics on open, change and save, quick fixes and "disable for this line".
  Needs the `server` extra: pip install "ckptlint[server]"."""


def main(argv: list[str] | None = None) -> int:
    """Run the server on stdin/stdout until the client exits it. ``argv``: ``--stdio``
    (the default and only transport, accepted for clients that pass it). Returns the exit
    code: 0 after ``shutdown`` (then ``exit``, or the end of input), 1 without it (LSP 3.17),
    2 when pygls is missing or an argument is unknown. Malformed messages never end it
    (:mod:`ckptlint.server.framing`, :mod:`ckptlint.server.gate`)."""
    args = list(argv or [])
    if "-h" in args or "--help" in args:
        print(USAGE)
        return 0
    unknown = [a for a in args if a != "--stdio"]
    if unknown:
        print(f"error: `ckptlint server` takes only --stdio, not {' '.join(unknown)}", file=sys.stderr)
        return 2
    import importlib.util

    if importlib.util.find_spec("pygls") is None or importlib.util.find_spec("lsprotocol") is None:
        print(MISSING, file=sys.stderr)
        return 2
    from ckptlint.server.framing import Connection

    stdin = sys.stdin.buffer
    connection = Connection(sys.stdout.buffer)  # pygls closes it at `exit`; stdout stays open
    fallback = None
    reader: ByteReader
    writer: Connection | DropResponse
    if os.environ.get("CKPTLINT_SERVER_FAST_START", "1") == "0":
        reader, writer = stdin, connection
    else:
        # answer `initialize` and lint the first document before importing pygls (~0.5 s)
        from ckptlint.server.fast_start import DropResponse, FastStart, ReplayReader

        start = FastStart(stdin, connection)
        start.run()
        reader, writer = ReplayReader(start.recorded, stdin), DropResponse(connection, start.initialize_id)
        fallback = start.fallback_initialize()
    try:
        from ckptlint.server.gate import CheckedReader
        from ckptlint.server.lsp import create_server
    except ImportError as exc:
        if getattr(exc, "name", "") and str(exc.name).split(".")[0] in ("pygls", "lsprotocol"):
            print(MISSING, file=sys.stderr)
            return 2
        raise
    server = create_server()
    # pygls reads with readline/read and writes with write/close: any file-like object does
    server.start_io(CheckedReader(reader, connection, initialize_fallback=fallback), writer)  # type: ignore[arg-type]
    return 0 if server.shut_down else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))

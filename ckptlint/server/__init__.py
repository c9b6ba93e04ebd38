"""``ckptlint server``: a Language Server Protocol server over stdio (ruff's ``ruff server``).

``CKPTLINT_SERVER_FAST_START=0`` turns off the fast start (:mod:`ckptlint.server.fast_start`).

It needs the ``server`` extra (``pip install "ckptlint[server]"``, which brings pygls); the
command says so and exits with code 2 when it is missing. See :mod:`ckptlint.server.lsp`.
"""

from __future__ import annotations

import os
import sys

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
    code (2 when pygls is missing or an argument is unknown)."""
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
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    if os.environ.get("CKPTLINT_SERVER_FAST_START", "1") == "0":
        reader, writer = stdin, stdout
    else:
        # answer `initialize` and lint the first document before importing pygls (~0.5 s)
        from ckptlint.server.fast_start import DropResponse, FastStart, ReplayReader

        start = FastStart(stdin, stdout)
        start.run()
        reader, writer = ReplayReader(start.recorded, stdin), DropResponse(stdout, start.initialize_id)
    try:
        from ckptlint.server.lsp import create_server
    except ImportError as exc:
        if getattr(exc, "name", "") and str(exc.name).split(".")[0] in ("pygls", "lsprotocol"):
            print(MISSING, file=sys.stderr)
            return 2
        raise
    create_server().start_io(reader, writer)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))

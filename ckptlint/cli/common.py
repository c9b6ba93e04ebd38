"""What every command shares: exit codes, error lines, writing the report, raw byte streams."""

from __future__ import annotations

import sys
from pathlib import Path

import click

__all__ = ["EXIT_ERROR", "EXIT_FINDINGS", "EXIT_OK", "binary", "emit", "error", "os_error"]


EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def error(message: str) -> None:
    click.echo(f"error: {message}", err=True)


def emit(text: str, output_file: Path | None, to_stderr: bool = False) -> None:
    if output_file is not None:
        try:
            output_file.parent.mkdir(parents=True, exist_ok=True)
            output_file.write_text(text, encoding="utf-8")
        except OSError as exc:
            error(f"{output_file}: cannot write the report: {exc.strerror or exc}")
            sys.exit(EXIT_ERROR)
        return
    (sys.stderr if to_stderr else sys.stdout).write(text)


def binary(stream):  # noqa: ANN001, ANN202
    """The byte stream under a text stream (``sys.stdin.buffer``), so source bytes pass
    through untouched (encoding, byte-order mark, CRLF)."""
    return getattr(stream, "buffer", stream)


def os_error(exc: OSError) -> str:
    from ckptlint.config.discovery import os_reason

    return os_reason(exc, missing="no such file or directory")

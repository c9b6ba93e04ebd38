"""What one file may cost (bytes, seconds) and the problems reported when it cannot be linted."""

from __future__ import annotations

import traceback
from pathlib import Path

from ckptlint.lint.results import Problem, ProblemKind
from ckptlint.text.reading import NotRegularFile, load_source
from ckptlint.text.source import SourceDecodeError

MAX_FILE_BYTES = 2 * 2**20
"""Files larger than this (bytes) are not parsed; the largest file of the real repositories
tried is ~0.3 MiB, so the limit only bounds the time and memory one pathological file (a
generated table, a vendored bundle) can take."""

MAX_NOTEBOOK_BYTES = 64 * 2**20
"""Notebooks (``.ipynb``) larger than this are not read; their outputs (images, logs) make
most of their size, so the limit on code is :data:`MAX_FILE_BYTES` of cells' text."""


def size_limit(path: str) -> int:
    return MAX_NOTEBOOK_BYTES if path.lower().endswith(".ipynb") else MAX_FILE_BYTES


DEFAULT_FILE_TIMEOUT = 60.0
"""Seconds one file may take by default (``--file-timeout``): the slowest file of the real
repositories tried takes under 3 s."""


def internal_error(path: str, exc: BaseException) -> Problem:
    return Problem(path, f"internal error: {type(exc).__name__}: {exc}", ProblemKind.INTERNAL, traceback.format_exc())


def too_large(path: str, size: int, limit_bytes: int | None = None) -> Problem:
    limit = (limit_bytes or size_limit(path)) // 2**20
    return Problem(path, f"too large to lint ({size / 2**20:.1f} MiB; the limit is {limit} MiB); file skipped", ProblemKind.PARSE)


def undecodable(path: str, raw: bytes) -> list[Problem]:
    """The reason a file the gate skips cannot be Python source (a binary file, not UTF-8
    without a coding cookie...), as ``[problem]``; ``[]`` when it decodes."""
    try:
        load_source(raw, path)
    except SourceDecodeError as exc:
        return [Problem(path, str(exc), ProblemKind.DECODE)]
    return []


def mentions(path: Path, markers: tuple[bytes, ...], block: int = 1 << 20) -> bool:
    """Whether the file at ``path`` contains one of ``markers``, read in blocks (bounded memory)."""
    keep = max(len(m) for m in markers) - 1
    tail = b""
    with open(path, "rb") as handle:
        while chunk := handle.read(block):
            window = tail + chunk
            if any(m in window for m in markers):
                return True
            tail = window[-keep:]
    return False


def read_error(exc: OSError) -> str:
    from ckptlint.config.discovery import os_reason

    if isinstance(exc, NotRegularFile):
        return str(exc)
    return f"cannot read: {os_reason(exc, missing='no such file (broken symbolic link?)')}"

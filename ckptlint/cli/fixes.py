"""Writing fixed files (``--fix``) or printing their diffs (``--diff``); never outside the
paths given, each file written whole or not at all."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ckptlint.cli.common import binary, os_error

if TYPE_CHECKING:
    from ckptlint.lint.results import FileResult, FixMode, RunResult
    from ckptlint.lint.stop import StopFlag
    from ckptlint.text.diagnostics import Diagnostic

__all__ = ["handle_fixes", "keep_unfixed"]


def handle_fixes(
    run: RunResult,
    mode: FixMode,
    cwd: Path,
    may_write: Callable[[str], bool],
    to_stdout: bool = False,
    stop: StopFlag | None = None,
) -> tuple[list[Diagnostic], int]:
    """Write fixed files (``APPLY``) or print their diffs (``DIFF``). Returns
    ``(unwritten, fixed findings)``: a CKP902 diagnostic for each fixed file that could not be
    written (that file then reports its findings as read, none counted as fixed).
    ``may_write(path)``: whether ``path`` resolves inside the paths given; a file that does
    not (a symbolic link out of the tree) is never written. Once ``stop`` is set (SIGINT,
    SIGTERM), no further file is written (each write is atomic: a file is either written
    whole or left as it was); those files report their findings as read.
    ``to_stdout``: the source came from stdin; ``APPLY`` prints it (fixed, or unchanged)
    instead of writing a file."""
    import difflib

    from ckptlint.lint.results import io_error
    from ckptlint.output.base import display_path
    from ckptlint.text.fixer import FileChangedError, FolderWriteError, write_atomically
    from ckptlint.text.source import split_lines

    unwritten: list[Diagnostic] = []
    fixed = 0
    if to_stdout and mode.value == "apply":
        sys.stdout.flush()
        stdout = binary(sys.stdout)
        for result in run.results:
            if result.source is not None and result.fixed_text is not None and result.changed:
                stdout.write(result.source.encode(result.fixed_text))
                fixed += result.fixed
            elif result.raw is not None:
                stdout.write(result.raw)
        stdout.flush()
        return unwritten, fixed
    for result in run.results:
        if not result.changed:
            continue
        source = result.source
        assert source is not None and result.fixed_text is not None
        if mode.value == "diff" and hasattr(source, "cell_diff"):  # a notebook: one diff a cell (ruff)
            sys.stdout.write(source.cell_diff(result.fixed_text, display_path(result.path, cwd)))
            fixed += result.fixed
            continue
        if mode.value == "diff":
            shown = display_path(result.path, cwd)
            diff = difflib.unified_diff(
                split_lines(source.text, keepends=True),
                split_lines(result.fixed_text, keepends=True),
                fromfile=f"a/{shown}",
                tofile=f"b/{shown}",
            )
            sys.stdout.write("".join(line if line.endswith(("\n", "\r")) else line + "\n" for line in diff))
            fixed += result.fixed
            continue
        if stop:
            keep_unfixed(result)
            continue
        try:
            if not may_write(result.path):
                raise _Outside(os.path.realpath(result.path))
            write_atomically(Path(result.path), source.encode(result.fixed_text), expected=result.raw)
            fixed += result.fixed
            continue
        except _Outside as exc:
            why = f"resolves to {exc}, outside the paths given; fixes not written"
        except FileChangedError:
            why = "changed on disk while ckptlint ran; fixes not written"
        except FolderWriteError as exc:
            why = f"cannot write the fixed file: cannot create a file in its folder ({os_error(exc)}); fixes not written"
        except OSError as exc:
            why = f"cannot write the fixed file: {os_error(exc)}; fixes not written"
        unwritten.append(io_error(result.path, why))
        keep_unfixed(result)
    return unwritten, fixed


def keep_unfixed(result: FileResult) -> None:
    """A fixed file that was not written: it reports its findings as read, nothing fixed."""
    if result.diagnostics_before_fix is not None:
        result.diagnostics = result.diagnostics_before_fix
    result.fixed, result.fixed_codes, result.fixed_text = 0, {}, None


class _Outside(Exception):
    """A file to write resolves outside the paths given (the message is where it resolves)."""

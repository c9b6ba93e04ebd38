"""``--add-noqa``: write ``# noqa: CODE`` directives (the edits are :mod:`ckptlint.text.add_noqa`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ckptlint.cli.common import error

if TYPE_CHECKING:
    from ckptlint.lint.results import RunResult

__all__ = ["write_noqa"]


def write_noqa(run: RunResult, may_write: Callable[[str], bool]) -> bool:
    """``--add-noqa``: write the directives; print how many were added. Returns whether
    something failed. ``may_write(path)``: whether ``path`` resolves inside the paths given
    (others are never written)."""
    from ckptlint.registry import SYNTAX_ERROR, UNUSED_NOQA
    from ckptlint.text.add_noqa import add_noqa, parses
    from ckptlint.text.fixer import FileChangedError, write_atomically
    from ckptlint.text.source import location_label

    added = 0
    failed = False
    wanted = [d for d in run.diagnostics if d.code not in (SYNTAX_ERROR, UNUSED_NOQA)]
    for result in run.results:
        source = result.source
        if source is None:
            continue
        edit = add_noqa(source, [d for d in wanted if d.path == result.path])
        for row in edit.skipped_rows:
            click.echo(
                f"warning: {location_label(result.path, row)}: no room for a `# noqa` comment (the line ends inside a "
                "string or continues)",
                err=True,
            )
        if not edit.added:
            continue
        if not parses(edit.text):
            error(f"{result.path}: adding `# noqa` comments would break the file; left unchanged")
            failed = True
            continue
        if not may_write(result.path):
            error(f"{result.path}: resolves to {os.path.realpath(result.path)}, outside the paths given; not written")
            failed = True
            continue
        try:
            write_atomically(Path(result.path), source.encode(edit.text), expected=result.raw)
        except (FileChangedError, OSError) as exc:
            error(str(exc) if isinstance(exc, FileChangedError) else f"{result.path}: cannot write: {exc}")
            failed = True
            continue
        added += edit.added
    if added:
        click.echo(f"Added {added} noqa directive{'s' if added != 1 else ''}.", err=True)
    return failed

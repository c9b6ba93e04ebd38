"""``--clean``: remove ckptlint's cache folders."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from ckptlint.cli.common import EXIT_ERROR, EXIT_OK, error

if TYPE_CHECKING:
    from ckptlint.config.files import SettingsResolver

__all__ = ["clean_caches"]


def clean_caches(targets: list[Path], resolver: SettingsResolver, quiet: bool) -> int:
    """``--clean``: remove what ckptlint wrote in its cache folders below ``targets`` and in the
    configured one (:func:`ckptlint.lint.cache_folder.clean`); nothing else is removed."""
    from ckptlint.config.files import ConfigError
    from ckptlint.lint.cache import cache_dir_for, clean

    try:
        configured = [cache_dir_for(resolver.for_path(Path.cwd()))]
    except ConfigError as exc:
        error(str(exc))
        return EXIT_ERROR
    for done in clean(targets, configured):
        if done.outcome == "broken link":  # said even with --quiet: the cache cannot be where it points
            click.echo(f"warning: {done.folder}: the cache folder is a broken symbolic link; nothing removed", err=True)
        elif quiet:
            continue
        elif done.target is not None:  # written through the link: the link and its folder stay
            click.echo(
                f"Removed ckptlint's cache files from: {done.target} (through the symbolic link {done.folder}; "
                "the link, the folder and any other files there are kept)",
                err=True,
            )
        elif done.outcome == "files":  # it holds files ckptlint did not write: they stay
            click.echo(f"Removed ckptlint's cache files from: {done.folder} (the other files there are kept)", err=True)
        else:
            click.echo(f"Removed cache at: {done.folder}", err=True)
    return EXIT_OK

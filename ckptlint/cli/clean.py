"""``--clean``: remove ckptlint's cache folders."""

from __future__ import annotations

from pathlib import Path

import click

from ckptlint.cli.common import EXIT_ERROR, EXIT_OK, error

__all__ = ["clean_caches"]


def clean_caches(targets: list[Path], resolver, quiet: bool) -> int:
    """``--clean``: remove ckptlint's cache folders below ``targets`` and the configured one."""
    from ckptlint.config.files import ConfigError
    from ckptlint.lint.cache import cache_dir_for, clean

    try:
        configured = [cache_dir_for(resolver.for_path(Path.cwd()))]
    except ConfigError as exc:
        error(str(exc))
        return EXIT_ERROR
    for removed in clean(targets, configured):
        if not quiet:
            click.echo(f"Removed cache at: {removed}", err=True)
    return EXIT_OK

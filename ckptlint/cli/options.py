"""The command's options: parsed values (:class:`Options`), checked and resolved into an
:class:`Invocation` (settings resolver, fix mode), and the option value helpers."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ckptlint.cli.common import EXIT_ERROR, error

if TYPE_CHECKING:
    from ckptlint.config.files import SettingsResolver
    from ckptlint.config.settings import Settings
    from ckptlint.lint.results import FixMode

__all__ = ["NO_TIME_LIMIT", "Invocation", "Options", "file_timeout", "prepare"]


@dataclass(frozen=True)
class Options:
    """Every option of the ``ckptlint`` command as click parsed it (one field per option)."""

    paths: tuple[Path, ...]
    fix: bool | None
    unsafe_fixes: bool | None
    diff: bool
    select: tuple[str, ...]
    extend_select: tuple[str, ...]
    ignore: tuple[str, ...]
    output_format: str | None
    output_file: Path | None
    stdin_filename: Path | None
    since: str | None
    add_noqa: bool
    exit_zero: bool
    exit_non_zero_on_fix: bool
    isolated: bool
    config_file: Path | None
    no_cache: bool
    cache_dir: str | None
    clean: bool
    force_exclude: bool | None
    exclude: tuple[str, ...]
    extend_exclude: tuple[str, ...]
    respect_gitignore: bool | None
    statistics: bool
    show_fixes: bool
    show_files: bool
    show_settings: bool
    show_sites: bool
    target_version: tuple[str, ...]
    explain: str | None
    list_rules: bool
    jobs: int | None
    file_timeout: float | None
    quiet: bool
    verbose: bool
    watch: bool = False


@dataclass
class Invocation:
    """What the options mean once checked: the settings resolver, the fix mode and so on.

    Attributes:
        cwd: the working directory (paths are shown relative to it).
        resolver: settings per file (:class:`ckptlint.config.files.SettingsResolver`).
        mode: report, apply fixes or show their diff (:class:`ckptlint.lint.results.FixMode`).
        unsafe: ``settings -> bool``: whether unsafe fixes apply under those settings.
        use_stdin: the source comes from stdin.
        stdin_path: the file name stdin stands for (``--stdin-filename``), absolute.
    """

    cwd: Path
    resolver: SettingsResolver
    mode: FixMode
    unsafe: Callable[[Settings], bool]
    use_stdin: bool
    stdin_path: Path | None


def prepare(options: Options) -> Invocation:
    """Check that the options fit together and build the settings resolver. Exits with
    status 2 (usage error) when they do not."""
    from ckptlint.config.declarations import InvalidTargetVersion, parse_target_version_option
    from ckptlint.config.files import CliOverrides, SettingsResolver
    from ckptlint.config.settings import UnknownRuleSelector, normalise_selectors
    from ckptlint.lint.results import FixMode

    paths, stdin_filename = options.paths, options.stdin_filename
    use_stdin = Path("-") in paths
    if use_stdin and len(paths) > 1:
        error("`-` (stdin) cannot be combined with other paths")
        sys.exit(EXIT_ERROR)
    if stdin_filename is not None and paths and not use_stdin:
        error("--stdin-filename needs `-` as the path (the source is read from stdin)")
        sys.exit(EXIT_ERROR)
    use_stdin = use_stdin or (stdin_filename is not None and not paths)
    conflicts = [
        name
        for name, given in (("--add-noqa", options.add_noqa), ("--since", options.since is not None), ("stdin", use_stdin))
        if given
    ]
    if options.add_noqa and (options.fix or options.diff):
        conflicts.append("--fix/--diff")
    if len(conflicts) > 1:
        error(f"{' and '.join(conflicts)} cannot be used together")
        sys.exit(EXIT_ERROR)
    try:
        cli = CliOverrides(
            select=normalise_selectors(selectors(options.select, "--select"), "--select") if options.select else None,
            extend_select=normalise_selectors(selectors(options.extend_select, "--extend-select"), "--extend-select"),
            ignore=normalise_selectors(selectors(options.ignore, "--ignore"), "--ignore"),
            exclude=codes(options.exclude) if options.exclude else None,
            extend_exclude=codes(options.extend_exclude),
            unsafe_fixes=options.unsafe_fixes,
            respect_gitignore=options.respect_gitignore,
            force_exclude=options.force_exclude,
            cache_dir=os.path.abspath(options.cache_dir) if options.cache_dir else None,
            target_versions=tuple(parse_target_version_option(text) for text in options.target_version),
        )
    except (UnknownRuleSelector, InvalidTargetVersion) as exc:
        error(str(exc))
        sys.exit(EXIT_ERROR)
    if options.config_file is not None:
        problem = _config_file_problem(options.config_file)
        if problem is not None:
            error(f"{options.config_file}: {problem}")
            sys.exit(EXIT_ERROR)
    cwd = Path.cwd()
    resolver = SettingsResolver(cli, cwd=cwd, isolated=options.isolated, config=options.config_file)
    mode = FixMode.DIFF if options.diff else (FixMode.APPLY if options.fix else FixMode.NONE)
    stdin_path = Path(os.path.abspath(stdin_filename)) if use_stdin and stdin_filename is not None else None
    return Invocation(cwd, resolver, mode, unsafe_resolver(options.unsafe_fixes), use_stdin, stdin_path)


def _config_file_problem(path: Path) -> str | None:
    """Why ``--config PATH`` cannot be used, or ``None``: it does not exist, cannot be
    reached, or is not a regular file (``/dev/null``, a FIFO: said as such, not read; a
    configuration's folder is the root of its relative patterns and cache folder)."""
    from ckptlint.config.discovery import os_reason
    from ckptlint.text.reading import file_kind

    try:
        status = os.stat(path)
    except FileNotFoundError:
        return "configuration file not found"
    except OSError as exc:
        return f"cannot read the configuration file: {os_reason(exc)}"
    if not stat.S_ISREG(status.st_mode):
        return f"not a regular file ({file_kind(status.st_mode)}); --config takes a TOML configuration file (for none: --isolated)"
    return None


def codes(values: tuple[str, ...]) -> tuple[str, ...]:
    """Flatten repeated, comma-separated code options."""
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


def selectors(values: tuple[str, ...], option: str) -> tuple[str, ...]:
    """The rule selectors of a repeated, comma-separated option. An empty one (``--select ''``,
    ``--ignore CKP001,``) is an error, as in ruff, instead of silently selecting nothing."""
    from ckptlint.config.settings import UnknownRuleSelector

    parts = tuple(part.strip() for value in values for part in value.split(","))
    if any(not part for part in parts):
        raise UnknownRuleSelector(f"{option}: invalid empty rule selector (give a code or prefix, or ALL)")
    return parts


#: The ``--file-timeout`` value meaning "no limit": ``inf``, and any value above a year of
#: seconds (``setitimer`` and the pool's waits overflow on ``1e300``).
NO_TIME_LIMIT = float("inf")


def file_timeout(value: float | None) -> float | None:
    """``--file-timeout`` checked: ``nan`` is a usage error (click's range lets it through);
    ``inf`` or more than a year of seconds becomes :data:`NO_TIME_LIMIT`."""
    import math

    if value is None:
        return None
    if math.isnan(value):
        raise click.BadParameter("nan is not a number of seconds")
    return NO_TIME_LIMIT if value > 365 * 24 * 3600 else value


def unsafe_resolver(cli_value: bool | None) -> Callable[[Settings], bool]:
    """Whether unsafe fixes apply under given settings: ``--unsafe-fixes``/``--no-unsafe-fixes``
    when given, else the settings' ``unsafe-fixes``."""

    def unsafe(settings: Settings) -> bool:
        if cli_value is not None:
            return cli_value
        return bool(settings.unsafe_fixes)

    return unsafe

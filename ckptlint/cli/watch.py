"""``--watch`` (ruff's ``ruff check --watch``): lint, then lint again each time a Python file,
a configuration file or a declaration of library versions below the paths changes.

Changes come from `watchfiles <https://watchfiles.helpmanual.io/>`_ (the ``watch`` extra), which
uses the system's notifications (inotify, FSEvents, ReadDirectoryChangesW) and groups the changes
of one save (its debounce, 1.6 s at most); its ``DefaultFilter`` drops changes below ``.git``,
``.venv``, ``__pycache__``, ``node_modules`` and editors' swap files. Each round starts on a cleared screen (when stdout is a
terminal), re-reads the configuration and prints the report as a plain run would; timestamped
status lines (``[14:03:07] File change detected...``) go to stderr so that stdout stays the
report. The first Ctrl-C (or SIGTERM) ends the watch with exit status 0, as ruff's does; one
during a round ends that round first.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ckptlint.cli.common import EXIT_ERROR, EXIT_OK, error

if TYPE_CHECKING:
    from ckptlint.cli.options import Invocation, Options
    from ckptlint.lint.stop import StopFlag

__all__ = ["WATCHED_NAMES", "WATCHED_SUFFIXES", "change_filter", "incompatible", "is_watched", "watch"]

#: Files whose change starts a round: the linted files and what changes their settings (the
#: configuration, ``.gitignore``, the declarations of library versions).
WATCHED_SUFFIXES = (".py", ".pyi", ".ipynb")
WATCHED_NAMES = frozenset(
    {".ckptlint.toml", "ckptlint.toml", "pyproject.toml", ".gitignore", "setup.cfg", "setup.py", "environment.yml", "environment.yaml"}
)


def is_watched(path: str) -> bool:
    """Whether a change of ``path`` starts a round (a requirements file included)."""
    name = os.path.basename(path)
    if name.endswith(WATCHED_SUFFIXES) or name in WATCHED_NAMES:
        return True
    return name.endswith(".txt") and (name.startswith("requirements") or os.path.basename(os.path.dirname(path)) == "requirements")


def change_filter() -> Callable[[Any, str], bool]:
    """watchfiles' ``watch_filter``: a change starts a round when watchfiles' ``DefaultFilter``
    keeps it (not below ``.git``, ``.venv``, ``__pycache__``, ``node_modules``; no swap file)
    and :func:`is_watched` names it. Needs watchfiles."""
    import watchfiles

    default = watchfiles.DefaultFilter()
    return lambda change, path: bool(default(change, path)) and is_watched(path)


def incompatible(options: Options) -> str | None:
    """The option that ``--watch`` cannot be combined with (it only reports), or ``None``."""
    for name, given in (
        ("--fix", bool(options.fix)),
        ("--diff", options.diff),
        ("--add-noqa", options.add_noqa),
        ("--since", options.since is not None),
        ("stdin", Path("-") in options.paths or options.stdin_filename is not None),
        ("--show-files", options.show_files),
        ("--show-settings", options.show_settings),
        ("--show-sites", options.show_sites),
        ("--clean", options.clean),
    ):
        if given:
            return name
    return None


class _Stopped:
    """watchfiles' ``stop_event``: set by the command's stop flag (Ctrl-C, SIGTERM, handled by
    :class:`~ckptlint.cli.signals.stop_on_signals`) or by ``stop_event``."""

    def __init__(self, stop: StopFlag, extra: threading.Event | None) -> None:
        self.stop, self.extra = stop, extra

    def is_set(self) -> bool:
        return bool(self.stop) or (self.extra is not None and self.extra.is_set())


def _status(message: str) -> None:
    import time

    click.echo(f"[{time.strftime('%H:%M:%S')}] {message}", err=True)


def watch(
    options: Options,
    stop: StopFlag,
    *,
    stop_event: threading.Event | None = None,
    after_round: Callable[[int, int], None] | None = None,
) -> int:
    """Lint ``options.paths``, then again after each relevant change, until ``stop`` (a signal)
    or ``stop_event`` is set; returns the exit status: 0 when stopped, 2 when the options do not
    fit (or watchfiles is not installed). ``after_round(number, status)`` is called after each
    round (0 the first) with the status a plain run would have exited with."""
    from ckptlint.cli.check import check
    from ckptlint.cli.options import prepare
    from ckptlint.lint.stop import Interrupted

    clash = incompatible(options)
    if clash is not None:
        error(f"--watch and {clash} cannot be used together (--watch only reports)")
        return EXIT_ERROR
    try:
        import watchfiles
    except ImportError:
        error("--watch needs the watchfiles package: pip install 'ckptlint[watch]'")
        return EXIT_ERROR
    roots = [Path(os.path.abspath(p)) for p in (options.paths or (Path("."),))]
    missing = [str(p) for p in roots if not p.exists()]
    if missing:
        error(f"{missing[0]}: no such file or directory (--watch watches existing paths)")
        return EXIT_ERROR
    invocation = prepare(options)  # a usage error exits 2 before watching starts
    watched = _with_configuration(roots, invocation)
    stopped = _Stopped(stop, stop_event)
    relevant = change_filter()
    round_number = 0
    message = "Starting linter in watch mode..."
    try:
        while not stopped.is_set():
            click.clear()  # only on a terminal
            _status(message)
            status = _round(options, stop, check, prepare, round_number == 0, invocation)
            if stopped.is_set():
                break
            _status("Watching for file changes.")
            if after_round is not None:
                after_round(round_number, status)
            round_number += 1
            # a configuration file deleted or renamed since is no longer watched (watchfiles
            # refuses a path that does not exist: "No path was found")
            watched = [p for p in watched if p in roots or p.exists()]
            changes = next(
                watchfiles.watch(
                    *watched,
                    watch_filter=relevant,
                    stop_event=stopped,
                    raise_interrupt=False,
                ),
                None,
            )
            if changes is None:  # stopped while waiting
                break
            message = f"File change detected ({_changed(changes)})..."
    except Interrupted:  # a second Ctrl-C during a round
        pass
    return EXIT_OK


def _round(
    options: Options,
    stop: StopFlag,
    check: Callable[..., int],
    prepare: Callable[[Options], Invocation],
    first: bool,
    invocation: Invocation,
) -> int:
    """One run of the check with the configuration read afresh; a usage error found now (a
    ``--config`` file removed) is printed and the watch goes on."""
    try:
        current = invocation if first else prepare(options)
        return int(check(options, current, stop))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR


def _with_configuration(roots: list[Path], invocation: Invocation) -> list[Path]:
    """``roots`` plus the configuration files that apply to them and lie outside them (a
    ``pyproject.toml`` above ``src/``)."""
    from ckptlint.config.files import ConfigError

    watched = list(roots)
    for root in roots:
        try:
            config = invocation.resolver.for_path(root).config_path
        except ConfigError:
            continue
        if config is not None and not any(r == config or r in config.parents for r in watched):
            watched.append(config)
    return watched


def _changed(changes: Iterable[tuple[object, str]]) -> str:
    """``m.py`` or ``3 files``: what a round was started by."""
    paths = sorted({path for _, path in changes})
    if len(paths) == 1:
        try:
            return os.path.relpath(paths[0])
        except ValueError:
            return paths[0]
    return f"{len(paths)} files"


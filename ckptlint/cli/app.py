"""The ``ckptlint`` command (ruff's conventions).

Exit codes: 0 nothing left to report, 1 findings left (a file that could not be read,
decoded, parsed or written is one: CKP902, and so is a missing path) or, with
``--exit-non-zero-on-fix``, something was fixed; 2 usage error, bad configuration or internal
error; 130 interrupted (SIGINT) and 143 terminated (SIGTERM). Heavy modules (libcst, the
engine) are imported only once a command needs them, so ``ckptlint --version`` starts fast.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ckptlint import __version__
from ckptlint.cli.options import Options, file_timeout, prepare
from ckptlint.cli.signals import signal_exit, signal_name, stop_on_signals
from ckptlint.output import FORMATS

if TYPE_CHECKING:
    from ckptlint.lint.stop import StopFlag

__all__ = ["main", "run"]


class _Command(click.Command):
    """The command, plus ruff's subcommand spellings when the first argument is one
    (:mod:`ckptlint.cli.subcommands`): ``ckptlint server`` (the language server,
    :mod:`ckptlint.server`), ``ckptlint rule CODE`` and ``ckptlint check [PATHS]`` (this
    command). ``ckptlint ./server`` lints a folder of that name."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args[:1] == ["server"]:
            from ckptlint.server import main as serve

            ctx.exit(serve(args[1:]))
        from ckptlint.cli.subcommands import other_ruff_command, rule_command, warn_if_shadowed

        if args[:1] in (["rule"], ["check"]):
            warn_if_shadowed(args[0], args[1:])
            if args[0] == "rule":
                rule_command.main(args[1:], prog_name="ckptlint rule")
            args = args[1:]
        elif (message := other_ruff_command(args)) is not None:
            raise click.UsageError(message, ctx)
        return super().parse_args(ctx, args)


@click.command(cls=_Command, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path, readable=False))
@click.option("--fix/--no-fix", default=None, help="Apply fixes (safe ones; with --unsafe-fixes, unsafe ones too).")
@click.option("--unsafe-fixes/--no-unsafe-fixes", default=None, help="Include fixes that may change behaviour.")
@click.option("--diff", is_flag=True, help="Print the diff the fixes would make; write nothing.")
@click.option("--select", multiple=True, metavar="CODES", help="Rule codes or prefixes to enable (replaces the config's).")
@click.option("--extend-select", multiple=True, metavar="CODES", help="Rule codes or prefixes to enable as well.")
@click.option("--ignore", multiple=True, metavar="CODES", help="Rule codes or prefixes to disable.")
@click.option(
    "--output-format",
    type=click.Choice(sorted(FORMATS)),
    envvar="CKPTLINT_OUTPUT_FORMAT",
    default=None,
    help="How findings are printed [default: concise].",
)
@click.option("-o", "--output-file", type=click.Path(path_type=Path, readable=False), help="Write the report to this file.")
@click.option(
    "--stdin-filename",
    type=click.Path(path_type=Path, readable=False),
    help="Lint the source read from stdin (path `-`) as this file; with --fix, print the fixed source.",
)
@click.option("--since", metavar="REV", help="Lint only the Python files changed since this git revision.")
@click.option("--add-noqa", is_flag=True, help="Add `# noqa: CODE` to every line with a finding.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain.")
@click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit 1 when a fix was applied, even if nothing remains.")
@click.option("--isolated", is_flag=True, help="Ignore every configuration file and every declared library version.")
@click.option(
    "--target-version",
    multiple=True,
    metavar="LIBRARY=VERSION",
    help="The library version to judge for (`transformers=5.5`, or a requirement such as `transformers>=5.4`); "
    "replaces what the project declares for that library. Repeatable.",
)
@click.option("--config", "config_file", type=click.Path(path_type=Path, dir_okay=False), help="Use this configuration file.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the cache.")
@click.option(
    "--cache-dir",
    type=str,
    envvar="CKPTLINT_CACHE_DIR",
    help="Where the cache lives [env: CKPTLINT_CACHE_DIR; default: .ckptlint_cache at the project root].",
)
@click.option(
    "--clean",
    is_flag=True,
    help="Remove the cache files ckptlint wrote under PATHS and in the configured cache folder (nothing else), then exit.",
)
@click.option("--force-exclude/--no-force-exclude", default=None, help="Apply excludes to files named explicitly too.")
@click.option("--exclude", multiple=True, metavar="PATTERNS", help="Patterns to exclude (replaces the defaults).")
@click.option("--extend-exclude", multiple=True, metavar="PATTERNS", help="Patterns to exclude as well.")
@click.option("--respect-gitignore/--no-respect-gitignore", default=None, help="Skip files ignored by .gitignore.")
@click.option("--statistics", is_flag=True, help="Print counts per rule instead of each finding.")
@click.option("--show-fixes", is_flag=True, help="List the fixes applied by --fix, per file and rule.")
@click.option("--show-files", is_flag=True, help="Print the files that would be linted and exit.")
@click.option("--show-settings", is_flag=True, help="Print the settings that apply to the first file and exit.")
@click.option(
    "--show-sites",
    is_flag=True,
    help="Print every checkpoint site with its API, options and region (a table; JSON with --output-format json) and exit.",
)
@click.option("--explain", metavar="CODE", help="Print the documentation of a rule and exit.")
@click.option("--list-rules", is_flag=True, help="Print every rule (a table; JSON with --output-format json) and exit.")
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    help="Worker processes [default: the CPUs available; at most one a file].",
)
@click.option(
    "--file-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    callback=lambda ctx, param, value: file_timeout(value),
    help="Seconds one file may take; a file that takes longer is reported (CKP902) and skipped; "
    "`inf` for no limit [default: 60].",
)
@click.option(
    "-w",
    "--watch",
    is_flag=True,
    help="Lint again whenever a Python or configuration file below PATHS changes (the `watch` extra; Ctrl-C stops).",
)
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary.")
@click.option("-v", "--verbose", is_flag=True, help="Print tracebacks of internal errors.")
@click.version_option(__version__, "-V", "--version", prog_name="ckptlint", message="%(prog)s %(version)s")
def main(**options: Any) -> None:
    """Lint PyTorch activation checkpointing in PATHS (default: the current folder).

    Use `-` as the path (with --stdin-filename) to lint source read from stdin.

    `ckptlint check [OPTIONS] [PATHS]` is the same command (ruff's spelling). `ckptlint rule
    CODE` prints a rule's documentation (`--all`: every rule). `ckptlint server` starts the
    language server for editors (LSP over stdin/stdout; see `ckptlint server --help`). A first
    argument `check`, `rule` or `server` is the command: write `./check` to lint a folder of
    that name.
    """
    from ckptlint.cli.common import escape_unencodable_output
    from ckptlint.lint.stop import Interrupted, StopFlag

    escape_unencodable_output()
    stop = StopFlag()
    with stop_on_signals(stop):
        try:
            _main(stop=stop, **options)
        except Interrupted:
            # A second signal, or one while nothing could be kept: stop at once.
            sys.stderr.write(f"ckptlint: {signal_name(stop.signal)}: stopped; nothing more was written\n")
            sys.exit(signal_exit(stop.signal))
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as exc:  # noqa: BLE001 - every crash: one error line, exit 2
            from ckptlint.cli.crash import report_crash

            sys.exit(report_crash(exc, verbose=bool(options.get("verbose"))))


def _main(stop: StopFlag, **values: Any) -> None:
    """The command (:func:`main` runs it with SIGINT/SIGTERM handlers that set ``stop``):
    the modes that need no files first, then the check (:func:`ckptlint.cli.check.check`)."""
    options = Options(**values)
    if options.explain is not None:
        from ckptlint.cli.rules_info import explain

        sys.exit(explain(options.explain, options.output_format))
    if options.list_rules:
        from ckptlint.cli.rules_info import list_rules

        sys.exit(list_rules(options.output_format))
    if options.watch:
        from ckptlint.cli.watch import watch

        sys.exit(watch(options, stop))
    invocation = prepare(options)
    if options.clean:
        from ckptlint.cli.clean import clean_caches

        sys.exit(clean_caches(list(options.paths) or [Path(".")], invocation.resolver, options.quiet))
    from ckptlint.cli.check import check

    sys.exit(check(options, invocation, stop))


def run() -> None:
    """The ``ckptlint`` command as a process runs it (the console script and ``python -m
    ckptlint``): :func:`main`, then the process ends without tearing the interpreter down.

    CPython's finalisation frees every object one by one and runs a last garbage collection;
    after a run that held a large module cache that took ~10 s (measured: diffusers linted
    with ``-j1``, 10.6 s between the last ``atexit`` handler and the end of the process).
    Nothing is left to do by then: the report, fixes and cache are written and closed by
    :func:`main` (every file ckptlint writes is written through ``with`` or ``os.replace``),
    so standard output and error are flushed and the process leaves with ``os._exit``,
    with the exit status ``sys.exit`` would give. :func:`main` itself (click's
    ``CliRunner`` in tests, other Python callers) keeps the usual ``SystemExit``.
    """
    import os

    try:
        main()
    except SystemExit as exc:
        code = exc.code
        if code is None:
            status = 0
        elif isinstance(code, int):
            status = code & 0xFF
        else:  # what CPython does with a non-integer code: print it, exit 1
            sys.stderr.write(f"{code}\n")
            status = 1
        try:
            sys.stdout.flush()
        except (OSError, ValueError):
            status = 120  # what CPython exits with when it cannot flush stdout at exit
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os._exit(status)


if __name__ == "__main__":  # pragma: no cover
    run()

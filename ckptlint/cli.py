"""The ``ckptlint`` command (ruff's conventions).

Exit codes: 0 nothing left to report, 1 findings left (a file that could not be read,
decoded, parsed or written is one: CKP902, and so is a missing path) or, with
``--exit-non-zero-on-fix``, something was fixed; 2 usage error, bad configuration or internal
error; 130 interrupted (SIGINT) and 143 terminated (SIGTERM). Heavy modules (libcst, the
engine) are imported only once a command needs them, so ``ckptlint --version`` starts fast.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from ckptlint import __version__
from ckptlint.output import FORMATS
from ckptlint.rule_codes import IO_ERROR

__all__ = ["main"]

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _codes(values: tuple[str, ...]) -> tuple[str, ...]:
    """Flatten repeated, comma-separated code options."""
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


def _selectors(values: tuple[str, ...], option: str) -> tuple[str, ...]:
    """The rule selectors of a repeated, comma-separated option. An empty one (``--select ''``,
    ``--ignore CKP001,``) is an error, as in ruff, instead of silently selecting nothing."""
    from ckptlint.settings import UnknownRuleSelector

    parts = tuple(part.strip() for value in values for part in value.split(","))
    if any(not part for part in parts):
        raise UnknownRuleSelector(f"{option}: invalid empty rule selector (give a code or prefix, or ALL)")
    return parts


def _error(message: str) -> None:
    click.echo(f"error: {message}", err=True)


class _Command(click.Command):
    """The command, plus ``ckptlint server`` (the language server, :mod:`ckptlint.server`)
    when ``server`` is the first argument (``ckptlint ./server`` lints a folder of that name)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args[:1] == ["server"]:
            from ckptlint.server import main as serve

            ctx.exit(serve(args[1:]))
        return super().parse_args(ctx, args)


#: The ``--file-timeout`` value meaning "no limit": ``inf``, and any value above a year of
#: seconds (``setitimer`` and the pool's waits overflow on ``1e300``).
NO_TIME_LIMIT = float("inf")


def _file_timeout(value: float | None) -> float | None:
    """``--file-timeout`` checked: ``nan`` is a usage error (click's range lets it through);
    ``inf`` or more than a year of seconds becomes :data:`NO_TIME_LIMIT`."""
    import math

    if value is None:
        return None
    if math.isnan(value):
        raise click.BadParameter("nan is not a number of seconds")
    return NO_TIME_LIMIT if value > 365 * 24 * 3600 else value


@click.command(cls=_Command, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
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
@click.option("-o", "--output-file", type=click.Path(path_type=Path), help="Write the report to this file.")
@click.option(
    "--stdin-filename",
    type=click.Path(path_type=Path),
    help="Lint the source read from stdin (path `-`) as this file; with --fix, print the fixed source.",
)
@click.option("--since", metavar="REV", help="Lint only the Python files changed since this git revision.")
@click.option("--add-noqa", is_flag=True, help="Add `# noqa: CODE` to every line with a finding.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain.")
@click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit 1 when a fix was applied, even if nothing remains.")
@click.option("--isolated", is_flag=True, help="Ignore every configuration file.")
@click.option("--config", "config_file", type=click.Path(path_type=Path, dir_okay=False), help="Use this configuration file.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the cache.")
@click.option(
    "--cache-dir",
    type=str,
    envvar="CKPTLINT_CACHE_DIR",
    help="Where the cache lives [env: CKPTLINT_CACHE_DIR; default: .ckptlint_cache next to the configuration].",
)
@click.option("--clean", is_flag=True, help="Remove the cache folders under PATHS (and the configured one), then exit.")
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
    callback=lambda ctx, param, value: _file_timeout(value),
    help="Seconds one file may take; a file that takes longer is reported (CKP902) and skipped; "
    "`inf` for no limit [default: 60].",
)
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary.")
@click.option("-v", "--verbose", is_flag=True, help="Print tracebacks of internal errors.")
@click.version_option(__version__, "-V", "--version", prog_name="ckptlint", message="%(prog)s %(version)s")
def main(**options) -> None:  # noqa: ANN003
    """Lint PyTorch activation checkpointing in PATHS (default: the current folder).

    Use `-` as the path (with --stdin-filename) to lint source read from stdin.
    """
    from ckptlint.engine import Interrupted, StopFlag

    stop = StopFlag()
    with _stop_on_signals(stop):
        try:
            _main(stop=stop, **options)
        except Interrupted:
            # A second signal, or one while nothing could be kept: stop at once.
            sys.stderr.write(f"ckptlint: {_signal_name(stop.signal)}: stopped; nothing more was written\n")
            sys.exit(_signal_exit(stop.signal))


def _main(
    stop,  # noqa: ANN001 - ckptlint.engine.StopFlag
    paths: tuple[Path, ...],
    fix: bool | None,
    unsafe_fixes: bool | None,
    diff: bool,
    select: tuple[str, ...],
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
    output_format: str | None,
    output_file: Path | None,
    stdin_filename: Path | None,
    since: str | None,
    add_noqa: bool,
    exit_zero: bool,
    exit_non_zero_on_fix: bool,
    isolated: bool,
    config_file: Path | None,
    no_cache: bool,
    cache_dir: str | None,
    clean: bool,
    force_exclude: bool | None,
    exclude: tuple[str, ...],
    extend_exclude: tuple[str, ...],
    respect_gitignore: bool | None,
    statistics: bool,
    show_fixes: bool,
    show_files: bool,
    show_settings: bool,
    show_sites: bool,
    explain: str | None,
    list_rules: bool,
    jobs: int | None,
    file_timeout: float | None,
    quiet: bool,
    verbose: bool,
) -> None:
    """The command (:func:`main` runs it with SIGINT/SIGTERM handlers that set ``stop``)."""
    if explain is not None:
        sys.exit(_explain(explain, output_format))
    if list_rules:
        sys.exit(_list_rules(output_format))

    from ckptlint.config import CliOverrides, ConfigError, SettingsResolver
    from ckptlint.discovery import PathNotFound, discover
    from ckptlint.engine import DEFAULT_FILE_TIMEOUT, FixMode, RunResult, lint_files
    from ckptlint.settings import UnknownRuleSelector, normalise_selectors

    cwd = Path.cwd()
    use_stdin = Path("-") in paths
    if use_stdin and len(paths) > 1:
        _error("`-` (stdin) cannot be combined with other paths")
        sys.exit(EXIT_ERROR)
    if stdin_filename is not None and paths and not use_stdin:
        _error("--stdin-filename needs `-` as the path (the source is read from stdin)")
        sys.exit(EXIT_ERROR)
    use_stdin = use_stdin or (stdin_filename is not None and not paths)
    conflicts = [
        name
        for name, given in (("--add-noqa", add_noqa), ("--since", since is not None), ("stdin", use_stdin))
        if given
    ]
    if add_noqa and (fix or diff):
        conflicts.append("--fix/--diff")
    if len(conflicts) > 1:
        _error(f"{' and '.join(conflicts)} cannot be used together")
        sys.exit(EXIT_ERROR)
    try:
        cli = CliOverrides(
            select=normalise_selectors(_selectors(select, "--select"), "--select") if select else None,
            extend_select=normalise_selectors(_selectors(extend_select, "--extend-select"), "--extend-select"),
            ignore=normalise_selectors(_selectors(ignore, "--ignore"), "--ignore"),
            exclude=_codes(exclude) if exclude else None,
            extend_exclude=_codes(extend_exclude),
            unsafe_fixes=unsafe_fixes,
            respect_gitignore=respect_gitignore,
            force_exclude=force_exclude,
            cache_dir=os.path.abspath(cache_dir) if cache_dir else None,
        )
    except UnknownRuleSelector as exc:
        _error(str(exc))
        sys.exit(EXIT_ERROR)
    if config_file is not None and not config_file.is_file():
        _error(f"{config_file}: configuration file not found")
        sys.exit(EXIT_ERROR)
    resolver = SettingsResolver(cli, cwd=cwd, isolated=isolated, config=config_file)
    mode = FixMode.DIFF if diff else (FixMode.APPLY if fix else FixMode.NONE)
    unsafe = _unsafe_resolver(unsafe_fixes)
    stdin_path: Path | None = None
    if clean:
        sys.exit(_clean(list(paths) or [Path(".")], resolver, quiet))
    cache = None
    if not no_cache and not use_stdin and not add_noqa:
        from ckptlint.cache import ResultCache

        cache = ResultCache()
    try:
        stop.hard = True  # finding files writes nothing: a stop signal ends the run at once
        base_settings = resolver.for_path(cwd)
        if use_stdin:
            stdin_path = Path(os.path.abspath(stdin_filename)) if stdin_filename is not None else None
            found = None
            files = [stdin_path] if stdin_path is not None else []
        elif since is not None:
            found = _changed_since(since, list(paths), resolver, cwd)
            files = found.files
        else:
            found = discover(list(paths) or [Path(".")], resolver, force_exclude=bool(force_exclude))
            files = found.files
        stop.hard = False
        if show_files:
            for path in files:
                click.echo(str(path))
            sys.exit(EXIT_OK)
        if show_settings:
            sys.exit(_show_settings(files[0] if files else cwd, resolver))
        if show_sites:
            from ckptlint.show_sites import show_sites as _show_sites

            click.echo(_show_sites(files, output_format or "concise"))
            sys.exit(EXIT_OK)
        fmt = output_format or (resolver.for_path(stdin_path) if stdin_path else base_settings).output_format or "concise"
        if use_stdin:
            run, excluded = _lint_stdin(stdin_path, resolver, mode, unsafe, force_exclude)
            if excluded:
                sys.exit(EXIT_OK)
        else:
            run = lint_files(
                files,
                resolver.for_path,
                fix=mode,
                unsafe_for=unsafe,
                jobs=jobs,
                cache=cache,
                keep_sources=add_noqa,
                stop=stop,
                file_timeout=(
                    DEFAULT_FILE_TIMEOUT if file_timeout is None else None if file_timeout == NO_TIME_LIMIT else file_timeout
                ),
            )
            if cache is not None:
                cache.save()
    except ConfigError as exc:
        _error(str(exc))
        sys.exit(EXIT_ERROR)
    except PathNotFound as exc:
        _error(str(exc))
        sys.exit(EXIT_ERROR)
    assert isinstance(run, RunResult)
    if os.environ.get("CKPTLINT_PERF_JSON"):
        from ckptlint import perf

        perf.write_json(r.perf for r in run.results)

    from ckptlint.engine import io_error
    from ckptlint.output.base import display_path

    # Files that could not be checked are findings (CKP902, ruff's E902), in every format.
    missing = found.missing if found is not None else []
    unchecked = [io_error(os.path.abspath(path), "no such file or directory") for path in missing]
    unchecked += [io_error(os.path.abspath(path), reason) for path, reason in (found.problems if found else ())]
    for warning in run.warnings:
        click.echo(f"warning: {display_path(warning.path, cwd)}:{warning.message}", err=True)
    for problem in run.problems:
        _error(f"{display_path(problem.path, cwd)}: {problem.message}")
        if verbose and problem.detail:
            click.echo(problem.detail, err=True)
    internal = any(p.kind in ("internal", "fix") for p in run.problems)

    if add_noqa:
        if stop or run.interrupted:
            sys.stderr.write(f"ckptlint: {_signal_name(stop.signal)}: stopped; no `# noqa` comment was added\n")
            sys.exit(_signal_exit(stop.signal))
        for d in unchecked + [d for d in run.diagnostics if d.code == IO_ERROR]:
            _error(f"{display_path(d.path, cwd)}: {d.message}")
        failed = _add_noqa(run, found.may_write if found is not None else (lambda path: False))
        sys.exit(EXIT_ERROR if failed or internal else EXIT_FINDINGS if unchecked else EXIT_OK)

    fixed_total = 0
    if mode is not FixMode.NONE:
        may_write = found.may_write if found is not None else (lambda path: False)
        unwritten, fixed_total = _handle_fixes(run, mode, cwd, may_write, to_stdout=use_stdin, stop=stop)
        unchecked += unwritten
    diagnostics = sorted(run.diagnostics + unchecked, key=lambda d: d.sort_key)
    if mode is FixMode.DIFF:
        for d in diagnostics:
            if d.code == IO_ERROR:
                _error(f"{display_path(d.path, cwd)}: {d.message}")
        not_checked = any(d.code == IO_ERROR for d in diagnostics)
        if stop or run.interrupted:
            name = _signal_name(stop.signal)
            sys.stderr.write(f"ckptlint: {name}: stopped after {run.files_done} of {len(files)} files\n")
            sys.exit(_signal_exit(stop.signal))
        sys.exit(EXIT_ERROR if internal else EXIT_FINDINGS if fixed_total or not_checked else EXIT_OK)

    from ckptlint.output import renderer
    from ckptlint.output.base import OutputContext

    ctx = OutputContext(
        cwd=cwd,
        unsafe_fixes=unsafe(base_settings),
        fix_applied=mode is FixMode.APPLY,
        fixed=fixed_total,
        unsafe_fixes_set=unsafe_fixes is not None or base_settings.unsafe_fixes is not None,
        show_fixes=show_fixes,
        statistics=statistics,
        quiet=quiet,
        sources=_sources(run, mode),
        fixed_by_file={r.path: dict(r.fixed_codes) for r in run.results if r.fixed_codes},
        interrupted=bool(stop) or run.interrupted,
        incomplete=len({p.path for p in run.problems if p.kind == "internal"}),
    )
    if statistics:
        from ckptlint.output import statistics as stats

        text = (stats.render_json if fmt in ("json", "json-lines") else stats.render_text)(diagnostics, ctx)
    else:
        text = renderer(fmt)(diagnostics, ctx)
    # With --fix on stdin the fixed source goes to stdout, so the report goes to stderr (ruff).
    _emit(text, output_file, to_stderr=use_stdin and mode is FixMode.APPLY)

    if stop or run.interrupted:
        written = sum(1 for r in run.results if r.changed) if mode is FixMode.APPLY else 0
        sys.stderr.write(
            f"ckptlint: {_signal_name(stop.signal)}: stopped after {run.files_done} of {len(files)} files"
            + (f"; fixes written to {written} file{'s' if written != 1 else ''}" if mode is FixMode.APPLY else "")
            + "; the other files were not checked\n"
        )
        sys.exit(_signal_exit(stop.signal))
    if internal:
        sys.exit(EXIT_ERROR)
    if exit_zero:
        sys.exit(EXIT_OK)
    if diagnostics:
        sys.exit(EXIT_FINDINGS)
    if exit_non_zero_on_fix and fixed_total:
        sys.exit(EXIT_FINDINGS)
    sys.exit(EXIT_OK)


def _changed_since(revision: str, paths: list[Path], resolver, cwd: Path):  # noqa: ANN001, ANN202
    """``--since``: the changed Python files below ``paths`` (default: everywhere), with
    excludes and .gitignore applied as if each were named with --force-exclude."""
    from ckptlint.discovery import DiscoveryResult, discover
    from ckptlint.since import GitError, changed_python_files

    repository = cwd
    if paths and os.path.lexists(paths[0]):
        first = Path(os.path.abspath(paths[0]))
        repository = first if first.is_dir() else first.parent
    try:
        changed = changed_python_files(revision, repository)
    except GitError as exc:
        _error(str(exc))
        sys.exit(EXIT_ERROR)
    if paths:
        missing = [p for p in paths if not os.path.lexists(p)]
        if missing:
            _error(f"{missing[0]}: no such file or directory")
            sys.exit(EXIT_ERROR)
        roots = [Path(os.path.realpath(p)) for p in paths]
        changed = [f for f in changed if any(f == r or r in f.parents for r in roots)]
    if not changed:
        return DiscoveryResult()
    return discover(changed, resolver, force_exclude=True)


def _lint_stdin(path: Path | None, resolver, mode, unsafe, force_exclude: bool | None):  # noqa: ANN001, ANN202
    """Lint the bytes of stdin as the file ``path`` (``None``: named ``-``, settings of the
    working directory). Returns ``(run, excluded)``; an excluded path (with force-exclude)
    prints nothing, or the source unchanged under --fix."""
    from ckptlint.discovery import _excluded_anywhere, _GitIgnores, _repository_chain
    from ckptlint.engine import FileLinter, FixMode, RunResult

    raw = _binary(sys.stdin).read()
    settings = resolver.for_path(path if path is not None else Path.cwd())
    if path is not None and (force_exclude or settings.force_exclude):
        ignored = settings.respect_gitignore and _GitIgnores().ignored(path, False, _repository_chain(path.parent))
        if _excluded_anywhere(path, settings) or ignored:
            if mode is FixMode.APPLY:
                sys.stdout.flush()
                _binary(sys.stdout).write(raw)
            return RunResult([]), True
    name = str(path) if path is not None else "-"
    result = FileLinter().lint(name, raw, settings, fix=mode, unsafe=unsafe(settings), gate=True)
    return RunResult([result]), False


def _binary(stream):  # noqa: ANN001, ANN202
    """The byte stream under a text stream (``sys.stdin.buffer``), so source bytes pass
    through untouched (encoding, byte-order mark, CRLF)."""
    return getattr(stream, "buffer", stream)


def _sources(run, mode) -> dict[str, str]:  # noqa: ANN001
    """The text each file's diagnostics refer to: the fixed text when --fix changed it."""
    sources = {}
    for r in run.results:
        if r.source is None:
            continue
        fixed = mode.value == "apply" and r.changed
        sources[r.path] = r.fixed_text if fixed else r.source.text
    return sources


def _add_noqa(run, may_write) -> bool:  # noqa: ANN001
    """``--add-noqa``: write the directives; print how many were added. Returns whether
    something failed. ``may_write(path)``: whether ``path`` resolves inside the paths given
    (others are never written)."""
    from ckptlint.add_noqa import add_noqa, parses
    from ckptlint.fixer import FileChangedError, write_atomically
    from ckptlint.rules import SYNTAX_ERROR, UNUSED_NOQA

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
                f"warning: {result.path}:{row}: no room for a `# noqa` comment (the line ends inside a string or continues)",
                err=True,
            )
        if not edit.added:
            continue
        if not parses(edit.text):
            _error(f"{result.path}: adding `# noqa` comments would break the file; left unchanged")
            failed = True
            continue
        if not may_write(result.path):
            _error(f"{result.path}: resolves to {os.path.realpath(result.path)}, outside the paths given; not written")
            failed = True
            continue
        try:
            write_atomically(Path(result.path), source.encode(edit.text), expected=result.raw)
        except (FileChangedError, OSError) as exc:
            _error(str(exc) if isinstance(exc, FileChangedError) else f"{result.path}: cannot write: {exc}")
            failed = True
            continue
        added += edit.added
    if added:
        click.echo(f"Added {added} noqa directive{'s' if added != 1 else ''}.", err=True)
    return failed


def _show_settings(path: Path, resolver) -> int:  # noqa: ANN001
    """``--show-settings``: the settings that apply to ``path``, one ``key = value`` line each
    (lists one item a line), as ruff prints them."""
    from dataclasses import fields

    settings = resolver.for_path(path)
    lines = [f'Resolved settings for: "{path}"']
    lines.append(f'Settings path: "{settings.config_path}"' if settings.config_path else "Settings path: none")
    lines.append("")
    for item in fields(settings):
        value = getattr(settings, item.name)
        if isinstance(value, frozenset):
            value = sorted(value)
        if isinstance(value, (list, tuple)):
            lines.append(f"{item.name} = [")
            lines += [f"\t{_setting_value(v)}," for v in value]
            lines.append("]")
        else:
            lines.append(f"{item.name} = {_setting_value(value)}")
    click.echo("\n".join(lines))
    return EXIT_OK


def _setting_value(value) -> str:  # noqa: ANN001
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return f"{_setting_value(value[0])} = [{', '.join(_setting_value(v) for v in value[1])}]"
    return f'"{value}"'


def _clean(targets: list[Path], resolver, quiet: bool) -> int:
    """``--clean``: remove ckptlint's cache folders below ``targets`` and the configured one."""
    from ckptlint.cache import cache_dir_for, clean
    from ckptlint.config import ConfigError

    try:
        configured = [cache_dir_for(resolver.for_path(Path.cwd()))]
    except ConfigError as exc:
        _error(str(exc))
        return EXIT_ERROR
    for removed in clean(targets, configured):
        if not quiet:
            click.echo(f"Removed cache at: {removed}", err=True)
    return EXIT_OK


def _unsafe_resolver(cli_value: bool | None):
    def unsafe(settings) -> bool:  # noqa: ANN001 - Settings, imported lazily
        if cli_value is not None:
            return cli_value
        return bool(settings.unsafe_fixes)

    return unsafe


def _handle_fixes(  # noqa: ANN001
    run, mode, cwd: Path, may_write, to_stdout: bool = False, stop=None
) -> tuple[list, int]:
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

    from ckptlint.engine import io_error
    from ckptlint.fixer import FileChangedError, write_atomically
    from ckptlint.output.base import display_path

    unwritten = []
    fixed = 0
    if to_stdout and mode.value == "apply":
        sys.stdout.flush()
        stdout = _binary(sys.stdout)
        for result in run.results:
            if result.source is not None and result.changed:
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
                source.text.splitlines(keepends=True),
                result.fixed_text.splitlines(keepends=True),
                fromfile=f"a/{shown}",
                tofile=f"b/{shown}",
            )
            sys.stdout.write("".join(line if line.endswith(("\n", "\r")) else line + "\n" for line in diff))
            fixed += result.fixed
            continue
        if stop:
            _keep_unfixed(result)
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
        except OSError as exc:
            why = f"cannot write the fixed file: {_os_error(exc)}; fixes not written"
        unwritten.append(io_error(result.path, why))
        _keep_unfixed(result)
    return unwritten, fixed


def _keep_unfixed(result) -> None:  # noqa: ANN001
    """A fixed file that was not written: it reports its findings as read, nothing fixed."""
    if result.diagnostics_before_fix is not None:
        result.diagnostics = result.diagnostics_before_fix
    result.fixed, result.fixed_codes, result.fixed_text = 0, {}, None


def _signal_name(signum: int | None) -> str:
    import signal

    try:
        return signal.Signals(signum).name  # type: ignore[arg-type]
    except (ValueError, TypeError):
        return "interrupted"


def _signal_exit(signum: int | None) -> int:
    """The exit status of a run stopped by ``signum``: 128 + its number (130 for SIGINT, 143
    for SIGTERM), as shells report a process killed by it."""
    import signal

    return 128 + (signum or signal.SIGINT)


class _stop_on_signals:  # noqa: N801 - used as a context manager
    """While active (and only in the main thread), SIGINT and SIGTERM call ``stop.request``:
    the first asks the run to stop after the files in progress, a second stops it at once."""

    def __init__(self, stop) -> None:  # noqa: ANN001
        self.stop = stop
        self.previous: dict[int, object] = {}

    def __enter__(self) -> _stop_on_signals:
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self.previous[signum] = signal.signal(signum, self._handle)
        return self

    def _handle(self, signum, frame) -> None:  # noqa: ANN001
        self.stop.request(signum)

    def __exit__(self, *exc_info) -> None:  # noqa: ANN002
        import signal

        for signum, handler in self.previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]


class _Outside(Exception):
    """A file to write resolves outside the paths given (the message is where it resolves)."""


def _os_error(exc: OSError) -> str:
    from ckptlint.discovery import os_reason

    return os_reason(exc, missing="no such file or directory")


def _emit(text: str, output_file: Path | None, to_stderr: bool = False) -> None:
    if output_file is not None:
        try:
            output_file.parent.mkdir(parents=True, exist_ok=True)
            output_file.write_text(text, encoding="utf-8")
        except OSError as exc:
            _error(f"{output_file}: cannot write the report: {exc.strerror or exc}")
            sys.exit(EXIT_ERROR)
        return
    (sys.stderr if to_stderr else sys.stdout).write(text)


def _explain(code: str, output_format: str | None) -> int:
    """``--explain CODE``: the rule's page, or ruff's JSON record with ``--output-format json``."""
    import json

    from ckptlint.docs import explain_record

    record = explain_record(code)
    if record is None:
        _error(f"unknown rule code `{code}`")
        return EXIT_ERROR
    if output_format in ("json", "json-lines"):
        click.echo(json.dumps(record, indent=2, ensure_ascii=False))
    else:
        click.echo(record["explanation"].rstrip("\n"))
    return EXIT_OK


def _list_rules(output_format: str | None) -> int:
    """``--list-rules``: a table, or a JSON list of explain records."""
    import json

    from ckptlint.docs import explain_record, rule_list_text
    from ckptlint.rules import ALL_RULES

    if output_format in ("json", "json-lines"):
        click.echo(json.dumps([explain_record(code) for code in ALL_RULES], indent=2, ensure_ascii=False))
    else:
        click.echo(rule_list_text(), nl=False)
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    main()

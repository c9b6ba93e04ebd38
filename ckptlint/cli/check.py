"""The check command: lint the files (or stdin), apply or show fixes, add noqa directives,
print the report in the chosen format, and decide the exit status (ruff's conventions)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ckptlint.cli.add_noqa import write_noqa
from ckptlint.cli.common import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, emit, error
from ckptlint.cli.files import changed_since
from ckptlint.cli.fixes import handle_fixes
from ckptlint.cli.options import NO_TIME_LIMIT, Invocation, Options
from ckptlint.cli.show import show_settings
from ckptlint.cli.signals import signal_exit, signal_name
from ckptlint.cli.stdin import lint_stdin
from ckptlint.rule_codes import IO_ERROR

if TYPE_CHECKING:
    from collections.abc import Callable

    from ckptlint.config.discovery import DiscoveryResult
    from ckptlint.config.files import SettingsResolver
    from ckptlint.config.settings import Settings
    from ckptlint.lint.results import FixMode, RunResult
    from ckptlint.lint.stop import StopFlag
    from ckptlint.text.diagnostics import Diagnostic

__all__ = ["check"]


def check(options: Options, invocation: Invocation, stop: StopFlag) -> int:
    """Run the check (or ``--show-files``/``--show-settings``/``--show-sites``) and return
    the exit status: 0 nothing left, 1 findings left (or files not checked, or fixes with
    ``--exit-non-zero-on-fix``), 2 errors, 128 + the signal's number when stopped."""
    from ckptlint.config.discovery import PathNotFound, discover
    from ckptlint.config.files import ConfigError
    from ckptlint.lint.limits import DEFAULT_FILE_TIMEOUT
    from ckptlint.lint.results import FixMode, RunResult
    from ckptlint.lint.run import lint_files

    paths, cwd, resolver = options.paths, invocation.cwd, invocation.resolver
    cache = None
    if not options.no_cache and not invocation.use_stdin and not options.add_noqa:
        from ckptlint.lint.cache import ResultCache

        cache = ResultCache()
    try:
        stop.hard = True  # finding files writes nothing: a stop signal ends the run at once
        base_settings = resolver.for_path(cwd)
        if invocation.use_stdin:
            found = None
            files = [invocation.stdin_path] if invocation.stdin_path is not None else []
        elif options.since is not None:
            found = changed_since(options.since, list(paths), resolver, cwd)
            files = found.files
        else:
            found = discover(list(paths) or [Path(".")], resolver, force_exclude=bool(options.force_exclude))
            files = found.files
        stop.hard = False
        if found is not None and found.gitignored and not options.quiet:
            _note_gitignored(found.gitignored, found.gitignored_at_least)
        if options.show_files:
            for path in files:
                click.echo(str(path))
            return EXIT_OK
        if options.show_settings:
            return show_settings(files[0] if files else cwd, resolver)
        if options.show_sites:
            from ckptlint.cli.show_sites import show_sites as _show_sites

            site_format = options.output_format or "concise"
            emit(_show_sites(files, site_format) + "\n", options.output_file, fmt=site_format)
            return EXIT_OK
        stdin_path = invocation.stdin_path
        fmt = options.output_format or (resolver.for_path(stdin_path) if stdin_path else base_settings).output_format or "concise"
        from ckptlint.output import SHOWS_EDITS
        from ckptlint.text.diagnostics import want_edits

        # the fixes' edits (libcst) are built only for a run that applies or prints them
        want_edits(invocation.mode is not FixMode.NONE or (fmt in SHOWS_EDITS and not options.statistics))
        if invocation.use_stdin:
            run, excluded = lint_stdin(stdin_path, resolver, invocation.mode, invocation.unsafe, options.force_exclude)
            if excluded:
                return EXIT_OK
        else:
            from ckptlint.cli.progress import progress_for

            timeout = options.file_timeout
            progress = progress_for(len(files), options.quiet)
            try:
                run = lint_files(
                    files,
                    _settings_for_pipes(resolver, cwd, found.linked if found is not None else []),
                    fix=invocation.mode,
                    unsafe_for=invocation.unsafe,
                    jobs=options.jobs,
                    cache=cache,
                    keep_sources=options.add_noqa,
                    stop=stop,
                    file_timeout=DEFAULT_FILE_TIMEOUT if timeout is None else None if timeout == NO_TIME_LIMIT else timeout,
                    progress=progress,
                )
            finally:  # erased before any report or error line
                if progress is not None:
                    progress.clear()
            if cache is not None:
                cache.save()
    except (ConfigError, PathNotFound) as exc:
        error(str(exc))
        return EXIT_ERROR
    assert isinstance(run, RunResult)
    if os.environ.get("CKPTLINT_PERF_JSON"):
        from ckptlint import perf

        perf.write_json(r.perf for r in run.results)
    return _report(options, invocation, stop, run, found, files, fmt, base_settings)


def _report(
    options: Options,
    invocation: Invocation,
    stop: StopFlag,
    run: RunResult,
    found: DiscoveryResult | None,
    files: list[Path],
    fmt: str,
    base_settings: Settings,
) -> int:
    """After linting: warnings and errors on stderr, then ``--add-noqa``, the fixes, the report."""
    from ckptlint.lint.results import FixMode, ProblemKind, io_error
    from ckptlint.output.base import display_path

    cwd, mode = invocation.cwd, invocation.mode
    # Files that could not be checked are findings (CKP902, ruff's E902), in every format.
    missing = found.missing if found is not None else []
    unchecked = [io_error(os.path.abspath(path), "no such file or directory") for path in missing]
    unchecked += [io_error(os.path.abspath(path), reason) for path, reason in (found.problems if found else ())]
    for warning in run.warnings:
        click.echo(f"warning: {display_path(warning.path, cwd)}:{warning.message}", err=True)
    for problem in run.problems:
        error(f"{display_path(problem.path, cwd)}: {problem.message}")
        if options.verbose and problem.detail:
            click.echo(problem.detail, err=True)
    internal = any(p.kind in (ProblemKind.INTERNAL, ProblemKind.FIX) for p in run.problems)

    if options.add_noqa:
        if stop or run.interrupted:
            sys.stderr.write(f"ckptlint: {signal_name(stop.signal)}: stopped; no `# noqa` comment was added\n")
            return signal_exit(stop.signal)
        for d in unchecked + [d for d in run.diagnostics if d.code == IO_ERROR]:
            error(f"{display_path(d.path, cwd)}: {d.message}")
        failed = write_noqa(run, found.may_write if found is not None else (lambda path: False))
        return EXIT_ERROR if failed or internal else EXIT_FINDINGS if unchecked else EXIT_OK

    fixed_total = 0
    if mode is not FixMode.NONE:
        may_write = found.may_write if found is not None else (lambda path: False)
        unwritten, fixed_total = handle_fixes(run, mode, cwd, may_write, to_stdout=invocation.use_stdin, stop=stop)
        unchecked += unwritten
    diagnostics = sorted(run.diagnostics + unchecked, key=lambda d: d.sort_key)
    diagnostics = [_printable_message(d) for d in diagnostics]
    if mode is FixMode.DIFF:
        for d in diagnostics:
            if d.code == IO_ERROR:
                error(f"{display_path(d.path, cwd)}: {d.message}")
        not_checked = any(d.code == IO_ERROR for d in diagnostics)
        if stop or run.interrupted:
            name = signal_name(stop.signal)
            sys.stderr.write(f"ckptlint: {name}: stopped after {run.files_done} of {len(files)} files\n")
            return signal_exit(stop.signal)
        if not fixed_total:
            _hint_hidden_fixes(diagnostics, invocation.unsafe(base_settings))
        return EXIT_ERROR if internal else EXIT_FINDINGS if fixed_total or not_checked else EXIT_OK

    from ckptlint.output import renderer
    from ckptlint.output.base import OutputContext

    ctx = OutputContext(
        cwd=cwd,
        unsafe_fixes=invocation.unsafe(base_settings),
        fix_applied=mode is FixMode.APPLY,
        fixed=fixed_total,
        show_fixes=options.show_fixes,
        statistics=options.statistics,
        quiet=options.quiet,
        sources=sources(run, mode),
        fixed_by_file={r.path: dict(r.fixed_codes) for r in run.results if r.fixed_codes},
        interrupted=bool(stop) or run.interrupted,
        incomplete=len({p.path for p in run.problems if p.kind is ProblemKind.INTERNAL}),
    )
    if options.statistics:
        from ckptlint.output import statistics as stats

        text = (stats.render_json if fmt in ("json", "json-lines") else stats.render_text)(diagnostics, ctx)
    else:
        text = renderer(fmt)(diagnostics, ctx)
    # With --fix on stdin the fixed source goes to stdout, so the report goes to stderr (ruff).
    emit(text, options.output_file, to_stderr=invocation.use_stdin and mode is FixMode.APPLY, fmt=fmt)

    if stop or run.interrupted:
        written = sum(1 for r in run.results if r.changed) if mode is FixMode.APPLY else 0
        sys.stderr.write(
            f"ckptlint: {signal_name(stop.signal)}: stopped after {run.files_done} of {len(files)} files"
            + (f"; fixes written to {written} file{'s' if written != 1 else ''}" if mode is FixMode.APPLY else "")
            + "; the other files were not checked\n"
        )
        return signal_exit(stop.signal)
    if internal:
        return EXIT_ERROR
    if options.exit_zero:
        return EXIT_OK
    if diagnostics:
        return EXIT_FINDINGS
    if options.exit_non_zero_on_fix and fixed_total:
        return EXIT_FINDINGS
    return EXIT_OK


def _settings_for_pipes(resolver: SettingsResolver, cwd: Path, named: list[Path]) -> Callable[[Path], Settings]:
    """``resolver.for_path``, except that a pipe named on the command line (``<(git show
    REV:model.py)`` is ``/dev/fd/63``) takes the settings of the working folder, as source
    read from stdin does: its path lies in no project. ``named``: the files named on the
    command line (only they can be pipes)."""
    import stat

    pipes = set()
    for path in named:
        try:
            if stat.S_ISFIFO(os.stat(path).st_mode):
                pipes.add(path)
        except OSError:
            continue
    if not pipes:
        return resolver.for_path
    return lambda path: resolver.for_path(cwd if path in pipes else path)


def _note_gitignored(count: int, at_least: bool) -> None:
    """One ``warning:`` line: how many Python files ``.gitignore`` kept out of the run (git
    does not track them), and the option that brings them back."""
    files = f"{'at least ' if at_least else ''}{count} Python file{'s' if count != 1 else ''}"
    click.echo(
        f"warning: {files} ignored by .gitignore (and not tracked by git) {'were' if count != 1 or at_least else 'was'} "
        "skipped; `--no-respect-gitignore` (or `respect-gitignore = false`) lints them",
        err=True,
    )


def sources(run: RunResult, mode: FixMode) -> dict[str, str]:
    """The text each file's diagnostics refer to: the fixed text when --fix changed it."""
    sources = {}
    for r in run.results:
        if r.source is None:
            continue
        fixed = mode.value == "apply" and r.changed
        sources[r.path] = r.fixed_text if fixed and r.fixed_text is not None else r.source.text
    return sources


def _hint_hidden_fixes(diagnostics: list[Diagnostic], unsafe: bool) -> None:
    """``--diff`` that shows nothing because every fix is unsafe says so, as ruff does:
    ``No errors would be fixed (1 fix available with `--unsafe-fixes`).``"""
    from ckptlint.text.diagnostics import Applicability

    hidden = 0 if unsafe else sum(
        1 for d in diagnostics if d.fix is not None and d.fix.applicability is Applicability.UNSAFE and d.fix.chosen(False) is None
    )
    if hidden:
        click.echo(f"No errors would be fixed ({hidden} fix{'es' if hidden != 1 else ''} available with `--unsafe-fixes`).")


def _printable_message(d: Diagnostic) -> Diagnostic:
    """``d`` with a message every format can write: a file name in it that is not UTF-8
    (CKP902 "resolves to ...") escaped (:func:`ckptlint.output.base.printable`)."""
    from dataclasses import replace

    from ckptlint.output.base import printable

    message = printable(d.message)
    return d if message is d.message else replace(d, message=message)

"""The ``ckptlint`` command (ruff's conventions).

Exit codes: 0 nothing left to report, 1 findings left (or, with
``--exit-non-zero-on-fix``, something was fixed), 2 usage error, bad configuration, missing
path or internal error. Heavy modules (libcst, the engine) are imported only once a command
needs them, so ``ckptlint --version`` starts fast.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from ckptlint import __version__
from ckptlint.output import FORMATS

__all__ = ["main"]

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _codes(values: tuple[str, ...]) -> tuple[str, ...]:
    """Flatten repeated, comma-separated code options."""
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


def _error(message: str) -> None:
    click.echo(f"error: {message}", err=True)


@click.command(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
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
@click.option("--explain", metavar="CODE", help="Print the documentation of a rule and exit.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Worker processes [default: the CPUs available].")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary.")
@click.option("-v", "--verbose", is_flag=True, help="Print tracebacks of internal errors.")
@click.version_option(__version__, "-V", "--version", prog_name="ckptlint", message="%(prog)s %(version)s")
def main(
    paths: tuple[Path, ...],
    fix: bool | None,
    unsafe_fixes: bool | None,
    diff: bool,
    select: tuple[str, ...],
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
    output_format: str | None,
    output_file: Path | None,
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
    explain: str | None,
    jobs: int | None,
    quiet: bool,
    verbose: bool,
) -> None:
    """Lint PyTorch activation checkpointing in PATHS (default: the current folder)."""
    if explain is not None:
        sys.exit(_explain(explain))

    from ckptlint.config import CliOverrides, ConfigError, SettingsResolver
    from ckptlint.discovery import PathNotFound, discover
    from ckptlint.engine import FixMode, lint_files
    from ckptlint.settings import UnknownRuleSelector, normalise_selectors

    cwd = Path.cwd()
    try:
        cli = CliOverrides(
            select=normalise_selectors(_codes(select), "--select") if select else None,
            extend_select=normalise_selectors(_codes(extend_select), "--extend-select"),
            ignore=normalise_selectors(_codes(ignore), "--ignore"),
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
    targets = list(paths) or [Path(".")]
    if clean:
        sys.exit(_clean(targets, resolver, quiet))
    try:
        base_settings = resolver.for_path(cwd)
        found = discover(targets, resolver, force_exclude=bool(force_exclude))
    except ConfigError as exc:
        _error(str(exc))
        sys.exit(EXIT_ERROR)
    except PathNotFound as exc:
        _error(str(exc))
        sys.exit(EXIT_ERROR)

    fmt = output_format or base_settings.output_format or "concise"
    mode = FixMode.DIFF if diff else (FixMode.APPLY if fix else FixMode.NONE)
    unsafe = _unsafe_resolver(unsafe_fixes)
    cache = None
    if not no_cache:
        from ckptlint.cache import ResultCache

        cache = ResultCache()
    try:
        run = lint_files(found.files, resolver.for_path, fix=mode, unsafe_for=unsafe, jobs=jobs, cache=cache)
    except ConfigError as exc:
        _error(str(exc))
        sys.exit(EXIT_ERROR)
    if cache is not None:
        cache.save()

    failed = False
    fixed_total = 0
    from ckptlint.diagnostics import Diagnostic

    for problem_path, reason in found.problems:
        _error(f"{problem_path}: {reason}")
    if mode is not FixMode.NONE:
        failed, fixed_total = _handle_fixes(run, mode, cwd, verbose)

    for problem in run.problems:
        _error(problem.line())
        if verbose and problem.detail:
            click.echo(problem.detail, err=True)
    internal = any(p.kind in ("internal", "fix") for p in run.problems)

    diagnostics: list[Diagnostic] = run.diagnostics
    if mode is FixMode.DIFF:
        exit_code = EXIT_FINDINGS if fixed_total else EXIT_OK
        sys.exit(EXIT_ERROR if internal or failed else exit_code)

    from ckptlint.output import renderer
    from ckptlint.output.base import OutputContext

    ctx = OutputContext(
        cwd=cwd,
        unsafe_fixes=unsafe(base_settings),
        fix_applied=mode is FixMode.APPLY,
        fixed=fixed_total,
        unsafe_fixes_set=unsafe_fixes is not None or base_settings.unsafe_fixes is not None,
        statistics=statistics,
    )
    if statistics and fmt == "concise":
        text = _statistics(diagnostics, ctx)
    else:
        text = renderer(fmt)(diagnostics, ctx)
    if quiet and fmt == "concise":
        text = "\n".join(line for line in text.splitlines() if ":" in line and not line.startswith(("Found", "[*]"))) + (
            "\n" if diagnostics else ""
        )
    _emit(text, output_file)

    problems_count = len(found.problems) + sum(1 for p in run.problems if p.kind not in ("internal", "fix"))
    if internal or failed:
        sys.exit(EXIT_ERROR)
    if exit_zero:
        sys.exit(EXIT_OK)
    if diagnostics or problems_count:
        sys.exit(EXIT_FINDINGS)
    if exit_non_zero_on_fix and fixed_total:
        sys.exit(EXIT_FINDINGS)
    sys.exit(EXIT_OK)


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


def _handle_fixes(run, mode, cwd: Path, verbose: bool) -> tuple[bool, int]:  # noqa: ANN001
    """Write fixed files (``APPLY``) or print their diffs (``DIFF``). Returns
    ``(failed, fixed findings)``."""
    import difflib

    from ckptlint.fixer import FileChangedError, write_atomically
    from ckptlint.output.base import display_path

    failed = False
    fixed = 0
    for result in run.results:
        if not result.changed:
            continue
        source = result.source
        assert source is not None and result.fixed_text is not None
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
        try:
            write_atomically(Path(result.path), source.encode(result.fixed_text), expected=result.raw)
            fixed += result.fixed
        except FileChangedError as exc:
            _error(str(exc))
            failed = True
        except OSError as exc:
            _error(f"{result.path}: cannot write the fixed file: {exc.strerror or exc}")
            failed = True
    return failed, fixed


def _statistics(diagnostics, ctx) -> str:  # noqa: ANN001
    from collections import Counter

    from ckptlint.output.concise import summary
    from ckptlint.rules import ALL_RULES

    counts = Counter(d.code for d in diagnostics)
    fixable = {d.code for d in diagnostics if ctx.is_fixable(d)}
    width = max((len(str(n)) for n in counts.values()), default=1)
    lines = []
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        rule = ALL_RULES.get(code)
        marker = "[*]" if code in fixable else "[ ]"
        lines.append(f"{count:>{width}}\t{code}\t{marker} {rule.name if rule else ''}")
    body = "\n".join(lines)
    return (body + "\n" if body else "") + summary(diagnostics, ctx)


def _emit(text: str, output_file: Path | None) -> None:
    if output_file is None:
        sys.stdout.write(text)
        return
    output_file.parent.mkdir(parents=True, exist_ok=True)
    output_file.write_text(text, encoding="utf-8")


def _explain(code: str) -> int:
    from ckptlint.docs import rule_doc
    from ckptlint.rules import rule_by_code

    rule = rule_by_code(code)
    if rule is None:
        _error(f"unknown rule code `{code}`")
        return EXIT_ERROR
    doc = rule_doc(rule.code)
    if doc is None:
        click.echo(f"# {rule.name} ({rule.code})\n\n{rule.summary}")
    else:
        click.echo(doc.rstrip("\n"))
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    main()

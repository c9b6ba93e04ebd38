"""ruff's subcommand spellings: ``ckptlint check [OPTIONS] [PATHS]`` (the same as ``ckptlint
[OPTIONS] [PATHS]``) and ``ckptlint rule CODE`` / ``ckptlint rule --all`` (``--explain`` and
``--list-rules``), beside ``ckptlint server``.

Precedence, as in ruff: a first argument ``check``, ``rule`` or ``server`` is the command, never a
path. A file or folder of that name is linted when written otherwise (``./check``, or after the
command: ``ckptlint check check``); when the first argument is read as the command while such a
path exists in the working folder, one ``warning:`` line on stderr says how to lint it.
"""

from __future__ import annotations

import os

import click

__all__ = ["OTHER_RUFF_COMMANDS", "SUBCOMMANDS", "other_ruff_command", "rule_command", "warn_if_shadowed"]

#: The words read as a command when they come first (``server``: :mod:`ckptlint.server`).
SUBCOMMANDS = ("check", "rule", "server")

#: ruff's other commands, and what stands for them here (``None``: nothing does). A first
#: argument that is one of them and no existing path is a usage error naming the option,
#: instead of a "no such file" finding.
OTHER_RUFF_COMMANDS: dict[str, str | None] = {
    "clean": "`ckptlint --clean`",
    "version": "`ckptlint --version`",
    "config": "`ckptlint --show-settings` (the settings of a file) and docs/configuration.md",
    "linter": "`ckptlint rule --all`",
    "format": None,
    "analyze": None,
}


def other_ruff_command(args: list[str]) -> str | None:
    """The ``error:`` message when ``args`` starts with one of ruff's other commands
    (:data:`OTHER_RUFF_COMMANDS`) that names no existing path; else ``None``."""
    if not args or args[0] not in OTHER_RUFF_COMMANDS or os.path.lexists(args[0]):
        return None
    name, instead = args[0], OTHER_RUFF_COMMANDS[args[0]]
    if instead is None:
        return f"`{name}` is neither a command of ckptlint (ruff's `{name}` has no counterpart here) nor a file or folder"
    return f"`{name}` is not a command of ckptlint nor a file or folder; for ruff's `{name}`, use {instead}"


def warn_if_shadowed(name: str, rest: list[str]) -> None:
    """After ``name`` (a word of :data:`SUBCOMMANDS`) was read as the command: one warning line
    when a file or folder of that name exists in the working folder and is not named again in
    ``rest`` (the other arguments), since the user may have meant it."""
    if os.path.lexists(name) and name not in rest:
        click.echo(
            f"warning: `{name}` is read as the command `ckptlint {name}`; "
            f"to lint the {'folder' if os.path.isdir(name) else 'file'} named {name}, write `./{name}`",
            err=True,
        )


@click.command(
    name="rule",
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.argument("code", required=False)
@click.option("--all", "all_rules", is_flag=True, help="Print every rule (a table; JSON with --output-format json).")
@click.option(
    "--output-format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Output format (ruff's `ruff rule` formats).",
)
def rule_command(code: str | None, all_rules: bool, output_format: str) -> None:
    """Print the documentation of the rule CODE (as `ckptlint --explain CODE`), or of every
    rule with --all (as `ckptlint --list-rules`)."""
    import sys

    from ckptlint.cli.rules_info import explain, list_rules

    fmt = "json" if output_format == "json" else None
    if all_rules and code is None:
        sys.exit(list_rules(fmt))
    if code is None or all_rules:
        both = "give one rule code (`ckptlint rule CKP001`) or --all, not both"
        raise click.UsageError(both if all_rules else "give a rule code or --all")
    sys.exit(explain(code, fmt))

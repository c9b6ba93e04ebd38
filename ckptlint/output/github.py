"""``github``: GitHub Actions workflow commands, one a finding, which GitHub shows as
annotations on the pull request's diff::

    ::warning file=src/model.py,line=5,col=9,endLine=5,endColumn=29,title=ckptlint (CKP001)::MESSAGE

- the message escapes ``%``, CR and LF; property values escape ``%``, CR, LF, ``:`` and ``,``
  (the escaping of the Actions runner, ``ActionCommand.EscapeData``/``EscapeProperty``);
- ``col``/``endColumn`` are given only when the finding is on one line (GitHub ignores
  columns of a multi-line annotation); ``endColumn`` is exclusive, as ruff writes it;
- paths are relative to the working directory, with ``/``;
- level ``error`` for rules whose severity is ERROR (the code raises or computes wrong
  values), ``warning`` for the others.

GitHub shows at most 10 annotations of each level per step and 50 per job
(docs.github.com, "Workflow commands for GitHub Actions" / annotation limits). Findings past
those limits are printed as plain lines (still in the log) and one ``notice`` says how many
were not annotated. When ``GITHUB_STEP_SUMMARY`` names a file, a Markdown table of every
finding (``file:line`` linked to the commit when ``GITHUB_SERVER_URL``,
``GITHUB_REPOSITORY`` and ``GITHUB_SHA`` are set) is appended to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import quote

from ckptlint.output.base import OutputContext, display_path, relative_uri, severity_of
from ckptlint.text.diagnostics import Diagnostic
from ckptlint.text.source import location_label

__all__ = [
    "MAX_PER_JOB",
    "MAX_PER_LEVEL",
    "escape_data",
    "escape_property",
    "render",
    "step_summary",
    "workflow_command",
]

MAX_PER_LEVEL = 10  # annotations of one level GitHub shows per step
MAX_PER_JOB = 50  # annotations GitHub shows per job


def escape_data(text: str) -> str:
    """Escape a workflow command's message: ``%`` -> ``%25``, CR -> ``%0D``, LF -> ``%0A``."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow command's property value: as :func:`escape_data`, plus ``:`` ->
    ``%3A`` and ``,`` -> ``%2C``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(level: str, message: str, properties: Mapping[str, object]) -> str:
    """``::level key=value,...::message`` with every part escaped."""
    props = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties.items())
    return f"::{level} {props}::{escape_data(message)}" if props else f"::{level}::{escape_data(message)}"


def _annotation(d: Diagnostic, ctx: OutputContext) -> str:
    properties: dict[str, object]
    if d.cell is not None:
        # GitHub shows a notebook's JSON lines, where cell rows mean nothing: annotate line 1
        # and say where in the message (ruff does the same)
        properties = {"file": display_path(d.path, ctx.cwd), "line": 1, "col": 1, "endLine": 1, "endColumn": 1}
        properties["title"] = f"ckptlint ({d.code})"
        where = f"cell {d.cell}, line {d.start[0]}, column {d.start[1]}: "
        return workflow_command(severity_of(d.code), where + d.message, properties)
    properties = {"file": display_path(d.path, ctx.cwd), "line": d.start[0]}
    if d.start[0] == d.end[0]:
        properties["col"] = d.start[1]
    properties["endLine"] = d.end[0]
    if d.start[0] == d.end[0]:
        properties["endColumn"] = d.end[1]
    properties["title"] = f"ckptlint ({d.code})"
    return workflow_command(severity_of(d.code), d.message, properties)


def _plain(d: Diagnostic, ctx: OutputContext) -> str:
    return f"{location_label(display_path(d.path, ctx.cwd), *d.start, cell=d.cell)}: {d.code} {d.message}"


def render(diagnostics: Sequence[Diagnostic], ctx: OutputContext) -> str:
    lines: list[str] = []
    per_level: dict[str, int] = {}
    annotated = 0
    skipped = 0
    for d in diagnostics:
        level = severity_of(d.code)
        # One annotation is kept for the notice, so the job limit holds with it.
        if per_level.get(level, 0) < MAX_PER_LEVEL and annotated < MAX_PER_JOB - 1:
            per_level[level] = per_level.get(level, 0) + 1
            annotated += 1
            lines.append(_annotation(d, ctx))
        else:
            skipped += 1
            lines.append(_plain(d, ctx))
    if skipped:
        noun = "finding was" if skipped == 1 else "findings were"
        lines.append(
            workflow_command(
                "notice",
                f"{skipped} more ckptlint {noun} not annotated (GitHub shows at most {MAX_PER_LEVEL} "
                f"annotations of each level per step and {MAX_PER_JOB} per job); they are listed in the "
                "log above" + (" and in the step summary." if ctx.env.get("GITHUB_STEP_SUMMARY") else "."),
                {"title": "ckptlint"},
            )
        )
    _append_step_summary(diagnostics, ctx)
    return "".join(line + "\n" for line in lines)


def _append_step_summary(diagnostics: Sequence[Diagnostic], ctx: OutputContext) -> None:
    """Append :func:`step_summary` to ``$GITHUB_STEP_SUMMARY``. A file that cannot be written
    (a wrong path, a folder, no permission) costs only the summary: a warning on stderr, and
    the annotations are printed as usual."""
    import sys

    target = ctx.env.get("GITHUB_STEP_SUMMARY")
    if not target:
        return
    try:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(step_summary(diagnostics, ctx))
    except OSError as exc:
        from ckptlint.config.discovery import os_reason

        reason = os_reason(exc, missing="no such file or directory")
        sys.stderr.write(f"warning: GITHUB_STEP_SUMMARY ({target}): cannot write the step summary: {reason}\n")


def _cell(text: str) -> str:
    """Text safe in one Markdown table cell: ``|`` escaped, line breaks as spaces."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r\n", " ").replace("\n", " ").replace("\r", " ")


def _link(d: Diagnostic, ctx: OutputContext) -> str:
    env = ctx.env
    workspace = Path(env["GITHUB_WORKSPACE"]) if env.get("GITHUB_WORKSPACE") else ctx.repository_root
    uri, relative = relative_uri(d.path, workspace)
    shown = location_label(display_path(d.path, ctx.cwd), d.start[0], cell=d.cell)
    server, repository, sha = env.get("GITHUB_SERVER_URL"), env.get("GITHUB_REPOSITORY"), env.get("GITHUB_SHA")
    if not (server and repository and sha and relative):
        return f"`{_cell(shown)}`"
    url = f"{server.rstrip('/')}/{quote(repository)}/blob/{quote(sha)}/{uri}"
    if d.cell is None:  # a notebook's rows are not lines of the file GitHub shows
        url += f"#L{d.start[0]}" + (f"-L{d.end[0]}" if d.end[0] > d.start[0] else "")
    return f"[{_cell(shown)}]({url})"


def step_summary(diagnostics: Sequence[Diagnostic], ctx: OutputContext) -> str:
    """The Markdown appended to ``$GITHUB_STEP_SUMMARY``: a heading, the counts and a table
    of every finding (file:line link, code, message)."""
    if not diagnostics:
        if ctx.interrupted:
            return "### ckptlint\n\nThe run was stopped before every file was checked.\n\n"
        if ctx.incomplete:
            return "### ckptlint\n\nNo findings, but some files could not be fully checked (internal error).\n\n"
        return "### ckptlint\n\nAll checks passed!\n\n"
    errors = sum(1 for d in diagnostics if severity_of(d.code) == "error")
    warnings = len(diagnostics) - errors
    files = len({d.path for d in diagnostics})
    counts = (
        f"{len(diagnostics)} finding{'s' if len(diagnostics) != 1 else ''} in {files} file{'s' if files != 1 else ''}"
    )
    counts += f" ({errors} error{'s' if errors != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''})."
    rows = ["| Location | Code | Level | Message |", "| --- | --- | --- | --- |"]
    for d in diagnostics:
        rows.append(f"| {_link(d, ctx)} | {d.code} | {severity_of(d.code)} | {_cell(d.message)} |")
    return "### ckptlint\n\n" + counts + "\n\n" + "\n".join(rows) + "\n\n"

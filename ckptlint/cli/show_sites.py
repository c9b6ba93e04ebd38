"""``ckptlint --show-sites``: the inventory of checkpoint sites and what each recomputes.

One record per site (a call of a checkpoint API, a ``functools.partial`` binding of one, a
policy or wrapper application, a call of a home-made implementation or its helper):

- ``filename`` (absolute, as in ckptlint's JSON findings), ``location`` (``row``, ``column``; 1-based;
  in a notebook also ``cell``, the row being the cell's, as findings give it), ``api`` (the table row's name);
- ``options``: each option the site passes, with its literal value, or ``"unknown"`` when it
  is an expression or hidden in ``**`` arguments (options left out take the API's default);
  ``use_reentrant`` is always there: the variant the site runs (``true``/``false``, or
  ``"unknown"`` when a run-time setting or the enable call decides, as for
  ``_gradient_checkpointing_func``);
- ``helper`` (only for a call of a helper that checkpoints its parameter, see
  :mod:`ckptlint.checkpoint.sites.helper_sites`): ``name``, ``filename``, ``row`` of its ``def``,
  and ``summary`` ("function run passes its parameter module to checkpoint API X with
  options O"); the site's ``options`` are those the helper fixes or this call gives;
- ``region``: ``status`` ``"resolved"`` (the checkpointed callable resolved to code or torch
  layers, followed to the end), ``"partial"`` (resolved, but the walk stopped at the depth
  limit below some frame), ``"switch"`` (a call that turns on a model's own checkpointing,
  ``model.gradient_checkpointing_enable()`` or ``TrainingArguments(gradient_checkpointing=True)``:
  it names no callable; what is recomputed is decided by the model's own checkpoint calls,
  listed as sites of their own where the model's code is in the tree) or ``"unknown"``;
  ``frames``: each function body reached (``{"name", "filename", "row"}``, ``row`` of its ``def``).

Files pass the same byte-level gate as linting (:mod:`ckptlint.lint.gate`), so the inventory is
what the rules see; sites in files only another file's region reaches are not listed.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.facts.api_types import ApiKind
from ckptlint.lint.collection import collected_after
from ckptlint.lint.gate import file_may_have_findings
from ckptlint.text.source import location_label

if TYPE_CHECKING:
    from ckptlint.checkpoint.evaluator.ast_region import AstFrame
    from ckptlint.checkpoint.evaluator.ast_regions import AstRegionBuilder
    from ckptlint.checkpoint.sites.ast_helper_summaries import AstHelperSummary
    from ckptlint.checkpoint.sites.ast_site_builders import AstSite
    from ckptlint.checkpoint.sites.options import OptionValue
    from ckptlint.semantic.ast_analysis import AstAnalysis
    from ckptlint.semantic.project import AstProject
    from ckptlint.text.source import SourceFile

__all__ = ["SHOW_SITES_MAX_CHARS", "SWITCH_KINDS", "collect_site_records", "format_table", "show_sites"]

#: The API kinds whose sites turn on a model's own checkpointing rather than name a callable.
SWITCH_KINDS = frozenset({ApiKind.HF_ENABLE, ApiKind.HF_TRAINING_ARGS})

#: The bound of the inventory's cache of parsed modules (characters of source; linting's is
#: 3,000,000, see :class:`~ckptlint.semantic.project.AstProject`). The inventory runs in one
#: process, which cannot be replaced by a fresh one as linting's workers are when their memory
#: has grown (:data:`ckptlint.lint.pool.RECYCLE_RESIDENT_BYTES`). Measured on the 41
#: repositories of the benchmark corpus in one run (peak resident memory, CPU): 163 MB and
#: 54 s at 1,000,000 characters, 200 MB and 44 s at 2,000,000, 247 MB and 46 s at 3,000,000;
#: this bound keeps it well under 300 MB.
SHOW_SITES_MAX_CHARS = 2_000_000


def _option_value(value: OptionValue[Any, Any]) -> object:
    from ckptlint.checkpoint.sites.options import OptionState

    if value.state is OptionState.LITERAL and isinstance(value.value, (bool, int, float, str, type(None))):
        return value.value
    return "unknown"


def _variant(site: AstSite) -> object:
    runs = site.runs_reentrant
    return "unknown" if runs is None else runs


def collect_site_records(files: list[Path]) -> list[dict]:
    """The site records of ``files`` (absolute or relative paths; read, gated, parsed),
    sorted by file and position. Unreadable or unparsable files are skipped."""
    from ckptlint.lint.limits import size_limit
    from ckptlint.semantic.project import Project, module_name_for
    from ckptlint.text.reading import read_regular

    modules = Project().ast_project  # the modules regions reach, read on ``ast`` as linting reads them
    modules.max_chars = SHOW_SITES_MAX_CHARS
    records: list[dict] = []
    for path in files:
        try:
            raw = read_regular(path, size_limit(str(path)))  # a FIFO or device: not read
        except OSError:
            continue
        if len(raw) > size_limit(str(path)):
            continue
        if not file_may_have_findings(raw, str(path)):
            continue
        absolute = Path(os.path.abspath(path))
        name, is_package, root = module_name_for(absolute)
        modules.track(root)  # drops analyses beyond the cache's bounds, as linting does
        with collected_after():
            records += _file_records(modules, raw, absolute, name, is_package)
    records.sort(key=lambda r: (r["filename"], r["location"].get("cell", 0), r["location"]["row"], r["location"]["column"]))
    return records


def _parsed(raw: bytes, absolute: Path, name: str, is_package: bool) -> tuple[AstAnalysis, int] | None:
    """The ``ast`` analysis of a gated file and its nesting depth
    (:func:`~ckptlint.semantic.nesting.nesting_depth`, 0 below
    :data:`~ckptlint.semantic.nesting.DEEP` characters); ``None`` when it cannot be decoded or
    parsed, or nests deeper than linting analyses (:data:`~ckptlint.semantic.nesting.MAX_NESTING`)."""
    from ckptlint.semantic.ast_analysis import AstAnalysis, parse_tree
    from ckptlint.semantic.nesting import DEEP, MAX_NESTING, nesting_depth
    from ckptlint.text.reading import load_source

    try:
        source = load_source(raw, str(absolute))  # a notebook: its code cells as one module
        tree = parse_tree(source)
    except Exception:  # noqa: BLE001 - syntax errors, undecodable files, nesting beyond the parser: nothing to list
        return None
    depth = nesting_depth(tree) if len(source.text) >= DEEP else 0
    if depth > MAX_NESTING:
        return None
    return AstAnalysis(source, tree, name, is_package), depth


def _file_records(modules: AstProject, raw: bytes, absolute: Path, name: str, is_package: bool) -> list[dict]:
    """The site records of one gated file (``[]`` when it does not parse)."""
    from ckptlint.checkpoint.evaluator.ast_regions import AstRegionBuilder
    from ckptlint.semantic.nesting import deep_recursion

    parsed = _parsed(raw, absolute, name, is_package)
    if parsed is None:
        return []
    analysis, depth = parsed
    modules.remember(absolute, analysis)  # its sites follow its imports into the tree
    with deep_recursion(depth):
        builder = AstRegionBuilder(modules)
        try:
            sites = ast_site_index(analysis).sites
        except RecursionError:
            return []
        return [_record(site, analysis, builder, absolute) for site in sites]


def _record(site: AstSite, analysis: AstAnalysis, builder: AstRegionBuilder, absolute: Path) -> dict:
    """The record of ``site``, a site of ``analysis`` (the file ``absolute``), its region
    built by ``builder``."""
    from ckptlint.text.notebook import NotebookSource

    start = analysis.start(site.call)
    options = {name: _option_value(value) for name, value in sorted(site.options.items()) if not value.is_absent}
    options["use_reentrant"] = _variant(site)
    region: dict[str, object] = {"status": "switch" if site.api.kind in SWITCH_KINDS else "unknown", "frames": []}
    if site.function is not None:
        try:
            found = builder.region(site, analysis)
        except RecursionError:
            found = None
        if found is not None and found.resolved and (found.frames or found.layers):
            cut = any(
                frame.depth >= builder.max_depth and any(isinstance(n, ast.Call) for n in frame.nodes())
                for frame in found.frames
            )
            region["status"] = "partial" if cut else "resolved"
            region["frames"] = [_frame(frame) for frame in found.frames]
    location: dict[str, int] = {"row": start[0], "column": start[1]}
    source: SourceFile = analysis.source
    cell = source.cell_of(start[0]) if isinstance(source, NotebookSource) else None
    if cell is not None:  # as findings show it: the cell and the row in it
        location = {"cell": cell[0], "row": cell[1], "column": start[1]}
    record = {
        "filename": str(absolute),
        "location": location,
        "api": site.api.name,
        "options": options,
        "region": region,
    }
    if site.helper is not None:
        record["helper"] = _helper(site.helper, analysis)
        names = sorted({c.site.api.name for c in site.alternatives})
        record["api"] = " | ".join(names)  # the helper picks one of them by its flags
    return record


def _shown(path: str) -> str:
    """``path`` relative to the working folder when below it (as findings are shown)."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


def _frame(frame: AstFrame) -> dict:
    analysis = frame.analysis
    function = frame.function
    if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        scope = analysis.model.scope_of_definition.get(function)
        name = scope.qualname if scope is not None else function.name
    else:
        name = "<lambda>"
    row = analysis.start(function)[0]
    return {"name": name, "filename": os.path.abspath(analysis.source.path), "row": row}


def _helper(helper: AstHelperSummary, near: AstAnalysis) -> dict:
    """Where the helper a site of ``near`` calls is defined, and what it does with its parameter."""
    from ckptlint.checkpoint.sites.ast_helper_summaries import helper_analysis

    analysis = helper_analysis(helper, near)
    return {
        "name": helper.qualname,
        "filename": os.path.abspath(analysis.source.path),
        "row": analysis.start(helper.node)[0],
        "summary": helper.describe(),
    }


def format_table(records: list[dict]) -> str:
    """One line per site: ``file:row:col  api  options  region (frames)``, then totals."""
    lines: list[str] = []
    for record in records:
        at = record["location"]
        shown = _shown(record["filename"]) + (f":cell {at['cell']}" if "cell" in at else "")
        where = location_label(shown, at["row"], at["column"])
        options = ", ".join(f"{k}={json.dumps(v)}" for k, v in record["options"].items())
        region = record["region"]
        frames = ", ".join(f"{f['name']} ({location_label(Path(f['filename']).name, f['row'])})" for f in region["frames"][:4])
        more = f" +{len(region['frames']) - 4}" if len(region["frames"]) > 4 else ""
        via = ""
        if "helper" in record:
            helper = record["helper"]
            via = f"  via {helper['name']}() ({location_label(Path(helper['filename']).name, helper['row'])})"
        lines.append(
            f"{where}  {record['api']}{via}  [{options}]  {region['status']}" + (f": {frames}{more}" if frames else "")
        )
    counts = {
        status: sum(1 for r in records if r["region"]["status"] == status) for status in ("resolved", "partial", "unknown", "switch")
    }
    switches = f", {counts['switch']} switch{'es' if counts['switch'] != 1 else ''}" if counts["switch"] else ""
    lines.append(
        f"{len(records)} site{'s' if len(records) != 1 else ''}: "
        f"{counts['resolved']} resolved, {counts['partial']} partial, {counts['unknown']} unknown{switches}"
    )
    return "\n".join(lines)


def show_sites(files: list[Path], output_format: str) -> str:
    """The ``--show-sites`` report of ``files``: JSON (a list of records) for ``json``,
    the table otherwise."""
    from ckptlint.output.base import printable

    records = collect_site_records(files)
    if output_format == "json":  # a file name that is not UTF-8 escaped as in the findings' JSON
        return json.dumps(_with_printable_names(records), indent=2)
    return printable(format_table(records))


def _with_printable_names(value: Any) -> Any:
    """``value`` with every ``filename`` made printable (:func:`ckptlint.output.base.printable`)."""
    from ckptlint.output.base import printable

    if isinstance(value, dict):
        return {k: printable(v) if k == "filename" and isinstance(v, str) else _with_printable_names(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_with_printable_names(v) for v in value]
    return value

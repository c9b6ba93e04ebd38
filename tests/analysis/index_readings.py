"""The readings of helpers, helper calls, save misuses, misspelt options and whole site indexes
on ``ast`` that the golden answers of ``test_ast_helper_sites.py``, ``test_ast_helper_calls.py``,
``test_ast_misuse.py`` and ``test_ast_site_index.py`` record (they were compared with
libcst's field by field while it lived): positions are 1-based ``(row, col)``, a node's span
its start and end (``"tuple"`` for a tuple, which libcst started inside its parenthesis)."""

from __future__ import annotations

import ast
import warnings
from collections.abc import Callable
from pathlib import Path

from site_readings import site_reading

from ckptlint.checkpoint.sites import ast_helper_sites, ast_homemade
from ckptlint.checkpoint.sites.ast_helper_calls import module_helper_sites
from ckptlint.checkpoint.sites.ast_options import literal_value
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.checkpoint.sites.ast_sites import direct_sites
from ckptlint.facts.apis import ApiKind
from ckptlint.semantic.ast_analysis import AstAnalysis, parse_ast
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.project import AstProject, Project, module_name_for
from ckptlint.text.source import SourceFile

__all__ = ["helper_answers", "helpers_in_tree", "homemade_readings", "index_alone", "index_in_tree", "misuse_answers"]

Position = tuple[int, int]
Where = Callable[[ast.AST], Position]


def _where(node: ast.AST | None, position: Where) -> Position | None:
    return None if node is None or type(node) is ast.Tuple else position(node)


def _arg(arg: ast.AST, position: Where) -> tuple:
    """An input or forwarded keyword: its ``*``, its keyword and where its value starts."""
    if isinstance(arg, ast.Starred):
        return ("*", None, _where(arg.value, position))
    if isinstance(arg, ast.keyword):
        return ("**" if arg.arg is None else "", arg.arg, _where(arg.value, position))
    return ("", None, _where(arg, position))


def _call_reading(call, position: Where) -> tuple:
    return (position(call.site.call), call.site.api.name, call.guards, tuple(sorted(call.plans.items())), call.inputs)


def helper_reading(helper, position: Where, literal: Callable[[ast.AST], object]) -> tuple:
    """Every field of a helper summary; ``literal`` reads a default's value."""
    defaults = tuple((name, _where(node, position), repr(literal(node))) for name, node in helper.defaults.items())
    return (
        "helper",
        helper.qualname,
        helper.module,
        helper.parameter,
        helper.method,
        helper.params,
        helper.keyword_only,
        defaults,
        helper.var_positional,
        helper.var_keyword,
        helper.level,
        helper.keywords_elsewhere,
        helper.describe(),
        tuple(_call_reading(call, position) for call in helper.calls),
    )


def helper_call_reading(
    site, position: Where, end: Where, flags: frozenset[str], bound: bool, helper_position: Where | None = None
) -> tuple:
    """Every field of a helper call site; ``helper_position``: positions in the helper's module."""
    assert site.helper is not None
    return (
        "helper call",
        site_reading(site, position, end),
        site.helper.qualname,
        _where(site.function, position),
        tuple(_arg(arg, position) for arg in site.inputs),
        tuple(_arg(arg, position) for arg in site.function_keywords),
        tuple(sorted(site.caller_options)),
        tuple(_call_reading(call, helper_position or position) for call in site.alternatives),
        tuple(sorted(flags)),
        bound,
    )


def _positions(source: SourceFile) -> tuple[Where, Where, Callable[[ast.AST], object]]:
    def start(node: ast.AST) -> Position:
        return source.ast_position(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(node: ast.AST) -> Position:
        return source.ast_position(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def span(node: ast.AST) -> object:
        return "tuple" if isinstance(node, ast.Tuple) else (start(node), end(node))

    return start, end, span


def _argument(arg: ast.AST, span: Callable[[ast.AST], object]) -> tuple:
    if isinstance(arg, ast.keyword):
        return (arg.arg, "" if arg.arg is not None else "**", span(arg.value))
    if isinstance(arg, ast.Starred):
        return (None, "*", span(arg.value))
    return (None, "", span(arg))


def _misuse_reading(misuse, span: Callable[[ast.AST], object]) -> tuple | None:
    if misuse is None:
        return None
    return (
        misuse.reason,
        misuse.form.value,
        span(misuse.saved) if misuse.saved is not None else None,
        span(misuse.destination) if misuse.destination is not None else None,
        tuple(_argument(arg, span) for arg in misuse.arguments),
    )


def _misspelling_reading(found, source: SourceFile, span: Callable[[ast.AST], object]) -> tuple:
    node = found.node
    if isinstance(node, ast.keyword):
        begin = source.ast_position(node.lineno, node.col_offset)
        stop = source.ast_position(node.lineno, node.col_offset + len(found.written.encode("utf-8")))
        renamed: tuple = ("keyword", (begin, stop))
    else:
        renamed = ("key", span(node))
    return (
        found.written,
        found.option,
        round(found.ratio, 9),
        renamed,
        _argument(found.arg, span) if found.arg is not None else None,
        span(found.value),
    )


def _model(text: str, module_name: str) -> AstModel:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(text)
    return AstModel.build(tree, module_name, False, text)


def helper_answers(text: str, module_name: str = "pkg.mod") -> list[tuple]:
    """The helpers of ``text`` read alone, then its helper call sites (with their literal
    flags and whether their inputs are bound)."""
    source = SourceFile("<compared>", text)
    model = _model(text, module_name)
    found = ast_helper_sites.helper_sites(model, direct_sites(model))
    start, end, _ = _positions(source)
    readings = [helper_reading(h, start, lambda n: literal_value(n, model)) for h in found.helpers.values()]  # type: ignore[arg-type]
    for site in found.sites:
        flags = ast_helper_sites.literal_flags(site, model)
        readings.append(helper_call_reading(site, start, end, flags, ast_helper_sites.inputs_bound(site)))
    model.release()
    return readings


def misuse_answers(text: str, module_name: str = "pkg.mod") -> list[tuple]:
    """Per direct site of ``text``: API, form, call span, save misuse, misspelt options."""
    source = SourceFile("<compared>", text)
    model = _model(text, module_name)
    _, _, span = _positions(source)
    found = [
        (
            site.api.name,
            site.form.value,
            span(site.call),
            _misuse_reading(site.save_misuse, span),
            tuple(_misspelling_reading(m, source, span) for m in site.misspellings),
        )
        for site in direct_sites(model)
    ]
    model.release()
    return found


def _index_answers(analysis: AstAnalysis, source: SourceFile, loader: AstProject | None) -> dict[str, list]:
    by_model = {id(a.model): a for a in loader._analyses.values() if a is not None} if loader is not None else {}
    by_model[id(analysis.model)] = analysis
    start, end, span = analysis.start, analysis.end, _positions(source)[2]

    def helper_where(helper) -> tuple[Where, Callable[[ast.AST], object]]:
        module = by_model.get(id(helper.analysis))
        if module is None:
            return (lambda n: (-1, -1)), (lambda n: None)
        return module.start, (lambda n: literal_value(n, module.model))  # type: ignore[arg-type, return-value]

    def full(site) -> tuple:
        helper = None
        if site.form.value == "helper-call" and site.helper is not None:
            flags = ast_helper_sites.literal_flags(site, analysis.model)
            helper = helper_call_reading(site, start, end, flags, ast_helper_sites.inputs_bound(site), helper_where(site.helper)[0])
        return (
            site_reading(site, start, end),
            site.api.qualified_names,
            site.api.source,
            None if site.api.kind is ApiKind.POLICY else _where(site.function, start),
            tuple(_arg(arg, start) for arg in site.inputs),
            tuple(_arg(arg, start) for arg in site.function_keywords),
            start(site.binding.call) if site.binding is not None else None,
            _misuse_reading(site.save_misuse, span),
            tuple(_misspelling_reading(m, source, span) for m in site.misspellings),
            helper,
        )

    index = ast_site_index(analysis)
    return {
        "sites": [full(site) for site in index.sites],
        "kinds": ["home-made" if s.api.kind is ApiKind.HOME_MADE else s.form.value for s in index.sites],
        "helpers": [(name, helper_reading(h, *helper_where(h))) for name, h in index.helpers.items()],
        "module calls": [(start(c), end(c)) for c in index.module_calls],
        "dcp calls": [(start(c), end(c)) for c in index.dcp_calls],
    }


def index_alone(text: str, module_name: str = "pkg.mod") -> dict[str, list]:
    """The site index of ``text`` read alone (no linted tree), every field in order."""
    source = SourceFile("<compared>", text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        analysis = parse_ast(source, module_name, False)
    assert analysis is not None
    return _index_answers(analysis, source, None)


def index_in_tree(root: Path, path: Path, loader: AstProject) -> dict[str, list]:
    """The site index of the file at ``path`` read with ``loader`` as a run reads it, with
    the files recorded as read and the import roots (under ``root``, relative)."""
    module_name, is_package, home = module_name_for(path)
    source = SourceFile(str(path), path.read_text(encoding="utf-8"))
    loader.track(home)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        analysis = parse_ast(source, module_name, is_package)
    assert analysis is not None
    analysis.project = loader
    found = _index_answers(analysis, source, loader)

    def relative(paths) -> list[str]:
        return [Path(p).relative_to(root).as_posix() for p in paths if Path(p).is_relative_to(root)]

    found["reads"] = sorted(relative(loader.project.accessed()))
    found["import roots"] = relative(loader.project.roots)
    return found


def homemade_readings(found, position: Where, end: Where) -> list[tuple]:
    """Every field of the home-made implementations, then of the home-made helpers, of
    ``found`` (an ``ast_homemade.home_made`` answer)."""
    out: list[tuple] = []
    for key, impl in found.implementations.items():
        reruns = tuple((position(call), end(call)) for call in impl.reruns)
        out.append(
            (
                "implementation",
                key,
                impl.qualified,
                (position(impl.node), end(impl.node)),
                impl.function_index,
                reruns,
                impl.restores_rng,
                impl.restores_autocast,
                impl.rerun_label,
                repr(impl.api),
            )
        )
    for key, helper in found.helpers.items():
        out.append(
            (
                "helper",
                key,
                helper.qualified,
                (position(helper.node), end(helper.node)),
                helper.parameter,
                helper.index,
                helper.implementation.qualified,
                repr(helper.api),
            )
        )
    return out


def helpers_in_tree(path: Path) -> dict[str, object]:
    """The file at ``path`` read as the linter reads it (a project rooted as it roots it):
    its helpers and ``HELPER_CALL`` sites (the helpers' own checkpoint calls read in their
    modules), the files recorded as read (the file itself left out, relative to the root),
    its home-made implementations and helpers read with the tree (positions in their modules)
    and how many of those only the tree gives."""
    root = module_name_for(path)[2]
    project = Project()
    project.track(root)
    loader = AstProject(project)
    analysis = loader.ast_analysis_for_file(path)
    assert analysis is not None
    found = module_helper_sites(analysis)
    reads = sorted(p.relative_to(root).as_posix() for p in project.accessed() if p != path and p.is_relative_to(root))
    by_model = {id(a.model): a for a in loader._analyses.values() if a is not None}

    def where(helper) -> tuple[Where, Callable[[ast.AST], object]]:
        module = by_model[id(helper.analysis)]
        return module.start, (lambda n: literal_value(n, module.model))  # type: ignore[arg-type, return-value]

    readings: list[tuple] = [helper_reading(h, *where(h)) for h in found.helpers.values()]
    for site in found.sites:
        if site.helper is None:
            continue
        flags = ast_helper_sites.literal_flags(site, analysis.model)
        bound = ast_helper_sites.inputs_bound(site)
        reading = helper_call_reading(site, analysis.start, analysis.end, flags, bound, where(site.helper)[0])
        readings.append((site.helper.module, *reading))
    home_made = ast_homemade.home_made(analysis.model, loader)
    spans = {id(n): a for a in loader._analyses.values() if a is not None for n in ast.walk(a.tree)}
    alone = ast_homemade.home_made(analysis.model)
    return {
        "helpers and calls": readings,
        "reads": reads,
        "home-made": homemade_readings(home_made, lambda n: spans[id(n)].start(n), lambda n: spans[id(n)].end(n)),
        "home-made bases": len(set(home_made.implementations) - set(alone.implementations)),
    }

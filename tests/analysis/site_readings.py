"""The readings of checkpoint sites and gradient hooks on ``ast`` that the golden answers of
``test_ast_sites.py`` and ``test_ast_reach.py`` record (they were compared with libcst's
field by field while it lived): positions are 1-based ``(row, col)``."""

from __future__ import annotations

import ast
import warnings
from collections.abc import Callable
from pathlib import Path

from ckptlint.checkpoint.sites.ast_hook_recompute import hook_recomputes
from ckptlint.checkpoint.sites.ast_sites import direct_sites, module_sites
from ckptlint.facts.apis import HF_ENABLE_METHODS, INSTANCE_METHOD_APIS, METHOD_APIS, ApiKind, api_for
from ckptlint.semantic.ast_analysis import parse_ast
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.project import AstProject, module_name_for
from ckptlint.text.source import SourceFile

__all__ = ["hook_readings", "positions", "reached", "site_reading", "sites_of_text", "sites_in_tree"]

Position = tuple[int, int]
_INSTANCE_METHODS = frozenset(method for method, _ in INSTANCE_METHOD_APIS.values())


def positions(source: SourceFile) -> tuple[Callable[[ast.AST], Position], Callable[[ast.AST], Position]]:
    """Start and end of an ``ast`` node of ``source``, 1-based ``(row, col)`` in characters."""

    def start(node: ast.AST) -> Position:
        return source.ast_position(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(node: ast.AST) -> Position:
        return source.ast_position(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    return start, end


def site_reading(site, start: Callable[[ast.AST], Position], end: Callable[[ast.AST], Position]) -> tuple:
    """API name, form, call start and end, variant, hidden ``**`` options, every option's
    state, value (``repr`` and type), origin and where its expression starts (``None`` for a
    tuple), and a policy site's class expressions (start, end) or ``None``."""
    options = []
    for name, value in sorted(site.options.items()):
        where = None if value.node is None or type(value.node) is ast.Tuple else start(value.node)
        options.append((name, value.state.value, (repr(value.value), type(value.value).__name__), value.origin.value, where))
    function = None
    if site.api.kind is ApiKind.POLICY and site.function is not None:
        function = tuple((start(c.func), end(c.func)) for c in site.function.elts)
    return (
        site.api.name,
        site.form.value,
        start(site.call),
        end(site.call),
        site.reentrancy.value,
        site.hidden_arguments,
        tuple(options),
        function,
    )


def reached(site, model: AstModel) -> bool:
    """A call whose API neither its callee's qualified names nor its method name give (a
    ``TrainingArguments`` subclass, a name followed into another module of the tree)."""
    func = site.call.func
    if site.form.value != "call" or api_for(model.qualified_names(func)) is not None:
        return False
    if isinstance(func, ast.Attribute) and func.attr in (*HF_ENABLE_METHODS, *METHOD_APIS, *_INSTANCE_METHODS):
        return False
    return not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self")


def hook_readings(model: AstModel, source: SourceFile) -> list[tuple]:
    """The gradient hooks that re-run the model, in order: hook name, registration (start,
    end), re-runs (start, end) in order, autocast restored."""
    start, end = positions(source)
    return [
        (h.hook.name, start(h.registration), end(h.registration), tuple((start(c), end(c)) for c in h.reruns), h.restores_autocast)
        for h in hook_recomputes(model)
    ]


def sites_of_text(text: str, module_name: str = "pkg.mod") -> dict[str, list]:
    """``{"sites": ..., "hooks": ...}`` of ``text`` read alone as ``module_name``."""
    source = SourceFile("<compared>", text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(text)
    model = AstModel.build(tree, module_name, False, text)
    start, end = positions(source)
    found = {"sites": [site_reading(s, start, end) for s in direct_sites(model)], "hooks": hook_readings(model, source)}
    model.release()
    return found


def sites_in_tree(root: Path, paths: list[Path], loader: AstProject) -> dict[str, dict]:
    """Per file of ``paths`` (relative to ``root``), read in turn with ``loader`` over the tree
    as a run reads it: its sites, the calls among them reached through the tree and the files
    recorded as read under ``root`` (relative, sorted)."""
    found = {}
    for path in paths:
        module_name, is_package, home = module_name_for(path)
        text = path.read_text(encoding="utf-8")
        source = SourceFile(str(path), text)
        loader.project.track(home)
        loader.evict()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            analysis = parse_ast(source, module_name, is_package)
        assert analysis is not None
        analysis.project = loader
        start, end = positions(source)
        sites = module_sites(analysis)
        reads = sorted(p.relative_to(root).as_posix() for p in loader.project.accessed() if p.is_relative_to(root))
        found[path.relative_to(root).as_posix()] = {
            "sites": [site_reading(s, start, end) for s in sites],
            "reached": sum(reached(s, analysis.model) for s in sites),
            "policy regions": sum(s.api.kind is ApiKind.POLICY and s.function is not None for s in sites),
            "reads": reads,
        }
    return found

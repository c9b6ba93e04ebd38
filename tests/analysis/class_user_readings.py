"""The answers of five analyses on ``ast`` (``ast_function_keywords``, ``ast_class_users``,
``ast_frozen_norms``, ``ast_parent_builds``, ``ast_path_conditions``) that the golden answers
of ``test_ast_class_users.py`` record (they were compared with libcst's while it lived): for
every site, ``frozen_batchnorms``, ``parent_builds``, ``own_function_keywords``,
``refused_keywords`` and ``reentrant_call_refuses_keywords``; for every class, ``class_users``
and ``parent_freeze``; ``path_parts`` of the function and every expression of every frame of
a region built by hand for every function (:func:`_plan`) and of every site's region as the
builder builds it. Positions are 1-based ``(row, col)`` ranges."""

from __future__ import annotations

import ast
import warnings
from collections import Counter
from typing import Any

from ckptlint.checkpoint.analyses import (
    ast_class_users,
    ast_frozen_norms,
    ast_function_keywords,
    ast_parent_builds,
    ast_path_conditions,
)
from ckptlint.checkpoint.evaluator.ast_region import AstFrame, AstRegion
from ckptlint.checkpoint.evaluator.ast_regions import AstRegionBuilder
from ckptlint.checkpoint.evaluator.denotations import ConstructorEnv, Context
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.semantic.ast_analysis import AstAnalysis
from ckptlint.semantic.ast_walk import nodes_of_function
from ckptlint.semantic.project import AstProject
from ckptlint.text.source import SourceFile

__all__ = ["class_user_answers"]

#: How deep the hand-built regions follow calls.
PLAN_DEPTH = 3


def _freeze(found: Any) -> tuple | None:
    return None if found is None else (sorted(found.layers), found.owners, found.flags)


def _env(env: dict, where: Any) -> tuple:
    bound = sorted((binding.name, where(ctx.analysis, expr)) for binding, (expr, ctx) in env.items())
    return (bound, isinstance(env, ConstructorEnv))


def _build(build: Any, where: Any) -> tuple:
    instance = build.instance
    info = instance.info
    return (build.parent.analysis.module_name, build.parent.qualname, info.analysis.module_name, info.qualname, _env(instance.env, where))


# ------------------------------------------------------------------ hand-built regions
def _def_key(analysis: Any, node: object, where: Any) -> tuple:
    """A function's key on both sides: a lambda's range, a ``def``'s qualified name and row."""
    if isinstance(node, ast.Lambda):
        return ("lambda", where(analysis, node))
    scope = analysis.model.scope_of_definition.get(node)
    row = node.lineno  # type: ignore[attr-defined]
    return ("def", scope.qualname if scope else "?", row)


def _callee(analysis: AstAnalysis, function: Any, call: ast.Call) -> Any:
    """The ``def`` a call in ``function`` runs, as the plan reads it (see the module docstring)."""
    func = call.func
    if isinstance(func, ast.Name):
        if not isinstance(function, ast.Lambda):
            nested = {s.name: s for s in function.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
            if func.id in nested:
                return nested[func.id]
        top = {s.name: s for s in analysis.tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        return top.get(func.id)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and not isinstance(function, ast.Lambda):
        cls = analysis.model.parent(function)
        params = [*function.args.posonlyargs, *function.args.args]
        if isinstance(cls, ast.ClassDef) and params and func.value.id == params[0].arg:
            methods = {s.name: s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
            return methods.get(func.attr)
    return None


def _plan(analysis: AstAnalysis, root: Any, where: Any) -> dict[str, list]:
    """The frames of the hand-built region of ``root`` (read on ``ast``): function keys, depths
    and the ways each is reached (caller index, call range), with the unknown and cut calls."""
    frames: list[list] = [[_def_key(analysis, root, where), 0, [(None, None)], root]]
    index = {id(root): 0}
    unknown: list[tuple] = []
    cut: list[tuple] = []
    position = 0
    while position < len(frames):
        key, depth, _, function = frames[position]
        for node in nodes_of_function(function):
            if not isinstance(node, ast.Call):
                continue
            callee = _callee(analysis, function, node)
            call = where(analysis, node)
            if callee is None:
                if isinstance(node.func, ast.Name):
                    unknown.append((call, position))
                continue
            if depth + 1 > PLAN_DEPTH:
                cut.append((call, position))
                continue
            if id(callee) not in index:
                index[id(callee)] = len(frames)
                frames.append([_def_key(analysis, callee, where), depth + 1, [], callee])
            frames[index[id(callee)]][2].append((position, call))
        position += 1
    return {"frames": [(key, depth, ways) for key, depth, ways, _ in frames], "unknown": unknown, "cut": cut}


def _region(plan: dict[str, list], analysis: Any, functions: dict, calls: dict, contexts: Any, frame_type: Any, region_type: Any) -> Any:
    """The region of ``plan`` on one side (``functions`` and ``calls`` by key and range)."""
    region = region_type(None, analysis, resolved=True)
    for key, depth, _ in plan["frames"]:
        function = functions[key]
        region.frames.append(frame_type(function, contexts(function), depth, key[1] if key[0] == "def" else "<lambda>"))
    for frame, (_, _, ways) in zip(region.frames, plan["frames"], strict=True):
        frame.reached_from = [(None, None) if caller is None else (region.frames[caller], calls[call]) for caller, call in ways]
        frame.caller, frame.invocation = frame.reached_from[0]
    region.unknown_calls = [(calls[call], region.frames[at]) for call, at in plan["unknown"]]
    region.cut_calls = [(calls[call], region.frames[at]) for call, at in plan["cut"]]
    return region


def _site_answers(builder: Any, analysis: Any, site: Any, modules: Any, where: Any) -> list[tuple]:
    frozen, builds, keywords = modules
    call = where(analysis, site.call)
    own = keywords.own_function_keywords(site)
    own_read = [(arg.arg, where(analysis, arg.value)) for arg in own]
    refused = [arg.arg for arg in keywords.refused_keywords(builder, analysis, site, own)]
    return [
        ("frozen", call, _freeze(frozen.frozen_batchnorms(builder, site, analysis))),
        ("parent builds", call, [_build(b, where) for b in builds.parent_builds(builder, site, analysis)]),
        ("own keywords", call, own_read),
        ("refused", call, refused),
        ("reentrant refuses", call, keywords.reentrant_call_refuses_keywords(builder, analysis, site)),
    ]


def _class_answers(builder: Any, analysis: Any, node: Any, modules: Any, where: Any) -> list[tuple]:
    users_module, frozen = modules
    info = builder.class_info(analysis, node)
    users, complete = users_module.class_users(builder, analysis, info)
    key = info.qualname
    return [
        ("users", key, ([u.qualname for u in users], complete)),
        ("parent freeze", key, _freeze(frozen.parent_freeze(builder, info))),
    ]


def _frame_paths(label: tuple, region: AstRegion, frame: AstFrame, out: list) -> None:
    """``path_parts`` of a frame's function and of each expression among its nodes (but the
    parts of an f-string, which Python 3.12 places apart)."""
    analysis = frame.analysis
    nodes = {_def_key(analysis, frame.function, AstAnalysis.range): frame.function}
    inside = {id(n) for f in ast.walk(frame.function) if isinstance(f, ast.JoinedStr) for n in ast.walk(f) if n is not f}
    for node in frame.nodes():
        if isinstance(node, ast.expr) and id(node) not in inside:
            nodes.setdefault(analysis.range(node), node)
    out.extend(("path parts", label, k, ast_path_conditions.path_parts(region, node, analysis)) for k, node in nodes.items())


def _path_parts(analysis: AstAnalysis, out: list) -> None:
    """``path_parts`` on every frame of the hand-built region of every function."""
    functions = [n for n in ast.walk(analysis.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]
    calls = {analysis.range(n): n for n in ast.walk(analysis.tree) if isinstance(n, ast.Call)}
    builder = AstRegionBuilder(None)

    def context(function: Any) -> Context:
        parent = analysis.model.parent(function)
        cls = parent if isinstance(parent, ast.ClassDef) and not isinstance(function, ast.Lambda) else None
        return Context(analysis, builder.class_info(analysis, cls) if cls is not None else None)

    by_key = {_def_key(analysis, f, AstAnalysis.range): f for f in functions}
    for root in sorted(functions, key=lambda n: (n.lineno, n.col_offset)):
        plan = _plan(analysis, root, AstAnalysis.range)
        region = _region(plan, analysis, by_key, calls, context, AstFrame, AstRegion)
        for frame in region.frames:
            label = (_def_key(analysis, root, AstAnalysis.range), _def_key(analysis, frame.function, AstAnalysis.range))
            _frame_paths(label, region, frame, out)


def class_user_answers(
    text: str,
    module_name: str = "pkg.mod",
    is_package: bool = False,
    path: str = "<compared>",
    loader: AstProject | None = None,
    hand_built: bool = True,
) -> tuple[list[tuple], Counter[str], Counter[str]]:
    """Every answer about ``text`` (sorted), how many of each kind and how many not empty;
    with ``loader`` other modules of the tree are read; without ``hand_built``,
    ``path_parts`` is asked on the builder's regions only."""
    source = SourceFile(path, text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        analysis = AstAnalysis(source, ast.parse(text), module_name, is_package)
    analysis.project = loader
    where = AstAnalysis.range
    sites = ast_site_index(analysis).sites
    found: list[tuple] = []
    questions = AstRegionBuilder(loader)
    for site in sites:
        found += _site_answers(questions, analysis, site, (ast_frozen_norms, ast_parent_builds, ast_function_keywords), where)
    classes = sorted((n for n in ast.walk(analysis.tree) if isinstance(n, ast.ClassDef)), key=lambda n: (n.lineno, n.col_offset))
    for node in classes:
        found += _class_answers(questions, analysis, node, (ast_class_users, ast_frozen_norms), where)
    if hand_built:
        _path_parts(analysis, found)
    builder = AstRegionBuilder(loader)
    for site in sites:
        region = builder.region(site, analysis)
        for index, frame in enumerate(region.frames):
            label = ("region", where(analysis, site.call), index, _def_key(frame.analysis, frame.function, AstAnalysis.range))
            _frame_paths(label, region, frame, found)
    items = Counter(answer[0] for answer in found)
    answered = Counter(answer[0] for answer in found if answer[-1] not in (None, [], (), False) and answer[-1] != ([], True))
    analysis.release()
    return sorted(found, key=repr), items, answered

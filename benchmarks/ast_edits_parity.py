"""The edits of ``rules/edits.py`` (libcst's tree of the one statement around an ``ast``
node) against the edits its text logic (the ``_cst_*`` functions) builds on the whole
module's libcst analysis.

Since the rules run on ``ast`` (the libcst rules are gone), only :func:`compare_nodes` (every
node of a program, as ``tests/analysis/test_ast_edits.py`` runs it) and the huge-file case
still compare: :func:`recording` (``--examples``, trees, the pytest plugin) wrapped the libcst
rules' calls and has nothing left to wrap.

:func:`recording` replaces, in every rule module, the edit builders of
:mod:`ckptlint.rules.edits` by wrappers: each call runs the original and, beside it, the
``ast`` twin on the ``ast`` node that corresponds to the libcst node the rule edits (found by
its offsets in the file: an expression of the same range; the ``ast.keyword`` a keyword's
name starts; the ``ast.Attribute`` whose name ends where the renamed name ends; the
argument of the same range, or whose value has it), and compares the two ``Edit`` tuples
byte for byte. The rules run as the tests run them (``ckptlint.api.lint_source``).

Over the rule examples and the cases: ``python benchmarks/ast_edits_parity.py --examples``;
over every fix the tests make: ``python -m pytest tests/rules -p ast_edits_parity`` with
``benchmarks`` on ``PYTHONPATH``;
over trees: ``python benchmarks/ast_edits_parity.py TREE [TREE ...]`` (each file linted with
every rule, the tree as its project). Prints the edits compared by builder, the units parsed
by kind, the mismatches, and the CPU time of the builders each side (libcst's without its
whole-module parse, which the rules have already done; ``ast``'s with its statement parses).

``--nodes``: instead of the rules' fixes, every edit on every node that can take one (each call
gets a keyword and loses each argument, each dict gets an entry, each keyword and attribute
is renamed, each expression replaced), ``--limit N`` nodes of a kind a file at most.

``--huge``: the case of a 0.5 MiB file of five 33,000-element list lines and one
``checkpoint(f, x)`` call without ``use_reentrant``: the time and peak memory (a fresh process
each) of building CKP001's edit from the statement versus from a whole-module libcst parse.
"""

from __future__ import annotations

import argparse
import ast
import json
import resource
import subprocess
import sys
import textwrap
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import libcst as cst

from ckptlint.rules import edits as ast_edits
from ckptlint.semantic.ast_analysis import AstAnalysis, parse_ast
from ckptlint.text.diagnostics import Edit as _Edit
from ckptlint.text.source import SourceFile

#: The libcst side: the text logic of ``rules/edits.py`` on libcst nodes of the whole module
#: (the rules' edits before they read one statement).
edits = SimpleNamespace(
    Edit=_Edit,
    replace_node=ast_edits._cst_replace_node,
    add_keyword_argument=ast_edits._cst_add_keyword_argument,
    remove_argument=ast_edits._cst_remove_argument,
    add_dict_entry=ast_edits._cst_add_dict_entry,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling parity_files

_BUILDERS = ("replace_node", "add_keyword_argument", "remove_argument", "add_dict_entry")


@dataclass
class EditComparison:
    """What was compared and where the two sides differ."""

    edits: Counter[str] = field(default_factory=Counter)  # builder calls compared, by builder
    units: Counter[str] = field(default_factory=Counter)  # statements parsed by the ast side, by kind
    mismatches: list[str] = field(default_factory=list)
    skipped: int = 0  # nodes of an f-string ast misplaces (before Python 3.12): not compared
    cst_seconds: float = 0.0
    ast_seconds: float = 0.0


class _AstSide:
    """The ``ast`` analysis of the texts the rules edit, and an index of its nodes by offsets."""

    def __init__(self) -> None:
        self.analyses: dict[str, AstAnalysis | None] = {}
        self.index: dict[str, dict[tuple[int, int], list[ast.AST]]] = {}

    def analysis(self, source: SourceFile) -> AstAnalysis | None:
        if source.text not in self.analyses:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.analyses[source.text] = parse_ast(SourceFile(source.path, source.text))
        return self.analyses[source.text]

    def at(self, analysis: AstAnalysis, start: int, end: int) -> list[ast.AST]:
        """The ``ast`` nodes (statements left out) of offsets ``[start, end)``, outermost first."""
        index = self.index.get(analysis.source.text)
        if index is None:
            index = {}
            for node in ast.walk(analysis.tree):
                if getattr(node, "end_lineno", None) is not None and not isinstance(node, ast.stmt):
                    index.setdefault(analysis.offsets(node), []).append(node)
            self.index[analysis.source.text] = index
        return index.get((start, end), [])

    def clear(self) -> None:
        self.analyses.clear()
        self.index.clear()


def _expression(side: _AstSide, analysis: AstAnalysis, cst_analysis: Any, node: cst.CSTNode) -> ast.AST | None:
    """The ``ast`` expression that corresponds to libcst expression ``node``."""
    start, end = cst_analysis.offsets(node)
    found = [n for n in side.at(analysis, start, end) if isinstance(n, ast.expr)]
    if found:
        return found[0]
    if isinstance(node, cst.GeneratorExp):  # ast's range holds the call's parentheses
        text = analysis.source.text
        left = text.rindex("(", 0, start)
        right = text.index(")", end) + 1
        return next((n for n in side.at(analysis, left, right) if isinstance(n, ast.GeneratorExp)), None)
    return None


def _counterpart(side: _AstSide, analysis: AstAnalysis, cst_analysis: Any, node: cst.CSTNode) -> tuple[str, ast.AST | None]:
    """``(how, ast node)``: ``how`` is ``"keyword"`` (the node is a keyword's name: the
    ``ast.keyword``), ``"attribute"`` (an attribute's name: the ``ast.Attribute``) or
    ``"node"``."""
    parent = cst_analysis.model.parents.get(node)
    start, end = cst_analysis.offsets(node)
    if isinstance(parent, cst.Arg) and parent.keyword is node:
        pstart, pend = cst_analysis.offsets(parent)
        found = [n for n in side.at(analysis, pstart, pend) if isinstance(n, ast.keyword)]
        return "keyword", found[0] if found and found[0].arg == node.value else None  # type: ignore[attr-defined]
    if isinstance(parent, cst.Attribute) and parent.attr is node:
        return "attribute", _expression(side, analysis, cst_analysis, parent)
    if isinstance(node, cst.Arg):
        if node.keyword is not None or node.star == "**":
            found = [n for n in side.at(analysis, start, end) if isinstance(n, ast.keyword)]
            return "node", found[0] if found else None
        if node.star == "*":
            found = [n for n in side.at(analysis, start, end) if isinstance(n, ast.Starred)]
            return "node", found[0] if found else None
        return "node", _expression(side, analysis, cst_analysis, node.value)
    return "node", _expression(side, analysis, cst_analysis, node)


def _ast_edits(side: _AstSide, name: str, cst_analysis: Any, args: tuple, timer: list[float]) -> tuple[Edit, ...] | str:
    """The ``ast`` twin's edits for a call ``name(cst_analysis, *args)``, or why there are none;
    adds the seconds its builder takes to ``timer[0]`` (the ``ast`` parse and the search for
    the ``ast`` node left out: the analysis has them)."""
    analysis = side.analysis(cst_analysis.source)
    if analysis is None:
        return "ast refuses the text"
    nodes = [_counterpart(side, analysis, cst_analysis, a) if isinstance(a, cst.CSTNode) else ("value", a) for a in args]
    for how, node in nodes:
        if node is None:
            return f"no ast node for a {how}"
    started = time.process_time()
    try:
        if name == "replace_node":
            (how, node), (_, content) = nodes
            if how == "attribute":
                return (ast_edits.replace_attribute_name(analysis, node, content),)  # type: ignore[arg-type]
            return (ast_edits.replace_node(analysis, node, content),)  # type: ignore[arg-type]
        builder: Callable[..., tuple[Edit, ...]] = getattr(ast_edits, name)
        return builder(analysis, *(node for _, node in nodes))
    finally:
        timer[0] += time.process_time() - started


Edit = edits.Edit


@contextmanager
def recording(result: EditComparison) -> Iterator[_AstSide]:
    """Wrap the edit builders of every rule module (see the module docstring) for the time of
    the ``with``; comparisons go to ``result``."""
    from ckptlint.rules import ALL_RULES

    side = _AstSide()
    modules = {sys.modules[rule.__module__] for rule in ALL_RULES.values()}
    modules |= {m for n, m in list(sys.modules.items()) if n.startswith("ckptlint.rules.") and m is not None}
    modules -= {edits, ast_edits}
    originals = {name: getattr(edits, name) for name in _BUILDERS}
    patched: list[tuple[Any, str, Any]] = []

    def wrap(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(cst_analysis: Any, *args: Any) -> Any:
            started = time.process_time()
            got = original(cst_analysis, *args)
            middle = time.process_time()
            expected = (got,) if isinstance(got, edits.Edit) else tuple(got)
            timer = [0.0]
            try:
                mine = _ast_edits(side, name, cst_analysis, args, timer)
            except Exception as exc:  # noqa: BLE001 - a failure is a mismatch to report
                mine = f"{type(exc).__name__}: {exc}"
            result.cst_seconds += middle - started
            result.ast_seconds += timer[0]
            result.edits[name] += 1
            if mine != expected:
                where = f"{cst_analysis.source.path}:{expected[0].start if expected else '?'}"
                result.mismatches.append(f"{where} {name}: libcst {expected!r} ast {mine!r}")
            return got

        return wrapper

    for module in modules:
        for name in _BUILDERS:
            if getattr(module, name, None) is originals[name]:
                patched.append((module, name, originals[name]))
                setattr(module, name, wrap(name, originals[name]))
    try:
        yield side
    finally:
        for module, name, original in patched:
            setattr(module, name, original)
        for analysis in side.analyses.values():
            if analysis is not None:
                for unit in analysis.derived.get("edits.statements", {}).values():  # type: ignore[union-attr]
                    result.units[unit.kind] += 1


def example_runs() -> list[tuple[str, str, list[str], dict[str, str] | None]]:
    """``(label, text, select, versions)`` for every rule example (as ``tests/test_rule_specs.py``
    runs them), every rule page block and every case file (all rules)."""
    from ckptlint.rules import ALL_RULES, Invalid
    from ckptlint.testing import example_select, example_versions

    root = Path(__file__).resolve().parents[1]
    runs = []
    for code, rule in sorted(ALL_RULES.items()):
        for kind in ("VALID", "INVALID"):
            for index, example in enumerate(getattr(rule, kind)):
                text = example.code if isinstance(example, Invalid) else example
                runs.append((f"{code}-{kind.lower()}-{index}", textwrap.dedent(text), example_select(rule), example_versions(rule)))
    for folder in (root / "tests" / "cases", root.parent / "shared" / "cases"):
        for path in sorted(folder.rglob("*.py")) if folder.is_dir() else []:
            runs.append((path.name, path.read_text(encoding="utf-8"), ["ALL"], None))
    return runs


def compare_examples() -> EditComparison:
    """Lint every example and case with the builders wrapped."""
    from ckptlint.api import lint_source

    result = EditComparison()
    for label, text, select, versions in example_runs():
        with recording(result):
            try:
                lint_source(text, f"{label}.py", select=select, target_versions=versions)
            except Exception:  # noqa: BLE001 - an example that does not lint has no edit
                continue
    return result


def compare_tree(root: Path) -> tuple[EditComparison, int]:
    """Lint every gated file of ``root`` with every rule, the builders wrapped."""
    from parity_files import comparable_files

    from ckptlint.api import lint_source
    from ckptlint.semantic.project import Project

    result = EditComparison()
    files, _ = comparable_files(root)
    project = Project([root])
    for item in files:
        with recording(result):
            try:
                lint_source(item.text, str(item.path), select=["ALL"], project=project)
            except Exception:  # noqa: BLE001 - a file that does not lint has no edit
                continue
    return result, len(files)


# ---------------------------------------------------------------- as a pytest plugin

_SESSION: list[Any] = []


def pytest_configure(config: Any) -> None:
    """With ``-p ast_edits_parity`` (this folder on the path): wrap the builders for the whole
    test session, so every fix the tests make is compared (``tests/rules``' programs too)."""
    result = EditComparison()
    context = recording(result)
    context.__enter__()
    _SESSION[:] = [result, context]


def pytest_unconfigure(config: Any) -> None:
    if _SESSION:
        result, context = _SESSION
        context.__exit__(None, None, None)
        print("\n== fixes made by the tests")
        _print(result)


# ---------------------------------------------------------------- every node of a text


def _cst_counterpart(
    by_range: dict[tuple[int, int], list[cst.CSTNode]], text: str, node: ast.AST, start: int, end: int
) -> cst.CSTNode | None:
    """The libcst node of the whole module for ``ast`` node ``node`` (offsets ``[start, end)``):
    the argument for a keyword or a starred argument, else the outermost expression; where
    ``ast``'s range holds parentheses libcst's leaves out (a tuple's own, a call's around its
    only argument, a generator), the expression inside them."""
    found = by_range.get((start, end), [])
    if isinstance(node, ast.keyword):
        return next((n for n in found if isinstance(n, cst.Arg)), None)
    if isinstance(node, ast.Starred):
        return next((n for n in reversed(found) if isinstance(n, (cst.Arg, cst.StarredElement))), None)
    expression = next((n for n in reversed(found) if isinstance(n, cst.BaseExpression)), None)
    if expression is None and isinstance(node, (ast.GeneratorExp, ast.Tuple)) and text[start : start + 1] == "(":
        wanted = cst.GeneratorExp if isinstance(node, ast.GeneratorExp) else cst.Tuple
        spans = {n: span for span, nodes in by_range.items() for n in nodes}
        for span, nodes in by_range.items():
            for candidate in nodes:
                if isinstance(candidate, wanted) and candidate.lpar and spans[candidate.lpar[-1]][0] == start:
                    return candidate
                if isinstance(candidate, cst.Call) and span[1] == end and len(candidate.args) == 1:
                    value = candidate.args[0].value
                    if isinstance(value, wanted) and not value.lpar and start < spans[value][0]:
                        return value
    return expression


def compare_nodes(text: str, path: str = "<compared>", limit: int | None = None) -> EditComparison:
    """Every edit both ways on every node of ``text`` that can take one: each call gets a
    keyword and loses each argument, each dict gets an entry, each keyword and attribute is
    renamed, each expression replaced (by text holding ``"``, which an f-string changes);
    ``limit``: at most that many nodes of each kind."""
    from ckptlint.semantic.analysis import ModuleAnalysis
    from ckptlint.semantic.parse import parse_module_unvalidated
    from ckptlint.text.positions import node_offsets

    result = EditComparison()
    source = SourceFile(path, text)
    started = time.process_time()
    module = ModuleAnalysis(source, parse_module_unvalidated(text))
    by_range: dict[tuple[int, int], list[cst.CSTNode]] = {}
    for node, span in node_offsets(module.module).items():
        by_range.setdefault(span, []).append(node)
    result.cst_seconds += time.process_time() - started
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        analysis = parse_ast(SourceFile(path, text))
    assert analysis is not None
    seen: Counter[str] = Counter()

    def both(name: str, node: ast.AST, cst_way: Callable[[], Any], ast_way: Callable[[], Any]) -> None:
        seen[name] += 1
        if limit is not None and seen[name] > limit:
            return
        one = time.process_time()
        try:
            expected: Any = cst_way()
        except Exception as exc:  # noqa: BLE001 - compared like an answer
            expected = type(exc).__name__
        two = time.process_time()
        try:
            mine: Any = ast_way()
        except Exception as exc:  # noqa: BLE001
            mine = f"{type(exc).__name__}: {exc}"
        result.cst_seconds += two - one
        result.ast_seconds += time.process_time() - two
        result.edits[name] += 1
        expected = (expected,) if isinstance(expected, edits.Edit) else expected
        mine = (mine,) if isinstance(mine, edits.Edit) else mine
        if expected != mine:
            result.mismatches.append(f"{path}:{analysis.start(node)} {name}: libcst {expected!r} ast {mine!r}")

    # libcst reads a subscript's ``a, b`` as its elements, with no tuple
    no_tuple = {id(n.slice) for n in ast.walk(analysis.tree) if isinstance(n, ast.Subscript)}
    in_fstring = {id(n) for f in ast.walk(analysis.tree) if isinstance(f, ast.JoinedStr) for n in ast.walk(f)}
    for node in ast.walk(analysis.tree):
        if getattr(node, "end_lineno", None) is None or isinstance(node, ast.stmt) or id(node) in no_tuple:
            continue
        start, end = analysis.offsets(node)
        counterpart = _cst_counterpart(by_range, text, node, start, end)
        if counterpart is None:
            if id(node) in in_fstring and sys.version_info < (3, 12):
                result.skipped += 1  # before 3.12, ast misplaces some nodes of an f-string
            elif isinstance(node, (ast.expr, ast.keyword)) and not isinstance(node, (ast.Starred, ast.Slice)):
                result.mismatches.append(f"{path}:{analysis.start(node)} no libcst node for {type(node).__name__}")
            continue
        if isinstance(node, ast.Call) and isinstance(counterpart, cst.Call):
            both("add_keyword_argument", node, partial(edits.add_keyword_argument, module, counterpart, 'k="v"'),
                 partial(ast_edits.add_keyword_argument, analysis, node, 'k="v"'))
            for arg in [*node.args, *node.keywords]:
                inner = _cst_counterpart(by_range, text, arg, *analysis.offsets(arg))
                cst_arg = next((a for a in counterpart.args if a is inner or a.value is inner), None)
                if cst_arg is None:
                    result.mismatches.append(f"{path}:{analysis.start(arg)} no libcst argument")
                    continue
                both("remove_argument", arg, partial(edits.remove_argument, module, counterpart, cst_arg),
                     partial(ast_edits.remove_argument, analysis, node, arg))
        elif isinstance(node, ast.Dict) and isinstance(counterpart, cst.Dict):
            both("add_dict_entry", node, partial(edits.add_dict_entry, module, counterpart, '"k": "v"'),
                 partial(ast_edits.add_dict_entry, analysis, node, '"k": "v"'))
        elif isinstance(node, ast.keyword) and isinstance(counterpart, cst.Arg) and counterpart.keyword is not None:
            both("replace_node", node, partial(edits.replace_node, module, counterpart.keyword, "renamed"),
                 partial(ast_edits.replace_node, analysis, node, "renamed"))
        if isinstance(node, ast.Attribute) and isinstance(counterpart, cst.Attribute):
            both("replace_attribute_name", node, partial(edits.replace_node, module, counterpart.attr, "renamed"),
                 partial(ast_edits.replace_attribute_name, analysis, node, "renamed"))
        if isinstance(node, ast.expr) and isinstance(counterpart, cst.BaseExpression):
            both("replace_node", node, partial(edits.replace_node, module, counterpart, 'f("x")'),
                 partial(ast_edits.replace_node, analysis, node, 'f("x")'))
    for unit in analysis.derived.get("edits.statements", {}).values():  # type: ignore[union-attr]
        result.units[unit.kind] += 1
    return result


def compare_tree_nodes(root: Path, limit: int | None) -> tuple[EditComparison, int]:
    """:func:`compare_nodes` on every gated file of ``root``."""
    from parity_files import comparable_files

    total = EditComparison()
    files, _ = comparable_files(root)
    for item in files:
        _add(total, compare_nodes(item.text, str(item.path), limit))
    return total, len(files)


def _add(total: EditComparison, result: EditComparison) -> None:
    total.edits.update(result.edits)
    total.units.update(result.units)
    total.mismatches += result.mismatches
    total.skipped += result.skipped
    total.cst_seconds += result.cst_seconds
    total.ast_seconds += result.ast_seconds


# ---------------------------------------------------------------- the huge file

_ROW = "[" + ", ".join(str(i % 20) for i in range(33_000)) + "]"


def huge_text() -> str:
    """Five 33,000-element list lines, then one ``checkpoint(f, x)`` without ``use_reentrant``."""
    lines = ["import torch", *(f"DATA_{i} = {_ROW}" for i in range(5)), "", "def forward(f, x):"]
    lines.append("    return torch.utils.checkpoint.checkpoint(f, x)")
    return "\n".join(lines) + "\n"


def _huge_call(tree: ast.Module) -> ast.Call:
    function = tree.body[-1]
    assert isinstance(function, ast.FunctionDef) and isinstance(function.body[0], ast.Return)
    call = function.body[0].value
    assert isinstance(call, ast.Call)
    return call


def huge_once(way: str) -> dict[str, Any]:
    """Build CKP001's edit on :func:`huge_text` one ``way`` (``"statement"``: ``ast.parse``, then
    the statement's libcst tree; ``"module"``: ``ast.parse`` then a whole-module libcst parse, as
    the rules do today); seconds of each step and the process's peak memory."""
    from ckptlint.semantic.analysis import ModuleAnalysis
    from ckptlint.semantic.parse import parse_module_unvalidated

    text = huge_text()
    source = SourceFile("huge.py", text)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started, cpu_started = time.perf_counter(), time.process_time()
    analysis = parse_ast(source)
    assert analysis is not None
    call = _huge_call(analysis.tree)
    after_ast = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    parsed, cpu_parsed = time.perf_counter(), time.process_time()
    if way == "statement":
        found = ast_edits.add_keyword_argument(analysis, call, "use_reentrant=False")
    else:
        module = ModuleAnalysis(source, parse_module_unvalidated(text))
        cst_call = next(n for n in _cst_calls(module.module) if module.offsets(n) == analysis.offsets(call))
        found = edits.add_keyword_argument(module, cst_call, "use_reentrant=False")
    done, cpu_done = time.perf_counter(), time.process_time()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "way": way,
        "chars": len(text),
        "ast_parse_s": round(parsed - started, 4),
        "edit_s": round(done - parsed, 4),
        "ast_parse_cpu_s": round(cpu_parsed - cpu_started, 4),
        "edit_cpu_s": round(cpu_done - cpu_parsed, 4),
        "peak_rss_mib": round(peak / 1024, 1),
        "rss_before_mib": round(before / 1024, 1),
        "peak_rss_after_ast_parse_mib": round(after_ast / 1024, 1),
        "edits": [e.to_dict() for e in found],
    }


def _cst_calls(module: cst.Module) -> Iterator[cst.Call]:
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call):
            yield node
        stack.extend(node.children)


def _huge_report() -> None:
    runs = []
    for way in ("statement", "module"):
        out = subprocess.run(
            [sys.executable, __file__, "--huge-once", way], capture_output=True, text=True, check=True
        ).stdout
        runs.append(json.loads(out))
    for run in runs:
        print(json.dumps({k: v for k, v in run.items() if k != "edits"}))
    print("same edits:", runs[0]["edits"] == runs[1]["edits"], runs[0]["edits"])


def _print(result: EditComparison, files: int | None = None) -> None:
    if files is not None:
        print(f"files: {files}")
    print(f"edits compared: {sum(result.edits.values())} {dict(sorted(result.edits.items()))}")
    print(f"units parsed (ast side): {dict(sorted(result.units.items()))}")
    print(f"cpu s: libcst builders {result.cst_seconds:.3f}, ast builders (statement parses included) {result.ast_seconds:.3f}")
    print(f"mismatches: {len(result.mismatches)} (nodes of f-strings ast misplaces, not compared: {result.skipped})")
    for line in result.mismatches[:50]:
        print("  " + line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="*", type=Path)
    parser.add_argument("--examples", action="store_true", help="the rule examples and the cases")
    parser.add_argument("--huge", action="store_true", help="the 0.5 MiB file: time and memory both ways")
    parser.add_argument("--nodes", action="store_true", help="every node of each file, not the rules' fixes")
    parser.add_argument("--limit", type=int, default=None, help="with --nodes: at most that many nodes of a kind a file")
    parser.add_argument("--huge-once", choices=("statement", "module"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.huge_once:
        print(json.dumps(huge_once(args.huge_once)))
        return 0
    if args.huge:
        _huge_report()
    if args.examples:
        print("== rule examples and cases")
        _print(compare_examples())
    total = EditComparison()
    count = 0
    for tree in args.trees:
        result, files = compare_tree_nodes(tree, args.limit) if args.nodes else compare_tree(tree)
        print(f"== {tree}")
        _print(result, files)
        _add(total, result)
        count += files
    if len(args.trees) > 1:
        print("== all trees")
        _print(total, count)
    return 0


if __name__ == "__main__":
    sys.exit(main())

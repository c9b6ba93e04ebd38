"""The semantic model on CPython's ``ast`` against the one on libcst: same answers, and what each costs.

For one text, :func:`compare` builds both models and compares, for every name read (an
``ast.Name`` in a load context, matched to libcst's ``Name`` at the same 1-based line and
column):

- the scope it is evaluated in (kind, qualified name, where it starts);
- its bindings (``lookup`` and ``bindings_at``): kind, name, where each is bound, the binding
  node's kind, the scope and the scope that declared it, the imported or defined qualified
  name, the whole value, and where the value comes from (value, path, attribute);
- its qualified names; for the bindings, whether each ``precedes`` the read; the enclosing
  function; the mutations ``mutations_of`` gives for it;

for every attribute read, its qualified names; for every scope, the names it binds with the
same binding records, its ``global``/``nonlocal`` names and its mutations; the calls, the
absolute module of every ``from`` import and the star imports. Positions of libcst nodes come
from :func:`ckptlint.text.positions.node_offsets`, of ``ast`` nodes from
:meth:`SourceFile.ast_position`; a node without a position in ``ast`` (a comprehension's or a
``with`` item's) is placed at the first name of its target.

Over a folder (``python benchmarks/ast_model_parity.py TREE [TREE ...]``): the files the gate
lets through (:func:`ckptlint.lint.gate.file_may_have_findings`), each compared, and the CPU
time and peak memory of libcst parse + model against ``ast`` parse + model, each side in a
process of its own that builds the files one at a time (:func:`measure`). ``--all`` takes
every ``.py`` file; ``--json FILE`` writes the numbers.
"""

from __future__ import annotations

import argparse
import ast
import gc
import json
import sys
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.bindings import Binding, BindingKind, Mutation, Scope
from ckptlint.semantic.model import SemanticModel
from ckptlint.semantic.parse import parse_module_unvalidated
from ckptlint.text.positions import node_offsets
from ckptlint.text.source import SourceFile

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling parity_files

from parity_files import comparable_files, module_name_of, multiset_mismatches

#: ``ast`` node classes under the name of libcst's class for the same node.
_AST_NODE_NAMES = {
    "AsyncFor": "For",
    "comprehension": "CompFor",
    "withitem": "WithItem",
    "alias": "ImportAlias",
    "AsyncFunctionDef": "FunctionDef",
    "arg": "Param",
    "Delete": "Del",
    "AsyncWith": "With",
}
_CST_NODE_NAMES = {"ExceptStarHandler": "ExceptHandler"}


@dataclass
class Comparison:
    """What :func:`compare` compared and where the two models differ."""

    names: int = 0
    attributes: int = 0
    bindings: int = 0
    scopes: int = 0
    mutations: int = 0
    calls: int = 0
    mismatches: list[str] = field(default_factory=list)

    def add(self, other: Comparison) -> None:
        for name in ("names", "attributes", "bindings", "scopes", "mutations", "calls"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.mismatches += other.mismatches


class _Side:
    """One model with the readings the comparison makes of it, in the same vocabulary for both."""

    def __init__(
        self, model: SemanticModel | AstModel, position: Callable[[object], tuple[int, int]], dump: Callable[[object], str]
    ) -> None:
        self.model = model
        self.position = position
        self.dump = dump
        self._bindings: dict[int, tuple] = {}  # a binding's reading, by id (read once per binding)
        self._mutations: dict[tuple[str, int], list[tuple]] = {}

    def node_name(self, node: object) -> str:
        name = type(node).__name__
        return _AST_NODE_NAMES.get(name, _CST_NODE_NAMES.get(name, name))

    def anchor(self, node: object) -> tuple[int, int]:
        """Where ``node`` is, by the same convention on both sides."""
        kind = type(node)
        if kind is cst.CompFor or kind is ast.comprehension:
            return self.first_name(node.target)  # type: ignore[attr-defined]
        if kind is cst.WithItem:
            return self.first_name(node.asname.name) if node.asname is not None else self.position(node.item)  # type: ignore[attr-defined]
        if kind is ast.withitem:
            target = node.optional_vars  # type: ignore[attr-defined]
            return self.first_name(target) if target is not None else self.position(node.context_expr)  # type: ignore[attr-defined]
        if kind is cst.Param:
            return self.position(node.name)  # type: ignore[attr-defined]
        if kind is cst.Module or kind is ast.Module:
            return (0, 0)
        return self.position(node)

    def first_name(self, node: object) -> tuple[int, int]:
        if isinstance(node, ast.AST):
            found = [self.position(n) for n in ast.walk(node) if type(n) is ast.Name]
        else:
            from ckptlint.semantic.walk import iter_tree

            found = [self.position(n) for n in iter_tree(node) if type(n) is cst.Name]  # type: ignore[arg-type]
        return min(found) if found else self.position(node)

    def scope(self, scope: Scope | None) -> tuple | None:
        if scope is None:
            return None
        if scope.kind.value == "comprehension":
            generators = scope.node.generators if isinstance(scope.node, ast.AST) else [scope.node.for_in]  # type: ignore[attr-defined]
            return (scope.kind.value, scope.qualname, self.first_name(generators[0].target))
        return (scope.kind.value, scope.qualname, self.anchor(scope.node))

    def binding(self, binding: Binding) -> tuple:
        found = self._bindings.get(id(binding))
        if found is None:
            found = self._bindings[id(binding)] = self._binding(binding)
        return found

    def _binding(self, binding: Binding) -> tuple:
        assigned = binding.assigned
        where = self.position(assigned.target) if assigned is not None else self.anchor(binding.node)
        how = None
        if assigned is not None:
            value = None if assigned.value is None else self.dump(assigned.value)
            how = (assigned.kind.value, value, assigned.path, assigned.attr)
        return (
            binding.kind.value,
            binding.name,
            where,
            self.node_name(binding.node),
            self.scope(binding.scope),
            self.scope(binding.declared_in),
            binding.target,
            None if binding.value is None else self.dump(binding.value),
            how,
        )

    def mutation(self, mutation: Mutation) -> tuple:
        return (mutation.base, self.node_name(mutation.node), self.anchor(mutation.node), mutation.kind.value, mutation.method)

    def scopes(self) -> list[tuple]:
        model = self.model
        every = [model.module_scope, *model.scope_of_definition.values()]  # type: ignore[list-item]
        mutations: dict[int, list[tuple]] = {}
        for mutation in model.mutations:
            mutations.setdefault(id(mutation.scope), []).append(self.mutation(mutation))
        return [
            (
                self.scope(scope),
                sorted((name, [self.binding(b) for b in bindings]) for name, bindings in scope.bindings.items()),  # type: ignore[attr-defined]
                sorted(scope.globals),  # type: ignore[attr-defined]
                sorted(scope.nonlocals),  # type: ignore[attr-defined]
                sorted(mutations.get(id(scope), []), key=repr),
            )
            for scope in every
        ]

    def mutations_of(self, identifier: str, scope: Scope) -> list[tuple]:
        key = (identifier, id(scope))
        found = self._mutations.get(key)
        if found is None:
            mutations = self.model.mutations_of(identifier, scope)  # type: ignore[arg-type]
            found = self._mutations[key] = sorted((self.mutation(m) for m in mutations), key=repr)
        return found

    def read(self, name: object) -> tuple:
        """Everything compared of one name read."""
        model = self.model
        scope = model.scope_of(name)  # type: ignore[arg-type]
        found = model.bindings_at(name)  # type: ignore[arg-type]
        identifier = name.id if isinstance(name, ast.Name) else name.value  # type: ignore[attr-defined]
        functions = (ast.FunctionDef, ast.AsyncFunctionDef) if isinstance(name, ast.AST) else (cst.FunctionDef,)
        function = model.enclosing(name, *functions)  # type: ignore[arg-type]
        return (
            self.scope(scope),
            [self.binding(b) for b in model.bindings_of(name)],  # type: ignore[arg-type]
            [self.binding(b) for b in found],
            sorted(model.qualified_names(name)),  # type: ignore[arg-type]
            # a libcst ``Param``'s parent, ``Parameters``, has none: there ``precedes`` answers
            # ``None`` for a parameter; the ``ast`` model's ``arg`` is below its function
            [model.precedes(b.node, name) for b in found if b.kind is not BindingKind.PARAMETER],  # type: ignore[arg-type]
            None if function is None else self.anchor(function),
            self.mutations_of(identifier, scope),
        )


def compare(text: str, module_name: str = "", is_package: bool = False) -> Comparison:
    """Build both models of ``text`` and compare them (see the module docstring)."""
    source = SourceFile("<compared>", text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(text)
    module = parse_module_unvalidated(text)
    offsets = node_offsets(module)

    def cst_position(node: object) -> tuple[int, int]:
        return source.position(offsets[node][0])  # type: ignore[index]

    def cst_end(node: object) -> tuple[int, int]:
        return source.position(offsets[node][1])  # type: ignore[index]

    def ast_position(node: object) -> tuple[int, int]:
        return source.ast_position(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def ast_end(node: object) -> tuple[int, int]:
        return source.ast_position(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def cst_dump(node: object) -> str:
        code = module.code_for_node(node)  # type: ignore[arg-type]
        return ast.dump(ast.parse(f"(\n{code}\n)", mode="eval").body)

    left = _Side(SemanticModel.build(module, module_name, is_package), cst_position, cst_dump)
    right = _Side(AstModel.build(tree, module_name, is_package), ast_position, ast.dump)
    result = Comparison()
    mismatches = result.mismatches

    def check(what: str, expected: object, got: object) -> None:
        if expected != got:
            mismatches.append(f"{what}: libcst {expected!r} != ast {got!r}")

    cst_names: dict[tuple[int, int], cst.Name] = {}
    cst_attributes: dict[tuple[tuple[int, int], tuple[int, int]], cst.Attribute] = {}
    for node in offsets:
        if type(node) is cst.Name:
            cst_names.setdefault(cst_position(node), node)
        elif type(node) is cst.Attribute:
            cst_attributes[(cst_position(node), cst_end(node))] = node
    for node in ast.walk(tree):
        kind = type(node)
        if kind is ast.Name and type(node.ctx) is ast.Load:  # type: ignore[attr-defined]
            where = ast_position(node)
            other = cst_names.get(where)
            result.names += 1
            if other is None:
                mismatches.append(f"{where}: no libcst Name for {node.id}")  # type: ignore[attr-defined]
                continue
            check(f"{where} {node.id}", left.read(other), right.read(node))  # type: ignore[attr-defined]
        elif kind is ast.Constant and any(node.value is c for c in (True, False, None)):  # type: ignore[attr-defined]
            where = ast_position(node)
            other = cst_names.get(where)
            result.names += 1
            if other is None:
                mismatches.append(f"{where}: no libcst Name for {node.value}")  # type: ignore[attr-defined]
                continue
            check(f"{where} {node.value}", sorted(left.model.qualified_names(other)), sorted(right.model.qualified_names(node)))  # type: ignore[attr-defined]
        elif kind is ast.Attribute and type(node.ctx) is ast.Load:  # type: ignore[attr-defined]
            span = (ast_position(node), ast_end(node))
            attribute = cst_attributes.get(span)
            result.attributes += 1
            if attribute is None:
                mismatches.append(f"{span}: no libcst Attribute")
                continue
            check(f"{span} attribute", sorted(left.model.qualified_names(attribute)), sorted(right.model.qualified_names(node)))
    left_scopes, right_scopes = left.scopes(), right.scopes()
    result.scopes = len(right_scopes)
    result.bindings = sum(len(b) for scope in right_scopes for _, b in scope[1])
    result.mutations = len(right.model.mutations)
    _check_multiset("scope", left_scopes, right_scopes, mismatches)
    result.calls = len(right.model.calls)
    _check_multiset(
        "call",
        [(cst_position(c), cst_end(c)) for c in left.model.calls],
        [(ast_position(c), ast_end(c)) for c in right.model.calls],
        mismatches,
    )
    cst_froms = [left.model.absolute_module(n) for n in offsets if type(n) is cst.ImportFrom]
    ast_froms = [right.model.absolute_module(n) for n in ast.walk(tree) if type(n) is ast.ImportFrom]  # type: ignore[arg-type]
    _check_multiset("from import", cst_froms, ast_froms, mismatches)
    check("star imports", left.model.star_imports, right.model.star_imports)
    left.model.release()
    right.model.release()
    return result


def _check_multiset(what: str, expected: Iterable[object], got: Iterable[object], mismatches: list[str]) -> None:
    mismatches += multiset_mismatches(expected, got, what)


# --------------------------------------------------------------------------- corpus runs
def measure(side: str, paths: list[Path], root: Path) -> dict[str, float]:
    """In this process: build ``side``'s model (``"libcst"``: libcst parse + model;
    ``"ast"``: ``ast.parse`` + model) of each file, one at a time, each dropped before the
    next; the CPU seconds of the builds and the process's peak resident memory above what
    it held before the first (Linux: ``VmHWM``, which, unlike ``ru_maxrss``, does not carry
    over the peak of the process that started this one)."""
    from ckptlint.text.source import decode_source

    texts = [(decode_source(p.read_bytes(), str(p)).text, *module_name_of(p, root)) for p in paths]
    gc.collect()
    before = _peak_rss_kib()
    cpu = 0.0
    for text, name, package in texts:
        begin = time.process_time()
        if side == "libcst":
            model: SemanticModel | AstModel = SemanticModel.build(parse_module_unvalidated(text), name, package)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = AstModel.build(ast.parse(text), name, package)
        cpu += time.process_time() - begin
        model.release()
        del model
    peak = _peak_rss_kib()
    return {"cpu_s": cpu, "peak_rss_mib": peak / 1024, "peak_above_start_mib": (peak - before) / 1024}


def _peak_rss_kib() -> int:
    for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def _measure_in_child(side: str, paths: list[Path], root: Path) -> dict[str, float]:
    import subprocess
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as listing:
        listing.write("\n".join(str(p) for p in paths))
    try:
        done = subprocess.run(
            [sys.executable, __file__, str(root), "--measure", side, "--files-from", listing.name],
            capture_output=True, text=True, check=True,
        )
    finally:
        Path(listing.name).unlink()
    return json.loads(done.stdout)


def run_tree(root: Path, every_file: bool = False, timing_only: bool = False) -> dict[str, object]:
    """Compare (unless ``timing_only``) and time both models on the (gated) files of ``root``."""
    total = Comparison()
    files, skipped = comparable_files(root, every_file)
    compared = [f.path for f in files]
    for one in [] if timing_only else files:
        found = compare(one.text, one.module_name, one.is_package)
        found.mismatches = [f"{one.path.relative_to(root)}: {m}" for m in found.mismatches]
        total.add(found)
    return {
        "tree": root.name,
        "files": len(compared),
        "characters": sum(len(p.read_text(encoding="utf-8", errors="replace")) for p in compared),
        "skipped": skipped,
        "names": total.names,
        "attributes": total.attributes,
        "bindings": total.bindings,
        "scopes": total.scopes,
        "mutations": total.mutations,
        "calls": total.calls,
        "mismatches": total.mismatches,
        "libcst": _measure_in_child("libcst", compared, root),
        "ast": _measure_in_child("ast", compared, root),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--all", action="store_true", help="every .py file, not only the gated ones")
    parser.add_argument("--json", type=Path, help="write the numbers here")
    parser.add_argument("--timing-only", action="store_true", help="time both builds without comparing them")
    parser.add_argument("--measure", choices=("libcst", "ast"), help=argparse.SUPPRESS)
    parser.add_argument("--files-from", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    if args.measure is not None:  # the child of _measure_in_child
        paths = [Path(line) for line in args.files_from.read_text(encoding="utf-8").splitlines() if line]
        print(json.dumps(measure(args.measure, paths, args.trees[0].resolve())))
        return 0
    reports = []
    for tree in args.trees:
        report = run_tree(tree.resolve(), args.all, args.timing_only)
        reports.append(report)
        cst_side, ast_side = report["libcst"], report["ast"]
        print(
            f"{report['tree']}: {report['files']} files ({report['skipped']} skipped, {report['characters']} characters), "
            f"{report['names']} names, {report['attributes']} attributes, {report['bindings']} bindings, "
            f"{report['scopes']} scopes, {report['mutations']} mutations, {report['calls']} calls, "
            f"{len(report['mismatches'])} mismatches; "  # type: ignore[arg-type]
            f"CPU libcst {cst_side['cpu_s']:.2f} s, ast {ast_side['cpu_s']:.2f} s "  # type: ignore[index]
            f"({cst_side['cpu_s'] / max(ast_side['cpu_s'], 1e-9):.1f}x); peak RSS above start "  # type: ignore[index]
            f"libcst {cst_side['peak_above_start_mib']:.1f} MiB, ast {ast_side['peak_above_start_mib']:.1f} MiB "  # type: ignore[index]
            f"(peak RSS libcst {cst_side['peak_rss_mib']:.0f} MiB, ast {ast_side['peak_rss_mib']:.0f} MiB)"  # type: ignore[index]
        )
        for mismatch in report["mismatches"][:20]:  # type: ignore[index]
            print("  ", mismatch)
    if args.json is not None:
        args.json.write_text(json.dumps(reports, indent=2), encoding="utf-8")
    return 1 if any(r["mismatches"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())

"""A definition index of one module, built with CPython's ``ast``, and the partial source
that libcst parses when a region reaches into the module.

Rules read libcst trees, but a region that reaches ``Block`` in another module needs only
the top-level statements that define ``Block`` and what they refer to. :func:`index_for`
indexes a module's top-level statements once (CPython's parser is written in C, about ten
times faster than libcst's) and caches the index by the digest of the text, in this
process. :meth:`ModuleIndex.select` picks the statements a set of names needs and
:meth:`ModuleIndex.padded` blanks the others out, so that libcst parses only those.

Exactness. The partial tree must answer every question the evaluator asks of the module
as the whole tree would:

- Positions: :meth:`ModuleIndex.padded` replaces every character of an unselected
  statement's lines except line breaks with a space. A line of spaces is a blank line to
  Python's tokenizer and to libcst, so the padded text parses to the selected statements
  alone, has the same length as the real text, and every offset (so every 1-based line
  and column) in it is the offset in the real file. Statements are whole lines: those
  sharing a line (``a = 1; b = 2``) are one unit. Files with a line break other than
  ``\\n``, ``\\r\\n`` or ``\\r`` (form feed, ``\\v``, ``\\x1c``..., which Python's
  ``str.splitlines`` counts and the tokenizer does not), or that CPython cannot parse, are
  not indexed: they are parsed whole.
- Names: for every name a selected statement looks up in the module's scope (its
  module-level code, and the globals of the functions, classes, lambdas and comprehensions
  in it, as CPython's ``symtable`` resolves them), every top-level statement that binds the
  name at module level (assignments, ``def``/``class``, imports, ``global`` in a function,
  loop and ``with`` targets, ``except ... as``, ``match`` captures, walrus) is selected, and
  every statement that mutates it (``_CACHE.append(...)``, ``X.a = ...``, ``X[k] = ...``,
  ``del X[k]``, the semantic model's mutations; a superset), repeatedly. Every import
  statement is selected (star imports bind unknown names). So every name looked up from a
  selected statement has the same bindings and mutations as in the whole tree. Code that
  ``symtable`` refuses (``ast`` is laxer) is not indexed.
- Attribute writes: the evaluator asks whether ``<anything>.attr = ...`` appears anywhere
  in the module (``LiteralDecisions.assigned_outside``, over the semantic model's
  mutations). :attr:`Statement.attribute_writes` holds, per statement, exactly the
  attributes that question finds there (:func:`_attribute_writes` mirrors
  :class:`~ckptlint.semantic.model.SemanticModel`'s rules), and
  :attr:`~ckptlint.semantic.analysis.ModuleAnalysis.unparsed_attribute_writes` those of the
  statements not parsed.

CPython's parser accepts some code libcst's does not (and the reverse): a partial parse
may build a tree of a module whose whole parse would fail in libcst (then the region sees
its definitions, where a whole parse would have seen nothing).
"""

from __future__ import annotations

import ast
import bisect
import hashlib
import re
import symtable
import warnings
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from ckptlint.semantic.model import MUTATING_METHODS

__all__ = ["ModuleIndex", "Statement", "build_index", "cached_index", "index_for", "text_digest"]

_ODD_BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]|\r(?!\n)")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")
_NOT_BREAK = re.compile(r"[^\r\n]")


@dataclass
class Statement:
    """One top-level statement, or several that share a line (``a = 1; b = 2``).

    ``start``/``end``: 1-based first and last line (decorators included). ``binds``: names
    it binds at module level; ``plain``: those bound other than by ``def``/``class`` or an
    import (module-level variables); ``mentions``: the names it looks up in the module's
    scope; ``mutated``: those of them it may mutate (``x.a = ...``, ``x.append(...)``);
    ``attribute_writes``: attribute names it assigns (``x.attr = ...``, see :func:`_attribute_writes`);
    ``imports``: it holds an import at module level; ``definition``: a ``def``/``class``.

    What a statement spells, for deciding which statements can hold a checkpoint site
    (:mod:`ckptlint.checkpoint.sites.site_statements`): ``identifiers``, every identifier in it
    (names, attribute names, keyword-argument names, ``def``/``class``/parameter names,
    imported and bound names of imports), not strings or comments; ``imported``, ``(bound
    name, imported dotted name)`` of every import in it, nested ones too (relative ones
    start with their dots); ``apply_receivers``, the names ``X`` of its ``X.apply`` and
    ``X.y.apply``; ``defined``, the names of the functions and classes defined in it, at any
    depth; ``kind``, ``"class"``, ``"function"``, ``"import"`` or ``"other"`` (several
    statements on one line: ``"other"``); for a class, ``header`` (the identifiers of its bases,
    keywords and decorators) and ``bases`` (the names its bases start with).
    """

    start: int
    end: int
    binds: set[str] = field(default_factory=set)
    plain: set[str] = field(default_factory=set)
    mentions: set[str] = field(default_factory=set)
    attribute_writes: set[str] = field(default_factory=set)
    mutated: set[str] = field(default_factory=set)
    imports: bool = False
    definition: bool = False
    identifiers: set[str] = field(default_factory=set)
    imported: list[tuple[str, str]] = field(default_factory=list)
    apply_receivers: set[str] = field(default_factory=set)
    defined: set[str] = field(default_factory=set)
    kind: str = "other"
    header: set[str] = field(default_factory=set)
    bases: set[str] = field(default_factory=set)


@dataclass
class ClassEntry:
    """A top-level class: its name, lines, the dotted bases as written, its methods' line
    spans and the attributes ``__init__`` assigns to ``self``."""

    name: str
    start: int
    end: int
    bases: list[str]
    methods: dict[str, tuple[int, int]]
    init_attributes: list[str]


@dataclass
class ModuleIndex:
    """The top-level statements of a module and what they define (see the module docstring).

    ``depth``: the nesting depth :func:`ckptlint.semantic.analysis._depth` gives (libcst's refusal
    is decided on it exactly as for a whole parse).
    """

    digest: str
    depth: int
    statements: list[Statement]
    binders: dict[str, list[int]]
    mentioners: dict[str, list[int]]
    writers: dict[str, list[int]]
    import_statements: list[int]
    classes: dict[str, ClassEntry]
    functions: dict[str, tuple[int, int]]
    assignments: dict[str, list[int]]
    #: the module has a ``from ... import *`` at module level
    star_import: bool = False

    def select(self, names: set[str] | frozenset[str]) -> tuple[frozenset[int], frozenset[str]]:
        """The statements (indices) that ``names`` need, with every import statement, and
        the names the selection covers: asking again for any of them needs nothing more."""
        chosen: set[int] = set()
        queue: list[str] = list(names)
        seen: set[str] = set()

        def take(index: int) -> None:
            if index not in chosen:
                chosen.add(index)
                queue.extend(self.statements[index].mentions)

        for index in self.import_statements:
            take(index)
        while queue:
            name = queue.pop()
            if name in seen:
                continue
            seen.add(name)
            for index in self.binders.get(name, ()):
                take(index)
            for index in self.mentioners.get(name, ()):  # statements that mutate it
                take(index)
        return frozenset(chosen), frozenset(seen)

    def padded(self, text: str, chosen: frozenset[int]) -> tuple[str, int]:
        """``text`` with every line of the statements not in ``chosen`` blanked (each
        character but line breaks replaced by a space: same length, same offsets), and the
        number of statements kept."""
        blank: list[tuple[int, int]] = [
            (s.start, s.end) for i, s in enumerate(self.statements) if i not in chosen
        ]
        if not blank:
            return text, len(self.statements)
        lines = _LINE.findall(text)
        for start, end in blank:
            for row in range(start - 1, min(end, len(lines))):
                lines[row] = _NOT_BREAK.sub(" ", lines[row])
        return "".join(lines), len(chosen)

    def attribute_writes_outside(self, chosen: frozenset[int]) -> frozenset[str]:
        """Attribute names that statements not in ``chosen`` may write."""
        out: set[str] = set()
        for i, s in enumerate(self.statements):
            if i not in chosen:
                out |= s.attribute_writes
        return frozenset(out)


def text_digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


_CACHE: OrderedDict[str, ModuleIndex | None] = OrderedDict()
#: Indexes kept per process (least recently used dropped). One takes up to ~0.5 MB (timm's
#: 212,000-character ``vision_transformer.py``, measured with tracemalloc), most far less.
_CACHE_SIZE = 512


def cached_index(text: str) -> ModuleIndex | None:
    """The index of ``text`` when it is cached already (no counting, no building)."""
    return _CACHE.get(text_digest(text)) if _CACHE else None


def index_for(text: str, path: str = "<unknown>", tree: ast.Module | None = None, depth: int | None = None) -> ModuleIndex | None:
    """The index of ``text`` (cached per process by the digest of the text); ``None`` when
    it cannot be indexed (CPython rejects it, it nests too deep for ``ast``, odd line
    breaks). ``tree``/``depth``: CPython's tree of ``text`` and its depth, when the caller
    has them already (the pre-check of a whole parse)."""
    from ckptlint import perf

    key = text_digest(text)
    if key in _CACHE:
        perf.add("index_hits")
        _CACHE.move_to_end(key)
        return _CACHE[key]
    perf.add("index_misses")
    perf.add("chars_indexed", len(text))
    found = build_index(text, path, key, tree, depth)
    _CACHE[key] = found
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return found


def build_index(
    text: str, path: str = "<unknown>", digest: str = "", tree: ast.Module | None = None, depth: int | None = None
) -> ModuleIndex | None:
    """Index ``text`` (see :class:`ModuleIndex`); ``None`` when it cannot be."""
    from ckptlint.semantic.nesting import MAX_NESTING, deep_recursion

    if _ODD_BREAKS.search(text):
        return None
    if tree is None:
        try:
            with warnings.catch_warnings(), deep_recursion(MAX_NESTING + 101):
                warnings.simplefilter("ignore")
                # "exec" mode gives a Module (typeshed types the ONLY_AST overload as any AST)
                tree = cast(ast.Module, compile(text, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True))
        except Exception:  # noqa: BLE001 - SyntaxError, RecursionError, MemoryError, ValueError
            return None
    try:
        with warnings.catch_warnings(), deep_recursion(MAX_NESTING + 101):
            warnings.simplefilter("ignore")
            tables = symtable.symtable(text, path, "exec")
        return _index(tree, digest or text_digest(text), depth, tables)
    except (SyntaxError, RecursionError, MemoryError, ValueError):  # symtable refuses what ast took
        return None


def _index(tree: ast.Module, digest: str, depth: int | None, tables: symtable.SymbolTable) -> ModuleIndex:
    """The index of ``tree``; ``depth``, when not given, is measured while scanning (what
    :func:`~ckptlint.semantic.nesting.nesting_depth` gives: levels below the module, the
    module itself, and the longest ``and``/``or`` chain)."""
    statements: list[Statement] = []
    classes: dict[str, ClassEntry] = {}
    functions: dict[str, tuple[int, int]] = {}
    levels = chain = 0
    for field_name in tree._fields:  # the module's other fields (type_ignores) are a level too
        if field_name != "body" and getattr(tree, field_name, None):
            levels = max(levels, 1)
    for node in tree.body:
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])
        end = node.end_lineno or node.lineno
        if statements and start <= statements[-1].end:
            entry = statements[-1]
            entry.end = max(entry.end, end)
            entry.kind = "other"  # statements sharing a line: one unit of no single kind
        else:
            entry = Statement(start, end, kind=_kind(node))
            statements.append(entry)
        statement_levels, statement_chain = _scan(node, entry)
        levels = max(levels, statement_levels)
        chain = max(chain, statement_chain)
        if isinstance(node, ast.ClassDef):
            classes[node.name] = _class_entry(node, start, end)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions[node.name] = (start, end)
    starts = [s.start for s in statements]
    for table in tables.get_children():  # functions, classes, lambdas, comprehensions at module level
        at = bisect.bisect_right(starts, table.get_lineno()) - 1
        if at >= 0:
            _global_names(table, statements[at].mentions)
    for s in statements:
        s.mutated &= s.mentions  # a write into a module-level object, not into a local one
    binders: dict[str, list[int]] = {}
    mentioners: dict[str, list[int]] = {}
    writers: dict[str, list[int]] = {}
    assignments: dict[str, list[int]] = {}
    imports: list[int] = []
    for i, s in enumerate(statements):
        for name in s.binds:
            binders.setdefault(name, []).append(i)
        for name in s.plain:
            assignments.setdefault(name, []).append(i)
        for name in s.mutated:
            mentioners.setdefault(name, []).append(i)
        for name in s.attribute_writes:
            writers.setdefault(name, []).append(i)
        if s.imports:
            imports.append(i)
    star = any(
        isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names) for node in tree.body
    )
    if depth is None:
        depth = 1 + levels + chain
    return ModuleIndex(
        digest, depth, statements, binders, mentioners, writers, imports, classes, functions, assignments, star
    )


def _kind(node: ast.stmt) -> str:
    if isinstance(node, ast.ClassDef):
        return "class"
    if isinstance(node, _FUNCTIONS):
        return "function"
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return "import"
    return "other"


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _scan(top: ast.stmt, entry: Statement) -> tuple[int, int]:
    """Record what ``top`` binds at module level, mentions, spells and may write; return
    the levels of its syntax tree and its longest ``and``/``or`` chain (for the nesting depth).

    One level-order walk over every node (what ``ast.walk`` visits, without its generators),
    as :func:`~ckptlint.semantic.nesting.nesting_depth` counts levels. Names, attributes and
    ``and``/``or`` chains are recorded in the walk; the other kinds by :data:`_RECORDERS`."""
    if isinstance(top, (*_FUNCTIONS, ast.ClassDef)):
        entry.definition = True
    if isinstance(top, ast.ClassDef):
        for part in [*top.bases, *top.keywords, *top.decorator_list]:
            _identifiers(part, entry.header)
        for base in top.bases:
            _add_base(base, entry.bases)
    add = entry.identifiers.add
    recorders = _RECORDERS
    levels = chain = 0
    level: list[ast.AST] = [top]
    AST = ast.AST
    while level:
        levels += 1
        below: list[ast.AST] = []
        extend = below.extend
        append = below.append
        for node in level:
            kind = type(node)
            if type(node) is ast.Name:
                add(node.id)
            elif type(node) is ast.Attribute:
                _record_attribute(node, entry)
            elif type(node) is ast.BoolOp:
                chain = max(chain, len(node.values))
            else:
                record = recorders.get(kind)
                if record is not None:
                    record(node, entry)
            if kind in _WRITES:
                _attribute_writes(node, entry.attribute_writes)
            fields = _FIELDS.get(kind)
            if fields is None:
                fields = _fields_of(kind)
            for name in fields:
                value = getattr(node, name, None)
                if type(value) is list:
                    extend([child for child in value if isinstance(child, AST)])
                elif isinstance(value, AST):
                    append(value)
        level = below
    _module_level(top, entry)
    return levels, chain


def _record_attribute(node: ast.Attribute, entry: Statement) -> None:
    entry.identifiers.add(node.attr)
    if node.attr == "apply":
        _add_base(node.value, entry.apply_receivers)
    if type(node.ctx) is not ast.Load:  # `x.a = ...`, `del x.a`
        _add_base(node, entry.mutated)


def _record_subscript(node: ast.Subscript, entry: Statement) -> None:
    if type(node.ctx) is not ast.Load:  # `x[k] += ...`, `del x[k]`
        _add_base(node, entry.mutated)


def _record_call(node: ast.Call, entry: Statement) -> None:
    func = node.func
    if type(func) is ast.Attribute and func.attr in MUTATING_METHODS:
        _add_base(func.value, entry.mutated)


def _record_keyword(node: ast.keyword, entry: Statement) -> None:
    if node.arg:
        entry.identifiers.add(node.arg)


def _record_arg(node: ast.arg, entry: Statement) -> None:
    entry.identifiers.add(node.arg)


def _record_definition(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, entry: Statement) -> None:
    entry.identifiers.add(node.name)
    entry.defined.add(node.name)


def _record_import(node: ast.Import | ast.ImportFrom, entry: Statement) -> None:
    is_from = type(node) is ast.ImportFrom
    prefix = "." * (node.level or 0) + (node.module or "") if isinstance(node, ast.ImportFrom) else ""
    for alias in node.names:
        full = f"{prefix}.{alias.name}" if prefix and not prefix.endswith(".") else prefix + alias.name
        bound = alias.asname or (alias.name if is_from else alias.name.split(".", 1)[0])
        entry.identifiers.update(alias.name.split("."))
        entry.identifiers.add(bound)
        entry.imported.append((bound, full))


def _record_global(node: ast.Global, entry: Statement) -> None:
    entry.binds.update(node.names)
    entry.plain.update(node.names)


#: What :func:`_scan` records of a node of each kind other than names, attributes and ``and``/``or``.
_RECORDERS: dict[type, Callable[[Any, Statement], None]] = {
    ast.Subscript: _record_subscript,
    ast.Call: _record_call,
    ast.keyword: _record_keyword,
    ast.arg: _record_arg,
    ast.FunctionDef: _record_definition,
    ast.AsyncFunctionDef: _record_definition,
    ast.ClassDef: _record_definition,
    ast.Import: _record_import,
    ast.ImportFrom: _record_import,
    ast.Global: _record_global,
}


_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields_of(kind: type[ast.AST]) -> tuple[str, ...]:
    fields = _FIELDS[kind] = tuple(kind._fields)
    return fields


def _identifiers(expr: ast.AST, out: set[str]) -> None:
    for node in ast.walk(expr):
        if type(node) is ast.Name:
            out.add(node.id)
        elif type(node) is ast.Attribute:
            out.add(node.attr)
        elif type(node) is ast.keyword and node.arg:
            out.add(node.arg)


def _add_base(expr: ast.AST, out: set[str]) -> None:
    while isinstance(expr, (ast.Attribute, ast.Subscript)):
        expr = expr.value
    if isinstance(expr, ast.Name):
        out.add(expr.id)


def _global_names(table: symtable.SymbolTable, out: set[str]) -> None:
    """Names that code of ``table`` (a function, class, lambda or comprehension) and the
    scopes nested in it look up in the module's scope."""
    for symbol in table.get_symbols():
        if symbol.is_global():
            out.add(symbol.get_name())
    for child in table.get_children():
        _global_names(child, out)


_WRITES = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.comprehension)


def _attribute_writes(node: ast.AST, out: set[str]) -> None:
    """Add to ``out`` the attributes that ``LiteralDecisions.assigned_outside`` finds written
    by ``node``: the semantic model records a mutation of kind ``attribute`` (an attribute
    target, nested in a tuple or not, whose leftmost name is a plain name) or
    ``augmented`` (``x.a += ...``, ``x[k] += ...``) for it, and one of its direct targets
    (``Assign.targets``, else ``.target``) is an attribute."""
    if isinstance(node, ast.Assign):
        direct = node.targets
        recorded = any(_attribute_target(t) for t in direct)
    elif isinstance(node, ast.AugAssign):
        direct = [node.target]
        recorded = isinstance(node.target, (ast.Attribute, ast.Subscript)) and _base_is_name(node.target)
    elif isinstance(node, ast.AnnAssign):
        direct = [node.target]
        recorded = _attribute_target(node.target)
    else:  # For, AsyncFor, comprehension
        direct = [node.target]  # type: ignore[attr-defined]
        recorded = _attribute_target(node.target)  # type: ignore[attr-defined]
    if recorded:
        out.update(t.attr for t in direct if isinstance(t, ast.Attribute))


def _attribute_target(target: ast.AST) -> bool:
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_attribute_target(e) for e in target.elts)
    if isinstance(target, ast.Starred):
        return _attribute_target(target.value)
    return isinstance(target, ast.Attribute) and _base_is_name(target)


def _base_is_name(expr: ast.AST) -> bool:
    while isinstance(expr, (ast.Attribute, ast.Subscript)):
        expr = expr.value
    return isinstance(expr, ast.Name)


def _module_level(node: ast.AST, entry: Statement) -> None:
    """Bindings that ``node`` (code run at module level) makes in the module's scope."""
    kind = type(node)
    if kind in _FUNCTIONS or kind is ast.ClassDef:
        entry.binds.add(node.name)  # type: ignore[attr-defined]
        parts: list[ast.AST] = list(node.decorator_list)  # type: ignore[attr-defined]
        if kind is ast.ClassDef:
            parts += node.bases + [k.value for k in node.keywords]  # type: ignore[attr-defined]
        else:
            args = node.args  # type: ignore[attr-defined]
            parts += [d for d in args.defaults + args.kw_defaults if d is not None]
            parts += [a.annotation for a in args.posonlyargs + args.args + args.kwonlyargs if a.annotation is not None]
            parts += [a.annotation for a in (args.vararg, args.kwarg) if a is not None and a.annotation is not None]
            if node.returns is not None:  # type: ignore[attr-defined]
                parts.append(node.returns)  # type: ignore[attr-defined]
        for part in parts:
            _module_level(part, entry)
        return
    if kind is ast.Lambda:
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:  # type: ignore[attr-defined]
            _module_level(default, entry)
        return
    if kind is ast.Import or kind is ast.ImportFrom:
        entry.imports = True
        for alias in node.names:  # type: ignore[attr-defined]
            if alias.name != "*":
                entry.binds.add(alias.asname or alias.name.split(".", 1)[0])
        return
    if kind is ast.Name:
        entry.mentions.add(node.id)  # type: ignore[attr-defined]
        if not isinstance(node.ctx, ast.Load):  # type: ignore[attr-defined]
            entry.binds.add(node.id)  # type: ignore[attr-defined]
            entry.plain.add(node.id)  # type: ignore[attr-defined]
        return
    if kind is ast.NamedExpr:
        _module_level(node.target, entry)  # type: ignore[attr-defined]
        _module_level(node.value, entry)  # type: ignore[attr-defined]
        return
    if kind in _COMPREHENSIONS:  # only a walrus inside binds in the module's scope
        for inner in ast.walk(node):
            if type(inner) is ast.NamedExpr and type(inner.target) is ast.Name:
                entry.binds.add(inner.target.id)
                entry.plain.add(inner.target.id)
        _module_level(node.generators[0].iter, entry)  # type: ignore[attr-defined]
        return
    if kind is ast.ExceptHandler and node.name:  # type: ignore[attr-defined]
        entry.binds.add(node.name)  # type: ignore[attr-defined]
        entry.plain.add(node.name)  # type: ignore[attr-defined]
    elif kind in (ast.MatchAs, ast.MatchStar) and node.name:  # type: ignore[attr-defined]
        entry.binds.add(node.name)  # type: ignore[attr-defined]
        entry.plain.add(node.name)  # type: ignore[attr-defined]
    elif kind is ast.MatchMapping and node.rest:  # type: ignore[attr-defined]
        entry.binds.add(node.rest)  # type: ignore[attr-defined]
        entry.plain.add(node.rest)  # type: ignore[attr-defined]
    elif getattr(ast, "TypeAlias", None) is kind:
        _module_level(node.name, entry)  # type: ignore[attr-defined]
    for child in ast.iter_child_nodes(node):
        _module_level(child, entry)


def _class_entry(node: ast.ClassDef, start: int, end: int) -> ClassEntry:
    methods: dict[str, tuple[int, int]] = {}
    attributes: list[str] = []
    for item in node.body:
        if isinstance(item, _FUNCTIONS):
            first = min([item.lineno] + [d.lineno for d in item.decorator_list])
            methods[item.name] = (first, item.end_lineno or item.lineno)
            if item.name == "__init__" and item.args.args:
                self_name = item.args.args[0].arg
                for inner in ast.walk(item):
                    if (
                        isinstance(inner, ast.Attribute)
                        and isinstance(inner.ctx, ast.Store)
                        and isinstance(inner.value, ast.Name)
                        and inner.value.id == self_name
                        and inner.attr not in attributes
                    ):
                        attributes.append(inner.attr)
    bases = [ast.unparse(b) for b in node.bases]
    return ClassEntry(node.name, start, end, bases, methods, attributes)

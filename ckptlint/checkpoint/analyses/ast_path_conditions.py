"""The conditions on a region's way to a node (:mod:`ckptlint.checkpoint.analyses.path_conditions` tells the case),
reading :class:`~ckptlint.checkpoint.evaluator.ast_region.AstRegion` frames with the
conditions of :mod:`~ckptlint.checkpoint.sites.ast_guards`.

A mention of a function on the way there is no call, so it makes the ways unknown: a name read,
and the names ``ast`` holds as strings (a keyword's or a parameter's name, a ``class`` name,
``global``/``nonlocal`` names, an ``except ... as`` name and the names a ``match`` pattern
binds). A string literal is read from the source's tokens, each part of an implicit
concatenation alone, stripped of quotes and prefixes. The names an import binds and a
``def``'s own name are no mention.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from typing import TYPE_CHECKING

from ckptlint.checkpoint.analyses.path_conditions import may_mention
from ckptlint.checkpoint.sites.ast_guards import Condition, common, joined, local_parts

if TYPE_CHECKING:
    from ckptlint.checkpoint.evaluator.ast_region import AstFrame, AstRegion, FrameFunction
    from ckptlint.semantic.ast_analysis import AstAnalysis

__all__ = ["path_parts"]

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_QUOTES_AND_PREFIXES = "\"'rbuRBU"


def path_parts(region: AstRegion, node: ast.AST, analysis: AstAnalysis) -> Condition | None:
    """What must hold on the region's way to ``node`` (a node of ``analysis``): for each frame
    that runs the function around it, the parts shared by every way it is reached; ``()`` for
    the checkpointed callable's own body; ``None`` when the node is in no frame, or the region
    is not seen whole and the ways it shows need some test."""
    function = _function_of(node, analysis)
    if function is None:
        return None
    frames = [frame for frame in region.frames_of(function) if frame.analysis is analysis]
    if not frames:
        return None
    known: dict[int, Condition] = {}
    parts = common([_frame_parts(frame, known, set()) for frame in frames])
    if not parts:
        return ()
    return parts if region.seen_whole() and _ways_recorded(region, frames) else None


def _ways_recorded(region: AstRegion, frames: list[AstFrame]) -> bool:
    """Whether every way into the functions on the ways to ``frames`` is one the region
    recorded."""
    chain: dict[int, AstFrame] = {}
    todo = list(frames)
    while todo:
        frame = todo.pop()
        if id(frame) in chain:
            continue
        chain[id(frame)] = frame
        todo += [caller for caller, _ in frame.reached_from if caller is not None]
    ways: dict[int, set[int]] = {}
    for frame in chain.values():
        if frame.depth == 0 and all(caller is None for caller, _ in frame.reached_from):
            continue
        ways.setdefault(id(frame.function), set()).update(id(call) for _, call in frame.reached_from if call is not None)
    functions = {id(f.function): f.function for f in chain.values() if id(f.function) in ways}
    if any(isinstance(f, _DEFS) and f.decorator_list for f in functions.values()):
        return False
    names = {f.name: id(f) for f in functions.values() if isinstance(f, _DEFS)}
    if len(names) != len(functions):
        return False  # a lambda on the way: its references are not names
    modules = {id(f.analysis): f.analysis for f in region.frames}
    if not all(_mentions_recorded(analysis, names, ways) for analysis in modules.values()):
        return False
    project = region.analysis.project
    return not any(may_mention(path, names, project) for path in {path for _, _, path in region.opaque_calls})


def _string_words(analysis: AstAnalysis) -> frozenset[str]:
    """Every string literal of the module, stripped of quotes and prefixes, each part of an implicit concatenation and each string inside an
    f-string's fields alone (read from the tokens of the source once, kept with it)."""
    found = analysis.derived.get("ast_string_words")
    if found is None:
        words: set[str] = set()
        pending = [analysis.source.text]
        while pending:
            text = pending.pop()
            try:
                tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
            except (tokenize.TokenError, SyntaxError):
                continue
            for token in tokens:
                if token.type != tokenize.STRING:
                    continue
                if re.match(r"[rRbBuU]*[fF][rRbBuU]*['\"]", token.string):
                    pending += _field_texts(token.string)  # its fields hold strings of their own
                else:
                    words.add(token.string.strip(_QUOTES_AND_PREFIXES))
        analysis.derived["ast_string_words"] = found = frozenset(words)
    return found  # type: ignore[return-value]


def _field_texts(literal: str) -> list[str]:
    """The texts of the replacement fields of the f-string ``literal`` (parsed alone)."""
    try:
        expression = ast.parse(literal, mode="eval").body
    except SyntaxError:
        return []
    return [
        ast.get_source_segment(literal, value.value) or ""
        for value in ast.walk(expression)
        if isinstance(value, ast.FormattedValue)
    ]


def _named_strings(node: ast.AST) -> list[str]:
    """The names ``node`` holds as strings that count as a mention: neither a ``def``'s name nor
    an import's (see the module docstring)."""
    if isinstance(node, (ast.keyword, ast.arg)):
        return [node.arg] if node.arg is not None else []
    if isinstance(node, ast.ClassDef):
        return [node.name]
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return list(node.names)
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
        return [node.name] if node.name is not None else []
    if isinstance(node, ast.MatchMapping):
        return [node.rest] if node.rest is not None else []
    if isinstance(node, ast.MatchClass):
        return list(node.kwd_attrs)
    return []


def _mentions_recorded(analysis: AstAnalysis, names: dict[str, int], ways: dict[int, set[int]]) -> bool:
    """Whether every mention of one of ``names`` in ``analysis``'s module (its ``def`` aside) is
    the callee of a call recorded in ``ways`` for a function of that name."""
    if not names.keys().isdisjoint(_string_words(analysis)):
        return False
    recorded = set().union(*ways.values()) if ways else set()
    model = analysis.model
    for node in ast.walk(analysis.tree):
        if isinstance(node, ast.Name):
            name = node.id
        elif isinstance(node, ast.Attribute):
            name = node.attr
        else:
            if any(named in names for named in _named_strings(node)):
                return False
            continue
        if name not in names:
            continue
        if _super_of_torch_class(analysis, node):
            continue  # `super().forward(x)` in a subclass of `nn.Linear`: torch's own method
        parent = model.parent(node)
        if not (isinstance(parent, ast.Call) and parent.func is node and id(parent) in recorded):
            return False
    return True


def _super_of_torch_class(analysis: AstAnalysis, node: ast.AST) -> bool:
    """Whether ``node`` is ``super().name`` in a class whose every base is a class of torch."""
    if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Call)):
        return False
    func = node.value.func
    if not (isinstance(func, ast.Name) and func.id == "super"):
        return False
    model = analysis.model
    cls = next((a for a in model.ancestors(node) if isinstance(a, ast.ClassDef)), None)
    if cls is None or not cls.bases:
        return False
    return all(
        base in model.parents and (names := model.qualified_names(base)) and all(n.startswith("torch.") for n in names)
        for base in cls.bases
    )


def _frame_parts(frame: AstFrame, known: dict[int, Condition], active: set[int]) -> Condition:
    key = id(frame)
    if key in known:
        return known[key]
    if key in active:  # a way through itself adds nothing that its other ways need
        return ()
    active.add(key)
    ways: list[Condition] = []
    for caller, call in frame.reached_from:
        if caller is None or call is None:
            ways = [()]
            break
        ways.append(joined(_frame_parts(caller, known, active), local_parts(caller.analysis, call, parameters_given=True)))
    active.discard(key)
    known[key] = common(ways)
    return known[key]


def _function_of(node: ast.AST, analysis: AstAnalysis) -> FrameFunction | None:
    """The ``def`` or ``lambda`` nearest around ``node`` (``node`` itself when it is one)."""
    for candidate in (node, *analysis.model.ancestors(node)):
        if isinstance(candidate, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return candidate
    return None

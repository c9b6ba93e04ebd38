"""What the outer-state rules (CKP201/CKP202) share: where a name lives, which names are read
or stored, and the code of a node, over the records of :mod:`ckptlint.checkpoint.analyses.outer_state`
(:class:`~ckptlint.checkpoint.analyses.outer_state.OuterRead` and ``OuterWrite`` over ``ast`` nodes,
:class:`~ckptlint.checkpoint.evaluator.ast_region.AstFrame` and
:class:`~ckptlint.semantic.ast_analysis.AstAnalysis`).

An attribute's, a keyword's, a parameter's, a ``def``'s or an import's name is a string in
``ast``, so every ``Name`` is a load but the target of ``with ... as name``. ``ast`` keeps no
parentheses and no whitespace of its own, so :func:`node_code` (the code of a node, its own
parentheses included) reads the source text: the node's range, widened by the pairs of
parentheses around it that belong to no enclosing syntax (a call's own parentheses do, and
hold a generator argument in ``ast``'s range)."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from typing import TYPE_CHECKING, Any

from ckptlint.checkpoint.analyses.outer_state import (
    LOOP_REBINDING,
    LOOP_VARIABLE,
    STATE_KINDS,
    OuterRead,
    OuterWrite,
    Owner,
    describe,
)
from ckptlint.semantic.ast_walk import child_nodes
from ckptlint.semantic.bindings import BindingKind, Scope, ScopeKind

if TYPE_CHECKING:
    from ckptlint.checkpoint.evaluator.ast_region import AstFrame
    from ckptlint.semantic.ast_analysis import AstAnalysis
    from ckptlint.semantic.ast_model import AstBinding, AstModel, AstScope

    #: A write and a read of outer state found in an ``ast`` frame.
    AstOuterWrite = OuterWrite[ast.AST, AstFrame, AstAnalysis]
    AstOuterRead = OuterRead[ast.Name | ast.Attribute, AstFrame, AstAnalysis]

__all__ = [
    "LOOP_REBINDING",
    "LOOP_VARIABLE",
    "STATE_KINDS",
    "OuterRead",
    "OuterWrite",
    "Owner",
    "contains_node",
    "describe",
    "frame_scope",
    "frame_self_name",
    "frame_text",
    "is_load",
    "is_store",
    "node_code",
    "owner_of",
]


def frame_scope(frame: AstFrame) -> AstScope | None:
    """The scope the frame's function opens (``None`` when the model does not know it)."""
    return frame.analysis.model.scope_of_definition.get(frame.function)


def owner_of(frame: AstFrame, name: str, at: ast.AST) -> tuple[Owner, list[AstBinding]]:
    """Where ``name`` (used at ``at``) lives relative to the frame (an :class:`Owner`), and its
    bindings seen from ``at``."""
    model = frame.analysis.model
    bindings = model.lookup(name, model.scope_of(at))
    if not bindings:
        return Owner.UNKNOWN, bindings
    scope = frame_scope(frame)
    first = bindings[0]
    if first.scope is scope or (scope is not None and _inside(first.scope, scope)):
        if any(frame.is_parameter(b) for b in bindings) and all(
            frame.is_parameter(b) or b.kind is BindingKind.AUGMENTED for b in bindings
        ):
            return (Owner.SELF if name == frame_self_name(frame) else Owner.PARAMETER), bindings
        return Owner.LOCAL, bindings
    if first.kind in (BindingKind.IMPORT, BindingKind.FUNCTION, BindingKind.CLASS):
        return Owner.DEFINITION, bindings
    return Owner.OUTER, bindings


def _inside(scope: Scope[Any, Any], ancestor: Scope[Any, Any]) -> bool:
    current: Scope[Any, Any] | None = scope
    while current is not None:
        if current is ancestor:
            return True
        current = current.parent
    return False


def frame_self_name(frame: AstFrame) -> str | None:
    """The ``self`` parameter of the frame's function, only when that function is defined
    directly in a class body (a module function reached from a method has no ``self``)."""
    scope = frame_scope(frame)
    if scope is None or scope.parent is None or scope.parent.kind is not ScopeKind.CLASS:
        return None
    return frame.self_parameter()


_UNPACKED = (ast.Tuple, ast.List, ast.Starred)


def is_store(model: AstModel, node: ast.AST) -> bool:
    """Whether ``node`` is (an element of) a target of ``=``, an annotated assignment, a
    ``for`` loop or a comprehension rather than a read (not ``+=``, ``with ... as`` or
    ``:=``)."""
    child = node
    for ancestor in model.ancestors(node):
        kind = type(ancestor)
        if kind in _UNPACKED:
            child = ancestor
            continue
        if kind is ast.Assign:
            return any(target is child for target in ancestor.targets)  # type: ignore[attr-defined]
        if kind in (ast.AnnAssign, ast.For, ast.AsyncFor, ast.comprehension):
            return ancestor.target is child  # type: ignore[attr-defined]
        return False
    return False


def is_load(model: AstModel, node: ast.Name) -> bool:
    """Whether the ``Name`` node counts as a load: every ``Name`` (assignment targets included)
    but the name bound by ``with ... as name``; the names that are no load (an attribute's, a
    keyword's, a parameter's) are strings in ``ast``."""
    parent = model.parent(node)
    return not (type(parent) is ast.withitem and parent.optional_vars is node)


def contains_node(model: AstModel, outer: ast.AST, node: ast.AST) -> bool:
    """Whether ``outer`` is an ancestor of ``node`` (``node`` itself does not count)."""
    return any(a is outer for a in model.ancestors(node))


def node_code(analysis: AstAnalysis, node: ast.AST) -> str:
    """The code of ``node``: its source text with its own parentheses
    (``(a).b``'s value is ``(a)``), without the call's parentheses ``ast`` counts in a
    generator argument's range (``f(x for x in y)``'s argument is ``x for x in y``).
    Remembered per node in ``analysis.derived``."""
    memo: dict[int, tuple[ast.AST, str]] = analysis.derived.setdefault("node_code", {})  # type: ignore[assignment]
    known = memo.get(id(node))
    if known is not None and known[0] is node:
        return known[1]
    start, end = analysis.offsets(node)
    text = analysis.source.text
    parent = analysis.model.parent(node)
    starred = type(node) is ast.Starred and type(parent) in _DISPLAYS
    pairs = 0
    if parent is not None and (starred or _may_open(text, start)):
        lo, hi = _gap_bounds(analysis, parent, node, start, end)
        opening = _opening_run(text, lo, start)
        closing = _closing_run(text, end, hi)
        pairs = min(len(opening), len(closing))
        if pairs and _holds_call_parentheses(analysis, parent, node, len(opening), len(closing)):
            pairs -= 1
        elif pairs and len(opening) <= len(closing) and _holds_with_parentheses(analysis, parent, node, closing[pairs - 1]):
            pairs -= 1
        if pairs:
            start, end = opening[pairs - 1], closing[pairs - 1] + 1
        elif starred:
            end = _with_comma(text, parent, node, end, hi)
    if not pairs and type(node) is ast.GeneratorExp and _call_argument_in_call_parentheses(analysis, parent, node, start):
        inner = _blank(text[start + 1 : end - 1])  # the comments around it are the call's
        start, end = start + 1 + len(inner) - len(inner.lstrip()), start + 1 + len(inner.rstrip())
    code = text[start:end].strip()
    if "\n" in code:
        code = _without_block_indent(analysis, node, start, end).strip()
    memo[id(node)] = (node, code)
    return code


_DISPLAYS = (ast.Tuple, ast.List, ast.Set)


def _with_comma(text: str, display: ast.AST, node: ast.AST, end: int, hi: int) -> int:
    """Where the starred element ``node`` of ``display`` ends, as its code: after the comma that
    follows it, and the comments after that comma when another element follows."""
    gap = _blank(text[end:hi])
    stripped = gap.lstrip()
    if not stripped.startswith(","):
        return end
    after = end + len(gap) - len(stripped) + 1
    if display.elts[-1] is node:  # type: ignore[attr-defined]
        return after  # a trailing comma: what follows is the display's
    rest = _blank(text[after:hi])
    return after + len(rest) - len(rest.lstrip())


def _without_block_indent(analysis: AstAnalysis, node: ast.AST, start: int, end: int) -> str:
    """The text ``[start, end)`` of ``node`` as the code of a node alone: a line inside
    brackets that starts with the indentation of the statement holding ``node`` loses it (the
    lines of a string, and the ones after a backslash, are kept)."""
    text = analysis.source.text
    statement: ast.AST | None = node
    while statement is not None and not isinstance(statement, ast.stmt):
        statement = analysis.model.parent(statement)
    first = analysis.offsets(statement)[0] if statement is not None else start
    line_start = text.rfind("\n", 0, first) + 1
    indent = text[line_start : len(text[line_start:first]) - len(text[line_start:first].lstrip()) + line_start]
    if not indent:
        return text[start:end]
    strings = [span for inner in ast.walk(node) if isinstance(inner, _STRINGS) for span in _string_tokens(analysis, inner)]
    pieces: list[str] = []
    done = start
    newline = text.find("\n", start, end)
    while newline >= 0:
        after = newline + 1
        kept = text[newline - 1 : newline] == "\\" or text[newline - 2 : newline] == "\\\r"
        if not kept and not any(first < after < last for first, last in strings) and text.startswith(indent, after):
            pieces.append(text[done:after])
            done = after + len(indent)
        newline = text.find("\n", after, end)
    pieces.append(text[done:end])
    return "".join(pieces)


_STRINGS = (ast.JoinedStr, ast.Constant)


def _string_tokens(analysis: AstAnalysis, node: ast.AST) -> list[tuple[int, int]]:
    """The character ranges of the string literals ``node`` is made of, when it spans lines
    (``"a"`` and ``"b"`` of ``"a" "b"``; a line between them is no string's)."""
    if isinstance(node, ast.Constant) and not isinstance(node.value, (str, bytes)):
        return []
    start, end = analysis.offsets(node)
    text = analysis.source.text[start:end]
    if "\n" not in text:
        return []
    rows = [0]
    for line in text.splitlines(keepends=True):
        rows.append(rows[-1] + len(line))
    spans = []
    try:
        for token in tokenize.generate_tokens(io.StringIO("(" + text + ")").readline):
            if token.type == tokenize.STRING:
                (row, column), (end_row, end_column) = token.start, token.end
                shift = 1 if row == 1 else 0  # the added "("
                end_shift = 1 if end_row == 1 else 0
                spans.append((start + rows[row - 1] + column - shift, start + rows[end_row - 1] + end_column - end_shift))
    except (tokenize.TokenError, SyntaxError):
        return [(start, end)]
    return spans


def frame_text(frame: AstFrame, node: ast.AST) -> str:
    """The code of ``node`` (:func:`node_code`), cut to 40 characters for messages."""
    text = node_code(frame.analysis, node)
    return text if len(text) <= 40 else text[:37] + "..."


_COMMENT = re.compile(r"#[^\r\n]*")


def _spans(analysis: AstAnalysis, node: ast.AST) -> list[tuple[int, int]]:
    """The character ranges of ``node`` (of its children, for a node ``ast`` gives no position:
    ``arguments``, ``comprehension``, ``withitem``, ``match_case``)."""
    if getattr(node, "end_lineno", None) is not None:
        return [analysis.offsets(node)]
    return [span for child in child_nodes(node) for span in _spans(analysis, child)]


def _gap_bounds(analysis: AstAnalysis, parent: ast.AST, node: ast.AST, start: int, end: int) -> tuple[int, int]:
    """Where the text between ``node`` and its nearest siblings (or the edges of its nearest
    ancestor with a position) starts and ends: only punctuation, keywords, names kept as
    strings and comments lie there. ``(start, end)`` when that ancestor's range does not hold
    ``node`` (a decorator lies before its ``def``)."""
    lo, hi = -1, -1
    below: ast.AST = node
    above: ast.AST | None = parent
    while above is not None:
        for sibling in child_nodes(above):
            if sibling is below:
                continue
            for first, last in _spans(analysis, sibling):
                if last <= start:
                    lo = max(lo, last)
                elif first >= end:
                    hi = first if hi < 0 else min(hi, first)
        if getattr(above, "end_lineno", None) is not None:
            first, last = analysis.offsets(above)
            if not (first <= start and last >= end):
                return start, end
            return max(lo, first), (last if hi < 0 else min(hi, last))
        below, above = above, analysis.model.parent(above)
    return start, end


def _blank(text: str) -> str:
    """``text`` with its comments blanked out (same length)."""
    return _COMMENT.sub(lambda m: " " * len(m.group()), text) if "#" in text else text


def _opening_run(text: str, lo: int, start: int) -> list[int]:
    """Offsets of the ``(`` that end the gap ``[lo, start)``, from the nearest outwards."""
    gap = _blank(text[lo:start])
    found: list[int] = []
    for index in range(len(gap) - 1, -1, -1):
        char = gap[index]
        if char == "(":
            found.append(lo + index)
        elif not (char.isspace() or char == "\\"):
            break
    return found


def _closing_run(text: str, end: int, hi: int) -> list[int]:
    """Offsets of the ``)`` that start the gap ``[end, hi)``, from the nearest outwards."""
    gap = _blank(text[end:hi])
    found: list[int] = []
    for index, char in enumerate(gap):
        if char == ")":
            found.append(end + index)
        elif not (char.isspace() or char == "\\"):
            break
    return found


def _may_open(text: str, start: int) -> bool:
    """Whether a ``(`` may come right before ``start``: the last character before it on its
    line (blanks skipped) is one, or there is none (a comment may end the line before)."""
    index = start - 1
    while index >= 0 and text[index] in " \t\f":
        index -= 1
    return index < 0 or text[index] in "(\r\n"


def _holds_call_parentheses(analysis: AstAnalysis, parent: ast.AST, node: ast.AST, opening: int, closing: int) -> bool:
    """Whether the outermost pair of parentheses matched around ``node`` is the one of its
    call's arguments or its class's bases: ``node`` is the first of them in the source, and
    every ``(`` before it is matched after it."""
    kind = type(parent)
    if kind is ast.Call:
        inside: list[ast.AST] = [*parent.args, *parent.keywords]  # type: ignore[attr-defined]
    elif kind is ast.ClassDef:
        inside = [*parent.bases, *parent.keywords]  # type: ignore[attr-defined]
    else:
        return False
    if not any(item is node for item in inside) or opening > closing:
        return False
    start = analysis.offsets(node)[0]
    return not any(analysis.offsets(item)[1] <= start for item in inside if item is not node)


def _holds_with_parentheses(analysis: AstAnalysis, parent: ast.AST, node: ast.AST, closing: int) -> bool:
    """Whether the outermost pair of parentheses matched around ``node`` holds the items of its
    ``with`` (``with (a):``, the parentheses of the ``with``): ``node`` is the first item's expression,
    and a ``:`` follows the pair."""
    if type(parent) is not ast.withitem or parent.context_expr is not node:
        return False
    statement = analysis.model.parent(parent)
    if not isinstance(statement, (ast.With, ast.AsyncWith)) or statement.items[0] is not parent:
        return False
    after = _blank(analysis.source.text[closing + 1 : analysis.offsets(statement.body[0])[0]]).lstrip()
    return after.startswith(":")


def _call_argument_in_call_parentheses(analysis: AstAnalysis, parent: ast.AST | None, node: ast.AST, start: int) -> bool:
    """Whether ``node`` (a generator) is a call's only argument whose ``ast`` range starts at
    the call's own ``(``."""
    if type(parent) is not ast.Call or len(parent.args) + len(parent.keywords) != 1:
        return False
    func_end = analysis.offsets(parent.func)[1]
    return "(" not in _blank(analysis.source.text[func_end:start])

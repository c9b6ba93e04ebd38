"""What an argument expression holds, read on CPython's ``ast``: a state dict, a dict, a file
path, an optimizer, an ``nn.Module``, ``torch.save``/``torch.load`` (see
:mod:`ckptlint.checkpoint.sites.argument_kinds` for the two strengths of evidence), for
:class:`~ckptlint.semantic.ast_model.AstModel`, as a :class:`ValueKind` and a
:class:`~ckptlint.checkpoint.sites.argument_kinds.ValueGuess` whose ``node`` is an ``ast.expr``.

Readings kept so that findings stay as earlier releases reported them:

- ``True``, ``False`` and ``None`` are never a string or a path, nor an identifier
  :func:`name_hint` reads;
- an f-string's text is its literal parts joined with ``{}`` for each replacement field;
  ``ast`` keeps the parts' values, not their source text, so an escape (``f"{x}\n"``) is read
  evaluated;
- a string written in parts (``"a" "b"``) is one constant: a path when its joined text is
  one; parts of bytes (``b"a" b"b"``) are bytes (no path).
"""

from __future__ import annotations

import ast

from ckptlint.checkpoint.sites.argument_kinds import (
    _MODULE_NAME,
    _OPTIMIZER_NAME,
    _PATH_NAME,
    _SCHEDULER_NAME,
    _STATE_NAME,
    CHECKPOINT_FILE_SUFFIXES,
    ValueGuess,
    ValueKind,
)
from ckptlint.facts.saving import (
    MODULE_BASE_CLASSES,
    MODULE_FACTORIES,
    OPTIMIZER_PACKAGE,
    PATH_FACTORIES,
    SCHEDULER_PACKAGE,
    STATE_DICT_FACTORIES,
    TORCH_LOAD,
    TORCH_SAVE,
)
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.bindings import BindingKind

__all__ = ["ValueKind", "classify_value", "identifier_of", "name_hint", "path_literal"]

_MAX_DEPTH = 4

def _guess(kind: ValueKind, evidence: str, node: ast.AST) -> ValueGuess:
    """A :class:`ValueGuess` holding an ``ast`` node (the record's ``node`` is typed
    ``ast.expr``)."""
    return ValueGuess(kind, evidence, node)  # type: ignore[arg-type]


def identifier_of(expr: ast.AST) -> str | None:
    """The last identifier of a ``Name``/``Attribute`` chain (``optimizer`` for
    ``self.optimizer``), or ``None``."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return None


def path_literal(expr: ast.AST) -> bool:
    """Whether ``expr`` is a string (plain, concatenated or f-string) whose literal text looks
    like a file path: a path separator, or a checkpoint file suffix at its end (f-strings: see the module
    docstring)."""
    text = _literal_text(expr)
    if text is None:
        return False
    return "/" in text or "\\" in text or text.lower().endswith(CHECKPOINT_FILE_SUFFIXES)


def _literal_text(expr: ast.AST) -> str | None:
    """The literal text of ``expr``: a ``str`` constant's value, an f-string's
    literal parts with ``{}`` for each replacement field."""
    if isinstance(expr, ast.Constant):
        return expr.value if isinstance(expr.value, str) else None
    if isinstance(expr, ast.JoinedStr):
        return "".join(
            part.value if isinstance(part, ast.Constant) and isinstance(part.value, str) else "{}" for part in expr.values
        )
    return None


def _is_string(expr: ast.AST) -> bool:
    return isinstance(expr, ast.JoinedStr) or (isinstance(expr, ast.Constant) and isinstance(expr.value, str))


def classify_value(expr: ast.AST, model: AstModel, _depth: int = 0) -> ValueGuess | None:
    """What ``expr`` is built as, or ``None`` when the source does not say: a guess whose ``node`` is
    this tree's (see :mod:`ckptlint.checkpoint.sites.argument_kinds` for what counts)."""
    if _depth > _MAX_DEPTH:
        return None
    if _is_string(expr):
        return _guess(ValueKind.PATH, "a string", expr)
    if isinstance(expr, (ast.Dict, ast.DictComp)):
        return _guess(ValueKind.DICT, "a dict literal", expr)
    if isinstance(expr, ast.Call):
        return _classify_call(expr, model)
    if isinstance(expr, (ast.Name, ast.Attribute)):
        names = model.qualified_names(expr)
        if names & TORCH_SAVE:
            return _guess(ValueKind.SAVE_FUNCTION, "`torch.save`", expr)
        if names & TORCH_LOAD:
            return _guess(ValueKind.LOAD_FUNCTION, "`torch.load`", expr)
    if isinstance(expr, ast.Name):
        return _classify_name(expr, model, _depth)
    return None


def _classify_call(call: ast.Call, model: AstModel) -> ValueGuess | None:
    """See ``argument_kinds._classify_call``."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "state_dict" and not call.args and not call.keywords:
        return _guess(ValueKind.STATE_DICT, "a `state_dict()` call", call)
    names = model.qualified_names(func)
    if names & STATE_DICT_FACTORIES:
        return _guess(ValueKind.STATE_DICT, f"a `{identifier_of(func)}()` call", call)
    if "builtins.dict" in names:
        return _guess(ValueKind.DICT, "a `dict(...)` call", call)
    if names & PATH_FACTORIES:
        return _guess(ValueKind.PATH, f"a path (`{min(names & PATH_FACTORIES)}(...)`)", call)
    for name in sorted(names):
        if name.startswith(SCHEDULER_PACKAGE):
            return _guess(ValueKind.SCHEDULER, f"a learning-rate scheduler (`{name}`)", call)
        if name.startswith(OPTIMIZER_PACKAGE) and name[len(OPTIMIZER_PACKAGE) :][:1].isupper():
            return _guess(ValueKind.OPTIMIZER, f"an optimizer (`{name}`)", call)
    if _builds_module(call, names, model):
        return _guess(ValueKind.MODULE, f"a module (`{_callee_text(func)}(...)`)", call)
    return None


def _builds_module(call: ast.Call, names: frozenset[str], model: AstModel) -> bool:
    """See ``argument_kinds._builds_module``."""
    if names & MODULE_FACTORIES:
        return True
    for name in names:
        if name.startswith("torch.nn.") and name.count(".") == 2 and name.rsplit(".", 1)[1][:1].isupper():
            return True
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "from_pretrained":
        owner = identifier_of(func.value) or ""
        return "Model" in owner or "For" in owner
    if isinstance(func, ast.Name):
        return any(
            _is_module_class(binding.node, model) for binding in model.bindings_of(func) if binding.kind is BindingKind.CLASS
        )
    return False


def _is_module_class(node: ast.AST, model: AstModel, _depth: int = 0) -> bool:
    """Whether the ``ClassDef`` ``node`` subclasses ``nn.Module`` (directly, or through other
    classes of this module); a ``*bases`` base is read without its star."""
    if not isinstance(node, ast.ClassDef) or _depth > _MAX_DEPTH:
        return False
    for written in node.bases:
        base = written.value if isinstance(written, ast.Starred) else written
        names = model.qualified_names(base)
        if names & MODULE_BASE_CLASSES:
            return True
        if isinstance(base, ast.Name):
            for binding in model.bindings_of(base):
                if binding.kind is BindingKind.CLASS and _is_module_class(binding.node, model, _depth + 1):
                    return True
    return False


def _classify_name(name: ast.Name, model: AstModel, depth: int) -> ValueGuess | None:
    """A name every binding of which assigns one kind of value (see ``argument_kinds._classify_name``)."""
    bindings = model.bindings_of(name)
    if not bindings:
        return None
    guesses: list[ValueGuess] = []
    for binding in bindings:
        if binding.kind is not BindingKind.ASSIGNMENT or binding.value is None or binding.value is name:
            return None
        guess = classify_value(binding.value, model, depth + 1)
        if guess is None:
            return None
        guesses.append(guess)
    kinds = {g.kind for g in guesses}
    if len(kinds) != 1:
        return None
    return ValueGuess(guesses[0].kind, f"`{name.id}`, {guesses[0].evidence}", guesses[0].node)


def name_hint(expr: ast.AST) -> ValueKind | None:
    """What the identifier of ``expr`` says it holds (weak evidence): OPTIMIZER, SCHEDULER,
    PATH, STATE_DICT, MODULE or ``None``."""
    identifier = identifier_of(expr)
    if identifier is None:
        return None
    lowered = identifier.lower()
    for pattern, kind in (
        (_OPTIMIZER_NAME, ValueKind.OPTIMIZER),
        (_SCHEDULER_NAME, ValueKind.SCHEDULER),
        (_PATH_NAME, ValueKind.PATH),
        (_STATE_NAME, ValueKind.STATE_DICT),
        (_MODULE_NAME, ValueKind.MODULE),
    ):
        if pattern.search(lowered):
            return kind
    return None


def _callee_text(func: ast.AST) -> str:
    """``a.b.C`` for the callee of a module built by a call (see ``argument_kinds._callee_text``)."""
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return ".".join(reversed(parts)) or "..."
